"""The six `eos` figures, drawn from the files the compute rules wrote (never retraining).

Inputs: ``toy.json`` (:func:`sharpness.eos.toy.toy_study`) for ``fig_diagonal``; one
``sweep.json`` per setting (:func:`sharpness.eos.sweep.run_sweep`, which embeds the flow
summary) plus ``flow/flow.npz`` beside it for the others. Every figure marks ``eta_c``
(dashed vertical line) and, where sharpness is drawn, ``2 / eta``; diverged runs are drawn as
red crosses at the top of their panel, runs that stopped at ``max_steps`` as hollow markers.
Each figure writes its tidy CSV through :func:`sharpness.plots.save_figure`.
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from sharpness.io import read_json

DIVERGED_COLOR = "#d62728"


def load_sweeps(paths: Sequence[str | os.PathLike[str]]) -> list[dict[str, Any]]:
    """Read ``sweep.json`` files, attaching the flow path (``flow/flow.npz``) when present."""
    sweeps = []
    for p in paths:
        sweep = read_json(p)
        sweep["path"] = str(p)
        npz = Path(p).parent / "flow" / "flow.npz"
        if npz.exists():
            with np.load(npz) as f:
                sweep["flow_path"] = {k: f[k] for k in f.files}
        sweeps.append(sweep)
    return sweeps


def _label(sweep: dict[str, Any]) -> str:
    return str(sweep["setting"].get("label") or Path(sweep["path"]).parent.name)


def _stand_ins(sweeps: Sequence[dict[str, Any]]) -> list[str]:
    out: list[str] = []
    for s in sweeps:
        out += [x for x in s["setting"].get("stand_ins", []) if x not in out]
    return out


def _mark_eta_c(ax: Any, eta_c: float, label: bool = True) -> None:
    ax.axvline(eta_c, color="k", ls="--", lw=0.9, label=r"$\eta_c=2/s_{GF}$" if label else None)


def _diverged(ax: Any, lrs: Sequence[float], label: bool = True) -> None:
    if lrs:
        ax.plot(lrs, [0.97] * len(lrs), "x", color=DIVERGED_COLOR, ms=7, mew=2,
                transform=ax.get_xaxis_transform(), label="diverged" if label else None,
                clip_on=False)


def _series(ax: Any, rows: list[dict[str, Any]], key: str, color: Any, label: str | None) -> None:
    ok = [r for r in rows if not r["diverged"] and r.get(key) is not None]
    conv = [r for r in ok if r["converged"]]
    other = [r for r in ok if not r["converged"]]
    ax.plot([r["lr"] for r in ok], [r[key] for r in ok], "-", color=color, lw=1, alpha=0.6)
    ax.plot([r["lr"] for r in conv], [r[key] for r in conv], "o", color=color, ms=4, label=label)
    if other:
        ax.plot([r["lr"] for r in other], [r[key] for r in other], "o", mfc="none", color=color,
                ms=5, label="max_steps (not converged)" if label else None)


def _tidy_rows(sweep: dict[str, Any], keys: Sequence[str], figure: str) -> list[dict[str, Any]]:
    rows = []
    for r in sweep["rows"]:
        rows.append({"figure": figure, "setting": _label(sweep), "eta": r["lr"],
                     "eta_over_eta_c": r["lr_over_eta_c"], "eta_c": sweep["eta_c"],
                     "s_gf": sweep["s_gf"], "status": r["status"], "reason": r["reason"],
                     "steps": r["steps"], **{k: r.get(k) for k in keys}})
    return rows


def _logx(ax: Any) -> None:
    """Log x axis with plain major labels and no minor labels (they collide)."""
    from matplotlib.ticker import LogLocator, NullFormatter, ScalarFormatter

    ax.set_xscale("log")
    ax.xaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
    fmt = ScalarFormatter()
    fmt.set_scientific(False)
    ax.xaxis.set_major_formatter(fmt)
    ax.xaxis.set_minor_formatter(NullFormatter())


def _grid(n_rows: int, n_cols: int, w: float = 2.9, h: float = 2.3) -> tuple[Any, Any]:
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(n_rows, n_cols, figsize=(w * n_cols, h * n_rows), squeeze=False)
    return fig, axes


# -- fig_diagonal ------------------------------------------------------------------------------

def fig_diagonal(toy_path: str | os.PathLike[str], out: str | os.PathLike[str]) -> None:
    """Toy model: d=2 zero-loss set with minimisers and GD end points; final S and ||beta||_1
    vs eta with eta_c and the catalog's numbers; risk of each solution under three teachers."""
    import matplotlib.pyplot as plt

    from sharpness.eos.toy import CATALOG_EXAMPLE
    from sharpness.plots import figure_style, optimizer_color, save_figure

    toy = read_json(toy_path)
    runs = toy["runs"]
    ok = [r for r in runs if r["status"] == "ok"]
    div = [r["eta"] for r in runs if r["status"] == "diverged"]
    eta_c = toy["eta_c"]
    gd_c = optimizer_color("gd")
    rows: list[dict[str, Any]] = []
    with figure_style():
        fig, ax = plt.subplots(1, 4, figsize=(17, 3.8), layout="constrained")
        # (a) d = 2 picture in beta space
        d2 = toy["d2"]
        x1, x2 = d2["x"]
        seg = np.linspace(0, 1, 200)
        b1, b2 = seg * toy["y"] / x1, (1 - seg) * toy["y"] / x2
        sharp = 4 * (x1**2 * b1 + x2**2 * b2)
        sc = ax[0].scatter(b1, b2, c=sharp, s=4, cmap="viridis", label="zero-loss set")
        fig.colorbar(sc, ax=ax[0], label="S on the set")
        fb = np.array(d2["flow_beta"])
        ax[0].plot(fb[:, 0], fb[:, 1], "k-", lw=1.2, label="gradient flow")
        for p, color in zip(d2["paths"], plt.cm.plasma(np.linspace(0.1, 0.85, len(d2["paths"]))),
                            strict=True):
            path = np.array(p["beta_path"])
            if len(path):
                ax[0].plot(path[:, 0], path[:, 1], "-", color=color, lw=0.7, alpha=0.8)
            if p["end"] is not None:
                ax[0].plot(*p["end"], "o", color=color, ms=5, label=f"GD $\\eta$={p['eta']}")
            else:
                ax[0].plot([], [], "x", color=color, label=f"GD $\\eta$={p['eta']} diverged")
            rows.append({"panel": "d2", "eta": p["eta"], "status": p["status"],
                         "beta_1": p["end"][0] if p["end"] else None,
                         "beta_2": p["end"][1] if p["end"] else None})
        ax[0].plot(*d2["norm_min"], "s", color="C0", ms=8, mfc="none", mew=2, label="norm min.")
        ax[0].plot(*d2["sharp_min"], "D", color="C3", ms=8, mfc="none", mew=2,
                   label="sharpness min.")
        ax[0].set_xlim(-0.05 * toy["y"] / x1, 1.3 * toy["y"] / x1)
        ax[0].set_ylim(-0.05 * toy["y"] / x2, 1.15 * toy["y"] / x2)
        ax[0].set_xlabel(r"$\beta_1$")
        ax[0].set_ylabel(r"$\beta_2$")
        ax[0].set_title(f"(a) d=2, x={tuple(d2['x'])}, $\\eta_c$={d2['eta_c']:.3f}")
        ax[0].legend(fontsize=6, loc="upper right")
        # (b) final sharpness vs eta
        etas = np.array([r["eta"] for r in ok])
        ax[1].plot(etas, [r["sharpness"] for r in ok], "o-", color=gd_c, ms=4, label="GD final S")
        grid = np.geomspace(min(r["eta"] for r in runs), max(r["eta"] for r in runs), 100)
        ax[1].plot(grid, 2 / grid, ":", color="gray", label=r"$2/\eta$")
        ax[1].axhline(toy["s_gf"], color="k", lw=0.8, alpha=0.6, label=f"$s_{{GF}}$={toy['s_gf']:.2f}")
        ax[1].axhline(toy["minimizers"]["sharpness"]["sharpness"], color="C3", lw=0.8,
                      label="sharpness min.")
        ax[1].axhline(toy["minimizers"]["norm"]["sharpness"], color="C0", lw=0.8,
                      label="norm min.")
        _mark_eta_c(ax[1], eta_c)
        _diverged(ax[1], div)
        _logx(ax[1])
        ax[1].set_ylim(0, 1.15 * max(toy["minimizers"]["norm"]["sharpness"], toy["s_gf"]))
        ax[1].set_xlabel(r"$\eta$")
        ax[1].set_ylabel("final sharpness S")
        ax[1].set_title(f"(b) $s_{{GF}}$={toy['s_gf']:.3f} (catalog {CATALOG_EXAMPLE['s_gf']}), "
                        f"$\\eta_c$={eta_c:.3f} (catalog {CATALOG_EXAMPLE['eta_c']})", fontsize=8)
        ax[1].legend(fontsize=6)
        # (c) l1 norm vs eta, with the catalog's numbers
        ax[2].plot(etas, [r["l1"] for r in ok], "o-", color=gd_c, ms=4, label="GD (simulated)")
        cat = CATALOG_EXAMPLE["l1_at"]
        ax[2].plot(list(cat), list(cat.values()), "*", color="C1", ms=11,
                   label="catalog numbers")
        ax[2].axhline(toy["minimizers"]["norm"]["l1"], color="C0", lw=0.8, label="norm min.")
        ax[2].axhline(toy["minimizers"]["flow"]["l1"], color="k", lw=0.8, alpha=0.6,
                      label="gradient flow")
        _mark_eta_c(ax[2], eta_c, label=False)
        _diverged(ax[2], div)
        ax[2].axvline(CATALOG_EXAMPLE["diverge_from"], color=DIVERGED_COLOR, ls=":", lw=0.9,
                      label=f"catalog: diverges from ~{CATALOG_EXAMPLE['diverge_from']}")
        _logx(ax[2])
        ax[2].set_xlabel(r"$\eta$")
        ax[2].set_ylabel(r"final $\|\beta\|_1$")
        first = toy.get("first_diverged_eta")
        ax[2].set_title(f"(c) first diverging $\\eta$ in grid: {first}", fontsize=8)
        ax[2].legend(fontsize=6)
        # (d) risk under teachers
        names = {"sparse_max": r"teacher $e_{\arg\max x}$ (=norm min.)",
                 "sparse_min": r"teacher $e_{\arg\min x}$ (=sharp. min.)",
                 "dense": r"teacher $\beta^*\propto x$ (dense)"}
        for i, (key, name) in enumerate(names.items()):
            ax[3].plot(etas, [r[f"risk_{key}"] for r in ok], "o-", ms=3, color=f"C{i + 4}",
                       label=name)
            ax[3].axhline(toy["minimizers"]["norm"][f"risk_{key}"], color=f"C{i + 4}", lw=0.6,
                          ls="--")
            ax[3].axhline(toy["minimizers"]["sharpness"][f"risk_{key}"], color=f"C{i + 4}",
                          lw=0.6, ls=":")
        _mark_eta_c(ax[3], eta_c, label=False)
        _logx(ax[3])
        ax[3].set_yscale("log")
        ax[3].set_xlabel(r"$\eta$")
        ax[3].set_ylabel(r"risk $\|\beta-\beta^*\|^2$")
        ax[3].set_title("(d) risk (- - norm min., ··· sharp. min.)", fontsize=8)
        ax[3].legend(fontsize=6)
        fig.suptitle(f"Diagonal toy $f_w(x)=\\langle w\\odot w,x\\rangle$, x={tuple(toy['x'])}, "
                     f"y={toy['y']}, $w_0$={toy['w0']}·1, loss goal {toy['loss_goal']:g}",
                     fontsize=10, y=1.03)
        for r in runs:
            rows.append({"panel": "sweep", "eta": r["eta"], "status": r["status"],
                         "steps": r["steps"], "sharpness": r["sharpness"], "eta_s": r["eta_s"],
                         "l1": r["l1"], "risk_sparse_max": r["risk_sparse_max"],
                         "risk_sparse_min": r["risk_sparse_min"], "risk_dense": r["risk_dense"],
                         "s_gf": toy["s_gf"], "eta_c": eta_c})
        for k, v in CATALOG_EXAMPLE["l1_at"].items():
            rows.append({"panel": "catalog", "eta": k, "l1": v, "s_gf": CATALOG_EXAMPLE["s_gf"],
                         "eta_c": CATALOG_EXAMPLE["eta_c"]})
        caption = (f"Diagonal toy. Simulated s_GF={toy['s_gf']:.4f}, eta_c={eta_c:.4f} "
                   f"(catalog 7.14, 0.28). ||beta||_1 at eta=0.05 and 0.5 and the catalog's "
                   f"values are both drawn (stars); first diverging eta of the grid: {first} "
                   f"(catalog: about 0.6). Red crosses: diverged runs.")
        save_figure(fig, out, rows=rows, caption=caption, inputs=[toy_path],
                    params={"figure": "fig_diagonal"})


# -- fig_phase ---------------------------------------------------------------------------------

def _dropped_note(dropped: dict[str, str] | None) -> str:
    """Caption sentence naming the settings left out of a figure and why (config
    ``eos.dropped``: setting name -> reason)."""
    if not dropped:
        return ""
    return " Left out of this profile: " + "; ".join(
        f"{name} ({reason})" for name, reason in sorted(dropped.items())) + "."


def fig_phase(sweep_paths: Sequence[str | os.PathLike[str]], out: str | os.PathLike[str],
              dropped: dict[str, str] | None = None) -> None:
    """Final sharpness and l1/l2/nuclear norms vs eta, one row per setting. Each setting's
    evidence is counted in the caption: converged runs above 1.2 eta_c (the edge-of-stability
    check) and below eta_c (the flat-sharpness check)."""

    from sharpness.plots import figure_style, optimizer_color, save_figure

    sweeps = load_sweeps(sweep_paths)
    keys = ["sharpness", "l1", "l2", "nuclear"]
    rows: list[dict[str, Any]] = []
    checks = []
    with figure_style():
        fig, axes = _grid(len(sweeps), 4)
        for i, sw in enumerate(sweeps):
            r = sw["rows"]
            div = [x["lr"] for x in r if x["diverged"]]
            lrs = [x["lr"] for x in r]
            for j, key in enumerate(keys):
                ax = axes[i, j]
                _series(ax, r, key, optimizer_color("gd"), "GD final" if j == 0 else None)
                _mark_eta_c(ax, sw["eta_c"], label=(j == 0))
                _diverged(ax, div, label=(j == 0))
                _logx(ax)
                if key == "sharpness":
                    grid = np.geomspace(min(lrs), max(lrs), 100)
                    ax.plot(grid, 2 / grid, ":", color="gray", label=r"$2/\eta$")
                    ax.axhline(sw["s_gf"], color="k", lw=0.7, alpha=0.5, label=r"$s_{GF}$")
                    top = max([sw["s_gf"]] + [x.get("sharpness") or 0 for x in r]) * 1.3
                    ax.set_ylim(0, top)
                    ax.legend(fontsize=6)
                    ax.set_ylabel(f"{_label(sw)}\nfinal sharpness", fontsize=8)
                else:
                    ax.set_ylabel(f"final {key} norm", fontsize=8)
                if i == len(sweeps) - 1:
                    ax.set_xlabel(r"$\eta$")
            eos_ok = [x for x in r if x["converged"] and x["lr"] > 1.2 * sw["eta_c"]
                      and x.get("eta_s_over_2") is not None]
            below = [x for x in r if x["converged"] and x["lr"] < sw["eta_c"]]
            worst = max((abs(x["eta_s_over_2"] - 1) for x in eos_ok), default=float("nan"))
            checks.append(f"{_label(sw)}: max|eta S/2-1| over converged eta>1.2eta_c = "
                          f"{worst:.3f} ({len(eos_ok)} runs; {len(below)} converged below "
                          f"eta_c); flow {sw['flow']['status']}"
                          + (f", its loss rose at {sw['flow']['loss_rises']} records (inaccurate)"
                             if sw["flow"].get("loss_rises") else ""))
            flow_note = "" if sw["flow"]["status"] == "ok" else \
                f" [flow: {sw['flow']['status']}, $s_{{GF}}$ is a lower bound]"
            if sw["flow"].get("loss_rises"):  # a gradient flow's loss never rises
                flow_note += f" [flow loss rose at {sw['flow']['loss_rises']} records]"
            axes[i, 0].set_title(f"$\\eta_c$={sw['eta_c']:.3g}, max$|\\eta S/2-1|$ (EoS)="
                                 f"{worst:.2f}{flow_note}", fontsize=8)
            rows += _tidy_rows(sw, keys + ["eta_s_over_2"], "fig_phase")
        stand = _stand_ins(sweeps)
        fig.suptitle("Final sharpness and norms vs learning rate (full-batch GD, one init per "
                     "setting)" + (f"\nstand-in: {'; '.join(stand)}" if stand else ""), y=1.0)
        fig.tight_layout()
        save_figure(fig, out, rows=rows, stand_ins=stand, inputs=list(sweep_paths),
                    params={"figure": "fig_phase", "dropped": dropped or {}},
                    caption="Final sharpness (Lanczos) and l1/l2/nuclear norms vs eta. "
                            + " | ".join(checks) + _dropped_note(dropped))


# -- fig_test_vs_lr ----------------------------------------------------------------------------

def fig_test_vs_lr(sweep_paths: Sequence[str | os.PathLike[str]],
                   out: str | os.PathLike[str], dropped: dict[str, str] | None = None) -> None:
    """Test error and test loss vs eta, best eta marked, one panel per setting."""
    from sharpness.plots import figure_style, save_figure

    sweeps = load_sweeps(sweep_paths)
    ncol = min(4, len(sweeps))
    nrow = math.ceil(len(sweeps) / ncol)
    rows: list[dict[str, Any]] = []
    with figure_style():
        fig, axes = _grid(nrow, ncol, 3.3, 2.6)
        for k, sw in enumerate(sweeps):
            ax = axes[k // ncol, k % ncol]
            r = sw["rows"]
            _series(ax, r, "test_error", "C0", "test error")
            fin = [x for x in r if not x["diverged"]]
            if fin:
                best = min(fin, key=lambda x: x["test_error"])
                ax.plot(best["lr"], best["test_error"], "*", color="C1", ms=12,
                        label=f"best $\\eta$={best['lr']:.3g}")
            ax2 = ax.twinx()
            _series(ax2, r, "test_loss", "C2", "test loss")
            ax2.set_ylabel("test loss", color="C2", fontsize=8)
            ax2.grid(False)
            _mark_eta_c(ax, sw["eta_c"])
            _diverged(ax, [x["lr"] for x in r if x["diverged"]])
            _logx(ax)
            ax.set_xlabel(r"$\eta$")
            ax.set_ylabel("test error", color="C0", fontsize=8)
            ax.set_title(_label(sw), fontsize=8)
            ax.legend(fontsize=6, loc="upper left")
            rows += _tidy_rows(sw, ["test_error", "test_loss", "train_loss"], "fig_test_vs_lr")
        for k in range(len(sweeps), nrow * ncol):
            axes[k // ncol, k % ncol].axis("off")
        stand = _stand_ins(sweeps)
        fig.suptitle("Test error and loss vs learning rate" +
                     (f" (stand-in: {'; '.join(stand)})" if stand else ""), y=1.0)
        fig.tight_layout()
        save_figure(fig, out, rows=rows, stand_ins=stand, inputs=list(sweep_paths),
                    params={"figure": "fig_test_vs_lr", "dropped": dropped or {}},
                    caption="Test error (left axis) and test loss (right axis) of the final "
                            "models vs eta; star: best eta; dashed: eta_c; crosses: diverged."
                            + _dropped_note(dropped))


# -- fig_trajectories --------------------------------------------------------------------------

def _monotone_after_eos(traj: list[dict[str, Any]], lr: float, key: str = "l2") -> bool | None:
    """Whether the norm is non-decreasing (up to 1e-6 relative) from the first step at which
    the sharpness reached 2/eta (None when it never did)."""
    s = [(r["step"], r["sharpness"]) for r in traj if r.get("sharpness") is not None]
    start = next((t for t, v in s if v >= 2 / lr * 0.95), None)
    if start is None:
        return None
    vals = [r[key] for r in traj if r["step"] >= start and r.get(key) is not None]
    return all(b >= a * (1 - 1e-6) for a, b in zip(vals, vals[1:], strict=False))


def fig_trajectories(sweep_paths: Sequence[str | os.PathLike[str]],
                     out: str | os.PathLike[str], max_runs: int = 5) -> None:
    """Sharpness (with 2/eta), l2 norm and train loss over flow time t = step * eta for runs
    below and above eta_c, with the gradient-flow path; one row per setting."""
    import matplotlib.pyplot as plt

    from sharpness.eos.sweep import load_trajectory
    from sharpness.plots import figure_style, save_figure

    sweeps = load_sweeps(sweep_paths)
    rows: list[dict[str, Any]] = []
    notes = []
    with figure_style():
        fig, axes = _grid(len(sweeps), 3, 3.6, 2.6)
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
                mono = _monotone_after_eos(traj, lr)
                if run["lr_over_eta_c"] > 1:
                    notes.append(f"{_label(sw)} eta={lr:.3g}: l2 monotone after entering EoS: "
                                 f"{mono}")
                for r in traj:
                    rows.append({"figure": "fig_trajectories", "setting": _label(sw), "eta": lr,
                                 "source": "gd", "step": r["step"], "t": r["step"] * lr,
                                 "sharpness": r.get("sharpness"), "l2": r.get("l2"),
                                 "l1": r.get("l1"), "nuclear": r.get("nuclear"),
                                 "train_loss": r.get("train_loss"),
                                 "monotone_after_eos": mono})
            if fp is not None:
                axes[i, 0].plot(fp["t"], fp["sharpness"], "k-", lw=1.6, label="gradient flow")
                axes[i, 1].plot(fp["t"], fp["l2"], "k-", lw=1.6)
                axes[i, 2].plot(fp["t"], fp["loss"], "k-", lw=1.6)
                for k in range(len(fp["t"])):
                    rows.append({"figure": "fig_trajectories", "setting": _label(sw),
                                 "source": "gf", "t": float(fp["t"][k]),
                                 "sharpness": float(fp["sharpness"][k]),
                                 "l2": float(fp["l2"][k]), "train_loss": float(fp["loss"][k])})
            top = max(sw["s_gf"], max((x.get("sharpness") or 0) for x in runs)) * 1.4
            axes[i, 0].set_ylim(0, top)
            axes[i, 0].set_ylabel(f"{_label(sw)}\nsharpness (··· 2/η)", fontsize=8)
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
        stand = _stand_ins(sweeps)
        fig.suptitle("Trajectories below and above $\\eta_c$, with the gradient-flow path" +
                     (f" (stand-in: {'; '.join(stand)})" if stand else ""), y=1.0)
        fig.tight_layout()
        save_figure(fig, out, rows=rows, stand_ins=stand, inputs=list(sweep_paths),
                    params={"figure": "fig_trajectories"},
                    caption="Sharpness with 2/eta (dotted), l2 norm and train loss over time "
                            "t = step*eta; black: gradient flow. " + " | ".join(notes))


# -- fig_measures ------------------------------------------------------------------------------

MEASURES = {"hessian_trace": "Hessian trace (Hutchinson)",
            "worst_case": r"worst-case $\max_{\|\epsilon\|\leq\rho}\Delta L$",
            "adaptive": r"adaptive $\max_{\|\epsilon/|\theta|\|\leq\rho}\Delta L$",
            "average": r"average $E_{\epsilon\sim N(0,\sigma^2)}\Delta L$"}


def fig_measures(sweep_paths: Sequence[str | os.PathLike[str]],
                 out: str | os.PathLike[str]) -> None:
    """Final Hessian trace, worst-case, adaptive and average sharpness vs eta, plus the
    trade-off (l2 norm against each measure), one row per setting."""
    from sharpness.plots import figure_style, save_figure

    sweeps = load_sweeps(sweep_paths)
    keys = list(MEASURES)
    rows: list[dict[str, Any]] = []
    with figure_style():
        fig, axes = _grid(len(sweeps), len(keys) + 1, 2.9, 2.4)
        for i, sw in enumerate(sweeps):
            r = sw["rows"]
            div = [x["lr"] for x in r if x["diverged"]]
            for j, key in enumerate(keys):
                ax = axes[i, j]
                _series(ax, r, key, f"C{j}", None)
                _mark_eta_c(ax, sw["eta_c"], label=False)
                _diverged(ax, div, label=False)
                _logx(ax)
                ax.set_xlabel(r"$\eta$")
                ax.set_title(MEASURES[key], fontsize=7)
            axes[i, 0].set_ylabel(_label(sw), fontsize=8)
            ax = axes[i, -1]
            ok = [x for x in r if not x["diverged"] and x.get("l2") is not None]
            for j, key in enumerate(keys):
                vals = [x.get(key) for x in ok]
                if vals and all(v is not None for v in vals):
                    v = np.array(vals, dtype=float)
                    scale = np.max(np.abs(v)) or 1.0
                    ax.plot([x["l2"] for x in ok], v / scale, "o-", ms=3, color=f"C{j}",
                            label=key)
            ax.set_xlabel(r"final $\ell_2$ norm")
            ax.set_ylabel("measure / max", fontsize=8)
            ax.set_title("trade-off: norm vs measures", fontsize=7)
            ax.legend(fontsize=5)
            rows += _tidy_rows(sw, keys + ["sharpness", "l1", "l2", "nuclear"], "fig_measures")
        stand = _stand_ins(sweeps)
        m = sweeps[0]["setting"]["measures"] if sweeps else {}
        fig.suptitle(f"Other sharpness measures vs learning rate (rho={m.get('rho')}, adaptive "
                     f"rho={m.get('adaptive_rho')}, sigma={m.get('sigma')})" +
                     (f" (stand-in: {'; '.join(stand)})" if stand else ""), y=1.0)
        fig.tight_layout()
        save_figure(fig, out, rows=rows, stand_ins=stand, inputs=list(sweep_paths),
                    params={"figure": "fig_measures", "measures": m},
                    caption="Hessian trace, worst-case, adaptive and average sharpness of the "
                            "final models vs eta (dashed: eta_c), and each against the final "
                            "l2 norm.")


# -- fig_ablations -----------------------------------------------------------------------------

def fig_ablations(sweep_paths: Sequence[str | os.PathLike[str]],
                  out: str | os.PathLike[str]) -> None:
    """eta_c and the norm-sharpness trade-off per ablation factor (one row per factor); the
    values in the order of ``sweep_paths`` (the config's order)."""
    from sharpness.plots import figure_style, save_figure

    sweeps = [s for s in load_sweeps(sweep_paths) if s["setting"].get("ablation")]
    factors: dict[str, list[dict[str, Any]]] = {}
    for sw in sweeps:
        factors.setdefault(sw["setting"]["ablation"]["factor"], []).append(sw)
    rows: list[dict[str, Any]] = []
    notes = []
    with figure_style():
        fig, axes = _grid(len(factors), 3, 3.4, 2.5)
        for i, (factor, group) in enumerate(factors.items()):
            label = group[0]["setting"]["ablation"]["label"]
            values = [s["setting"]["ablation"]["value"] for s in group]
            eta_cs = [s["eta_c"] for s in group]
            axes[i, 0].plot(range(len(group)), eta_cs, "o-", color="k")
            axes[i, 0].set_xticks(range(len(group)), values)
            axes[i, 0].set_xlabel(label)
            axes[i, 0].set_ylabel(r"$\eta_c=2/s_{GF}$")
            axes[i, 0].set_yscale("log")
            notes.append(f"{label}: eta_c " + ", ".join(f"{v}->{e:.3g}"
                                                        for v, e in zip(values, eta_cs, strict=True)))
            for k, sw in enumerate(group):
                c = f"C{k}"
                ok = [x for x in sw["rows"] if not x["diverged"] and x.get("sharpness")]
                axes[i, 1].plot([x["lr_over_eta_c"] for x in ok],
                                [x["sharpness"] * x["lr"] / 2 for x in ok], "o-", color=c, ms=4,
                                label=f"{values[k]}")
                axes[i, 2].plot([x["sharpness"] for x in ok], [x["l2"] for x in ok], "o-",
                                color=c, ms=4, label=f"{values[k]}")
                div = [x["lr_over_eta_c"] for x in sw["rows"] if x["diverged"]]
                _diverged(axes[i, 1], div, label=(k == 0))
                rows += _tidy_rows(sw, ["sharpness", "l1", "l2", "nuclear", "test_error"],
                                   "fig_ablations")
                for row in rows[-len(sw["rows"]):]:
                    row.update(factor=factor, value=values[k])
            axes[i, 1].axvline(1.0, color="k", ls="--", lw=0.9)
            axes[i, 1].axhline(1.0, color="gray", ls=":", lw=0.9)
            _logx(axes[i, 1])
            axes[i, 1].set_xlabel(r"$\eta/\eta_c$")
            axes[i, 1].set_ylabel(r"final $\eta S/2$")
            axes[i, 1].legend(fontsize=6, title=label, title_fontsize=6)
            axes[i, 2].set_xlabel("final sharpness")
            axes[i, 2].set_ylabel(r"final $\ell_2$ norm")
            axes[i, 2].set_title("trade-off (each point one $\\eta$)", fontsize=7)
        stand = _stand_ins(sweeps)
        base = sweeps[0]["setting"].get("label", "") if sweeps else ""
        fig.suptitle(f"Ablations around the base setting ({base.split(' = ')[0]})" +
                     (f" (stand-in: {'; '.join(stand)})" if stand else ""), y=1.0)
        fig.tight_layout()
        save_figure(fig, out, rows=rows, stand_ins=stand, inputs=list(sweep_paths),
                    params={"figure": "fig_ablations"},
                    caption="Ablation grid: " + " | ".join(notes))


FIGURES = {"fig_phase": fig_phase, "fig_test_vs_lr": fig_test_vs_lr,
           "fig_trajectories": fig_trajectories, "fig_measures": fig_measures,
           "fig_ablations": fig_ablations}
