"""Where the training batches come from: the device-resident path and the DataLoader path.

Both paths produce the *same* batches for the same seed, because both take every random
number from the run's one CPU generator in the same order: at the start of an epoch a
permutation of the training set, then for each batch its augmentation draws
(:func:`sharpness.train.augment.draw_params`: crop offsets, flips, Cutout centres).

:class:`DeviceBatches`
    CIFAR-size data sets (CIFAR-10/100, SVHN, MNIST: at most a few hundred MB as uint8 or
    float32) live on the device for the whole run; each batch is gathered by index and
    cropped, flipped and cut out there, in one batched call. No worker processes, no host to
    device copies, so the input pipeline is never the bottleneck of a GPU step.
:class:`LoaderBatches`
    The conventional ``torch.utils.data.DataLoader`` path for data kept in host memory:
    the batch plans (indices and draws) are made in the main process by a sampler, so their
    order does not depend on the number of workers; workers gather and augment on the CPU;
    batches are pinned (on CUDA) and copied with ``non_blocking=True``.

Under DistributedDataParallel every process draws the *global* batch (the generator is
seeded alike on every rank) and keeps its own contiguous shard of it
(``torch.tensor_split`` into ``world`` pieces): the global batch of a DDP run is the batch of
the single-process run, and rank ``r`` trains on piece ``r``.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor

from sharpness.errors import ConfigError
from sharpness.train.augment import CUTOUT_P, AugmentParams, apply_params, draw_params
from sharpness.train.performance import batch_to_device

#: ``data_on_device: auto`` keeps a training set on the device up to this many bytes
DEVICE_DATA_MAX_BYTES = 4 * 2**30
#: ... and of images at most this many pixels on a side (CIFAR/SVHN/MNIST, not ImageNet)
DEVICE_DATA_MAX_SIDE = 64


@dataclass(frozen=True)
class Shard:
    """Which piece of each global batch this process trains on."""

    rank: int = 0
    world: int = 1

    def take(self, n: int) -> slice:
        """The slice of a global batch of ``n`` examples that is this rank's piece."""
        if self.world == 1:
            return slice(0, n)
        sizes = [len(p) for p in torch.arange(n).tensor_split(self.world)]
        start = sum(sizes[:self.rank])
        return slice(start, start + sizes[self.rank])


def steps_per_epoch(n: int, batch_size: int, drop_last: bool) -> int:
    """Optimizer steps in one pass over ``n`` examples."""
    bs = min(batch_size, n)
    return n // bs if drop_last else math.ceil(n / bs)


def keep_on_device(setting: bool | str, x: Tensor) -> bool:
    """Resolve ``data_on_device``: ``auto`` = small images whose whole set fits the budget.
    Image folders streamed from disk (:mod:`sharpness.data.folders`) never are."""
    if hasattr(x, "paths"):
        if setting is True:
            raise ConfigError("train config key 'data_on_device': this data set is streamed "
                              "from image folders; use 'auto' or false")
        return False
    if setting != "auto":
        return bool(setting)
    small = x.dim() == 4 and max(x.shape[2], x.shape[3]) <= DEVICE_DATA_MAX_SIDE
    return small and x.element_size() * x.nelement() <= DEVICE_DATA_MAX_BYTES


@dataclass(frozen=True)
class _Plan:
    """One batch: global indices, their augmentation draws, and this rank's piece."""

    indices: Tensor
    params: AugmentParams
    piece: slice


def _slice_params(p: AugmentParams, piece: slice) -> AugmentParams:
    return AugmentParams(**{k: (None if v is None else v[piece]) for k, v in vars(p).items()})


class _Planner:
    """The draws shared by both paths: a permutation per epoch, then per-batch parameters."""

    def __init__(self, n: int, image_shape: tuple[int, ...], *, batch_size: int,
                 drop_last: bool, augment: dict[str, Any], generator: torch.Generator,
                 shard: Shard) -> None:
        self.n = n
        self.height, self.width = int(image_shape[-2]), int(image_shape[-1])
        self.bs = min(batch_size, n)
        self.steps = steps_per_epoch(n, batch_size, drop_last)
        self.augment = augment
        self.gen = generator
        self.shard = shard

    def plans(self) -> Iterator[_Plan]:
        perm = torch.randperm(self.n, generator=self.gen)
        aug = self.augment
        for b in range(self.steps):
            idx = perm[b * self.bs:(b + 1) * self.bs]
            params = draw_params(len(idx), self.height, self.width, crop=aug["crop"],
                                 flip=aug["flip"], cutout=aug["cutout"], generator=self.gen,
                                 cutout_p=aug.get("cutout_p", CUTOUT_P))
            yield _Plan(idx, params, self.shard.take(len(idx)))


def _materialise(x: Tensor, y: Tensor, plan: _Plan, augment: dict[str, Any],
                 fill: Tensor | None) -> tuple[Tensor, Tensor]:
    idx = plan.indices[plan.piece].to(x.device)
    xb, yb = x[idx], y[idx]
    if augment["crop"] or augment["flip"] or augment["cutout"]:
        xb = apply_params(xb, _slice_params(plan.params, plan.piece), crop=augment["crop"],
                          cutout=augment["cutout"], fill=fill)
    return xb, yb


class DeviceBatches:
    """Batches gathered and augmented on the device that holds the whole training set."""

    kind = "device"

    def __init__(self, x: Tensor, y: Tensor, *, batch_size: int, drop_last: bool,
                 augment: dict[str, Any], generator: torch.Generator,
                 fill: Tensor | None = None, shard: Shard = Shard(),
                 channels_last: bool = False) -> None:
        self.x, self.y = x, y
        self.augment = augment
        self.fill = None if fill is None else fill.to(x.device)
        self.channels_last = channels_last
        self.planner = _Planner(len(x), tuple(x.shape), batch_size=batch_size,
                                drop_last=drop_last, augment=augment, generator=generator,
                                shard=shard)
        self.steps_per_epoch = self.planner.steps

    def epoch(self) -> Iterator[tuple[Tensor, Tensor]]:
        """The batches of one epoch (this rank's pieces), in order.

        The epoch's plans are drawn up front (the same generator calls in the same order as
        drawing them batch by batch) and copied to the device in one transfer, so no step
        waits on a small host-to-device copy of indices or crop offsets.
        """
        plans = list(self.planner.plans())
        if not plans:
            return
        dev = self.x.device
        indices = torch.cat([p.indices for p in plans]).to(dev)
        fields = {k: torch.cat([getattr(p.params, k) for p in plans]).to(dev)
                  for k, v in vars(plans[0].params).items() if v is not None}
        start = 0
        for plan in plans:
            n = len(plan.indices)
            local = _Plan(indices[start:start + n],
                          AugmentParams(**{k: v[start:start + n] for k, v in fields.items()}),
                          plan.piece)
            start += n
            xb, yb = _materialise(self.x, self.y, local, self.augment, self.fill)
            if self.channels_last and xb.dim() == 4:
                xb = xb.contiguous(memory_format=torch.channels_last)
            yield xb, yb


class _PlanSampler(torch.utils.data.Sampler):
    """Yields one :class:`_Plan` per batch, drawn in the main process (worker-independent)."""

    def __init__(self, planner: _Planner) -> None:
        self.planner = planner

    def __iter__(self) -> Iterator[_Plan]:
        return self.planner.plans()

    def __len__(self) -> int:
        return self.planner.steps


class _PlanDataset(torch.utils.data.Dataset):
    """``dataset[plan]`` is the whole (augmented) batch of that plan, built on the CPU."""

    def __init__(self, x: Tensor, y: Tensor, augment: dict[str, Any],
                 fill: Tensor | None) -> None:
        self.x, self.y, self.augment, self.fill = x, y, augment, fill

    def __getitem__(self, plan: _Plan) -> tuple[Tensor, Tensor]:  # type: ignore[override]
        return _materialise(self.x, self.y, plan, self.augment, self.fill)


class LoaderBatches:
    """Batches from a ``DataLoader`` over host memory: CPU workers, pinned, non-blocking."""

    kind = "loader"

    def __init__(self, x: Tensor, y: Tensor, *, batch_size: int, drop_last: bool,
                 augment: dict[str, Any], generator: torch.Generator, device: torch.device,
                 fill: Tensor | None = None, shard: Shard = Shard(), workers: int = 0,
                 channels_last: bool = False) -> None:
        self.device = device
        self.channels_last = channels_last
        self.planner = _Planner(len(x), tuple(x.shape), batch_size=batch_size,
                                drop_last=drop_last, augment=augment, generator=generator,
                                shard=shard)
        self.steps_per_epoch = self.planner.steps
        cpu_fill = None if fill is None else fill.detach().cpu()
        # batch_size=None: the sampler's items are whole batches (no automatic collation)
        self.loader = torch.utils.data.DataLoader(
            _PlanDataset(x.cpu(), y.cpu(), augment, cpu_fill), batch_size=None,
            sampler=_PlanSampler(self.planner), num_workers=workers,
            pin_memory=device.type == "cuda", persistent_workers=False)

    def epoch(self) -> Iterator[tuple[Tensor, Tensor]]:
        """The batches of one epoch (this rank's pieces), moved to the device."""
        for xb, yb in self.loader:
            yield batch_to_device(xb, yb, self.device, channels_last=self.channels_last)


BatchSource = DeviceBatches | LoaderBatches


def make_batches(x: Tensor, y: Tensor, *, on_device: bool, batch_size: int, drop_last: bool,
                 augment: dict[str, Any], generator: torch.Generator, device: torch.device,
                 fill: Tensor | None = None, shard: Shard = Shard(), workers: int = 0,
                 channels_last: bool = False) -> BatchSource:
    """The device-resident source when ``on_device``, else the DataLoader source."""
    if on_device:
        return DeviceBatches(x.to(device), y.to(device), batch_size=batch_size,
                             drop_last=drop_last, augment=augment, generator=generator,
                             fill=fill, shard=shard, channels_last=channels_last)
    return LoaderBatches(x, y, batch_size=batch_size, drop_last=drop_last, augment=augment,
                         generator=generator, device=device, fill=fill, shard=shard,
                         workers=workers, channels_last=channels_last)
