"""The training engine: mini-batch SGD-type training and full-batch GD, resumable and exact.

One function, :func:`train`, runs a validated config (:mod:`sharpness.train.config`) into a
run directory:

``metrics.jsonl``
    one JSON row per epoch (mini-batch) or per logged step (full-batch), plus optional step
    rows; only quantities that are functions of (config, seed), so identical runs give
    identical files. Rows have ``kind`` = ``epoch`` / ``step`` / ``diverged``.
``timing.jsonl``
    wall-clock seconds per epoch / logged step (kept apart so metrics stay comparable).
``checkpoint.pt``
    everything needed to continue exactly: model, optimizer (incl. its RNG), the data/augment
    generator, the global torch (and CUDA) RNG states, counters, and how many metric rows
    existed; written atomically every ``checkpoint_every`` epochs / steps.
``model.pt``
    the final model with what is needed to rebuild it (:func:`load_trained_model`).
``final.json``
    summary: status (``ok`` / ``diverged``), stop reason, steps, final train/test loss and
    accuracy.
``provenance.json``
    through :class:`sharpness.provenance.RunRecord` (status ``ok``/``diverged``/``failed``).

Cache key (:mod:`sharpness.cache`): a run folder holds ``cache_key.json``, the digest of the
resolved config, the device used and the code fingerprint of the engine and its hooks'
modules. A finished run (``final.json``) is reused, and a checkpoint resumed, only under the
same key; any other key starts the run over from step 0 and logs why. A finished run deletes
its ``checkpoint.pt``. Checkpoints and ``model.pt`` load with ``weights_only=True``
(:mod:`sharpness.train.checkpoint`).

Resume: if ``checkpoint.pt`` exists (same key), training continues from it, the metrics
file is cut back to the rows that existed at the checkpoint, and the run ends with exactly
the numbers of an uninterrupted run (CPU; tested bit for bit).

Divergence: the training closure checks the clean loss of every step *before* the update; a
NaN/inf loss (or one above ``diverge_loss``) stops the run with status ``diverged`` and the
step, keeps the last finite parameters, and is not an exception. Full-batch runs stop the same
way, with status ``ok``, at the first iterate whose train loss is below ``loss_goal``.
"""

from __future__ import annotations

import contextlib
import logging
import math
import os
import random
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor, nn

from sharpness import cache
from sharpness.device import resolve_device
from sharpness.io import append_jsonl, atomic_torch_save, atomic_write_json, atomic_write_text
from sharpness.optim import BatchClosure, build_optimizer
from sharpness.provenance import PROVENANCE_NAME, RunRecord
from sharpness.train import checkpoint as ckpt
from sharpness.train import distributed as ddp
from sharpness.train import status as run_status
from sharpness.train.config import validate_config
from sharpness.train.device_data import keep_on_device, make_batches
from sharpness.train.performance import (
    autocast_factory,
    cudnn_autotune,
    to_channels_last,
    use_channels_last,
)

log = logging.getLogger(__name__)

Criterion = Callable[[Tensor, Tensor], Tensor]
#: ``hook(model, criterion, x_train, y_train) -> float | dict``: e.g. a Lanczos top eigenvalue
SharpnessHook = Callable[[nn.Module, Criterion, Tensor, Tensor], "float | dict[str, float]"]
#: ``hook(model) -> dict``: extra numbers for each logged row (e.g. parameter norms)
MetricsHook = Callable[[nn.Module], dict[str, float]]

CHECKPOINT = "checkpoint.pt"
METRICS = "metrics.jsonl"
TIMING = "timing.jsonl"
FINAL = "final.json"
MODEL = "model.pt"
CONFIG = "config.json"
EVAL_CHUNK = 1000


@dataclass
class StepInfo:
    """What ``on_step_end`` hooks see after each optimizer step."""

    step: int  # steps completed so far
    epoch: int  # current epoch (0-based; 0 in full-batch mode)
    loss: float  # clean loss of the step
    diagnostics: dict[str, float]


@dataclass
class TrainHooks:
    """Optional callables the engine calls; none of them is saved in checkpoints.

    ``sharpness`` every ``sharpness_every`` epochs/steps on the (un-augmented) train set;
    ``metrics`` on every logged row; ``on_step_end`` after every step (tests raise from it to
    simulate a kill).
    """

    sharpness: SharpnessHook | None = None
    metrics: MetricsHook | None = None
    on_step_end: Callable[[StepInfo], None] | None = None


class InputNormalization(nn.Module):
    """``net((x - mean) / std)``: the model takes raw [0, 1] images; stats are buffers."""

    def __init__(self, net: nn.Module, mean: Tensor, std: Tensor) -> None:
        super().__init__()
        self.net = net
        self.register_buffer("mean", mean.detach().clone().view(1, -1, 1, 1))
        self.register_buffer("std", std.detach().clone().view(1, -1, 1, 1))

    def forward(self, x: Tensor) -> Tensor:
        """Standardise, then the wrapped network."""
        return self.net((x - self.mean) / self.std)


class _Stop(Exception):  # noqa: N818 - control flow, not an error
    """Raised inside the closure's clean pass, before any parameter moves."""

    def __init__(self, reason: str, loss: float) -> None:
        super().__init__(reason)
        self.reason = reason
        self.loss = loss


def per_example_loss(kind: str, num_classes: int, label_smoothing: float = 0.0) -> Criterion:
    """Per-example loss: cross-entropy (optionally label-smoothed) or
    MSE ``0.5 * ||f(x) - onehot(y)||^2`` (the square loss of the EoS literature)."""
    if kind == "ce":
        def ce(out: Tensor, y: Tensor) -> Tensor:
            return F.cross_entropy(out.float(), y, reduction="none",
                                   label_smoothing=label_smoothing)
        return ce

    def mse(out: Tensor, y: Tensor) -> Tensor:
        target = F.one_hot(y, num_classes).to(torch.float32)
        return 0.5 * (out.float() - target).square().sum(dim=1)
    return mse


class _EngineClosure(BatchClosure):
    """The optimizers' batch closure plus: bf16 autocast, exact chunked full-batch passes, and
    the stop check (divergence / loss goal) on the clean pass."""

    def __init__(self, model: nn.Module, inputs: Tensor, targets: Tensor, loss_fn: Criterion,
                 *, autocast: Callable[[], contextlib.AbstractContextManager[Any]],
                 chunk: int | None, diverge_loss: float | None,
                 loss_goal: float | None,
                 pass_context: Callable[[int], contextlib.AbstractContextManager[Any]]
                 | None = None,
                 reduce_loss: Callable[[float], float] | None = None) -> None:
        super().__init__(model, inputs, targets, loss_fn)
        self._autocast = autocast
        # DDP (sharpness.train.distributed): which passes sync gradients, the loss over ranks
        self._pass_context = pass_context
        self._reduce_loss = reduce_loss
        self._chunk = chunk
        self._diverge = diverge_loss
        self._goal = loss_goal

    def _forward(self, indices: Tensor | None) -> Tensor:
        with self._autocast():
            return super()._forward(indices)

    def __call__(self, indices: Tensor | None = None, reduction: str = "mean",
                 backward: bool = True) -> Tensor:
        first = self.calls == 0
        sync = self._pass_context(self.calls) if self._pass_context else contextlib.nullcontext()
        with sync:
            if self._chunk is not None and indices is None and len(self.inputs) > self._chunk:
                result = self._chunked(reduction, backward)
            else:
                result = super().__call__(indices, reduction, backward)
        if first:
            loss = float(result.mean())
            if self._reduce_loss is not None:
                loss = self._reduce_loss(loss)
            if run_status.is_diverged(loss, self._diverge):
                raise _Stop("diverged", loss)
            if self._goal is not None and loss < self._goal:
                raise _Stop("loss_goal", loss)
        return result

    def _chunked(self, reduction: str, backward: bool) -> Tensor:
        self.calls += 1
        n = len(self.inputs)
        losses, outputs = [], []
        for start in range(0, n, self._chunk or n):
            x = self.inputs[start:start + self._chunk]
            y = self.targets[start:start + self._chunk]
            with self._autocast():
                out = self.model(x)
            part = self.loss_fn(out, y)
            if backward:
                (part.sum() / n).backward()
            losses.append(part.detach())
            outputs.append(out.detach())
        if self.clean_outputs is None:
            self.clean_outputs = torch.cat(outputs)
        all_losses = torch.cat(losses)
        return all_losses if reduction == "none" else all_losses.mean()


# -- setup -----------------------------------------------------------------------------------

@contextlib.contextmanager
def deterministic_mode(enabled: bool, device: torch.device) -> Iterator[None]:
    """Deterministic kernels where PyTorch allows (warn where it cannot); restored after."""
    if not enabled:
        yield
        return
    if device.type == "cuda":
        os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
    prev = (torch.are_deterministic_algorithms_enabled(),
            torch.is_deterministic_algorithms_warn_only_enabled(),
            torch.backends.cudnn.deterministic, torch.backends.cudnn.benchmark)
    torch.use_deterministic_algorithms(True, warn_only=True)
    torch.backends.cudnn.deterministic = True
    torch.backends.cudnn.benchmark = False
    try:
        yield
    finally:
        torch.use_deterministic_algorithms(prev[0], warn_only=prev[1])
        torch.backends.cudnn.deterministic = prev[2]
        torch.backends.cudnn.benchmark = prev[3]


@dataclass
class PreparedData:
    """Train/test tensors on the device, with what the model and the provenance need."""

    x_train: Tensor
    y_train: Tensor
    x_test: Tensor
    y_test: Tensor
    num_classes: int
    info: dict[str, Any]


def prepare_data(cfg: dict[str, Any], device: torch.device) -> PreparedData:
    """Load the config's data set (registry), subset it, keep/relabel classes, to device."""
    from sharpness.data import load_dataset

    ds = load_dataset(cfg["dataset"], cfg["data_root"], train_size=cfg["train_size"],
                      test_size=cfg["test_size"])
    xtr, ytr, xte, yte = ds.x_train, ds.y_train, ds.x_test, ds.y_test
    num_classes = ds.num_classes
    info = dict(ds.info)
    if cfg["classes"] is not None:
        keep = torch.tensor(cfg["classes"])
        if int(keep.max()) >= num_classes or int(keep.min()) < 0:
            from sharpness.errors import ConfigError
            raise ConfigError(f"train config key 'classes': {cfg['classes']} outside "
                              f"0..{num_classes - 1}")
        lut = torch.full((num_classes,), -1, dtype=torch.long)
        lut[keep] = torch.arange(len(keep))
        mtr, mte = lut[ytr] >= 0, lut[yte] >= 0
        xtr, ytr, xte, yte = xtr[mtr], lut[ytr[mtr]], xte[mte], lut[yte[mte]]
        num_classes = len(keep)
        info["classes"] = list(cfg["classes"])
    info.update(n_train=len(xtr), n_test=len(xte))
    return PreparedData(xtr.to(device), ytr.to(device), xte.to(device), yte.to(device),
                        num_classes, info)


def build_run_model(cfg: dict[str, Any], data: PreparedData,
                    device: torch.device | None = None) -> InputNormalization:
    """The config's model wrapped in the input standardisation (train-set statistics), on
    ``device`` (default: where the training data is)."""
    from sharpness.models import build_model

    c, h = data.x_train.shape[1], data.x_train.shape[2]
    net = build_model(cfg["model"], data.num_classes, c, h, width=cfg["width"],
                      **cfg["model_kwargs"])
    if cfg["normalize"] and hasattr(data.x_train, "channel_stats"):
        mean, std = data.x_train.channel_stats()  # streamed image folders (ImageNet statistics)
    elif cfg["normalize"]:
        x = data.x_train.double()
        mean = x.mean(dim=(0, 2, 3)).float()
        std = x.std(dim=(0, 2, 3)).clamp_min(1e-6).float()
    else:
        mean, std = torch.zeros(c), torch.ones(c)
    model = InputNormalization(net, mean, std)
    if cfg["init_from"]:
        _init_from(model, Path(cfg["init_from"]), tuple(cfg["init_exclude"]))
    return model.to(device or data.x_train.device)


def _init_from(model: nn.Module, path: Path, exclude: tuple[str, ...] = ()) -> None:
    """Load a run's parameters where names and shapes match, except ``exclude`` prefixes.

    The input statistics stay those of the new data."""
    state = ckpt.safe_load(path)["state_dict"]
    own = model.state_dict()
    own.update({k: v for k, v in state.items()
                if k in own and own[k].shape == v.shape and k not in ("mean", "std")
                and not k.startswith(exclude)})
    model.load_state_dict(own)


def load_trained_model(run_dir: str | os.PathLike[str], map_location: str = "cpu") -> nn.Module:
    """Rebuild a finished run's model from its ``model.pt`` (for Hessians, Grad-CAM, PGD).

    The returned module takes raw [0, 1] images (normalisation inside) and is in eval mode;
    ``model.net`` is the bare network (``model.net.gradcam_layer`` where defined).
    """
    from sharpness.models import build_model

    blob = ckpt.safe_load(Path(run_dir) / MODEL, map_location=map_location)
    b = blob["build"]
    # the weights come from the state dict: never fetch pretrained ones again
    kwargs = {k: v for k, v in b["model_kwargs"].items() if k != "pretrained"}
    net = build_model(b["model"], b["num_classes"], b["in_channels"], b["image_size"],
                      width=b["width"], **kwargs)
    model = InputNormalization(net, torch.zeros(b["in_channels"]), torch.ones(b["in_channels"]))
    model.load_state_dict(blob["state_dict"])
    return model.eval()


# -- evaluation ------------------------------------------------------------------------------

@torch.no_grad()
def evaluate(model: nn.Module, x: Tensor, y: Tensor, loss_fn: Criterion,
             autocast: Callable[[], contextlib.AbstractContextManager[Any]] = contextlib.nullcontext,
             chunk: int = EVAL_CHUNK, workers: int = 0) -> tuple[float, float]:
    """Mean loss and accuracy of ``model`` (eval mode) on ``(x, y)``, in chunks (streamed
    through a DataLoader with ``workers`` when ``x`` is an image folder)."""
    was_training = model.training
    model.eval()
    total, correct = 0.0, 0
    dev = next(model.parameters()).device
    if hasattr(x, "loader"):  # an image folder (sharpness.data.folders): DataLoader workers
        chunks = iter(x.loader(y, chunk, workers=workers, pin_memory=dev.type == "cuda"))
    else:
        chunks = ((x[s:s + chunk], y[s:s + chunk]) for s in range(0, len(x), chunk))
    for xc, yc in chunks:
        xx = xc.to(dev, non_blocking=True)  # a no-op for device data
        with autocast():
            out = model(xx)
        yy = yc.to(dev, non_blocking=True)
        total += float(loss_fn(out, yy).double().sum())
        correct += int((out.argmax(1) == yy).sum())
    model.train(was_training)
    n = max(len(x), 1)
    return total / n, correct / n


def param_norm(model: nn.Module) -> float:
    """l2 norm of all trainable parameters."""
    with torch.no_grad():
        return float(torch.sqrt(sum(p.detach().double().square().sum()
                                    for p in model.parameters() if p.requires_grad)))


def _finite(value: float | None) -> float | None:
    return value if value is not None and math.isfinite(value) else None


def lr_at(cfg: dict[str, Any], step: int, total_steps: int) -> float:
    """Learning rate of step ``step`` (0-based): linear warm-up then cosine or constant.

    ``cosine_epoch`` is ``torch.optim.lr_scheduler.CosineAnnealingLR(T_max=epochs)`` stepped
    once per epoch, as the official loops of LE-SAM, ESAM, ASAM and Eigen-SAM do:
    ``lr * (1 + cos(pi * epoch / epochs)) / 2`` for every step of the epoch.
    """
    lr = cfg["lr"]
    warm = cfg["warmup_steps"]
    if warm and step < warm:
        return lr * (step + 1) / warm
    if cfg["lr_schedule"] == "cosine_epoch":
        epochs = cfg["epochs"]
        epoch = step // max(total_steps // epochs, 1)
        return lr * 0.5 * (1.0 + math.cos(math.pi * min(epoch, epochs) / epochs))
    if cfg["lr_schedule"] == "cosine":
        t = (step - warm) / max(total_steps - warm, 1)
        return lr * 0.5 * (1.0 + math.cos(math.pi * min(t, 1.0)))
    return lr


# -- the engine ------------------------------------------------------------------------------

class _Run:
    """State of one run; :func:`train` drives it."""

    def __init__(self, cfg: dict[str, Any], run_dir: Path, hooks: TrainHooks,
                 progress: bool) -> None:
        self.cfg = cfg
        self.dir = run_dir
        self.hooks = hooks
        self.progress = progress
        self.dist = ddp.context_for(cfg)
        self.device = ddp.device_for(self.dist, resolve_device(cfg["device"]))
        self.use_bf16 = cfg["bf16"] and self.device.type == "cuda"
        self._autocast = autocast_factory(cfg["bf16"], self.device)
        self.config_id = ""  # the cache key's digest, set by train()
        self.rows_written = 0
        self.timing_written = 0
        self.epoch = 0
        self.step = 0
        self.stop: dict[str, Any] | None = None

    def autocast(self) -> contextlib.AbstractContextManager[Any]:
        """bf16 autocast on CUDA when asked, else nothing."""
        return self._autocast()

    def evaluate(self, x: Tensor, y: Tensor) -> tuple[float, float]:
        """Mean loss and accuracy on ``(x, y)``; under DDP each process takes its piece with
        rank 0's BatchNorm statistics and the means are combined."""
        workers = self.cfg["loader_workers"]
        if not self.dist.enabled:
            return evaluate(self.model, x, y, self.loss_fn, self.autocast, workers=workers)
        ddp.broadcast_buffers(self.dist, self.model)
        piece = ddp.shard_slice(self.dist, len(x))
        xs = x.part(piece) if hasattr(x, "part") else x[piece]  # image folders stay lazy
        loss, acc = evaluate(self.model, xs, y[piece], self.loss_fn, self.autocast,
                             workers=workers)
        return ddp.combine_means(self.dist, loss, acc, len(y[piece]), self.device)

    # rows ----------------------------------------------------------------------------------
    def write_row(self, row: dict[str, Any]) -> None:
        """Append a metrics row (non-finite floats become null: JSON has no NaN)."""
        clean = {k: (_finite(v) if isinstance(v, float) else v) for k, v in row.items()}
        if self.dist.is_main:
            append_jsonl(self.dir / METRICS, clean)
        self.rows_written += 1

    def write_timing(self, row: dict[str, Any]) -> None:
        """Append a wall-clock row."""
        if self.dist.is_main:
            append_jsonl(self.dir / TIMING, row)
        self.timing_written += 1

    def extra_metrics(self, row: dict[str, Any]) -> None:
        """Parameter norm and the metrics hook's numbers into ``row``."""
        row["param_norm"] = param_norm(self.model)
        if self.hooks.metrics is not None:
            row.update(self.hooks.metrics(self.model))

    def sharpness(self, row: dict[str, Any]) -> None:
        """The sharpness hook's value(s) on the un-augmented train set into ``row``."""
        if self.hooks.sharpness is None:
            return
        def criterion(out: Tensor, y: Tensor) -> Tensor:
            return self.loss_fn(out, y).mean()
        value = self.hooks.sharpness(self.model, criterion, self.data.x_train, self.data.y_train)
        if isinstance(value, dict):
            row.update({k: float(v) for k, v in value.items()})
        else:
            row["sharpness"] = float(value)

    # checkpoints -----------------------------------------------------------------------------
    def save_checkpoint(self) -> None:
        """Everything an exact resume needs, written atomically."""
        state = {
            "version": 1,
            "config_id": self.config_id,
            "epoch": self.epoch,
            "step": self.step,
            "model": self.model.state_dict(),
            "optimizer": self.opt.state_dict(),
            "data_generator": self.gen.get_state(),
            **ckpt.rng_states(),
            "rows_written": self.rows_written,
            "timing_written": self.timing_written,
            "rank_rng": ddp.gather_rng(self.dist),  # every process's RNG (None: one process)
        }
        if self.dist.is_main:
            atomic_torch_save(self.dir / CHECKPOINT, state)

    def load_checkpoint(self) -> bool:
        """Restore from ``checkpoint.pt`` if present; cut the metrics back to its row count."""
        path = self.dir / CHECKPOINT
        state = ckpt.safe_load(path) if path.exists() else None
        ddp.barrier(self.dist)  # every process has read it before rank 0 may remove it
        main = self.dist.is_main
        if state is not None and state.get("config_id") != self.config_id:
            # A checkpoint of other settings (the user changed the config and the workflow
            # reruns the job): it cannot be resumed, so the run starts over, and says so.
            if main:
                log.warning("%s was written by a different config; starting the run over",
                            path)
                path.unlink()
            state = None
        if state is None:
            for name in (METRICS, TIMING):  # a fresh start: no stale rows
                if main:
                    (self.dir / name).unlink(missing_ok=True)
            return False
        self.model.load_state_dict(state["model"])
        self.opt.load_state_dict(state["optimizer"])
        self.gen.set_state(state["data_generator"])
        ckpt.restore_rng_states(state)
        ddp.restore_rng(self.dist, state.get("rank_rng"))
        self.epoch, self.step = state["epoch"], state["step"]
        for name, keep in ((METRICS, state["rows_written"]), (TIMING, state["timing_written"])):
            if not main:
                continue
            file = self.dir / name
            lines = file.read_text().splitlines(keepends=True) if file.exists() else []
            atomic_write_text(file, "".join(lines[:keep]))
        self.rows_written, self.timing_written = state["rows_written"], state["timing_written"]
        return True

    # setup ---------------------------------------------------------------------------------
    def setup(self) -> None:
        """Seed, data, model, optimizer, generator; then resume if a checkpoint exists."""
        cfg = self.cfg
        seed = cfg["seed"]
        random.seed(seed)
        np.random.seed(seed % 2**32)
        torch.manual_seed(seed)
        data = prepare_data(cfg, torch.device("cpu"))
        # small-image training sets live on the device (sharpness.train.device_data)
        self.data_on_device = keep_on_device(cfg["data_on_device"], data.x_train)
        self.data = PreparedData(
            data.x_train.to(self.device) if self.data_on_device else data.x_train,
            data.y_train.to(self.device) if self.data_on_device else data.y_train,
            data.x_test.to(self.device), data.y_test.to(self.device), data.num_classes,
            data.info)
        torch.manual_seed(seed)  # model init does not depend on how the data was loaded
        self.model = build_run_model(cfg, self.data, self.device)
        self.channels_last = use_channels_last(cfg["channels_last"], self.model, self.device)
        if self.channels_last:
            to_channels_last(self.model)
        ddp.reseed(self.dist, seed)
        self.net = ddp.wrap(self.model, self.dist, self.device)  # the model itself, or DDP
        self.loss_fn = per_example_loss(cfg["loss"], self.data.num_classes,
                                        cfg["label_smoothing"])
        n = len(self.data.x_train)
        if cfg["mode"] == "minibatch":
            bs = min(cfg["batch_size"], n)
            self.steps_per_epoch = n // bs if cfg["drop_last"] else math.ceil(n / bs)
            self.total_steps = self.steps_per_epoch * cfg["epochs"]
        else:
            self.steps_per_epoch = 1
            self.total_steps = cfg["max_steps"]
        self.opt = build_optimizer(cfg["optimizer"], self.model, lr=cfg["lr"],
                                   momentum=cfg["momentum"], weight_decay=cfg["weight_decay"],
                                   nesterov=cfg["nesterov"], total_steps=self.total_steps,
                                   steps_per_epoch=self.steps_per_epoch,
                                   seed=seed, **cfg["opt_hparams"])
        self.gen = torch.Generator().manual_seed(seed + 1)
        self.fill = self.model.mean.view(-1).to(self.device) if cfg["normalize"] else None
        if cfg["mode"] == "minibatch":
            ddp.check_last_batch(self.dist, n, cfg["batch_size"], cfg["drop_last"])
            self.batches = make_batches(
                self.data.x_train, self.data.y_train, on_device=self.data_on_device,
                batch_size=cfg["batch_size"], drop_last=cfg["drop_last"], augment=cfg["augment"],
                generator=self.gen, device=self.device, fill=self.fill, shard=self.dist.shard,
                workers=cfg["loader_workers"], channels_last=self.channels_last)
        self.resumed = self.load_checkpoint()

    def closure(self, x: Tensor, y: Tensor, *, goal: bool) -> _EngineClosure:
        """A closure over one batch with the stop checks."""
        cfg = self.cfg
        distributed = self.dist.enabled
        return _EngineClosure(self.net, x, y, self.loss_fn, autocast=self.autocast,
                              chunk=cfg["fullbatch_chunk"] if cfg["mode"] == "fullbatch" else None,
                              diverge_loss=cfg["diverge_loss"],
                              loss_goal=cfg["loss_goal"] if goal else None,
                              pass_context=ddp.pass_context(self.net, self.opt.two_pass,
                                                            cfg["ddp_perturbation"])
                              if distributed else None,
                              reduce_loss=(lambda v: ddp.mean_over_ranks(self.dist, v,
                                                                         self.device))
                              if distributed else None)

    def set_lr(self) -> float:
        """Set this step's learning rate on every parameter group; return it."""
        lr = lr_at(self.cfg, self.step, self.total_steps)
        for group in self.opt.param_groups:
            group["lr"] = lr
        return lr

    def diverged(self, stop: _Stop) -> None:
        """Record the divergence row and stop."""
        self.stop = run_status.diverged_fields(self.step, stop.loss)
        self.write_row({"kind": "diverged", "epoch": self.epoch, "step": self.step,
                        "loss": stop.loss})

    # mini-batch ----------------------------------------------------------------------------
    def run_minibatch(self) -> None:
        """Epochs of shuffled mini-batches; an epoch row (and optional step rows) each."""
        cfg = self.cfg
        bar = _progress(self.progress and self.dist.is_main, cfg["epochs"], self.epoch,
                        "epochs")
        while self.epoch < cfg["epochs"] and self.stop is None:
            t0 = time.perf_counter()
            self.model.train()
            loss_sum, correct, seen = 0.0, 0, 0
            diag_sum: dict[str, float] = {}
            lr = cfg["lr"]
            for x, y in self.batches.epoch():  # this process's piece of each global batch
                lr = self.set_lr()
                closure = self.closure(x, y, goal=False)
                try:
                    loss = float(self.opt.step(closure))
                except _Stop as stop:
                    self.diverged(stop)
                    break
                out = closure.clean_outputs
                loss_sum += loss * len(y)
                correct += int((out.argmax(1) == y).sum()) if out is not None else 0
                seen += len(y)
                for k, v in self.opt.diagnostics.items():
                    diag_sum[k] = diag_sum.get(k, 0.0) + float(v)
                self.step += 1
                if cfg["log_every"] and self.step % cfg["log_every"] == 0:
                    self.write_row({"kind": "step", "epoch": self.epoch, "step": self.step,
                                    "lr": lr, "loss": loss,
                                    **{f"opt_{k}": float(v)
                                       for k, v in self.opt.diagnostics.items()}})
                if self.hooks.on_step_end is not None:
                    self.hooks.on_step_end(StepInfo(self.step, self.epoch, loss,
                                                    dict(self.opt.diagnostics)))
            if self.stop is not None:
                break
            loss_sum, correct, seen = ddp.sum_over_ranks(self.dist, [loss_sum, correct, seen],
                                                          self.device)
            self.epoch += 1
            row: dict[str, Any] = {"kind": "epoch", "epoch": self.epoch, "step": self.step,
                                   "lr": lr, "train_loss": loss_sum / max(seen, 1),
                                   "train_acc": correct / max(seen, 1)}
            row.update({f"opt_{k}": v / self.steps_per_epoch for k, v in diag_sum.items()})
            last = self.epoch == cfg["epochs"]
            if cfg["eval_every"] and (self.epoch % cfg["eval_every"] == 0 or last):
                row["test_loss"], row["test_acc"] = self.evaluate(self.data.x_test,
                                                                  self.data.y_test)
            if cfg["sharpness_every"] and (self.epoch % cfg["sharpness_every"] == 0 or last):
                self.sharpness(row)
            self.extra_metrics(row)
            self.write_row(row)
            self.write_timing({"epoch": self.epoch, "step": self.step,
                               "seconds": time.perf_counter() - t0,
                               "steps": self.steps_per_epoch})
            if bar is not None:
                bar.update(1)
                bar.set_postfix(loss=f"{row['train_loss']:.4f}", acc=f"{row['train_acc']:.3f}")
            if cfg["checkpoint_every"] and self.epoch % cfg["checkpoint_every"] == 0:
                self.save_checkpoint()
        if bar is not None:
            bar.close()
        if self.stop is None:
            self.stop = {"status": "ok", "reason": "completed"}

    # full-batch ----------------------------------------------------------------------------
    def run_fullbatch(self) -> None:
        """GD on the whole train set until the loss goal, divergence or ``max_steps``."""
        cfg = self.cfg
        x, y = self.data.x_train, self.data.y_train
        bar = _progress(self.progress, cfg["max_steps"], self.step, "steps")
        self.model.train()
        while self.stop is None:
            t0 = time.perf_counter()
            t = self.step
            row: dict[str, Any] = {"kind": "step", "step": t}
            log = bool(cfg["log_every"]) and t % cfg["log_every"] == 0
            if cfg["sharpness_every"] and t % cfg["sharpness_every"] == 0:
                self.sharpness(row)
                log = True
            if t >= cfg["max_steps"]:
                self.stop = {"status": "ok", "reason": "max_steps"}
                if log:
                    row["train_loss"], row["train_acc"] = self.evaluate(x, y)
                    self.extra_metrics(row)
                    self.write_row(row)
                break
            lr = self.set_lr()
            closure = self.closure(x, y, goal=True)
            try:
                loss = float(self.opt.step(closure))
            except _Stop as stop:
                if stop.reason == "diverged":
                    self.diverged(stop)
                else:
                    self.stop = {"status": "ok", "reason": "loss_goal"}
                    row.update(lr=lr, train_loss=stop.loss, stop="loss_goal")
                    out = closure.clean_outputs
                    if out is not None:
                        row["train_acc"] = float((out.argmax(1) == y).float().mean())
                    self.extra_metrics(row)
                    self.write_row(row)
                break
            out = closure.clean_outputs
            self.step += 1
            if log:
                row.update(lr=lr, train_loss=loss,
                           train_acc=float((out.argmax(1) == y).float().mean())
                           if out is not None else None,
                           **{f"opt_{k}": float(v) for k, v in self.opt.diagnostics.items()})
                if cfg["eval_every"] and t % cfg["eval_every"] == 0:
                    row["test_loss"], row["test_acc"] = self.evaluate(self.data.x_test,
                                                                      self.data.y_test)
                    self.model.train()
                self.extra_metrics(row)
                self.write_row(row)
                self.write_timing({"step": t, "seconds": time.perf_counter() - t0})
            if self.hooks.on_step_end is not None:
                self.hooks.on_step_end(StepInfo(self.step, 0, loss, dict(self.opt.diagnostics)))
            if bar is not None:
                bar.update(1)
                if log:
                    bar.set_postfix(loss=f"{loss:.4g}")
            if cfg["checkpoint_every"] and self.step % cfg["checkpoint_every"] == 0:
                self.save_checkpoint()
        if bar is not None:
            bar.close()

    # end -----------------------------------------------------------------------------------
    def finish(self) -> dict[str, Any]:
        """Final evaluation, model.pt and final.json."""
        cfg = self.cfg
        assert self.stop is not None
        train_loss, train_acc = self.evaluate(self.data.x_train, self.data.y_train)
        test_loss, test_acc = self.evaluate(self.data.x_test, self.data.y_test)
        c, h = self.data.x_train.shape[1], self.data.x_train.shape[2]
        final = {
            **self.stop,
            "config_id": self.config_id,
            "mode": cfg["mode"],
            "steps": self.step,
            "epochs": self.epoch,
            "final_train_loss": _finite(train_loss),
            "final_train_acc": train_acc,
            "final_test_loss": _finite(test_loss),
            "final_test_acc": test_acc,
            "num_classes": self.data.num_classes,
            "n_train": len(self.data.x_train),
            "n_test": len(self.data.x_test),
        }
        if not self.dist.is_main:  # rank 0 writes the files
            return final
        atomic_torch_save(self.dir / MODEL, {
            "build": {"model": cfg["model"], "num_classes": self.data.num_classes,
                      "in_channels": c, "image_size": h, "width": cfg["width"],
                      "model_kwargs": cfg["model_kwargs"]},
            "state_dict": {k: v.detach().cpu() for k, v in self.model.state_dict().items()},
            "config": cfg, "status": self.stop["status"], "step": self.step,
        })
        atomic_write_json(self.dir / FINAL, final)
        ckpt.remove(self.dir / CHECKPOINT)  # finished: never resumed again
        return final


def _progress(enabled: bool, total: int, initial: int, unit: str) -> Any:
    if not enabled:
        return None
    from tqdm.auto import tqdm

    return tqdm(total=total, initial=initial, unit=unit, dynamic_ncols=True, leave=False)


#: What a run folder holds besides its key: removed when the key changes.
RUN_FILES = (FINAL, MODEL, CHECKPOINT, METRICS, TIMING, CONFIG, PROVENANCE_NAME)


def run_cache_key(cfg: dict[str, Any], device: torch.device, hooks: TrainHooks
                  ) -> dict[str, Any]:
    """Cache key of a run: resolved config, device type, code of the engine and its hooks."""
    roots = ["sharpness.train.engine",
             *cache.callable_modules(hooks.sharpness, hooks.metrics, hooks.on_step_end)]
    roots += [name.split(":")[0] for name in (cfg.get("sharpness_fn"), cfg.get("metrics_fn"))
              if name and name.startswith("sharpness.")]
    settings: dict[str, Any] = {"config": cfg, "device": device.type}
    if cfg.get("init_from"):  # the weights a fine-tuning run starts from are an input
        from sharpness.provenance import file_sha256
        settings["init_from_sha256"] = file_sha256(cfg["init_from"])
    return cache.cache_key("train_run", settings, roots)


def train(config: dict[str, Any], run_dir: str | os.PathLike[str], *,
          hooks: TrainHooks | None = None, threads: int | None = None,
          progress: bool = False) -> dict[str, Any]:
    """Run (or resume, or skip if finished) the training run ``config`` into ``run_dir``.

    Returns the ``final.json`` summary. ``threads`` sets ``torch.set_num_threads`` (the
    workflow passes the rule's threads). A finished run (``final.json``) of the same cache key
    (config, device, code of the engine and the hooks) is returned as is; a run with
    ``checkpoint.pt`` of the same key continues from it; anything else starts over.
    """
    cfg = validate_config(config)
    run_dir = Path(run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    if threads:
        torch.set_num_threads(int(threads))
    run = _Run(cfg, run_dir, hooks or TrainHooks(), progress)
    key = run_cache_key(cfg, run.device, run.hooks)
    run.config_id = key["digest"]
    if run.dist.is_main:  # rank 0 owns the folder's files
        cache.claim_dir(run_dir, key, what="training run", stale=RUN_FILES)
    final_path = run_dir / FINAL
    if final_path.exists():
        from sharpness.io import read_json
        final = read_json(final_path)
        if final.get("config_id") == run.config_id:
            return final
        if run.dist.is_main:
            final_path.unlink(missing_ok=True)
    ddp.init(run.dist)
    try:
        return _train(run, cfg, run_dir)
    finally:
        ddp.shutdown(run.dist)


def _train(run: _Run, cfg: dict[str, Any], run_dir: Path) -> dict[str, Any]:
    if run.dist.is_main:
        atomic_write_json(run_dir / CONFIG, cfg)
    t0 = time.perf_counter()
    with deterministic_mode(cfg["deterministic"], run.device), \
            cudnn_autotune(not cfg["deterministic"], run.device) as autotuned:
        run.setup()
        per_device = cfg["batch_size"] // run.dist.world
        record_cm = RunRecord(run_dir, params=cfg, seed=cfg["seed"], data=[run.data.info],
                              stand_ins=cfg["stand_ins"]) if run.dist.is_main \
            else ddp.NullRecord()
        with record_cm as record:
            record.update(resumed_from_step=run.step if run.resumed else None,
                          device_used=str(run.device), bf16=run.use_bf16,
                          channels_last=run.channels_last, cudnn_benchmark=autotuned,
                          data_path=run.batches.kind if cfg["mode"] == "minibatch" else "device",
                          distributed=run.dist.describe(per_device,
                                                        cfg["ddp_perturbation"]))
            if cfg["mode"] == "minibatch":
                run.run_minibatch()
            else:
                run.run_fullbatch()
            final = run.finish()
            record.update(steps=final["steps"], wall_s=round(time.perf_counter() - t0, 3),
                          final_test_acc=final["final_test_acc"])
            run_status.record_final(record, final)
    return final
