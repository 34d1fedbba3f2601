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
import os
import time
from pathlib import Path
from typing import Any

import torch

from sharpness.curvature import HessianOperator, curvature_term
from sharpness.io import append_jsonl, atomic_write_json, atomic_write_text
from sharpness.optim import BatchClosure, build_optimizer
from sharpness.provenance import RunRecord
from sharpness.train import augment_batch, lr_at, per_example_loss, validate_config
from sharpness.train.engine import build_run_model, prepare_data


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
    return {"rise_eval": perturbed - float(base), "g_dot_eps_eval": float(grad @ eps.to(grad)),
            "curvature_eval": curv}


def run_signal(config: dict[str, Any], out_dir: str | os.PathLike[str], *, probe_every: int,
               threads: int | None = None) -> list[dict[str, Any]]:
    """Train one run of ``config`` and log the first-order and curvature terms; returns rows."""
    if threads:
        torch.set_num_threads(threads)
    cfg = validate_config(config)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(cfg["seed"])
    device = torch.device("cpu") if cfg["device"] == "cpu" or not torch.cuda.is_available() \
        else torch.device("cuda")
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

    path = out / "signal.jsonl"
    atomic_write_text(path, "")
    rows: list[dict[str, Any]] = []
    t0 = time.perf_counter()
    with RunRecord(out, params={**cfg, "probe_every": probe_every}, seed=cfg["seed"],
                   data=[data.info], stand_ins=cfg["stand_ins"]) as record:
        step = 0
        model.train()
        for epoch in range(cfg["epochs"]):
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
                opt.step(BatchClosure(model, x, y, loss_fn))
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
        record.update(steps=step, probes=len(rows), wall_s=round(time.perf_counter() - t0, 3))
    atomic_write_json(out / "final.json", {"status": "ok", "steps": step, "probes": len(rows),
                                           "optimizer": cfg["optimizer"]})
    return rows
