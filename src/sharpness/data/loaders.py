"""Loading data sets as tensors, whichever verified copy :func:`resolve` found.

Images come back as float32 tensors in [0, 1], NCHW, and labels as int64; normalisation and
augmentation belong to the training code, so that Grad-CAM and intensity-based metrics see the
raw pixel values.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch

from sharpness.data.fetch import resolve, unverified_reason
from sharpness.data.registry import get_spec
from sharpness.errors import DataError
from sharpness.provenance import file_sha256

#: repository-relative folder of the committed subsets
EMBEDDED_DIR = Path(__file__).resolve().parents[3] / "data" / "embedded"


@dataclass
class ArrayDataset:
    """A data set held in memory: train and test images and labels, plus where they came from."""

    name: str
    x_train: torch.Tensor
    y_train: torch.Tensor
    x_test: torch.Tensor
    y_test: torch.Tensor
    num_classes: int
    #: provenance entry: name, files and checksums, stand-in note if any
    info: dict[str, Any] = field(default_factory=dict)

    @property
    def shape(self) -> tuple[int, ...]:
        """Shape of one image (C, H, W)."""
        return tuple(self.x_train.shape[1:])


def _to_nchw(images: np.ndarray) -> torch.Tensor:
    x = torch.from_numpy(np.ascontiguousarray(images)).float().div_(255.0)
    if x.ndim == 3:
        return x.unsqueeze(1)
    return x.permute(0, 3, 1, 2).contiguous()


def _embedded_path(name: str, root: str | os.PathLike[str] | None) -> Path:
    spec = get_spec(name)
    fname = spec.files[0].path
    candidates = [Path(root) / "embedded" / fname] if root else []
    candidates.append(EMBEDDED_DIR / fname)
    for path in candidates:
        if path.is_file():
            return path
    # Not in the checkout: try the normal resolution (mirror, ...) into <root>/embedded/.
    return resolve(name, root or "data") / fname


def load_embedded(name: str, root: str | os.PathLike[str] | None = None) -> ArrayDataset:
    """Load ``mnist_embedded`` or ``cifar10_embedded`` (checksum-verified) as tensors."""
    spec = get_spec(name)
    path = _embedded_path(name, root)
    digest = file_sha256(path)
    if digest != spec.files[0].sha256:
        raise DataError(f"{path}: checksum mismatch (expected {spec.files[0].sha256}, got "
                        f"{digest}); restore it with `git checkout -- {path}`")
    with np.load(path) as arrays:
        parts = {k: arrays[k] for k in ("x_train", "y_train", "x_test", "y_test")}
    return ArrayDataset(
        name=name, x_train=_to_nchw(parts["x_train"]),
        y_train=torch.from_numpy(parts["y_train"].astype(np.int64)),
        x_test=_to_nchw(parts["x_test"]), y_test=torch.from_numpy(parts["y_test"].astype(np.int64)),
        num_classes=10, info={"name": name, "file": str(path), "sha256": digest,
                              "title": spec.title})


def _read_idx(path: Path) -> np.ndarray:
    data = path.read_bytes()
    ndim = data[3]
    dims = [int.from_bytes(data[4 + 4 * i: 8 + 4 * i], "big") for i in range(ndim)]
    return np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * ndim).reshape(dims).copy()


def load_mnist(root: str | os.PathLike[str] = "data", **resolve_kw: Any) -> ArrayDataset:
    """Full MNIST (60k/10k) from a verified copy (local, mirror or download)."""
    folder = resolve("mnist", root, **resolve_kw)
    raw = folder / "MNIST" / "raw"
    parts = {key: _read_idx(raw / f"{stem}-idx{nd}-ubyte")
             for key, stem, nd in (("x_train", "train-images", 3), ("y_train", "train-labels", 1),
                                   ("x_test", "t10k-images", 3), ("y_test", "t10k-labels", 1))}
    return ArrayDataset(
        name="mnist", x_train=_to_nchw(parts["x_train"]),
        y_train=torch.from_numpy(parts["y_train"].astype(np.int64)),
        x_test=_to_nchw(parts["x_test"]), y_test=torch.from_numpy(parts["y_test"].astype(np.int64)),
        num_classes=10, info=_unverified({"name": "mnist", "folder": str(folder),
                              "sha256": {f.path: f.sha256 for f in get_spec("mnist").files}}))


def load_dataset(name: str, root: str | os.PathLike[str] = "data", *,
                 mirror: str | os.PathLike[str] | None = None, download: bool = True,
                 train_size: int | None = None, test_size: int | None = None) -> ArrayDataset:
    """Load a data set by registry name as tensors, optionally keeping the first N examples.

    Handles the embedded subsets and MNIST directly; CIFAR-10/100 (python pickles) and SVHN
    (``.mat``) are resolved (so a missing copy fails with the message that says what to put
    where) and loaded through torchvision. ImageNet (``root`` is ``data.imagenet``) and
    ``pacs:<domain>``/``vlcs:<domain>`` come back with lazy image folders
    (:class:`sharpness.data.folders.FolderImages`) in place of the image tensors: they are
    streamed from disk, never loaded whole.
    """
    if name == "imagenet" or name.split(":", 1)[0] in ("pacs", "vlcs"):
        from sharpness.data.folders import load_domains, load_imagenet

        parts = load_imagenet(root) if name == "imagenet" else load_domains(name, root)
        ds = ArrayDataset(name, parts["x_train"], parts["y_train"], parts["x_test"],
                          parts["y_test"], parts["num_classes"], _unverified(parts["info"]))
        return subset(ds, train_size, test_size)
    if name in ("mnist_embedded", "cifar10_embedded"):
        ds = load_embedded(name, root)
    elif name == "mnist":
        ds = load_mnist(root, mirror=mirror, download=download)
    elif name == "mnist_on_cifar":  # the SVHN stand-in, built from the embedded subsets
        from sharpness.data.composite import load_mnist_on_cifar
        ds = load_mnist_on_cifar(root)
    else:
        ds = _load_torchvision(name, root, mirror=mirror, download=download)
    return subset(ds, train_size, test_size)


def subset(ds: ArrayDataset, train_size: int | None, test_size: int | None) -> ArrayDataset:
    """The first ``train_size`` / ``test_size`` examples (official order), recorded in info."""
    if train_size is None and test_size is None:
        return ds
    for key, size, have in (("train_size", train_size, len(ds.x_train)),
                            ("test_size", test_size, len(ds.x_test))):
        if size is not None and not 0 < size <= have:
            raise DataError(f"{key}={size} but {ds.name} has {have} examples")
    info = dict(ds.info, train_size=train_size, test_size=test_size)
    return ArrayDataset(ds.name, _head(ds.x_train, train_size), ds.y_train[:train_size],
                        _head(ds.x_test, test_size), ds.y_test[:test_size], ds.num_classes, info)


def _head(x: Any, n: int | None) -> Any:
    """The first ``n`` rows: a tensor slice, or a lazy image folder's :meth:`head`."""
    if n is None:
        return x
    return x.head(n) if hasattr(x, "head") else x[:n]


def _load_torchvision(name: str, root: str | os.PathLike[str], **resolve_kw: Any) -> ArrayDataset:
    import torchvision

    folder = resolve(name, root, **resolve_kw)
    classes = {"cifar10": torchvision.datasets.CIFAR10, "cifar100": torchvision.datasets.CIFAR100,
               "svhn": torchvision.datasets.SVHN}
    if name not in classes:
        raise DataError(f"data set {name!r} has no tensor loader; known here: "
                        f"{', '.join(classes)}")
    cls = classes[name]
    reason = unverified_reason()
    if reason:  # synthetic files in the official format: torchvision's MD5 check off too
        extra: dict[str, Any] = {"_check_integrity": lambda self: True}
        if hasattr(cls, "meta"):  # CIFAR's label-name file carries an MD5 too
            extra["meta"] = {**cls.meta, "md5": None}
        cls = type(f"Unverified{cls.__name__}", (cls,), extra)
    if name == "svhn":
        train, test = (cls(str(folder), split=s, download=False) for s in ("train", "test"))
        xtr, ytr = train.data.transpose(0, 2, 3, 1), train.labels
        xte, yte = test.data.transpose(0, 2, 3, 1), test.labels
    else:
        train, test = (cls(str(folder), train=t, download=False) for t in (True, False))
        xtr, ytr, xte, yte = train.data, train.targets, test.data, test.targets
    return ArrayDataset(name, _to_nchw(xtr), torch.as_tensor(np.asarray(ytr), dtype=torch.long),
                        _to_nchw(xte), torch.as_tensor(np.asarray(yte), dtype=torch.long),
                        num_classes=100 if name == "cifar100" else 10,
                        info=_unverified({"name": name, "folder": str(folder)}))


def _unverified(info: dict[str, Any]) -> dict[str, Any]:
    """``info`` with a provenance note when checksum checks are off."""
    reason = unverified_reason()
    if reason:
        info["note"] = f"UNVERIFIED (checksums not checked): {reason}"
        info["unverified"] = reason
    return info
