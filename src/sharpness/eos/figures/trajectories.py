"""``fig_trajectories``: sharpness (with 2/eta), l2 norm and train loss over time t = step*eta
for runs below and above eta_c, beside the gradient-flow path."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import numpy as np

from sharpness.eos.figures.common import (
    load_sweeps,
    setting_label,
    sweep_figure,
)
import matplotlib.pyplot as plt

# -- fig_trajectories --------------------------------------------------------------------------

MONOTONE_TOL = 1e-3  # a drop below the running maximum of at most 0.1 % still counts as monotone


def drop_after_eos(traj: list[dict[str, Any]], lr: float, key: str = "l2") -> float | None:
    """Largest relative drop of the norm below its running maximum, from the first record at
    which the sharpness reached 2/eta (within 5 %); None when it never did. GD at the edge of
    stability oscillates along the top eigenvector, so a strictly monotone norm is not
    expected: the figure reports this drop and calls the norm monotone up to MONOTONE_TOL."""
    s = [(r["step"], r["sharpness"]) for r in traj if r.get("sharpness") is not None]
    start = next((t for t, v in s if v >= 2 / lr * 0.95), None)
    if start is None:
        return None
    vals = np.array([r[key] for r in traj if r["step"] >= start and r.get(key) is not None])
    if len(vals) < 2:
        return None
    peak = np.maximum.accumulate(vals)
    return float(np.max((peak - vals) / peak))


def fig_trajectories(sweep_paths: Sequence[str | os.PathLike[str]],
                     out: str | os.PathLike[str], max_runs: int = 5) -> None:
    """Sharpness (with 2/eta), l2 norm and train loss over flow time t = step * eta for runs
    below and above eta_c, with the gradient-flow path; one row per setting."""

    from sharpness.eos.sweep import load_trajectory  # lazy: torch; every eos figure job imports this
    sweeps = load_sweeps(sweep_paths)
    rows: list[dict[str, Any]] = []
    notes = []
    with sweep_figure(out, sweeps, len(sweeps), 3, 3.6, 2.6) as f:
        axes = f.axes
        for i, sw in enumerate(sweeps):
            runs = [x for x in sw["rows"] if not x["diverged"]]
            if len(runs) > max_runs:
                pick = np.unique(np.linspace(0, len(runs) - 1, max_runs).round().astype(int))
                runs = [runs[k] for k in pick]
            colors = plt.cm.viridis(np.linspace(0, 0.9, max(len(runs), 1)))
            fp = sw.get("flow_path")
            for run, color in zip(runs, colors, strict=False):
                traj = load_trajectory(run["run"])
                lr = run["lr"]
                t = np.array([r["step"] * lr for r in traj])
                s_pts = [(r["step"] * lr, r["sharpness"]) for r in traj if "sharpness" in r]
                lab = f"$\\eta$={lr:.3g} ({run['lr_over_eta_c']:.2g}$\\eta_c$)"
                if s_pts:
                    axes[i, 0].plot(*zip(*s_pts, strict=True), "-", color=color, lw=1, label=lab)
                axes[i, 0].axhline(2 / lr, color=color, ls=":", lw=0.8)
                axes[i, 1].plot(t, [r.get("l2") for r in traj], "-", color=color, lw=1)
                axes[i, 2].plot(t, [r.get("train_loss") for r in traj], "-", color=color, lw=1)
                drop = drop_after_eos(traj, lr)
                mono = None if drop is None else drop <= MONOTONE_TOL
                if run["lr_over_eta_c"] > 1:
                    notes.append(f"{setting_label(sw)} eta={lr:.3g}: largest l2 drop after "
                                 f"entering EoS " + ("n/a (S never reached 2/eta)" if drop is None
                                                     else f"{drop:.1e} (monotone: {mono})"))
                for r in traj:
                    rows.append({"figure": "fig_trajectories", "setting": setting_label(sw), "eta": lr,
                                 "source": "gd", "step": r["step"], "t": r["step"] * lr,
                                 "sharpness": r.get("sharpness"), "l2": r.get("l2"),
                                 "l1": r.get("l1"), "nuclear": r.get("nuclear"),
                                 "train_loss": r.get("train_loss"),
                                 "max_drop_after_eos": drop, "monotone_after_eos": mono})
            if fp is not None:
                axes[i, 0].plot(fp["t"], fp["sharpness"], "k-", lw=1.6, label="gradient flow")
                axes[i, 1].plot(fp["t"], fp["l2"], "k-", lw=1.6)
                axes[i, 2].plot(fp["t"], fp["loss"], "k-", lw=1.6)
                for k in range(len(fp["t"])):
                    rows.append({"figure": "fig_trajectories", "setting": setting_label(sw),
                                 "source": "gf", "t": float(fp["t"][k]),
                                 "sharpness": float(fp["sharpness"][k]),
                                 "l2": float(fp["l2"][k]), "train_loss": float(fp["loss"][k])})
            top = max(sw["s_gf"], max((x.get("sharpness") or 0) for x in runs)) * 1.4
            axes[i, 0].set_ylim(0, top)
            axes[i, 0].set_ylabel(f"{setting_label(sw)}\nsharpness (··· 2/η)", fontsize=8)
            axes[i, 0].set_title(f"$s_{{GF}}$={sw['s_gf']:.3g}, $\\eta_c$={sw['eta_c']:.3g}",
                                 fontsize=8)
            axes[i, 0].legend(fontsize=6)
            axes[i, 1].set_ylabel(r"$\ell_2$ norm", fontsize=8)
            axes[i, 2].set_ylabel("train loss", fontsize=8)
            axes[i, 2].set_yscale("log")
            for ax in axes[i]:
                ax.set_xscale("symlog", linthresh=1.0)
                ax.set_xlim(left=0)
                ax.set_xlabel(r"time $t$ = step$\cdot\eta$ (GF: flow time)")
        f.title("Trajectories below and above $\\eta_c$, with the gradient-flow path", y=1.0)
        f.add_rows(rows)
        f.save(inputs=list(sweep_paths), params={"figure": "fig_trajectories"}, tight=True,
               caption="Sharpness with 2/eta (dotted), l2 norm and train loss over time "
                            "t = step*eta; black: gradient flow. Monotone after entering EoS "
                            f"means no drop below the running maximum larger than "
                            f"{MONOTONE_TOL:g} (relative). " + " | ".join(notes))
