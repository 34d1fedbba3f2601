"""Reading the CIFAR-10/100 python batches without running anything they hold.

The published batches are Python 2 pickles of a dict: ``data`` (an N x 3072 uint8 array,
channel-major rows), the labels (``labels``, or ``fine_labels`` for CIFAR-100) and a few
strings. A pickle names functions to call while it loads; a file put in a data folder could
name any function. :class:`BatchUnpickler` resolves only the three names numpy's array pickles
use (``_reconstruct``, ``ndarray``, ``dtype``) and refuses every other one, whatever the
environment says (``SHARPNESS_UNVERIFIED_DATA`` turns off the hash check only): a batch that
names anything else stops with :class:`~sharpness.errors.DataError` before anything in it
runs. The loaded value is then checked for the batch's known shape (a dict, ``data`` a uint8
array of N x 3072, N integer labels).
"""

from __future__ import annotations

import pickle
from pathlib import Path
from typing import Any

import numpy as np

from sharpness.errors import DataError

#: the only globals a CIFAR batch may name: numpy's array reconstruction
ALLOWED = frozenset({("numpy.core.multiarray", "_reconstruct"),
                     ("numpy._core.multiarray", "_reconstruct"),
                     ("numpy", "ndarray"), ("numpy", "dtype")})
FOLDERS = {"cifar10": ("cifar-10-batches-py", [f"data_batch_{i}" for i in range(1, 6)],
                       ["test_batch"], "labels"),
           "cifar100": ("cifar-100-python", ["train"], ["test"], "fine_labels")}


def _latin1_bytes(text: str, encoding: str = "latin1") -> bytes:
    """What ``_codecs.encode`` does in a protocol-2 pickle written by Python 3 (its way of
    storing bytes), for text and the latin-1 codec only."""
    if not isinstance(text, str) or encoding.replace("-", "").lower() != "latin1":
        raise pickle.UnpicklingError(f"_codecs.encode with {encoding!r} is not a byte string")
    return text.encode("latin1")


class BatchUnpickler(pickle.Unpickler):
    """An unpickler that builds numpy arrays and plain values (dicts, lists, strings,
    numbers, bytes) and refuses every other global."""

    def find_class(self, module: str, name: str) -> Any:
        if (module, name) == ("_codecs", "encode"):
            return _latin1_bytes
        if (module, name) in ALLOWED:
            return super().find_class(module, name)
        raise pickle.UnpicklingError(f"it names {module}.{name}, which a data batch never "
                                     "needs (only numpy arrays and plain values are read)")


def read_batch(path: Path, label_key: str) -> tuple[np.ndarray, list[int]]:
    """``(images N x 32 x 32 x 3 uint8, labels)`` of one batch file, read by
    :class:`BatchUnpickler`; anything else is refused naming the file."""
    try:
        with open(path, "rb") as handle:
            batch = BatchUnpickler(handle, encoding="latin1").load()
    except (pickle.UnpicklingError, EOFError, ValueError, TypeError, AttributeError,
            ImportError, IndexError, KeyError) as exc:
        raise DataError(f"{path}: not read: {exc}. Nothing in it was run; the file is not "
                        "a CIFAR batch as published (delete it and prepare the data set "
                        "again)") from exc
    data = batch.get("data") if isinstance(batch, dict) else None
    labels = batch.get(label_key) if isinstance(batch, dict) else None
    if not (isinstance(data, np.ndarray) and data.dtype == np.uint8 and data.ndim == 2
            and data.shape[1] == 3072 and isinstance(labels, list)
            and len(labels) == data.shape[0]
            and all(isinstance(v, int) and not isinstance(v, bool) for v in labels)):
        raise DataError(f"{path}: not a CIFAR batch (a dict with 'data', an N x 3072 uint8 "
                        f"array, and N integer {label_key!r})")
    return data.reshape(-1, 3, 32, 32).transpose(0, 2, 3, 1), labels


def read_cifar(name: str, folder: Path) -> tuple[np.ndarray, list[int], np.ndarray, list[int]]:
    """``(x_train, y_train, x_test, y_test)`` of CIFAR-10 or CIFAR-100 in ``folder`` (the
    data set's folder), images as N x 32 x 32 x 3 uint8, in the published order."""
    sub, train, test, key = FOLDERS[name]
    parts = []
    for files in (train, test):
        batches = [read_batch(folder / sub / f, key) for f in files]
        parts += [np.concatenate([b[0] for b in batches]), sum((b[1] for b in batches), [])]
    return parts[0], parts[1], parts[2], parts[3]
