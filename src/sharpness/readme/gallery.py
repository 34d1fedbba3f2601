"""The picture gallery: small PNGs of the figures that tell each paper's story.

``docs/gallery/gallery.yaml`` (committed, written by hand) lists the figures, in order, each
with a sentence on what to see. :func:`build_gallery` copies each figure's PNG (the sibling
every figure job writes beside its PDF) from a run's ``figures/`` folder into
``docs/gallery/``, scaled down and palette-quantised to stay small, and writes
``manifest.json``: for each picture its source, the provenance id of the figure it was made
from, the figure's evidence level (from its caption) and the record's commit and date. The
README's ``gallery`` block is rendered from both files by :func:`gallery_block`.
"""

from __future__ import annotations

import io
import json
import re
from pathlib import Path
from typing import Any

import yaml

from sharpness.errors import SharpnessError
from sharpness.io import atomic_write_bytes, atomic_write_json

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
    """Provenance id, commit, date and evidence level of the figure whose PNG is ``png``."""
    stem = png.with_suffix("")
    sidecar = Path(f"{stem}.provenance.json")
    record = json.loads(sidecar.read_text()) if sidecar.is_file() else {}
    caption = Path(f"{stem}.caption.txt")
    level = LEVEL.search(caption.read_text()) if caption.is_file() else None
    code = record.get("code", {}) if isinstance(record.get("code"), dict) else {}
    return {"provenance_id": record.get("id"),
            "commit": (code.get("git_commit") or "")[:7] or None,
            "dirty": bool(code.get("dirty")), "date": str(record.get("finished") or
                                                          record.get("started") or "")[:10],
            "evidence_level": level["level"] if level else None}


def build_gallery(figures: Path, out: Path, width: int = 1200, limit_kb: int = 150
                  ) -> list[dict[str, Any]]:
    """Write the gallery's PNGs and ``manifest.json`` into ``out``; returns the manifest.

    A figure missing from ``figures`` is an error that names it and the target that makes
    it; a picture over ``limit_kb`` is written with fewer colours until it fits."""
    entries = read_index(out)
    manifest = []
    for entry in entries:
        png = figures / f"{entry['figure']}.png"
        if not png.is_file():
            raise SharpnessError(f"{png} is missing: build it first with `snakemake --cores "
                                 f"all figures/{entry['figure']}.pdf`")
        data = png.read_bytes()
        small = b""
        for colors in (256, 128, 64):
            small = shrink_png(data, int(entry.get("width", width)), colors)
            if len(small) <= limit_kb * 1024:
                break
        name = entry["figure"].replace("/", "_") + ".png"
        atomic_write_bytes(out / name, small)
        manifest.append({"file": name, "figure": entry["figure"], "kb": round(len(small) / 1024),
                         **_figure_facts(png)})
    atomic_write_json(out / MANIFEST, manifest)
    return manifest


def gallery_block(folder: Path) -> str:
    """The README's gallery: each picture with its title, what to see, the date it was drawn
    and its evidence level, from ``gallery.yaml`` and the manifest ``build_gallery`` wrote
    (which also keeps each picture's provenance id and commit)."""
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
        level = fact.get("evidence_level") or "unknown"
        made = f"quick profile, {fact['date']}, evidence level **{level}**" if fact.get(
            "date") else f"evidence level **{level}**"
        lines += [f"**{entry['title']}** (`figures/{entry['figure']}.pdf`)", "",
                  f"![{entry['title']}](docs/gallery/{fact['file']})", "",
                  f"{entry['see'].strip()} *({made}.)*", ""]
    return "\n".join(lines)
