"""`sharpness gallery`: small PNGs from a run's figures, a manifest with each picture's
provenance and evidence level, and the README block rendered from both."""

from __future__ import annotations

import io
import json
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from sharpness.cli import main
from sharpness.errors import SharpnessError
from sharpness.readme.blocks import blocks_in
from sharpness.readme.gallery import build_gallery, gallery_block
from sharpness.runs.provenance import (
    artifact_record,
    commit_artifact_record,
    write_artifact_provenance,
)

ROOT = Path(__file__).resolve().parents[1]


def _figure(figures: Path, name: str, width: int = 2400) -> str:
    x = np.linspace(0, 255, width, dtype=np.float64)
    pixels = np.zeros((width // 2, width, 3), np.uint8)
    pixels[..., 0] = x.astype(np.uint8)
    pixels[: width // 4, :, 2] = 200
    path = figures / f"{name}.png"
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.fromarray(pixels).save(path)
    stem = figures / name
    caption = Path(f"{stem}.caption.txt")
    caption.write_text("A caption. Evidence level: smoke (one seed; ...)\n")
    # its record as a figure job writes it (the PNG's and the caption's hashes, which the
    # gallery checks), made at a known commit and date
    record = artifact_record(path, kind="figure", outputs=[path, caption])
    record["code"].update(git_commit="0123456789abcdef", dirty=False)
    record["finished"] = "2026-12-01T10:00:00+00:00"
    return commit_artifact_record(record)["id"]


def _ledger(figures: Path, profile: str) -> None:
    """The run's claims.json with the ledger's record, as `claims build` writes them."""
    (figures / "claims.json").write_text(json.dumps({"profile": profile}))
    write_artifact_provenance(figures / "CLAIMS.md", kind="ledger",
                              outputs=[figures / "claims.json"])


def test_gallery_writes_small_pictures_manifest_and_block(tmp_path: Path) -> None:
    figures, out = tmp_path / "figures", tmp_path / "gallery"
    out.mkdir()
    (out / "gallery.yaml").write_text(
        "- {figure: eos/fig_x, title: The X, see: What to see in X.}\n")
    fig_id = _figure(figures, "eos/fig_x")
    readme = tmp_path / "README.md"
    readme.write_text("a\n<!-- begin:gallery -->\n<!-- end:gallery -->\nb\n")
    assert main(["gallery", "--figures", str(figures), "--out", str(out), "--width", "600",
                 "--max-kb", "150", "--readme", str(readme), "--profile", "quick"]) == 0
    picture = out / "eos_fig_x.png"
    with Image.open(io.BytesIO(picture.read_bytes())) as image:
        assert image.width == 600 and image.mode == "P"
    assert picture.stat().st_size <= 150 * 1024
    [entry] = json.loads((out / "manifest.json").read_text())
    assert entry["provenance_id"] == fig_id and entry["commit"] == "0123456"
    assert entry["evidence_level"] == "smoke" and entry["date"] == "2026-12-01"
    [block] = blocks_in(readme.read_text())
    assert "![The X](docs/gallery/eos_fig_x.png)" in block.body
    assert "What to see in X." in block.body and "**smoke**" in block.body
    assert "2026-12-01" in block.body


@pytest.mark.parametrize("profile", ["evidence", "paper"])
def test_captions_name_the_run_that_drew_the_picture(tmp_path: Path, profile: str) -> None:
    figures, out = tmp_path / "figures", tmp_path / "gallery"
    out.mkdir()
    (out / "gallery.yaml").write_text("- {figure: eos/fig_x, title: The X, see: See X.}\n")
    _figure(figures, "eos/fig_x", width=400)
    # the profile comes from the run's claims ledger record ...
    _ledger(figures, profile)
    [entry] = build_gallery(figures, out)
    assert entry["profile"] == profile
    block = gallery_block(out)
    assert f"*({profile} profile, commit 0123456, 2026-12-01, scale **smoke**.)*" in block
    assert "quick profile" not in block
    # ... and the caption follows the manifest, not the code: edit the manifest, the caption moves
    manifest = json.loads((out / "manifest.json").read_text())
    manifest[0].update(profile="other", commit="fedcba9", date="2027-01-02", dirty=True)
    (out / "manifest.json").write_text(json.dumps(manifest))
    assert "other profile, commit fedcba9 (uncommitted changes), 2027-01-02" in gallery_block(out)


def test_a_run_without_its_profile_is_named(tmp_path: Path) -> None:
    figures, out = tmp_path / "figures", tmp_path / "gallery"
    out.mkdir()
    (out / "gallery.yaml").write_text("- {figure: eos/fig_x, title: The X, see: See X.}\n")
    _figure(figures, "eos/fig_x", width=400)
    with pytest.raises(SharpnessError, match="--profile"):
        build_gallery(figures, out)
    assert build_gallery(figures, out, profile="quick")[0]["profile"] == "quick"


def test_committed_captions_are_the_manifest_s(tmp_path: Path) -> None:
    manifest = json.loads((ROOT / "docs/gallery/manifest.json").read_text())
    [block] = [b for b in blocks_in((ROOT / "README.md").read_text()) if b.name == "gallery"]
    for fact in manifest:
        assert fact.get("profile") and fact.get("commit"), fact["file"]
        assert f"{fact['profile']} profile, commit {fact['commit']}, {fact['date']}" in block.body


def test_missing_figure_names_the_target(tmp_path: Path) -> None:
    out = tmp_path / "gallery"
    out.mkdir()
    (out / "gallery.yaml").write_text("- {figure: eos/fig_y, title: Y, see: y}\n")
    with pytest.raises(SharpnessError, match="snakemake --cores all figures/eos/fig_y.pdf"):
        build_gallery(tmp_path / "figures", out, profile="quick")
    (out / "gallery.yaml").write_text("- {figure: eos/fig_y, title: Y}\n")
    with pytest.raises(SharpnessError, match="lacks see"):
        build_gallery(tmp_path / "figures", out, profile="quick")


def test_committed_gallery_is_small_and_complete() -> None:
    folder = ROOT / "docs" / "gallery"
    manifest = json.loads((folder / "manifest.json").read_text())
    assert len(manifest) >= 6
    for entry in manifest:
        picture = folder / entry["file"]
        assert picture.stat().st_size <= 150 * 1024, entry["file"]
        assert entry["provenance_id"] and entry["evidence_level"], entry
    assert gallery_block(folder)  # every listed figure is in the manifest


def test_an_edited_caption_or_picture_never_reaches_the_gallery(tmp_path: Path) -> None:
    """The gallery reads a run's figures like every reader of result files: a caption or PNG
    changed after the build stops it, naming the file."""
    from sharpness.runs.seal import UnverifiedResult

    figures, out = tmp_path / "figures", tmp_path / "gallery"
    out.mkdir()
    (out / "gallery.yaml").write_text("- {figure: eos/fig_x, title: The X, see: See X.}\n")
    _figure(figures, "eos/fig_x", width=400)
    assert build_gallery(figures, out, profile="quick")[0]["evidence_level"] == "smoke"
    caption = figures / "eos/fig_x.caption.txt"
    caption.write_text("A caption. Evidence level: evidence (many seeds)\n")
    with pytest.raises(UnverifiedResult, match="fig_x.caption.txt is not used"):
        build_gallery(figures, out, profile="quick")
