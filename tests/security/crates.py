"""A tiny finished build and its crate for the crate attack tests (fast: two tables' CSVs
and their signed sidecars, no training), and a helper that repacks a crate."""

from __future__ import annotations

import json
import shutil
import zipfile
from collections.abc import Callable
from pathlib import Path

from sharpness.cli import main
from sharpness.plots.save import write_csv
from sharpness.runs.provenance import write_artifact_provenance
from tests.conftest import REPO

FIGURE = "figures/p/a.csv"
OTHER = "figures/p/b.csv"
METADATA = "ro-crate-metadata.json"


def tiny_build(root: Path) -> Path:
    """``root`` as a finished build: the Snakefile and two tables with their sidecars."""
    root.mkdir(parents=True, exist_ok=True)
    shutil.copy(REPO / "Snakefile", root / "Snakefile")
    for rel, y in ((FIGURE, 2), (OTHER, 3)):
        write_csv(root / rel, [{"x": 1, "y": y}])
        write_artifact_provenance(root / rel, kind="table", params={"item": rel})
    return root


def pack(root: Path, out: Path) -> int:
    """``sharpness crate`` of the build at ``root``."""
    return main(["crate", "--root", str(root), "--out", str(out)])


def repack(crate: Path, out: Path, edits: dict[str, Callable[[bytes], bytes]]) -> Path:
    """A copy of ``crate`` with each member named in ``edits`` passed through its edit."""
    with zipfile.ZipFile(crate) as src, zipfile.ZipFile(out, "w") as dst:
        for info in src.infolist():
            data = src.read(info)
            dst.writestr(info, edits[info.filename](data) if info.filename in edits else data)
    return out


def edit_graph(edit: Callable[[dict[str, dict]], None]) -> Callable[[bytes], bytes]:
    """An edit of the metadata: ``edit`` changes its entities (by id) in place."""
    def apply(data: bytes) -> bytes:
        meta = json.loads(data)
        edit({e["@id"]: e for e in meta["@graph"]})
        return json.dumps(meta).encode()
    return apply
