"""The committed subsets (``data/embedded/*.npz``): array files checked by SHA-256 and loaded
as tensors. Each ``.npz`` holds ``x_train``, ``y_train``, ``x_test``, ``y_test`` (uint8 images,
integer labels) in the official order.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from sharpness.data.arrays import ArrayDataset, labels, to_nchw
from sharpness.data.fetch import resolve
from sharpness.data.registry import get_spec
from sharpness.errors import DataError
from sharpness.runs.provenance import file_sha256

#: repository-relative folder of the committed subsets
EMBEDDED_DIR = Path(__file__).resolve().parents[3] / "data" / "embedded"


def _embedded_path(name: str, root: str | os.PathLike[str] | None,
                   mirror: str | os.PathLike[str] | None, download: bool) -> Path:
    spec = get_spec(name)
    fname = spec.files[0].path
    candidates = [Path(root) / "embedded" / fname] if root else []
    candidates.append(EMBEDDED_DIR / fname)
    for path in candidates:
        if path.is_file():
            return path
    # Not in the checkout: try the normal resolution (mirror, ...) into <root>/embedded/.
    return resolve(name, root or "data", mirror=mirror, download=download) / fname


def load_embedded(name: str, root: str | os.PathLike[str] | None = None, *,
                  mirror: str | os.PathLike[str] | None = None,
                  download: bool = True) -> ArrayDataset:
    """Load ``mnist_embedded`` or ``cifar10_embedded`` (checksum-verified) as tensors."""
    spec = get_spec(name)
    path = _embedded_path(name, root, mirror, download)
    digest = file_sha256(path)
    if digest != spec.files[0].sha256:
        raise DataError(f"{path}: checksum mismatch (expected {spec.files[0].sha256}, got "
                        f"{digest}); restore it with `git checkout -- {path}`")
    with np.load(path) as arrays:
        parts = {k: arrays[k] for k in ("x_train", "y_train", "x_test", "y_test")}
    return ArrayDataset(
        name=name, x_train=to_nchw(parts["x_train"]), y_train=labels(parts["y_train"]),
        x_test=to_nchw(parts["x_test"]), y_test=labels(parts["y_test"]), num_classes=10,
        info={"name": name, "file": str(path), "sha256": digest, "title": spec.title})
