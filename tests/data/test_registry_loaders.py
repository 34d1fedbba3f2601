"""The registry drives loading and preparation: each spec names its loader and says whether the
workflow prepares it; the SVHN stand-in is registered like any data set."""

from __future__ import annotations

import sys
import types

import pytest
import torch

from sharpness.data import DATASETS, DatasetSpec, load_dataset, preparation_inputs
from sharpness.data.arrays import ArrayDataset
from sharpness.data.loaders import loader_for
from sharpness.errors import DataError


@pytest.mark.parametrize("name", sorted(n for n, s in DATASETS.items() if s.loader))
def test_every_registered_loader_imports(name):
    assert callable(loader_for(name))


@pytest.mark.parametrize(("name", "expected"), [
    ("mnist", ["results/data/mnist.json"]), ("cifar100", ["results/data/cifar100.json"]),
    ("mnist_embedded", []), ("cifar10_embedded", []), ("mnist_on_cifar", []),
    ("imagenet", []), ("pacs:photo", []), ("vlcs:SUN09", [])])
def test_preparation_inputs_is_the_registry_answer(name, expected):
    assert preparation_inputs(name) == expected


def test_unknown_data_set_names_the_known_ones():
    with pytest.raises(DataError, match="unknown data set 'nosuch'.*mnist"):
        preparation_inputs("nosuch")
    with pytest.raises(DataError, match="unknown data set"):
        load_dataset("nosuch")


def test_load_dataset_calls_the_loader_the_spec_names(monkeypatch):
    seen = {}

    def load_toy(name, root, *, mirror=None, download=True):
        seen.update(name=name, root=root, mirror=mirror, download=download)
        x = torch.arange(6.0).reshape(6, 1, 1, 1)
        return ArrayDataset(name, x, torch.arange(6), x[:3], torch.arange(3), 6,
                            extras={"tag_train": x * 2, "tag_test": x[:3] * 2})

    module = types.ModuleType("toy_loader_module")
    module.load_toy = load_toy  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "toy_loader_module", module)
    monkeypatch.setitem(DATASETS, "toy", DatasetSpec(
        name="toy", title="toy", source="test", loader="toy_loader_module:load_toy",
        needs_preparing=False))
    ds = load_dataset("toy", "somewhere", mirror="m", download=False, train_size=4, test_size=2)
    assert seen == {"name": "toy", "root": "somewhere", "mirror": "m", "download": False}
    assert len(ds.x_train) == 4 and len(ds.x_test) == 2
    # the side arrays are trimmed with their split
    assert ds.extras["tag_train"].flatten().tolist() == [0, 2, 4, 6]
    assert ds.extras["tag_test"].flatten().tolist() == [0, 2]


def test_a_spec_without_loader_is_a_clear_error():
    with pytest.raises(DataError, match="'cifar10_jpeg' has no tensor loader"):
        load_dataset("cifar10_jpeg")


def test_the_stand_in_loads_by_name_with_its_digits():
    from sharpness.data.composite import STAND_IN, build_mnist_on_cifar

    ds = load_dataset("mnist_on_cifar")
    built = build_mnist_on_cifar(seed=0)
    assert ds.info["stand_in"] == STAND_IN == DATASETS["mnist_on_cifar"].stand_in
    assert torch.equal(ds.x_test, built.dataset.x_test)
    assert torch.equal(ds.extras["digit_test"], built.digit_test)
    assert torch.equal(ds.extras["digit_train"], built.digit_train)


@pytest.mark.e2e  # a command in a fresh interpreter
def test_data_prepare_offers_only_sets_with_a_copy_on_disk(tmp_path, bin_dir, capsys):
    """`sharpness data prepare` (the command itself) refuses the stand-in; `data list` (run
    in this process) lists it."""
    import subprocess

    from sharpness.cli import main

    proc = subprocess.run([str(bin_dir / "sharpness"), "data", "prepare", "mnist_on_cifar",
                           "--out", str(tmp_path / "x.json")], capture_output=True, text=True)
    assert proc.returncode == 2 and "invalid choice: 'mnist_on_cifar'" in proc.stderr
    assert not (tmp_path / "x.json").exists()
    capsys.readouterr()
    assert main(["data", "list"]) == 0
    assert "mnist_on_cifar" in capsys.readouterr().out  # registered, listed, nothing to prepare
