"""``sharpness slice run|plot``: the end-to-end slice (L = 1 GD on the diagonal model)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from sharpness.errors import ConfigError
from sharpness.io import atomic_save_npz
from sharpness.provenance import RunRecord
from sharpness.quickstart import SliceParams, run_l1_gd


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``slice run`` and ``slice plot``."""
    parser = subparsers.add_parser("slice", help="end-to-end slice: L=1 GD on one example")
    sub = parser.add_subparsers(dest="action", required=True)
    run_p = sub.add_parser("run", help="run GD and write trajectory.npz + provenance.json")
    run_p.add_argument("--params", default="{}", help="JSON object of SliceParams fields")
    run_p.add_argument("--out", required=True, help="run directory")
    run_p.set_defaults(func=_run)
    plot_p = sub.add_parser("plot", help="draw the slice figure from a run directory")
    plot_p.add_argument("--run", required=True, help="run directory written by `slice run`")
    plot_p.add_argument("--out", required=True, help="figure path (.pdf; .png is written too)")
    plot_p.set_defaults(func=_plot)


def _params(text: str) -> SliceParams:
    raw = json.loads(text)
    known = set(SliceParams.__dataclass_fields__)
    unknown = sorted(set(raw) - known)
    if unknown:
        raise ConfigError(f"unknown slice setting(s) {unknown}; known: {sorted(known)}")
    return SliceParams(**{k: tuple(v) if isinstance(v, list) else v for k, v in raw.items()})


def _run(args: argparse.Namespace) -> int:
    params = _params(args.params)
    out = Path(args.out)
    with RunRecord(out, params=params.to_dict(), seed=None) as record:
        traj = run_l1_gd(params)
        atomic_save_npz(out / "trajectory.npz", **traj)
        record.update(final_cosine=float(traj["cosine"][-1]), final_loss=float(traj["loss"][-1]))
    return 0


def _plot(args: argparse.Namespace) -> int:
    import matplotlib.pyplot as plt

    from sharpness.plots import figure_style, optimizer_color, save_figure

    run = Path(args.run)
    with np.load(run / "trajectory.npz") as traj:
        step, cosine, loss, beta = (traj[k] for k in ("step", "cosine", "loss", "beta"))
        target = traj["maxmargin"]
    params = json.loads((run / "provenance.json").read_text())["params"]
    with figure_style():
        fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(8.0, 3.2))
        keep = step > 0
        ax1.semilogx(step[keep], 1.0 - cosine[keep], color=optimizer_color("gd"), label="GD")
        ax1.set_yscale("log")
        ax1.set_xlabel("step $t$")
        ax1.set_ylabel(r"$1-\cos(\beta_t, \beta^\star_{\ell_2})$")
        ax1.set_title("direction → $\\ell_2$ max margin")
        ax1.legend()
        ax2.plot(beta[:, 0], beta[:, 1], color=optimizer_color("gd"), label="GD path")
        scale = np.linalg.norm(beta[-1])
        ax2.plot([0, target[0] * scale], [0, target[1] * scale], "k--", lw=1,
                 label=r"$\ell_2$ max-margin ray")
        ax2.plot(*beta[0], "o", color="k", ms=4, label="init")
        ax2.set_xlabel(r"$\beta_1$")
        ax2.set_ylabel(r"$\beta_2$")
        ax2.set_title("path of $\\beta_t$")
        ax2.legend(fontsize=8)
        fig.suptitle(f"L=1 diagonal model, GD, $\\mu$={tuple(params['mu'])}, "
                     f"$\\alpha$={tuple(params['alpha'])}, $\\eta$={params['lr']}", fontsize=10, y=1.02)
        rows = [{"step": int(s), "cosine": float(c), "loss": float(lo), "beta_1": float(b[0]),
                 "beta_2": float(b[1])} for s, c, lo, b in zip(step, cosine, loss, beta,
                                                                strict=True)]
        caption = ("End-to-end slice. Gradient descent on a depth-1 diagonal linear model "
                   f"with one example mu={tuple(params['mu'])} and logistic loss, from "
                   f"w(0)={tuple(params['alpha'])}, step size {params['lr']}, "
                   f"{params['steps']} steps. Left: one minus the cosine between beta_t and "
                   "the l2 max-margin direction mu/|mu| (log-log); it falls to "
                   f"{1 - cosine[-1]:.2e}, the slow logarithmic rate of Soudry et al. (2018). "
                   "Right: the path of beta_t and the max-margin ray.")
        save_figure(fig, args.out, rows=rows, caption=caption, inputs=[run],
                    params={"run": str(run)})
    return 0
