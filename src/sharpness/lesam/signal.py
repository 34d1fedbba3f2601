"""The mechanism measurement of ``fig_signal``: the two terms of the perturbed loss along
training.

``L(theta + eps) - L(theta) ~= <g, eps> + 0.5 eps^T H eps``. Paper 002's claim: under SAM
(``eps = rho g / ||g||``) the first-order term ``rho ||g||`` dominates the rise, so the
curvature signal matters only late in training; LE-SAM fixes the first-order term to
``sigma_t`` and leaves the curvature term as the signal throughout.

:func:`run_signal` trains with the same engine pieces as :func:`sharpness.train.train`
(data, model with input normalisation, cosine lr, augmentation, the optimizer's two-pass
step) and, every ``probe_every`` steps, before the step snapshots the model at ``theta_t``;
after the step it reads the optimizer's ``eps`` (:meth:`perturbation_vector`) and computes the
curvature term with an exact Hessian-vector product on the same batch, in train mode (batch
statistics, as the optimizer's two passes see the network). Each probed step writes one row of
``signal.jsonl``: ``g_dot_eps`` (logged by the optimizer), ``curvature`` (HVP),
``rise`` (``L(theta + eps) - L(theta)`` from the two passes), ``sigma`` (LE-SAM's budget),
``radius``, ``grad_norm``, ``lr``, and the same three terms with BatchNorm in eval mode
(:func:`eval_mode_terms`: ``rise_eval``, ``g_dot_eps_eval``, ``curvature_eval``).
"""

from __future__ import annotations

import copy
import json
import os
import time
from pathlib import Path
from typing import Any

import torch

from sharpness.cache import cache_key, claim_dir
from sharpness.curvature import HessianOperator, curvature_term
from sharpness.device import resolve_device
from sharpness.io import (
    append_jsonl,
    atomic_torch_save,
    atomic_write_json,
    atomic_write_text,
    read_jsonl,
)
from sharpness.optim import BatchClosure, build_optimizer
from sharpness.provenance import PROVENANCE_NAME, RunRecord
from sharpness.train import augment_batch, lr_at, per_example_loss, validate_config
from sharpness.train.checkpoint import restore_rng_states, rng_states, safe_load
from sharpness.train.engine import build_run_model, prepare_data
from sharpness.train.status import diverged_fields, is_diverged, record_final

SIGNAL_FILES = ("final.json", "signal.jsonl", "checkpoint.pt", PROVENANCE_NAME)


def eval_mode_terms(model: torch.nn.Module, loss: Any, x: torch.Tensor, y: torch.Tensor,
                    eps: torch.Tensor) -> dict[str, float]:
    """The same expansion of ``L(theta + eps) - L(theta)`` with BatchNorm in eval mode
    (running statistics), on a copy of ``model`` at ``theta``: the measured ``rise_eval``, the
    first-order term ``g_dot_eps_eval = <grad L_eval, eps>`` and ``curvature_eval = 0.5
    eps^T H_eval eps``. In train mode each forward pass normalises with its own batch
    statistics, which move with ``eps``; comparing the residual ``rise - first - curvature``
    in both modes tells whether those moving statistics cause it."""
    net = copy.deepcopy(model)
    net.eval()
    params = [p for p in net.parameters() if p.requires_grad]
    base = loss(net(x), y)
    grad = torch.cat([g.reshape(-1) for g in torch.autograd.grad(base, params)])
    curv = curvature_term(HessianOperator(net, loss, (x, y), mode="eval"), eps) \
        if float(eps.norm()) > 0 else 0.0
    with torch.no_grad():
        offset = 0
        for p in params:
            p.add_(eps[offset:offset + p.numel()].view_as(p).to(p))
            offset += p.numel()
        perturbed = float(loss(net(x), y))
    return {"rise_eval": perturbed - float(base.detach()),
            "g_dot_eps_eval": float(grad @ eps.to(grad)),
            "curvature_eval": curv}


def run_signal(config: dict[str, Any], out_dir: str | os.PathLike[str], *, probe_every: int,
               threads: int | None = None) -> list[dict[str, Any]]:
    """Train one run of ``config`` and log the first-order and curvature terms; returns rows.

    Status as the training engine's (:mod:`sharpness.train.status`): a NaN/inf loss (or one
    above ``diverge_loss``) stops the run as ``diverged`` with its step; an exception is
    recorded as ``failed``. The folder is keyed (:mod:`sharpness.cache`): a finished run of the
    same key is reused, a killed one resumes from its last epoch checkpoint."""
    if threads:
        torch.set_num_threads(threads)
    cfg = validate_config(config)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(cfg["seed"])
    device = resolve_device(cfg["device"])  # a missing requested device is an error
    key = cache_key("lesam_signal", {"config": cfg, "probe_every": probe_every,
                                     "device": device.type}, ["sharpness.lesam.signal"])
    path = out / "signal.jsonl"
    if claim_dir(out, key, stale=SIGNAL_FILES, what="signal run") \
            and (out / "final.json").exists():
        return read_jsonl(path)
    data = prepare_data(cfg, device)
    torch.manual_seed(cfg["seed"])
    model = build_run_model(cfg, data)
    loss_fn = per_example_loss(cfg["loss"], data.num_classes, cfg["label_smoothing"])
    n = len(data.x_train)
    bs = min(cfg["batch_size"], n)
    steps_per_epoch = -(-n // bs)
    total = steps_per_epoch * cfg["epochs"]
    opt = build_optimizer(cfg["optimizer"], model, lr=cfg["lr"], momentum=cfg["momentum"],
                          weight_decay=cfg["weight_decay"], nesterov=cfg["nesterov"],
                          total_steps=total, steps_per_epoch=steps_per_epoch,
                          seed=cfg["seed"], **cfg["opt_hparams"])
    gen = torch.Generator().manual_seed(cfg["seed"] + 1)
    aug = cfg["augment"]
    fill = model.mean.view(-1) if cfg["normalize"] else None

    def mean_loss(outputs: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        return loss_fn(outputs, targets).mean()

    checkpoint = out / "checkpoint.pt"
    step, start_epoch = 0, 0
    rows: list[dict[str, Any]] = []
    if checkpoint.exists():  # same key (claim_dir removed any other): resume
        state = safe_load(checkpoint)
        model.load_state_dict(state["model"])
        opt.load_state_dict(state["optimizer"])
        gen.set_state(state["data_generator"])
        restore_rng_states(state)
        step, start_epoch = state["step"], state["epoch"]
        rows = read_jsonl(path)[:state["rows_written"]] if path.exists() else []
    atomic_write_text(path, "".join(json.dumps(r, sort_keys=True) + "\n" for r in rows))
    t0 = time.perf_counter()
    stop: dict[str, Any] | None = None
    with RunRecord(out, params={**cfg, "probe_every": probe_every}, seed=cfg["seed"],
                   data=[data.info], stand_ins=cfg["stand_ins"]) as record:
        record.update(resumed_from_step=step if start_epoch else None,
                      device_used=str(device))
        model.train()
        for epoch in range(start_epoch, cfg["epochs"]):
            perm = torch.randperm(n, generator=gen).to(device)
            for b in range(steps_per_epoch):
                idx = perm[b * bs:(b + 1) * bs]
                x = augment_batch(data.x_train[idx], crop=aug["crop"], flip=aug["flip"],
                                  cutout=aug["cutout"], generator=gen, fill=fill)
                y = data.y_train[idx]
                lr = lr_at(cfg, step, total)
                for group in opt.param_groups:
                    group["lr"] = lr
                probe = step % probe_every == 0 or step == total - 1
                snapshot = copy.deepcopy(model) if probe else None
                closure = _CheckedClosure(model, x, y, loss_fn, cfg["diverge_loss"])
                try:
                    opt.step(closure)
                except _Diverged as div:
                    stop = diverged_fields(step, div.loss)
                    break
                if snapshot is not None:
                    d = dict(opt.diagnostics)
                    op = HessianOperator(snapshot, mean_loss, (x, y), mode="train")
                    eps = opt.perturbation_vector()
                    curv = curvature_term(op, eps) if float(eps.norm()) > 0 else 0.0
                    row = {"step": step, "epoch": epoch, "fraction": step / max(total - 1, 1),
                           "lr": lr, "loss": d.get("loss"), "grad_norm": d.get("grad_norm"),
                           "radius": d.get("radius"), "g_dot_eps": d.get("g_dot_eps"),
                           "curvature": curv,
                           "rise": d.get("perturbed_loss", d["loss"]) - d["loss"],
                           "sigma": d.get("sigma"), "clipped": d.get("clipped"),
                           **eval_mode_terms(snapshot, mean_loss, x, y, eps)}
                    rows.append(row)
                    append_jsonl(path, row)
                step += 1
            if stop is not None:
                break
            if cfg["checkpoint_every"] and (epoch + 1) % cfg["checkpoint_every"] == 0:
                atomic_torch_save(checkpoint, {
                    "model": model.state_dict(), "optimizer": opt.state_dict(),
                    "data_generator": gen.get_state(), **rng_states(), "step": step,
                    "epoch": epoch + 1, "rows_written": len(rows)})
        record.update(steps=step, probes=len(rows), wall_s=round(time.perf_counter() - t0, 3))
        final = {**(stop or {"status": "ok", "reason": "completed"}), "steps": step,
                 "probes": len(rows), "optimizer": cfg["optimizer"]}
        record_final(record, final)
        atomic_write_json(out / "final.json", final)
        checkpoint.unlink(missing_ok=True)  # finished: never resumed again
    return rows


class _Diverged(Exception):  # noqa: N818 - control flow, not an error
    def __init__(self, loss: float) -> None:
        super().__init__(loss)
        self.loss = loss


class _CheckedClosure(BatchClosure):
    """The optimizers' batch closure with the engine's divergence check on the clean pass."""

    def __init__(self, model: torch.nn.Module, x: torch.Tensor, y: torch.Tensor, loss_fn: Any,
                 diverge_loss: float | None) -> None:
        super().__init__(model, x, y, loss_fn)
        self._diverge = diverge_loss

    def __call__(self, *args: Any, **kwargs: Any) -> torch.Tensor:
        first = self.calls == 0
        result = super().__call__(*args, **kwargs)
        if first and is_diverged(float(result.detach().mean()), self._diverge):
            raise _Diverged(float(result.detach().mean()))
        return result
