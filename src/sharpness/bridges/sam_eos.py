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
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import torch

from sharpness.bridges.sam_eos_stability import edge_for, sam_edge, thresholds
from sharpness.eos.setting import resolve_setting
from sharpness.eos.sweep import (
    build_initial,
    engine_config,
    initial_loss,
    learning_rates,
    measured_run,
    run_flow,
    run_name,
)
from sharpness.errors import ConfigError, reject_unknown
from sharpness.io import atomic_write_json
from sharpness.runs.restart import start_over_if_removed
from sharpness.runs.run_record import RunRecord
from sharpness.runs.seal import seal

__all__ = ["SamEosParams", "edge_for", "run_sweep", "sam_edge", "thresholds"]

#: config optimizer names -> engine names
ENGINE_NAMES = {"gd": "sgd", "sam": "sam", "lesam": "lesam"}


@dataclass
class SamEosParams:
    """Settings of the figure (the ``bridges.sam_eos`` config section).

    ``setting`` is an ``eos`` setting (see :data:`sharpness.eos.setting.SETTING_DEFAULTS`);
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
        reject_unknown("bridges.sam_eos", raw, cls.__dataclass_fields__)
        p = cls(**raw)
        for opt in p.optimizers:
            if opt.get("name") not in ENGINE_NAMES:
                raise ConfigError(f"bridges.sam_eos.optimizers: name must be one of "
                                  f"{sorted(ENGINE_NAMES)}, got {opt.get('name')!r}")
        return p

    def to_dict(self) -> dict[str, Any]:
        """Plain dict (for provenance)."""
        return asdict(self)


def run_sweep(p: SamEosParams, out: Path, threads: int | None = None,
              config_file: dict[str, str] | None = None) -> dict[str, Any]:
    """GD reference flow, then every optimizer at every learning rate; writes ``sweep.json``
    (sealed). ``config_file`` (the file the settings came from: path and SHA-256) goes into
    the run's record. A cut sweep resumes: the flow and the runs that finished are reused
    and a cut run continues from its checkpoint; one whose finished ``sweep.json`` was
    removed (sealed but gone: a forced rerun) first deletes the flow and run folders and
    starts over (:func:`sharpness.runs.restart.start_over_if_removed`)."""

    if threads:
        torch.set_num_threads(int(threads))
    out = Path(out)
    start_over_if_removed(out, "sweep.json", ("flow", *(o["name"] for o in p.optimizers)),
                          what="bridges sam_eos sweep")
    setting = resolve_setting(copy.deepcopy(p.setting))
    with RunRecord(out, params=p.to_dict(), seed=setting["seed"]) as record:
        if config_file is not None:  # the file the job read its settings from
            record.update(config_file=dict(config_file))
        flow = run_flow(setting, out / "flow", p.data_root)
        eta_c = float(flow["eta_c"])
        initial = build_initial(setting, p.data_root)
        init_loss = initial_loss(*initial)
        rows: list[dict[str, Any]] = []
        for opt in p.optimizers:
            for g in learning_rates(setting, eta_c):
                cfg = engine_config(setting, g["lr"], p.data_root)
                cfg["optimizer"] = ENGINE_NAMES[opt["name"]]
                cfg["opt_hparams"] = dict(opt.get("hparams", {}))
                row = {"optimizer": opt["name"],
                       **measured_run(setting, cfg, out / opt["name"] / run_name(g["lr"]), g,
                                      eta_c, initial, init_loss, threads=threads,
                                      grad_norm=True, measures=False)}
                if "grad_norm" in row:
                    row["edge"] = edge_for(opt, row["grad_norm"], g["lr"])
                rows.append(row)
        summary = {"eta_c": eta_c, "s_gf": flow["s_gf"], "flow": flow, "setting": setting,
                   "optimizers": p.optimizers, "rows": rows,
                   "thresholds": thresholds(rows, [o["name"] for o in p.optimizers])}
        atomic_write_json(out / "sweep.json", summary)
        seal(out, "sweep.json")  # its reader checks it against this hash
        record.update(eta_c=eta_c, n_runs=len(rows),
                      n_diverged=sum(bool(r["diverged"]) for r in rows))
    return summary
