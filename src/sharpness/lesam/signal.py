"""The mechanism measurement of ``fig_signal``: the two terms of the perturbed loss along
training.

``L(theta + eps) - L(theta) ~= <g, eps> + 0.5 eps^T H eps``. Paper 002's claim: under SAM
(``eps = rho g / ||g||``) the first-order term ``rho ||g||`` dominates the rise, so the
curvature signal matters only late in training; LE-SAM fixes the first-order term to
``sigma_t`` and leaves the curvature term as the signal throughout.

:func:`run_signal` trains with the engine (:func:`sharpness.train.train`: data, model with
input normalisation, cosine lr, augmentation, the optimizer's two-pass step, divergence,
resume) and its step probe :class:`SignalProbe`: every ``probe_every`` steps, before the step
it snapshots the model at ``theta_t``;
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
from pathlib import Path
from typing import Any

import torch

from sharpness.curvature import HessianOperator, curvature_term
from sharpness.io import atomic_write_text, read_jsonl
from sharpness.runs.seal import seal
from sharpness.train import BatchStep, TrainHooks, train
from sharpness.train.layout import METRICS

#: the probe rows, one JSON object a line (the rule's output; ``fig_signal`` reads it)
SIGNAL = "signal.jsonl"


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


class SignalProbe:
    """The engine's step probe (:class:`sharpness.train.StepProbe`) of ``fig_signal``.

    Every ``probe_every`` steps (and on the last step) ``before`` copies the model at
    ``theta_t``; ``after`` reads the optimizer's ``eps`` and diagnostics and measures the
    curvature term on that copy and the same batch, in train and in eval mode. It draws no
    random numbers, so probed and unprobed runs train identically."""

    def __init__(self, probe_every: int) -> None:
        self.probe_every = probe_every

    def before(self, step: BatchStep) -> torch.nn.Module | None:
        """A copy of the model before the step, on the steps that are probed."""
        if step.step % self.probe_every == 0 or step.step == step.total_steps - 1:
            return copy.deepcopy(step.model)
        return None

    def after(self, step: BatchStep, snapshot: torch.nn.Module) -> dict[str, Any]:
        """The row of one probed step (the module docstring lists its columns)."""
        def mean_loss(outputs: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
            return step.loss_fn(outputs, targets).mean()

        d = dict(step.optimizer.diagnostics)
        op = HessianOperator(snapshot, mean_loss, (step.x, step.y), mode="train")
        eps = step.optimizer.perturbation_vector()
        curv = curvature_term(op, eps) if float(eps.norm()) > 0 else 0.0
        return {"step": step.step, "epoch": step.epoch,
                "fraction": step.step / max(step.total_steps - 1, 1),
                "lr": step.lr, "loss": d.get("loss"), "grad_norm": d.get("grad_norm"),
                "radius": d.get("radius"), "g_dot_eps": d.get("g_dot_eps"), "curvature": curv,
                "rise": d.get("perturbed_loss", d["loss"]) - d["loss"],
                "sigma": d.get("sigma"), "clipped": d.get("clipped"),
                **eval_mode_terms(snapshot, mean_loss, step.x, step.y, eps)}


def run_signal(config: dict[str, Any], out_dir: str | os.PathLike[str], *, probe_every: int,
               threads: int | None = None, progress: bool = True,
               config_file: dict[str, str] | None = None) -> list[dict[str, Any]]:
    """Train one run of ``config`` with :func:`sharpness.train.train` and the
    :class:`SignalProbe`; write the probe rows to ``signal.jsonl`` and return them.

    Everything else is the engine's: status (the one divergence rule of
    :mod:`sharpness.runs.state` stops the run as ``diverged`` with its step; an exception is
    recorded as ``failed``), the
    cache key (config, device, code, ``probe_every``: a finished run is reused), resume from
    the last epoch checkpoint (the probe rows live in ``metrics.jsonl``, which the checkpoint
    counts), ``final.json``, ``model.pt``, the provenance and (``progress``) the progress
    bar or lines; ``config_file`` (the file the config came from: path and SHA-256) is
    recorded in the provenance."""
    out = Path(out_dir)
    rows_path = out / SIGNAL
    rows_path.unlink(missing_ok=True)  # written again below from this run's metrics
    hooks = TrainHooks(probe=SignalProbe(probe_every), settings={"probe_every": probe_every})
    train(config, out, hooks=hooks, threads=threads, progress=progress, config_file=config_file)
    rows = [{k: v for k, v in row.items() if k != "kind"}
            for row in read_jsonl(out / METRICS) if row.get("kind") == "probe"]
    atomic_write_text(rows_path, "".join(json.dumps(r, sort_keys=True) + "\n" for r in rows))
    seal(out, SIGNAL)  # fig_signal checks it against this hash (sharpness.runs.seal.read_verified)
    return rows
