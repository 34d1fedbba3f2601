"""Multi-GPU training with DistributedDataParallel, and what SAM-type steps do under it.

A run whose config says ``gpus: N`` (N > 1) is launched as N processes by ``torchrun``
(the workflow rule does it: ``torchrun --standalone --nproc-per-node N --no-python sharpness
train ...``); each process trains on one device (``cuda:LOCAL_RANK``; on a machine without
CUDA, a CPU process with the gloo backend, which is how the tests run it).

The step, per process, on its piece of the global batch (``batch_size / N`` examples, see
:class:`sharpness.train.device_data.Shard`):

1. clean pass under ``DDP.no_sync()``: the gradient ``g_r`` of this process's piece only;
2. the optimizer's perturbation from ``g_r`` alone (``eps_r = rho g_r / ||g_r||`` for SAM, the
   loss-equated radius of LE-SAM from its own ``g_r``): **m-sharpness with m = per-device
   batch** (Foret et al., 2021, Sec. 4.1; the per-device perturbation of their ImageNet runs);
3. perturbed pass at ``theta + eps_r``, *synchronised*: DDP all-reduces (averages) the
   perturbed gradients, so every process takes the same base step and the weights stay equal.

With ``ddp_perturbation: global`` the clean pass is synchronised too, so every process
perturbs with the all-reduced gradient (m = the global batch, up to BatchNorm's per-device
statistics): what the LE-SAM authors' DDP loop does (``lesam.py`` wraps the model in DDP
and calls ``backward`` on the centre loss without ``no_sync``), at the price of a second
all-reduce per step. Plain SGD has one synchronised pass. The stop checks (NaN/inf, ``diverge_loss``) look at the
loss averaged over processes, so all processes stop at the same step.

BatchNorm: per-device batch statistics (no ``SyncBatchNorm``) and rank 0's running statistics
broadcast to every process at each forward (DDP's ``forward_sync_buffers``, on by default), as
torchvision's reference ImageNet script does by default (its ``--sync-bn`` is off) and the
LE-SAM authors' code does (``DDP(model, device_ids=[local_rank])``, no SyncBatchNorm). Evaluation, checkpoints and
``model.pt`` therefore use rank 0's running statistics (broadcast before each evaluation).

Seeds, checkpoints and resume: every process seeds the data generator alike (they draw the
same global batches); each process's own torch RNG stream is seeded ``seed + 7919 * rank``
after the model is built (rank 0 keeps the single-process stream). Rank 0 writes every file;
the checkpoint holds every process's RNG states (gathered), and on resume every process loads
the same checkpoint and takes back its own RNG state.
"""

from __future__ import annotations

import contextlib
import datetime
import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
import torch.distributed as dist
from torch import nn

from sharpness.device import resolve_device
from sharpness.errors import ConfigError
from sharpness.train.device_data import Shard

RNG_STRIDE = 7919


@dataclass(frozen=True)
class DistContext:
    """This process's place in the run: rank, number of processes, local device index."""

    rank: int = 0
    world: int = 1
    local_rank: int = 0
    backend: str | None = None

    @property
    def enabled(self) -> bool:
        """More than one process."""
        return self.world > 1

    @property
    def is_main(self) -> bool:
        """Rank 0: the process that writes files."""
        return self.rank == 0

    @property
    def shard(self) -> Shard:
        """Which piece of each global batch this process trains on."""
        return Shard(self.rank, self.world)

    def describe(self, per_device_batch: int, perturbation: str = "local") -> dict[str, Any]:
        """What the provenance records about the distribution of the run."""
        if not self.enabled:
            return {"world_size": 1}
        local = perturbation == "local"
        return {"world_size": self.world, "backend": self.backend,
                "per_device_batch": per_device_batch,
                "m_sharpness": per_device_batch if local else per_device_batch * self.world,
                "perturbation": "per device, from its own shard's gradient (no_sync); "
                                "perturbed gradients all-reduced" if local else
                                "from the all-reduced gradient; perturbed gradients "
                                "all-reduced",
                "batchnorm": "per-device batch statistics, rank 0's running statistics "
                             "broadcast (DDP forward_sync_buffers)"}


def check_last_batch(ctx: DistContext, n: int, batch_size: int, drop_last: bool) -> None:
    """A last partial batch must give every process at least one example."""
    if not ctx.enabled or drop_last:
        return
    rest = n % min(batch_size, n)
    if 0 < rest < ctx.world:
        raise ConfigError(f"train config key 'drop_last': the last batch of {rest} example(s) "
                          f"cannot be split over {ctx.world} processes; set drop_last: true "
                          f"or change batch_size")


def context_for(cfg: dict[str, Any]) -> DistContext:
    """The context of this process, from ``torchrun``'s environment and the config.

    ``gpus: 1`` is a single process whatever the environment says; ``gpus: N > 1`` must run
    under ``torchrun --nproc-per-node N``.
    """
    n = cfg["gpus"]
    if n == 1:
        return DistContext()
    world = int(os.environ.get("WORLD_SIZE", "1"))
    if "RANK" not in os.environ or world != n:
        raise ConfigError(
            f"train config key 'gpus': {n} asks for {n} processes; launch it with "
            f"`torchrun --standalone --nproc-per-node {n} --no-python sharpness train ...` "
            f"(the workflow rule does), found WORLD_SIZE={os.environ.get('WORLD_SIZE')}")
    backend = "nccl" if resolve_device(cfg["device"]).type == "cuda" else "gloo"
    return DistContext(int(os.environ["RANK"]), world, int(os.environ.get("LOCAL_RANK", "0")),
                       backend)


def device_for(ctx: DistContext, device: torch.device) -> torch.device:
    """Each process's own GPU (``cuda:LOCAL_RANK``); CPU processes share the CPU."""
    if ctx.enabled and device.type == "cuda":
        torch.cuda.set_device(ctx.local_rank)
        return torch.device("cuda", ctx.local_rank)
    return device


def init(ctx: DistContext) -> None:
    """Join the process group (once per process)."""
    if ctx.enabled and not dist.is_initialized():
        dist.init_process_group(ctx.backend, timeout=datetime.timedelta(minutes=30))


def shutdown(ctx: DistContext) -> None:
    """Leave the process group."""
    if ctx.enabled and dist.is_initialized():
        dist.destroy_process_group()


def wrap(model: nn.Module, ctx: DistContext, device: torch.device) -> nn.Module:
    """``DistributedDataParallel(model)`` for a multi-process run, else ``model`` itself."""
    if not ctx.enabled:
        return model
    ids = [device.index] if device.type == "cuda" else None
    # forward_sync_buffers (formerly broadcast_buffers): rank 0's BatchNorm running
    # statistics are sent to every process before each forward
    return nn.parallel.DistributedDataParallel(model, device_ids=ids, forward_sync_buffers=True)


def pass_context(net: nn.Module, two_pass: bool, perturbation: str = "local"
                 ) -> Callable[[int], contextlib.AbstractContextManager[Any]]:
    """``context(call_index)`` for the closure: with ``local`` perturbation the clean pass of
    a two-pass optimizer runs under ``no_sync`` (local gradient, local perturbation); every
    other pass is synchronised."""
    no_sync = getattr(net, "no_sync", None)
    local = perturbation == "local"

    def context(call: int) -> contextlib.AbstractContextManager[Any]:
        if no_sync is not None and two_pass and local and call == 0:
            return no_sync()
        return contextlib.nullcontext()
    return context


def mean_over_ranks(ctx: DistContext, value: float, device: torch.device) -> float:
    """``value`` averaged over processes (NaN anywhere gives NaN: every rank stops alike)."""
    if not ctx.enabled:
        return value
    t = torch.tensor([value], dtype=torch.float64, device=device)
    dist.all_reduce(t)
    return float(t) / ctx.world


def sum_over_ranks(ctx: DistContext, values: list[float], device: torch.device) -> list[float]:
    """Element-wise sums over processes (epoch loss sums, correct counts, examples seen)."""
    if not ctx.enabled:
        return values
    t = torch.tensor(values, dtype=torch.float64, device=device)
    dist.all_reduce(t)
    return [float(v) for v in t]


def broadcast_buffers(ctx: DistContext, model: nn.Module) -> None:
    """Rank 0's buffers (BatchNorm running statistics) on every process."""
    if not ctx.enabled:
        return
    for buf in model.buffers():
        dist.broadcast(buf, src=0)


def reseed(ctx: DistContext, seed: int) -> None:
    """Give every process but rank 0 its own torch RNG stream (dropout, stochastic depth)."""
    if ctx.enabled and ctx.rank:
        torch.manual_seed(seed + RNG_STRIDE * ctx.rank)


def gather_rng(ctx: DistContext) -> list[dict[str, Any]] | None:
    """Every process's torch (and CUDA) RNG state, in rank order, on every process."""
    if not ctx.enabled:
        return None
    mine = {"torch": torch.get_rng_state(),
            "cuda": torch.cuda.get_rng_state() if torch.cuda.is_available() else None}
    states: list[Any] = [None] * ctx.world
    dist.all_gather_object(states, mine)
    return states


def restore_rng(ctx: DistContext, states: list[dict[str, Any]] | None) -> None:
    """Take back this process's own RNG state from a checkpoint's gathered states."""
    if not ctx.enabled or states is None:
        return
    if len(states) != ctx.world:
        raise ConfigError(f"checkpoint was written by {len(states)} processes, this run has "
                          f"{ctx.world} (train config key 'gpus')")
    own = states[ctx.rank]
    torch.set_rng_state(own["torch"])
    if own["cuda"] is not None and torch.cuda.is_available():
        torch.cuda.set_rng_state(own["cuda"])


def barrier(ctx: DistContext) -> None:
    """Wait for every process."""
    if ctx.enabled:
        dist.barrier()


def shard_slice(ctx: DistContext, n: int) -> slice:
    """This process's contiguous piece of ``n`` evaluation examples."""
    return ctx.shard.take(n)


def combine_means(ctx: DistContext, loss: float, acc: float, n: int,
                  device: torch.device) -> tuple[float, float]:
    """Means over all processes' pieces from each piece's means and size."""
    if not ctx.enabled:
        return loss, acc
    total, correct, count = sum_over_ranks(ctx, [loss * n, acc * n, float(n)], device)
    count = max(count, 1.0)
    return total / count, correct / count



class NullRecord:
    """Stands in for :class:`sharpness.runs.run_record.RunRecord` on ranks other than 0."""

    def __enter__(self) -> NullRecord:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def update(self, **fields: Any) -> None:
        """Nothing: rank 0 records the run."""
        del fields

    def set_status(self, status: str, **fields: Any) -> None:
        """Nothing: rank 0 records the run."""
        del status, fields
