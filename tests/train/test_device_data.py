"""The fast single-device path: device-resident batches equal the DataLoader's, fp16 refused,
channels_last and cuDNN autotuning resolved per device."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from sharpness.errors import ConfigError
from sharpness.io import read_json
from sharpness.train import augment_batch, train, validate_config
from sharpness.train.device_data import (
    DeviceBatches,
    LoaderBatches,
    Shard,
    keep_on_device,
    make_batches,
)
from sharpness.train.performance import cudnn_autotune, use_channels_last

REPO = Path(__file__).resolve().parents[2]
AUG = {"crop": 4, "flip": True, "cutout": 8}


def _data(n: int = 70, side: int = 16) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(0)
    return torch.rand(n, 3, side, side, generator=g), torch.randint(0, 10, (n,), generator=g)


def _epochs(source, k: int = 2) -> list[tuple[torch.Tensor, torch.Tensor]]:
    return [b for _ in range(k) for b in source.epoch()]


@pytest.mark.parametrize("workers", [0, 2])
@pytest.mark.parametrize("drop_last", [False, True])
def test_device_batches_equal_dataloader_batches(workers, drop_last):
    x, y = _data()
    fill = torch.tensor([0.5, 0.4, 0.3])
    kw = {"batch_size": 16, "drop_last": drop_last, "augment": AUG, "fill": fill}
    dev = DeviceBatches(x, y, generator=torch.Generator().manual_seed(5), **kw)
    gen_loader = torch.Generator().manual_seed(5)
    loader = LoaderBatches(x, y, generator=gen_loader, device=torch.device("cpu"),
                           workers=workers, **kw)
    a, b = _epochs(dev), _epochs(loader)
    assert len(a) == len(b) == 2 * (4 if drop_last else 5)
    for (xa, ya), (xb, yb) in zip(a, b, strict=True):
        assert torch.equal(xa, xb) and torch.equal(ya, yb)
    # the augmentations did something: batches are not plain gathers of the data
    assert not any(torch.equal(xa, x[: len(xa)]) for xa, _ in a)


def test_device_batches_equal_the_engines_former_loop():
    """The draws and their order are those of the engine before the batch sources existed:
    a permutation per epoch, then augment_batch per batch, from one CPU generator."""
    x, y = _data()
    fill = torch.tensor([0.1, 0.2, 0.3])
    gen = torch.Generator().manual_seed(9)
    expected = []
    for _ in range(2):
        perm = torch.randperm(len(x), generator=gen)
        for b in range(5):
            idx = perm[b * 16:(b + 1) * 16]
            expected.append((augment_batch(x[idx], generator=gen, fill=fill, **AUG), y[idx]))
    got = _epochs(DeviceBatches(x, y, batch_size=16, drop_last=False, augment=AUG, fill=fill,
                                generator=torch.Generator().manual_seed(9)))
    for (xa, ya), (xb, yb) in zip(expected, got, strict=True):
        assert torch.equal(xa, xb) and torch.equal(ya, yb)


def test_shards_tile_the_global_batch():
    x, y = _data(n=70)
    kw = {"batch_size": 16, "drop_last": False, "augment": AUG}
    whole = _epochs(DeviceBatches(x, y, generator=torch.Generator().manual_seed(1), **kw))
    pieces = [_epochs(make_batches(x, y, on_device=r == 0, generator=torch.Generator()
                                   .manual_seed(1), device=torch.device("cpu"),
                                   shard=Shard(r, 3), **kw)) for r in range(3)]
    for i, (xg, yg) in enumerate(whole):
        assert torch.equal(torch.cat([p[i][0] for p in pieces]), xg)
        assert torch.equal(torch.cat([p[i][1] for p in pieces]), yg)
    assert [len(p[-1][1]) for p in pieces] == [2, 2, 2]  # last batch: 6 = 70 - 4 * 16


def test_keep_on_device_auto():
    assert keep_on_device("auto", torch.zeros(10, 3, 32, 32))
    assert not keep_on_device("auto", torch.zeros(2, 3, 224, 224))
    assert keep_on_device(True, torch.zeros(2, 3, 224, 224))
    assert not keep_on_device(False, torch.zeros(10, 3, 32, 32))


RUN = {"dataset": "cifar10_embedded", "data_root": str(REPO / "data"), "train_size": 80,
       "test_size": 40, "model": "resnet18", "width": 0.0625, "optimizer": "sam",
       "opt_hparams": {"rho": 0.05}, "epochs": 2, "batch_size": 32, "lr": 0.05,
       "augment": {"crop": 4, "flip": True, "cutout": 8}, "seed": 2}


@pytest.mark.e2e  # two whole training runs compared bit for bit
def test_engine_device_and_loader_paths_train_identically(tmp_path):
    torch.set_num_threads(1)
    a = train({**RUN, "data_on_device": True}, tmp_path / "device")
    b = train({**RUN, "data_on_device": False, "loader_workers": 1}, tmp_path / "loader")
    a.pop("config_id"), b.pop("config_id")  # the settings differ, the numbers must not
    assert a == b
    assert (tmp_path / "device/metrics.jsonl").read_bytes() == \
        (tmp_path / "loader/metrics.jsonl").read_bytes()
    prov = [read_json(tmp_path / d / "provenance.json") for d in ("device", "loader")]
    assert [p.get("data_path") for p in prov] == ["device", "loader"]


def test_channels_last_is_never_used_on_the_cpu_and_the_record_says_so(tmp_path, caplog):
    """Forced NHWC on the CPU aborted the process in oneDNN's backward (torch 2.14.1, AVX2 AMD
    EPYC): on the CPU the setting is ignored with a warning, and the provenance says NCHW."""
    torch.set_num_threads(1)
    with caplog.at_level("WARNING", logger="sharpness.train.performance"):
        b = train({**RUN, "epochs": 1, "channels_last": True}, tmp_path / "nhwc")
    assert "channels_last: true is ignored on cpu" in caplog.text
    assert read_json(tmp_path / "nhwc/provenance.json")["channels_last"] is False
    assert b["status"] == "ok"


def test_channels_last_and_autotune_resolve_per_device():
    conv = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3))
    lin = torch.nn.Sequential(torch.nn.Linear(3, 4))
    cpu, cuda = torch.device("cpu"), torch.device("cuda")
    assert use_channels_last("auto", conv, cuda) and not use_channels_last("auto", lin, cuda)
    assert not use_channels_last("auto", conv, cpu) and not use_channels_last(True, conv, cpu)
    assert use_channels_last(True, lin, cuda)
    before = torch.backends.cudnn.benchmark
    with cudnn_autotune(True, cpu) as on:
        assert on is False and torch.backends.cudnn.benchmark == before


@pytest.mark.parametrize("extra", [{"fp16": True}, {"precision": "float16"},
                                   {"amp": "fp16"}, {"precision": "16-mixed"}])
def test_fp16_is_refused_with_the_reason(extra):
    with pytest.raises(ConfigError) as err:
        validate_config({"dataset": "mnist_embedded", "model": "cnn", **extra})
    message = str(err.value)
    assert repr(next(iter(extra))) in message and "GradScaler" in message and "bf16" in message


def test_new_keys_are_validated():
    base = {"dataset": "mnist_embedded", "model": "cnn"}
    for key, bad in (("channels_last", "yes"), ("data_on_device", 1), ("gpus", 0),
                     ("loader_workers", -1)):
        with pytest.raises(ConfigError, match=repr(key)):
            validate_config({**base, key: bad})


@pytest.mark.gpu
def test_cuda_fast_path_batches_and_settings(tmp_path):
    """On CUDA: device batches equal the pinned DataLoader's; a bf16 run with autotuning
    takes channels_last and records its settings."""
    x, y = _data()
    kw = {"batch_size": 16, "drop_last": False, "augment": AUG, "fill": torch.zeros(3)}
    cuda = torch.device("cuda")
    dev = DeviceBatches(x.to(cuda), y.to(cuda), generator=torch.Generator().manual_seed(3),
                        **kw)
    loader = LoaderBatches(x, y, generator=torch.Generator().manual_seed(3), device=cuda,
                           workers=2, **kw)
    for (xa, ya), (xb, yb) in zip(_epochs(dev), _epochs(loader), strict=True):
        assert xa.is_cuda and xb.is_cuda and torch.equal(xa, xb) and torch.equal(ya, yb)
    train({**RUN, "device": "cuda", "bf16": True, "deterministic": False}, tmp_path / "run")
    prov = read_json(tmp_path / "run/provenance.json")
    assert prov["channels_last"] is True and prov["cudnn_benchmark"] is True
    assert prov["bf16"] is True and prov["data_path"] == "device"
