"""Every paper data set's real loader reads files in its official on-disk format.

The files are synthetic (random pixels, tests/paper/formats.py), so checksums are off for the
test's folder through ``SHARPNESS_UNVERIFIED_DATA`` and every loaded set's provenance says so. ImageNet and the
PACS/VLCS domains stay on disk (lazy image folders): only the indexed images are decoded.
"""

from __future__ import annotations

import pytest
import torch

from sharpness.data import load_dataset
from sharpness.errors import DataError
from tests.paper import formats


@pytest.fixture
def unverified(tmp_path, monkeypatch):
    monkeypatch.setenv("SHARPNESS_UNVERIFIED_DATA", str(tmp_path))


def test_cifar_svhn_mnist_through_their_loaders(tmp_path, unverified):
    formats.write_cifar(tmp_path, 10)
    formats.write_cifar(tmp_path, 100)
    formats.write_svhn(tmp_path)
    formats.write_mnist(tmp_path)
    for name, classes, shape, n in (("cifar10", 10, (3, 32, 32), 100),
                                    ("cifar100", 100, (3, 32, 32), 100),
                                    ("svhn", 10, (3, 32, 32), 60),
                                    ("mnist", 10, (1, 28, 28), 100)):
        ds = load_dataset(name, tmp_path, download=False)
        assert ds.num_classes == classes and ds.shape == shape and len(ds.x_train) == n
        assert ds.x_train.dtype == torch.float32 and float(ds.x_train.min()) >= 0
        assert float(ds.x_train.max()) <= 1 and int(ds.y_train.max()) < classes
        assert str(tmp_path.resolve()) in ds.info["unverified"]
        assert "UNVERIFIED" in ds.info["note"]
    # SVHN's label 10 is digit 0, as torchvision maps it
    assert int(load_dataset("svhn", tmp_path).y_train.max()) <= 9


def test_checksums_are_checked_without_the_switch(tmp_path):
    formats.write_cifar(tmp_path, 100)
    with pytest.raises(DataError):
        load_dataset("cifar100", tmp_path, download=False)


def test_imagenet_is_streamed_with_the_resnet_transforms(tmp_path, unverified):
    folder = formats.write_imagenet(tmp_path, classes=3, train=4, val=2)
    ds = load_dataset("imagenet", folder)
    assert ds.num_classes == 3 and len(ds.x_train) == 12 and len(ds.x_test) == 6
    assert tuple(ds.x_train.shape) == (12, 3, 224, 224)
    assert ds.y_train.tolist() == [0] * 4 + [1] * 4 + [2] * 4
    batch = ds.x_train[torch.tensor([0, 5, 11])]  # only these three files are decoded
    assert batch.shape == (3, 3, 224, 224) and batch.dtype == torch.float32
    val = ds.x_test[0:2]
    assert val.shape == (2, 3, 224, 224)
    torch.testing.assert_close(ds.x_test[0:1], ds.x_test[0:1])  # centre crop: deterministic
    mean, std = ds.x_train.channel_stats()
    assert mean.tolist() == pytest.approx([0.485, 0.456, 0.406])
    loader = ds.x_test.loader(ds.y_test, batch_size=4, workers=2)
    seen = [(x.shape[0], y.tolist()) for x, y in loader]
    assert [n for n, _ in seen] == [4, 2]
    assert sum((labels for _, labels in seen), []) == ds.y_test.tolist()
    assert load_dataset("imagenet", tmp_path).num_classes == 3  # root/imagenet also found
    with pytest.raises(DataError, match="data.imagenet"):
        load_dataset("imagenet", tmp_path / "nowhere")


@pytest.mark.parametrize("name", ["pacs", "vlcs"])
def test_single_source_domains(tmp_path, unverified, name):
    formats.write_domains(tmp_path, name, classes=3, per_class=2)
    source = formats.DOMAINS[name][2]
    ds = load_dataset(f"{name}:{source}", tmp_path)
    assert ds.info["source_domain"] == source
    tests = ds.info["test_domains"]
    assert [d["domain"] for d in tests] == [d for d in formats.DOMAINS[name] if d != source]
    assert len(ds.x_train) == 6 and len(ds.x_test) == 18 and ds.num_classes == 3
    assert all(source not in p for p in ds.x_test.paths)
    assert ds.x_train[torch.tensor([0, 1])].shape == (2, 3, 224, 224)
    with pytest.raises(DataError, match="source domain"):
        load_dataset(name, tmp_path)
    with pytest.raises(DataError, match="missing domain|lacks"):
        load_dataset(f"{name}:{source}", tmp_path / "empty")
