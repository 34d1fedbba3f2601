"""The committed subsets load with the right shapes, labels and checksums."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import torch

from sharpness.data import DATASETS, load_dataset, load_embedded
from sharpness.errors import DataError

SHARED = Path(__file__).resolve().parents[2].parent / "shared" / "datasets"


def test_mnist_embedded_shapes_and_labels():
    ds = load_embedded("mnist_embedded")
    assert ds.x_train.shape == (5000, 1, 28, 28) and ds.x_test.shape == (1000, 1, 28, 28)
    assert ds.x_train.dtype == torch.float32 and 0.0 <= ds.x_train.min() <= ds.x_train.max() <= 1
    # the first official MNIST training labels and test labels
    assert ds.y_train[:10].tolist() == [5, 0, 4, 1, 9, 2, 1, 3, 1, 4]
    assert ds.y_test[:10].tolist() == [7, 2, 1, 0, 4, 1, 4, 9, 5, 9]
    assert sorted(ds.y_train.unique().tolist()) == list(range(10))
    assert abs(ds.x_train.mean().item() - 0.1307) < 0.01


def test_cifar10_embedded_shapes_and_labels():
    ds = load_embedded("cifar10_embedded")
    assert ds.x_train.shape == (4000, 3, 32, 32) and ds.x_test.shape == (1000, 3, 32, 32)
    assert ds.y_train[:10].tolist() == [6, 9, 9, 4, 1, 1, 2, 7, 8, 3]
    assert ds.y_test[:10].tolist() == [3, 8, 8, 0, 6, 6, 1, 6, 3, 1]
    assert ds.info["sha256"] == DATASETS["cifar10_embedded"].files[0].sha256


def test_subset_keeps_first_examples():
    ds = load_dataset("mnist_embedded", train_size=100, test_size=20)
    assert len(ds.x_train) == 100 and len(ds.y_test) == 20
    with pytest.raises(DataError, match="train_size"):
        load_dataset("mnist_embedded", train_size=10**6)


def test_tampered_embedded_file_is_refused(tmp_path):
    src = DATASETS["mnist_embedded"].files[0].path
    (tmp_path / "embedded").mkdir()
    target = tmp_path / "embedded" / src
    shutil.copy(Path(__file__).resolve().parents[2] / "data" / "embedded" / src, target)
    with open(target, "r+b") as handle:
        handle.seek(1000)
        handle.write(b"\x00\x01\x02")
    with pytest.raises(DataError, match="checksum mismatch"):
        load_embedded("mnist_embedded", root=tmp_path)


@pytest.mark.skipif(not (SHARED / "MNIST").is_dir(), reason="../shared/datasets not present")
def test_full_mnist_from_shared_mirror(tmp_path):
    ds = load_dataset("mnist", tmp_path, mirror=SHARED, download=False)
    assert ds.x_train.shape == (60000, 1, 28, 28) and ds.x_test.shape == (10000, 1, 28, 28)
    embedded = load_embedded("mnist_embedded")
    assert torch.equal(ds.x_train[:5000], embedded.x_train)


def test_prepare_finds_the_committed_subsets(repo, tmp_path):
    from sharpness.data import resolve

    for name in ("mnist_embedded", "cifar10_embedded"):
        assert resolve(name, repo / "data", download=False) == repo / "data" / "embedded"
