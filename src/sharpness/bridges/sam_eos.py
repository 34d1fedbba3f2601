"""Figure ``bridges/sam_eos``: the ``eos`` learning-rate sweep repeated with SAM and LE-SAM.

The ``eos`` study runs full-batch GD from one fixed init at many learning rates; above
``eta_c = 2 / s_GF`` the final sharpness sits at ``2/eta`` and the norm grows. Here the same
setting (data, model, loss, loss goal, init, and the gradient-flow reference ``eta_c`` of
:mod:`sharpness.eos.sweep`) is swept with GD, l2-SAM and LE-SAM as the full-batch optimizer
(no momentum, no weight decay), each run recorded through :func:`sharpness.train.train` with
status ``ok``/``diverged`` (a diverged run is a data point, not an error).

Stability thresholds, for reading the figure (quadratic model ``L = lambda x^2 / 2`` along the
top Hessian eigenvector):

* GD is stable iff ``eta lambda <= 2``: the edge is ``2/eta``.
* l2-SAM's step is ``x <- x - eta lambda (x + rho g/||g||)``; its edge (Long & Bartlett 2023,
  "Sharpness-aware minimization and the edge of stability") is
  ``lambda_SAM = ||g|| / (2 rho) * (sqrt(1 + 8 rho / (eta ||g||)) - 1)``, always below ``2/eta``
  and shrinking with the gradient norm. We evaluate it at each run's final full-batch
  gradient norm.
* LE-SAM's radius is ``sigma/||g||``, so its edge is the SAM edge with ``rho = rho_t``:
  ``||g||/(2 rho_t) (sqrt(1 + 8 rho_t/(eta ||g||)) - 1)`` with ``rho_t = min(sigma/||g||,
  rho_max)``; when unclipped, ``rho_t ||g|| = sigma`` and it reads
  ``||g||^2 / (2 sigma) (sqrt(1 + 8 sigma / (eta ||g||^2)) - 1)``.

Each optimizer's *measured* threshold is bracketed by the largest learning rate whose run
converged and the smallest one whose run diverged (or did not reach the loss goal).
"""

from __future__ import annotations

import copy
import math
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import Tensor, nn

from sharpness.errors import ConfigError
from sharpness.io import atomic_write_json
from sharpness.provenance import RunRecord

#: config optimizer names -> engine names
ENGINE_NAMES = {"gd": "sgd", "sam": "sam", "lesam": "lesam"}


@dataclass
class SamEosParams:
    """Settings of the figure (the ``bridges.sam_eos`` config section).

    ``setting`` is an ``eos`` setting (see :data:`sharpness.eos.sweep.SETTING_DEFAULTS`);
    its ``lr_factors`` (multiples of GD's ``eta_c``) and ``lrs`` form the grid shared by all
    optimizers. ``optimizers`` is a list of ``{"name": "gd"|"sam"|"lesam", "hparams": {...}}``.
    """

    setting: dict[str, Any] = field(default_factory=lambda: {
        "dataset": "mnist_embedded", "train_size": 128, "test_size": 500, "model": "fcn",
        "width": 0.25, "loss": "mse", "loss_goal": 0.02, "max_steps": 800,
        "sharpness_every": 0, "log_every": 100, "checkpoint_every": 400, "device": "cpu",
        "flow": {"rtol": 1e-3}, "lr_factors": [0.5, 1.0, 2.0, 4.0, 6.0, 8.0, 12.0, 16.0]})
    optimizers: list[dict[str, Any]] = field(default_factory=lambda: [
        {"name": "gd", "hparams": {}},
        {"name": "sam", "hparams": {"rho": 0.05}},
        {"name": "lesam", "hparams": {"sigma": 0.01, "rho_max": 0.1, "schedule": "fractions",
                                      "warmup_frac": 0.0, "anneal_frac": 0.0}},
    ])
    data_root: str = "data"

    @classmethod
    def from_dict(cls, raw: dict[str, Any]) -> SamEosParams:
        """Build from a config section; an unknown key is a ``ConfigError`` naming it."""
        unknown = sorted(set(raw) - set(cls.__dataclass_fields__))
        if unknown:
            raise ConfigError(f"bridges.sam_eos: unknown setting(s) {unknown}; "
                              f"known: {sorted(cls.__dataclass_fields__)}")
        p = cls(**raw)
        for opt in p.optimizers:
            if opt.get("name") not in ENGINE_NAMES:
                raise ConfigError(f"bridges.sam_eos.optimizers: name must be one of "
                                  f"{sorted(ENGINE_NAMES)}, got {opt.get('name')!r}")
        return p

    def to_dict(self) -> dict[str, Any]:
        """Plain dict (for provenance)."""
        return asdict(self)


def sam_edge(grad_norm: float, eta: float, rho: float) -> float:
    """Long-Bartlett SAM edge ``||g||/(2 rho) (sqrt(1 + 8 rho/(eta ||g||)) - 1)`` (``2/eta`` at rho=0)."""
    if rho <= 0 or grad_norm <= 0:
        return 2.0 / eta if rho <= 0 else 0.0
    return grad_norm / (2 * rho) * (math.sqrt(1 + 8 * rho / (eta * grad_norm)) - 1)


def edge_for(opt: dict[str, Any], grad_norm: float, eta: float) -> float:
    """The stability edge of an optimizer at a gradient norm (see the module doc)."""
    h = opt.get("hparams", {})
    if opt["name"] == "gd":
        return 2.0 / eta
    if opt["name"] == "sam":
        return sam_edge(grad_norm, eta, float(h.get("rho", 0.05)))
    sigma = float(h.get("sigma", 0.35))
    rho_max = h.get("rho_max", 0.3)
    rho_t = sigma / grad_norm if grad_norm > 0 else math.inf
    if rho_max is not None:
        rho_t = min(rho_t, float(rho_max))
    return sam_edge(grad_norm, eta, rho_t)


class _Sharpness:
    """Engine hook: warm-started Lanczos sharpness of the full-batch train loss."""

    def __init__(self, tol: float, seed: int) -> None:
        self.v0: np.ndarray | None = None
        self.tol, self.seed = tol, seed

    def __call__(self, model: nn.Module, criterion: Any, x: Tensor, y: Tensor) -> dict[str, float]:
        from sharpness.eos.measures import sharpness

        value, self.v0, _ = sharpness(model, criterion, x, y, mode="train", v0=self.v0,
                                      tol=self.tol, seed=self.seed)
        return {"sharpness": value}


def _norms(model: nn.Module) -> dict[str, float]:
    from sharpness.eos.norms import parameter_norms

    return parameter_norms(model)


def final_measures(model: nn.Module, run_dir: Path, data: Any, criterion: Any,
                   setting: dict[str, Any]) -> dict[str, Any]:
    """Sharpness, norms, full-batch gradient norm of a finished run's final model (if finite)."""
    from sharpness.eos.measures import sharpness
    from sharpness.eos.norms import parameter_norms
    from sharpness.train.checkpoint import safe_load

    blob = safe_load(run_dir / "model.pt")
    model.load_state_dict(blob["state_dict"])
    params = [p for p in model.parameters() if p.requires_grad]
    if not all(bool(torch.isfinite(p).all()) for p in params):
        return {}
    out: dict[str, Any] = parameter_norms(model)
    model.zero_grad(set_to_none=True)
    loss = criterion(model(data.x_train), data.y_train)
    if not math.isfinite(float(loss.detach())) or float(loss.detach()) > setting["diverge_loss"]:
        return out
    grads = torch.autograd.grad(loss, params)
    out["grad_norm"] = float(torch.sqrt(sum(g.double().square().sum() for g in grads)))
    out["sharpness"], _, _ = sharpness(model, criterion, data.x_train, data.y_train,
                                       mode="train", tol=setting["lanczos_tol"],
                                       seed=setting["seed"])
    return out


def run_sweep(p: SamEosParams, out: Path, threads: int | None = None) -> dict[str, Any]:
    """GD reference flow, then every optimizer at every learning rate; writes ``sweep.json``."""
    from sharpness.eos.sweep import (
        build_initial,
        engine_config,
        learning_rates,
        resolve_setting,
        run_flow,
        run_name,
    )
    from sharpness.train import TrainHooks, train

    if threads:
        torch.set_num_threads(int(threads))
    out = Path(out)
    with RunRecord(out, params=p.to_dict(), seed=p.setting.get("seed", 0)) as record:
        setting = resolve_setting(copy.deepcopy(p.setting))
        flow = run_flow(setting, out / "flow", p.data_root)
        eta_c = float(flow["eta_c"])
        model, data, criterion = build_initial(setting, p.data_root)
        grid = learning_rates(setting, eta_c)
        rows: list[dict[str, Any]] = []
        for opt in p.optimizers:
            for g in grid:
                lr = g["lr"]
                cfg = engine_config(setting, lr, p.data_root)
                cfg["optimizer"] = ENGINE_NAMES[opt["name"]]
                cfg["opt_hparams"] = dict(opt.get("hparams", {}))
                run_dir = out / opt["name"] / run_name(lr)
                hooks = TrainHooks(sharpness=_Sharpness(setting["lanczos_tol"], setting["seed"]),
                                   metrics=_norms)
                final = train(cfg, run_dir, hooks=hooks, threads=threads)
                row: dict[str, Any] = {
                    "optimizer": opt["name"], "lr": lr, "factor": g["factor"],
                    "lr_over_eta_c": lr / eta_c, "status": final["status"],
                    "reason": final["reason"], "steps": final["steps"],
                    "converged": final["status"] == "ok" and final["reason"] == "loss_goal",
                    "diverged": final["status"] == "diverged",
                    "diverged_step": final.get("diverged_step"),
                    "train_loss": final["final_train_loss"],
                    "test_error": 1 - final["final_test_acc"]
                    if final.get("final_test_acc") is not None else None,
                    "run": str(run_dir)}
                row.update(final_measures(model, run_dir, data, criterion, setting))
                if "sharpness" in row:
                    row["eta_s_over_2"] = lr * row["sharpness"] / 2
                if "grad_norm" in row:
                    row["edge"] = edge_for(opt, row["grad_norm"], lr)
                rows.append(row)
        summary = {"eta_c": eta_c, "s_gf": flow["s_gf"], "flow": flow, "setting": setting,
                   "optimizers": p.optimizers, "rows": rows,
                   "thresholds": thresholds(rows, [o["name"] for o in p.optimizers])}
        atomic_write_json(out / "sweep.json", summary)
        record.update(eta_c=eta_c, n_runs=len(rows),
                      n_diverged=sum(bool(r["diverged"]) for r in rows))
    return summary


def thresholds(rows: list[dict[str, Any]], names: list[str]) -> dict[str, dict[str, Any]]:
    """Per optimizer: the bracket ``(last_ok, first_fail]`` of its stability threshold.

    ``last_ok`` is the largest learning rate whose run converged below the smallest diverged
    one (``first_diverged``); ``first_fail`` the smallest learning rate above ``last_ok`` whose
    run did not converge (diverged or stopped without reaching the loss goal). A run that is
    merely too slow at a *small* learning rate does not count as a failure. ``None`` where the
    grid has no such run (the threshold then lies outside the grid).
    """
    out: dict[str, dict[str, Any]] = {}
    for name in names:
        rs = sorted((r for r in rows if r["optimizer"] == name), key=lambda r: r["lr"])
        first_div = min((r["lr"] for r in rs if r["diverged"]), default=None)
        ok = [r["lr"] for r in rs if r["converged"] and (first_div is None or r["lr"] < first_div)]
        last_ok = max(ok) if ok else None
        fails = [r["lr"] for r in rs if not r["converged"]
                 and (last_ok is None or r["lr"] > last_ok)]
        out[name] = {"last_ok": last_ok, "first_fail": min(fails) if fails else None,
                     "first_diverged": first_div}
    return out
