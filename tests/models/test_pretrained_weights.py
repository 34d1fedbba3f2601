"""Pretrained weights from the torch hub cache are never unpickled unchecked: a file
whose whole SHA-256 is not the pinned one is refused before it is read, and even a pinned
file is read with ``weights_only=True``."""

from __future__ import annotations

import hashlib
import io
from pathlib import Path

import pytest
import torch

from sharpness.models import PretrainedWeightsUnavailable, build_model


class _RunsCode:
    """Unpickling this object runs code: it creates the file ``marker`` (``open(marker, 'w')``)."""

    def __init__(self, marker: Path) -> None:
        self.marker = str(marker)

    def __reduce__(self):  # noqa: ANN204 - the pickle protocol
        return (io.open, (self.marker, "w"))


def _plant(folder: Path, name: str, marker: Path) -> Path:
    """A pickle that would run code, in the hub cache under the official file name."""
    path = folder / "hub" / "checkpoints" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    torch.save({"state_dict": _RunsCode(marker)}, path)
    return path


@pytest.mark.parametrize(("model", "file_name", "size"), [
    ("resnet50", "resnet50-0676ba61.pth", 224),
    ("vit_b_16", "vit_b_16-c867db91.pth", 224),
])
def test_a_pickle_in_the_hub_cache_is_refused_and_nothing_runs(tmp_path, monkeypatch, model,
                                                                file_name, size):
    """The case: a pickle placed in TORCH_HOME/hub/checkpoints/ under ResNet-50's (or
    ViT-B/16's) ImageNet file name. Building the pretrained model refuses it with what to do;
    the code in it never runs and the file is left where it is."""
    monkeypatch.setenv("TORCH_HOME", str(tmp_path / "torch"))
    marker = tmp_path / "executed"
    planted = _plant(tmp_path / "torch", file_name, marker)
    with pytest.raises(PretrainedWeightsUnavailable) as info:
        build_model(model, num_classes=7, in_channels=3, image_size=size, pretrained=True)
    assert not marker.exists(), "the cached pickle was unpickled and ran"
    from sharpness.models import PretrainedWeightsRefused

    assert isinstance(info.value, PretrainedWeightsRefused)
    text = str(info.value)
    assert str(planted) in text and "is not loaded" in text and "bytes" in text
    assert "Delete or move it" in text and "download.pytorch.org" in text
    assert planted.exists()  # never deleted: it may be the user's own file


def test_the_pins_are_torchvisions_files_with_their_published_prefix():
    """Each pin names torchvision's URL for the weights the models load, and its SHA-256 starts
    with the 8 hex digits torchvision publishes in the file name."""
    from torchvision.models import ResNet50_Weights, ViT_B_16_Weights

    from sharpness.models.pretrained import PINNED

    for enum in (ResNet50_Weights.IMAGENET1K_V1, ViT_B_16_Weights.IMAGENET1K_V1):
        pin = PINNED[f"{type(enum).__name__}.{enum.name}"]
        assert pin.url == enum.url
        prefix = pin.file_name.rsplit("-", 1)[1].split(".")[0]
        assert len(prefix) == 8 and pin.sha256.startswith(prefix) and len(pin.sha256) == 64


@pytest.fixture
def tiny_pin(tmp_path, monkeypatch):
    """A pinned file of a few bytes (the real ones are 100-350 MB) in a fresh hub cache."""
    from sharpness.models import pretrained

    monkeypatch.setenv("TORCH_HOME", str(tmp_path / "torch"))

    def pin(content: bytes) -> pretrained.PinnedWeights:
        entry = pretrained.PinnedWeights(
            title="tiny test weights", url="https://download.invalid/models/tiny-00000000.pth",
            sha256=hashlib.sha256(content).hexdigest(), size=len(content))
        monkeypatch.setitem(pretrained.PINNED, "tiny", entry)
        return entry
    return pin


def _saved(obj: object) -> bytes:
    buf = io.BytesIO()
    torch.save(obj, buf)
    return buf.getvalue()


def test_a_file_matching_its_pin_loads_with_weights_only(tmp_path, tiny_pin):
    from sharpness.models.pretrained import hub_checkpoints, load_pinned

    good = _saved({"w": torch.arange(3.0)})
    pin = tiny_pin(good)
    (hub_checkpoints()).mkdir(parents=True)
    (hub_checkpoints() / pin.file_name).write_bytes(good)
    assert torch.equal(load_pinned("tiny")["w"], torch.arange(3.0))


def test_even_a_pinned_file_is_read_with_weights_only(tmp_path, tiny_pin):
    """Were a pin itself wrong (a poisoned upstream file), the file is still not unpickled with
    code: ``weights_only=True`` refuses it."""
    from sharpness.models.pretrained import PretrainedWeightsRefused, hub_checkpoints, load_pinned

    marker = tmp_path / "executed"
    bad = _saved({"state_dict": _RunsCode(marker)})
    pin = tiny_pin(bad)
    hub_checkpoints().mkdir(parents=True)
    (hub_checkpoints() / pin.file_name).write_bytes(bad)
    with pytest.raises(PretrainedWeightsRefused, match="cannot be read as weights"):
        load_pinned("tiny")
    assert not marker.exists()


def test_a_download_is_checked_before_it_enters_the_cache(tmp_path, tiny_pin, monkeypatch):
    import sharpness.data.fetch as fetch
    from sharpness.models.pretrained import PretrainedWeightsRefused, hub_checkpoints, load_pinned

    good = _saved({"w": torch.ones(2)})
    pin = tiny_pin(good)
    served = {"bytes": b"not the weights"}

    def fake_download(url: str, dest: Path, desc: str | None = None, timeout: float = 30.0):
        assert url == pin.url
        dest.write_bytes(served["bytes"])
        return dest

    monkeypatch.setattr(fetch, "download_url", fake_download)
    with pytest.raises(PretrainedWeightsRefused, match="the download is wrong"):
        load_pinned("tiny")
    assert not (hub_checkpoints() / pin.file_name).exists()
    assert not list(hub_checkpoints().glob("*.part"))  # no partial file left behind
    served["bytes"] = good
    assert torch.equal(load_pinned("tiny")["w"], torch.ones(2))
    assert (hub_checkpoints() / pin.file_name).read_bytes() == good


def test_offline_without_the_file_says_what_to_put_where(tmp_path, tiny_pin, monkeypatch):
    import sharpness.data.fetch as fetch
    from sharpness.models.pretrained import load_pinned

    pin = tiny_pin(b"x")

    def no_network(*args, **kwargs):
        raise OSError("network disabled in tests")

    monkeypatch.setattr(fetch, "download_url", no_network)
    with pytest.raises(PretrainedWeightsUnavailable, match="put it at") as info:
        load_pinned("tiny")
    assert pin.sha256 in str(info.value) and pin.url in str(info.value)
