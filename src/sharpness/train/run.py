"""The state of one training run and what the loops do with it: set-up (seed, data, model,
optimizer, batches), metric rows, exact checkpoints, the closure with its stop checks, and the
final files. The loops themselves are in :mod:`sharpness.train.loop`; :func:`sharpness.train.train`
drives both."""

from __future__ import annotations

import contextlib
import logging
import math
import random
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import Tensor

from sharpness.device import resolve_device
from sharpness.errors import ConfigError
from sharpness.io import append_jsonl, atomic_torch_save, atomic_write_json, atomic_write_text
from sharpness.optim.registry import build_optimizer
from sharpness.runs import seal
from sharpness.train import checkpoint as ckpt
from sharpness.train import distributed as ddp
from sharpness.train import status as run_status
from sharpness.train.closure import CheckedClosure, DivergenceCheck, EngineClosure, Stop
from sharpness.train.data_prep import PreparedData, prepare_data
from sharpness.train.device_data import keep_on_device, make_batches
from sharpness.train.evaluation import evaluate, finite, param_norm
from sharpness.train.hooks import BatchStep, TrainHooks
from sharpness.train.layout import CHECKPOINT, CONFIG, FINAL, METRICS, MODEL, TIMING
from sharpness.train.losses import per_example_loss
from sharpness.train.model_io import build_run_model
from sharpness.train.performance import (
    autocast_factory,
    precision_record,
    to_channels_last,
    use_channels_last,
)
from sharpness.train.schedule import lr_at

log = logging.getLogger(__name__)


class Run:
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
        self.batches: Any = None  # the mini-batch source (set up by setup())
        # the clean loss of the first step: the reference of the blow-up rule (checkpointed)
        self.initial_loss: float | None = None

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
        clean = {k: (finite(v) if isinstance(v, float) else v) for k, v in row.items()}
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
            "initial_loss": self.initial_loss,
            "rows_written": self.rows_written,
            "timing_written": self.timing_written,
            "rank_rng": ddp.gather_rng(self.dist),  # every process's RNG (None: one process)
        }
        if hasattr(self.batches, "state_dict"):  # a custom source's own generators
            state["batches"] = self.batches.state_dict()
        if hasattr(self.hooks.sharpness, "state_dict"):  # a measurement's warm start
            state["sharpness_hook"] = self.hooks.sharpness.state_dict()
        if self.dist.is_main:
            ckpt.save(self.dir / CHECKPOINT, state)  # with its hash in the folder's record

    def load_checkpoint(self) -> bool:
        """Restore from ``checkpoint.pt`` if present; cut the metrics back to its row count."""
        path = self.dir / CHECKPOINT
        state = ckpt.load(path)  # None when absent, damaged or unreadable (logged)
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
        if "batches" in state:
            self.batches.load_state_dict(state["batches"])
        if "sharpness_hook" in state and hasattr(self.hooks.sharpness, "load_state_dict"):
            self.hooks.sharpness.load_state_dict(state["sharpness_hook"])
        ckpt.restore_rng_states(state)
        ddp.restore_rng(self.dist, state.get("rank_rng"))
        self.epoch, self.step = state["epoch"], state["step"]
        self.initial_loss = state.get("initial_loss")
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
        if self.hooks.data is not None:  # e.g. GLMC's long-tailed subset
            data = self.hooks.data(cfg, data)
        # small-image training sets live on the device (sharpness.train.device_data)
        self.data_on_device = keep_on_device(cfg["data_on_device"], data.x_train)
        self.data = PreparedData(
            data.x_train.to(self.device) if self.data_on_device else data.x_train,
            data.y_train.to(self.device) if self.data_on_device else data.y_train,
            data.x_test.to(self.device), data.y_test.to(self.device), data.num_classes,
            data.info)
        torch.manual_seed(seed)  # model init does not depend on how the data was loaded
        self.model = build_run_model(cfg, self.data, self.device, wrap=self.hooks.wrap_net)
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
                                   seed=seed, resolved=cfg["opt_hparams"])
        self.gen = torch.Generator().manual_seed(seed + 1)
        self.fill = self.model.mean.view(-1).to(self.device) if cfg["normalize"] else None
        if cfg["mode"] == "minibatch" and self.hooks.batches is not None:
            if self.dist.enabled:
                raise ConfigError("train config key 'gpus': a custom batch source (e.g. "
                                  "GLMC) runs in one process only")
            self.batches = self.hooks.batches(self)
        elif cfg["mode"] == "minibatch":
            ddp.check_last_batch(self.dist, n, cfg["batch_size"], cfg["drop_last"])
            self.batches = make_batches(
                self.data.x_train, self.data.y_train, on_device=self.data_on_device,
                batch_size=cfg["batch_size"], drop_last=cfg["drop_last"], augment=cfg["augment"],
                generator=self.gen, device=self.device, fill=self.fill, shard=self.dist.shard,
                workers=cfg["loader_workers"], channels_last=self.channels_last)
        self.fingerprints = draw_fingerprints(self.model, self.gen, n)
        self.resumed = self.load_checkpoint()

    def closure(self, x: Any, y: Tensor, *, goal: bool) -> EngineClosure | CheckedClosure:
        """A closure over one batch with the stop checks (the custom closure hook's, when
        set, inside the divergence check)."""
        cfg = self.cfg
        check = DivergenceCheck(self.initial_loss, cfg["diverge_factor"], cfg["diverge_loss"])
        if self.hooks.closure is not None:
            return CheckedClosure(self.hooks.closure(self, x, y), check)
        distributed = self.dist.enabled
        return EngineClosure(self.net, x, y, self.loss_fn, autocast=self.autocast,
                              chunk=cfg["fullbatch_chunk"] if cfg["mode"] == "fullbatch" else None,
                              check=check,
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

    def probe_before(self, x: Tensor, y: Tensor, lr: float
                     ) -> tuple[BatchStep, Any] | None:
        """Run the probe hook's ``before`` on this step; what ``probe_after`` needs, or None."""
        if self.hooks.probe is None:
            return None
        view = BatchStep(self.step, self.epoch, self.total_steps, lr, x, y, self.model,
                         self.opt, self.loss_fn)
        state = self.hooks.probe.before(view)
        return None if state is None else (view, state)

    def probe_after(self, view: BatchStep, state: Any) -> None:
        """The probe hook's row for a completed step, into ``metrics.jsonl`` as ``probe``."""
        assert self.hooks.probe is not None
        row = self.hooks.probe.after(view, state)
        if row is not None:
            self.write_row({**row, "kind": "probe"})

    def stepped(self, closure: EngineClosure | CheckedClosure) -> None:
        """After a completed step: its clean loss is the run's initial loss if it is the first."""
        if self.initial_loss is None:
            self.initial_loss = closure.check.checked_loss

    def diverged(self, stop: Stop) -> None:
        """Record the divergence row and stop."""
        self.stop = run_status.diverged_fields(self.step, stop.loss, stop.why or "")
        self.write_row({"kind": "diverged", "epoch": self.epoch, "step": self.step,
                        "loss": stop.loss, "why": stop.why})

    # end -----------------------------------------------------------------------------------
    def finish(self) -> dict[str, Any]:
        """Final evaluation, model.pt and final.json."""
        cfg = self.cfg
        assert self.stop is not None
        train_loss, train_acc = self.evaluate(self.data.x_train, self.data.y_train)
        test_loss, test_acc = self.evaluate(self.data.x_test, self.data.y_test)
        ended = run_status.final_check(self.stop, self.step, train_loss, self.initial_loss,
                                       loss_kind=cfg["loss"], num_classes=self.data.num_classes)
        if ended is not self.stop:  # a finite blow-up that only the final loss shows
            self.stop = ended
            self.write_row({"kind": "diverged", "epoch": self.epoch, "step": self.step,
                            "loss": train_loss, "why": ended["diverged_why"]})
        c, h = self.data.x_train.shape[1], self.data.x_train.shape[2]
        final = {
            **self.stop,
            "config_id": self.config_id,
            "initial_loss": self.initial_loss,
            "mode": cfg["mode"],
            "steps": self.step,
            "epochs": self.epoch,
            "final_train_loss": finite(train_loss),
            "final_train_acc": train_acc,
            "final_test_loss": finite(test_loss),
            "final_test_acc": test_acc,
            "precision": precision_record(self.use_bf16)["precision"],
            "num_classes": self.data.num_classes,
            "n_train": len(self.data.x_train),
            "n_test": len(self.data.x_test),
            **self.fingerprints,
        }
        if self.hooks.on_finish is not None:
            self.hooks.on_finish(self, final)
        if not self.dist.is_main:  # rank 0 writes the files
            return final
        wrap = self.hooks.wrap_net
        atomic_torch_save(self.dir / MODEL, {
            "build": {"model": cfg["model"], "num_classes": self.data.num_classes,
                      "in_channels": c, "image_size": h, "width": cfg["width"],
                      "model_kwargs": cfg["model_kwargs"],
                      "wrapped_by": f"{wrap.__module__}.{wrap.__qualname__}" if wrap else None},
            "state_dict": {k: v.detach().cpu() for k, v in self.model.state_dict().items()},
            "config": cfg, "status": self.stop["status"], "step": self.step,
        })
        atomic_write_json(self.dir / FINAL, final)
        # a reuse checks model.pt and final.json against these hashes; the jobs that read the
        # run (tables, figures, evaluations) check every file they read the same way
        seal.seal(self.dir, MODEL, FINAL,
                    *(n for n in (METRICS, CONFIG) if (self.dir / n).is_file()))
        ckpt.remove(self.dir / CHECKPOINT)  # finished: never resumed again
        return final


def draw_fingerprints(model: torch.nn.Module, gen: torch.Generator, n: int) -> dict[str, str]:
    """What identifies a run's draw, taken at its start (before a checkpoint is resumed, so a
    resumed run records the same): the SHA-256 of its initial weights (every tensor of the
    state dict, in key order) and of its data order's source (the batch generator's state and
    the number of examples it orders). Recorded in the run's signed record and ``final.json``;
    the ledger counts two runs as independent only when both differ
    (:mod:`sharpness.claims.independence`)."""
    import hashlib

    init = hashlib.sha256()
    for key, value in sorted(model.state_dict().items()):
        init.update(key.encode())
        init.update(value.detach().cpu().contiguous().reshape(-1).view(torch.uint8).numpy().tobytes())
    order = hashlib.sha256(gen.get_state().numpy().tobytes() + str(int(n)).encode())
    return {"init_sha256": init.hexdigest(), "order_sha256": order.hexdigest()}
