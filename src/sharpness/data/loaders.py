"""Loading a data set by registry name, whichever verified copy :func:`resolve` found.

:func:`load_dataset` looks the name up in the registry and calls the loader its spec names
(``module:function``, imported on first use, so reading the registry never imports torch).
Every loader has the same signature, ``(name, root, *, mirror, download) -> ArrayDataset``;
this module holds the ones for the official downloads (MNIST's IDX files, the CIFAR batches,
read by a restricted unpickler in :mod:`sharpness.data.cifar`, SVHN's ``.mat`` files) and the
image folders. The committed array subsets load in
:mod:`sharpness.data.embedded`, the SVHN stand-in in :mod:`sharpness.data.composite`.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from sharpness.data.arrays import ArrayDataset, labels, mark_unverified, subset, to_nchw
from sharpness.data.cifar import FOLDERS as CIFAR_FOLDERS
from sharpness.data.cifar import read_cifar
from sharpness.data.fetch import resolve, unverified_reason
from sharpness.data.folders import load_domains, load_imagenet
from sharpness.data.registry import base_name, get_spec
from sharpness.errors import DataError

Loader = Callable[..., ArrayDataset]


def loader_for(name: str) -> Loader:
    """The loader function the registry names for data set ``name`` (``pacs:photo`` → pacs)."""
    spec = get_spec(base_name(name))
    if not spec.loader:
        raise DataError(f"data set {spec.name!r} has no tensor loader in the registry")
    module, _, func = spec.loader.partition(":")
    return getattr(importlib.import_module(module), func)  # type: ignore[no-any-return]


def load_dataset(name: str, root: str | os.PathLike[str] = "data", *,
                 mirror: str | os.PathLike[str] | None = None, download: bool = True,
                 train_size: int | None = None, test_size: int | None = None) -> ArrayDataset:
    """Load a data set by registry name as tensors, optionally keeping the first N examples.

    A missing copy fails with the message that says what to put where (:func:`resolve`).
    ImageNet (``root`` is ``data.imagenet``) and ``pacs:<domain>``/``vlcs:<domain>`` come
    back with lazy image folders (:class:`sharpness.data.folders.FolderImages`) in place of
    the image tensors: they are streamed from disk, never loaded whole.
    """
    ds = loader_for(name)(name, root, mirror=mirror, download=download)
    return subset(ds, train_size, test_size)


def _read_idx(path: Path) -> np.ndarray:
    data = path.read_bytes()
    ndim = data[3]
    dims = [int.from_bytes(data[4 + 4 * i: 8 + 4 * i], "big") for i in range(ndim)]
    return np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * ndim).reshape(dims).copy()


def load_mnist(name: str = "mnist", root: str | os.PathLike[str] = "data", *,
               mirror: str | os.PathLike[str] | None = None,
               download: bool = True) -> ArrayDataset:
    """Full MNIST (60k/10k) from a verified copy of its IDX files (local, mirror or download)."""
    folder = resolve(name, root, mirror=mirror, download=download)
    raw = folder / "MNIST" / "raw"
    parts = {key: _read_idx(raw / f"{stem}-idx{nd}-ubyte")
             for key, stem, nd in (("x_train", "train-images", 3), ("y_train", "train-labels", 1),
                                   ("x_test", "t10k-images", 3), ("y_test", "t10k-labels", 1))}
    return ArrayDataset(
        name=name, x_train=to_nchw(parts["x_train"]), y_train=labels(parts["y_train"]),
        x_test=to_nchw(parts["x_test"]), y_test=labels(parts["y_test"]), num_classes=10,
        info=mark_unverified({"name": name, "folder": str(folder),
                              "sha256": {f.path: f.sha256 for f in get_spec(name).files}}))


def load_torchvision(name: str, root: str | os.PathLike[str] = "data", *,
                     mirror: str | os.PathLike[str] | None = None,
                     download: bool = True) -> ArrayDataset:
    """CIFAR-10/100 (python batches, read by a restricted unpickler that runs nothing they
    hold: :mod:`sharpness.data.cifar`) or SVHN (``.mat``, read by torchvision) from a verified
    copy (torchvision's own download is never used: :func:`resolve` fetched and checked it)."""
    folder = resolve(name, root, mirror=mirror, download=download)
    if name in CIFAR_FOLDERS:
        xtr, ytr, xte, yte = read_cifar(name, folder)
    elif name == "svhn":
        import torchvision  # lazy: torchvision; training jobs import this module

        cls: Any = torchvision.datasets.SVHN
        if unverified_reason(folder):  # the named unverified folder: torchvision's MD5 off too
            cls = type("UnverifiedSVHN", (cls,), {"_check_integrity": lambda self: True})
        train, test = (cls(str(folder), split=s, download=False) for s in ("train", "test"))
        xtr, ytr = train.data.transpose(0, 2, 3, 1), train.labels
        xte, yte = test.data.transpose(0, 2, 3, 1), test.labels
    else:
        raise DataError(f"data set {name!r} has no reader here; known: "
                        f"{', '.join([*CIFAR_FOLDERS, 'svhn'])}")
    return ArrayDataset(name, to_nchw(xtr), labels(ytr), to_nchw(xte), labels(yte),
                        num_classes=100 if name == "cifar100" else 10,
                        info=mark_unverified({"name": name, "folder": str(folder)}))


def load_imagenet_folders(name: str, root: str | os.PathLike[str] = "data", *,
                          mirror: str | os.PathLike[str] | None = None,
                          download: bool = True) -> ArrayDataset:
    """ImageNet as lazy image folders; ``root`` is its folder (``data.imagenet``).
    User-provided, so ``mirror`` and ``download`` do not apply."""

    return _from_parts(name, load_imagenet(root))


def load_domain_folders(name: str, root: str | os.PathLike[str] = "data", *,
                        mirror: str | os.PathLike[str] | None = None,
                        download: bool = True) -> ArrayDataset:
    """``pacs:<domain>``/``vlcs:<domain>`` (train on that domain, test on the others) as lazy
    image folders. User-provided, so ``mirror`` and ``download`` do not apply."""

    return _from_parts(name, load_domains(name, root))


def _from_parts(name: str, parts: dict[str, Any]) -> ArrayDataset:
    return ArrayDataset(name, parts["x_train"], parts["y_train"], parts["x_test"],
                        parts["y_test"], parts["num_classes"], mark_unverified(parts["info"]))
