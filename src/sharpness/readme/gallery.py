"""The picture gallery: small PNGs of the figures that tell each paper's story.

``docs/gallery/gallery.yaml`` (committed, written by hand) lists the figures, in order, each
with a sentence on what to see. :func:`build_gallery` copies each figure's PNG (the sibling
every figure job writes beside its PDF) from a run's ``figures/`` folder into
``docs/gallery/``, scaled down and palette-quantised to stay small, and writes
``manifest.json``: for each picture its source, the provenance id of the figure it was made
from, the figure's scale (its profile.s level) (from its caption), the record's commit and date, and the
profile of the run that drew it (the ``profile`` of the run's ``claims.json``, or given). The
README's ``gallery`` block is rendered from both files by :func:`gallery_block`: each caption's
profile, commit and date are the manifest's, never typed.
"""

from __future__ import annotations

import io
import json
import re
from pathlib import Path
from typing import Any

import yaml

from sharpness.errors import SharpnessError
from sharpness.escape import markdown
from sharpness.io import atomic_write_bytes, atomic_write_json
from sharpness.runs.seal import read_verified

MANIFEST = "manifest.json"
INDEX = "gallery.yaml"
LEVEL = re.compile(r"Evidence level: (?P<level>[a-z]+)")


def read_index(folder: Path) -> list[dict[str, str]]:
    """The entries of ``gallery.yaml``: ``figure`` (``<paper>/<id>``), ``title``, ``see``, and
    optionally ``width`` (pixels, for a figure too wide to read at the default width)."""
    path = folder / INDEX
    if not path.is_file():
        raise SharpnessError(f"{path} is missing: it lists the gallery's figures")
    entries = yaml.safe_load(path.read_text()) or []
    for i, entry in enumerate(entries):
        missing = [k for k in ("figure", "title", "see") if not entry.get(k)]
        if missing:
            raise SharpnessError(f"{path}: entry {i} lacks {', '.join(missing)}")
    return entries


def shrink_png(data: bytes, width: int, colors: int = 256) -> bytes:
    """``data`` (a PNG) at most ``width`` pixels wide, quantised to ``colors`` colours."""
    from PIL import Image

    with Image.open(io.BytesIO(data)) as image:
        image = image.convert("RGB")
        if image.width > width:
            height = round(image.height * width / image.width)
            image = image.resize((width, height), Image.Resampling.LANCZOS)
        small = image.quantize(colors=colors, method=Image.Quantize.MEDIANCUT)
        out = io.BytesIO()
        small.save(out, format="PNG", optimize=True)
        return out.getvalue()


def _figure_facts(png: Path) -> dict[str, Any]:
    """Provenance id, commit, date and scale of the figure whose PNG is ``png``."""
    stem = png.with_suffix("")
    sidecar = Path(f"{stem}.provenance.json")
    # the record and the caption are checked like the picture (sharpness.runs.seal): a caption
    # edited after the build never reaches the README
    record = read_verified(sidecar, what="gallery") if sidecar.is_file() else {}
    caption = Path(f"{stem}.caption.txt")
    level = (LEVEL.search(read_verified(caption, Path.read_text, what="gallery"))
             if caption.is_file() else None)
    code = record.get("code", {}) if isinstance(record.get("code"), dict) else {}
    return {"provenance_id": record.get("id"),
            "commit": (code.get("git_commit") or "")[:7] or None,
            "dirty": bool(code.get("dirty")), "date": str(record.get("finished") or
                                                          record.get("started") or "")[:10],
            "evidence_level": level["level"] if level else None}


def run_profile(figures: Path) -> str | None:
    """The profile of the run whose figures folder is ``figures``: the ``profile`` its claims
    ledger recorded (``claims.json``), or None when the run wrote no ledger."""
    meta = figures / "claims.json"
    return read_verified(meta, what="gallery").get("profile") if meta.is_file() else None


def build_gallery(figures: Path, out: Path, width: int = 1200, limit_kb: int = 150,
                  profile: str | None = None) -> list[dict[str, Any]]:
    """Write the gallery's PNGs and ``manifest.json`` into ``out``; returns the manifest.

    ``profile`` is the profile of the run that drew ``figures`` (default: :func:`run_profile`;
    an error when neither names one). A figure missing from ``figures`` is an error that
    names it and the target that makes it; a picture over ``limit_kb`` is written with fewer
    colours until it fits."""
    entries = read_index(out)
    profile = profile or run_profile(figures)
    if not profile:
        raise SharpnessError(f"{figures / 'claims.json'} is missing: name the profile of the "
                             "run that drew the figures (`sharpness gallery --profile NAME`)")
    manifest = []
    for entry in entries:
        png = figures / f"{entry['figure']}.png"
        if not png.is_file():
            raise SharpnessError(f"{png} is missing: build it first with `snakemake --cores "
                                 f"all figures/{entry['figure']}.pdf`")
        data = read_verified(png, what="gallery")  # the PNG its figure job recorded
        small = b""
        for colors in (256, 128, 64):
            small = shrink_png(data, int(entry.get("width", width)), colors)
            if len(small) <= limit_kb * 1024:
                break
        name = entry["figure"].replace("/", "_") + ".png"
        atomic_write_bytes(out / name, small)
        manifest.append({"file": name, "figure": entry["figure"], "kb": round(len(small) / 1024),
                         "profile": profile, **_figure_facts(png)})
    atomic_write_json(out / MANIFEST, manifest)
    return manifest


def drawn_by(fact: dict[str, Any]) -> str:
    """``evidence profile, commit 1a2b3c4, <date>, scale **evidence**``: the run that
    drew one picture, as its manifest entry records it (what it does not record is left out).
    Each value comes from a run's files, so it is escaped for Markdown (:mod:`sharpness.escape`)."""
    parts = []
    if fact.get("profile"):
        parts.append(f"{markdown(fact['profile'])} profile")
    if fact.get("commit"):
        parts.append(f"commit {markdown(fact['commit'])}" + (" (uncommitted changes)"
                                                             if fact.get("dirty") else ""))
    if fact.get("date"):
        parts.append(markdown(fact["date"]))
    parts.append(f"scale **{markdown(fact.get('evidence_level') or 'unknown')}**")
    return ", ".join(parts)


def gallery_block(folder: Path) -> str:
    """The README's gallery: each picture with its title, what to see, and the run that drew
    it (profile, commit, date and the profile.s scale, :func:`drawn_by`), from ``gallery.yaml`` and
    the manifest ``build_gallery`` wrote (which also keeps each picture's provenance id)."""
    entries = read_index(folder)
    path = folder / MANIFEST
    if not path.is_file():
        raise SharpnessError(f"{path} is missing: run `sharpness gallery`")
    facts = {m["figure"]: m for m in json.loads(path.read_text())}
    lines = []
    for entry in entries:
        fact = facts.get(entry["figure"])
        if fact is None:
            raise SharpnessError(f"{entry['figure']} is in {INDEX} but not in {MANIFEST}: "
                                 "rerun `sharpness gallery`")
        lines += [f"**{entry['title']}** (`figures/{entry['figure']}.pdf`)", "",
                  f"![{entry['title']}](docs/gallery/{fact['file']})", "",
                  f"{entry['see'].strip()} *({drawn_by(fact)}.)*", ""]
    return "\n".join(lines)
