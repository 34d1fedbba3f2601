"""Synthetic data files in each paper data set's official on-disk format.

Used by the paper smoke test and the loader tests: the real loaders (torchvision for CIFAR
pickles and SVHN ``.mat``, our IDX reader for MNIST, image folders for ImageNet, PACS and
VLCS) read these files exactly as they read the published ones. The pixels are random, so
nothing trained on them means anything; checksums cannot match, so the tests that use them
set ``SHARPNESS_UNVERIFIED_DATA`` (and every loaded set's provenance says so).
"""

from __future__ import annotations

import pickle
from pathlib import Path

import numpy as np

DOMAINS = {"pacs": ("art_painting", "cartoon", "photo", "sketch"),
           "vlcs": ("Caltech101", "LabelMe", "SUN09", "VOC2007")}


def _rng(seed: int) -> np.random.Generator:
    return np.random.default_rng(seed)


def write_cifar(root: Path, classes: int = 10, per_batch: int = 20, test: int = 40,
                seed: int = 0) -> Path:
    """``cifar-10-batches-py/`` (5 train batches, test batch, meta) or ``cifar-100-python/``
    (train, test, meta): pickled dicts with ``data`` (N x 3072 uint8, channel-major rows)."""
    rng = _rng(seed)
    if classes == 10:
        folder = root / "cifar10" / "cifar-10-batches-py"
        folder.mkdir(parents=True, exist_ok=True)
        for i in range(1, 6):
            _pickle(folder / f"data_batch_{i}", {
                "batch_label": f"training batch {i} of 5",
                "labels": rng.integers(0, 10, per_batch).tolist(),
                "data": rng.integers(0, 256, (per_batch, 3072), dtype=np.uint8),
                "filenames": [f"img_{i}_{j}.png" for j in range(per_batch)]})
        _pickle(folder / "test_batch", {"batch_label": "testing batch 1 of 1",
                                        "labels": rng.integers(0, 10, test).tolist(),
                                        "data": rng.integers(0, 256, (test, 3072), np.uint8),
                                        "filenames": [f"t_{j}.png" for j in range(test)]})
        _pickle(folder / "batches.meta", {"label_names": [f"class{c}" for c in range(10)],
                                          "num_cases_per_batch": per_batch, "num_vis": 3072})
        return folder
    folder = root / "cifar100" / "cifar-100-python"
    folder.mkdir(parents=True, exist_ok=True)
    n = 5 * per_batch
    for split, count in (("train", n), ("test", test)):
        _pickle(folder / split, {"fine_labels": rng.integers(0, 100, count).tolist(),
                                 "coarse_labels": rng.integers(0, 20, count).tolist(),
                                 "data": rng.integers(0, 256, (count, 3072), dtype=np.uint8),
                                 "filenames": [f"{split}_{j}.png" for j in range(count)]})
    _pickle(folder / "meta", {"fine_label_names": [f"fine{c}" for c in range(100)],
                              "coarse_label_names": [f"coarse{c}" for c in range(20)]})
    return folder


def _pickle(path: Path, obj: dict) -> None:
    # the published files are Python 2 pickles (protocol 2) whose str keys load as str
    # with encoding="latin1", as torchvision reads them
    with open(path, "wb") as handle:
        pickle.dump(obj, handle, protocol=2)


def write_svhn(root: Path, train: int = 60, test: int = 40, seed: int = 1) -> Path:
    """``svhn/train_32x32.mat`` and ``test_32x32.mat``: ``X`` (32 x 32 x 3 x N uint8) and
    ``y`` (N x 1, digit 0 stored as label 10), as published."""
    from scipy.io import savemat

    rng = _rng(seed)
    folder = root / "svhn"
    folder.mkdir(parents=True, exist_ok=True)
    for name, n in (("train_32x32.mat", train), ("test_32x32.mat", test)):
        savemat(folder / name, {"X": rng.integers(0, 256, (32, 32, 3, n), dtype=np.uint8),
                                "y": rng.integers(1, 11, (n, 1)).astype(np.uint8)})
    return folder


def write_mnist(root: Path, train: int = 100, test: int = 50, seed: int = 2) -> Path:
    """``mnist/MNIST/raw/*-ubyte``: the IDX files (magic, sizes, uint8 payload)."""
    rng = _rng(seed)
    folder = root / "mnist" / "MNIST" / "raw"
    folder.mkdir(parents=True, exist_ok=True)

    def idx(path: Path, array: np.ndarray) -> None:
        header = bytes([0, 0, 8, array.ndim]) + b"".join(
            int(d).to_bytes(4, "big") for d in array.shape)
        path.write_bytes(header + array.astype(np.uint8).tobytes())

    for stem, n in (("train", train), ("t10k", test)):
        idx(folder / f"{stem}-images-idx3-ubyte", rng.integers(0, 256, (n, 28, 28)))
        idx(folder / f"{stem}-labels-idx1-ubyte", rng.integers(0, 10, n))
    return folder


def _jpeg(path: Path, rng: np.random.Generator, size: tuple[int, int]) -> None:
    from PIL import Image

    pixels = rng.integers(0, 256, (size[1], size[0], 3), dtype=np.uint8)
    Image.fromarray(pixels).save(path, format="JPEG", quality=85)


def write_imagenet(root: Path, classes: int = 3, train: int = 4, val: int = 2,
                   seed: int = 3) -> Path:
    """``imagenet/train/<wnid>/*.JPEG`` and ``val/<wnid>/*.JPEG`` (JPEGs of varied sizes)."""
    rng = _rng(seed)
    folder = root / "imagenet"
    for split, n in (("train", train), ("val", val)):
        for c in range(classes):
            sub = folder / split / f"n{c:08d}"
            sub.mkdir(parents=True, exist_ok=True)
            for j in range(n):
                size = (int(rng.integers(200, 330)), int(rng.integers(200, 330)))
                _jpeg(sub / f"n{c:08d}_{j}.JPEG", rng, size)
    return folder


def write_domains(root: Path, name: str, classes: int = 3, per_class: int = 2,
                  seed: int = 4) -> Path:
    """``<name>/<domain>/<class>/*.jpg`` for every domain of PACS or VLCS (227 x 227)."""
    rng = _rng(seed)
    folder = root / name
    for domain in DOMAINS[name]:
        for c in range(classes):
            sub = folder / domain / f"class{c}"
            sub.mkdir(parents=True, exist_ok=True)
            for j in range(per_class):
                _jpeg(sub / f"{j}.jpg", rng, (227, 227))
    return folder
