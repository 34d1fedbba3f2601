"""Figure ``l2_regimes``: the dominant coordinate of l2-SAM over (alpha/rho, s) and the three
regimes (collapse, sequential, major-first) with their boundaries computed from trajectories."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
from matplotlib.colors import ListedColormap

from sharpness.minorfirst.panels import A, coord_colors
from sharpness.plots import new_figure

REGIMES = ("collapse", "sequential", "major-first")


def plot_l2_regimes(a: A, s: dict, p: dict, out: str, inputs: Sequence[Path]) -> None:
    """Heat maps of the dominant coordinate over (alpha/rho, s) with computed regime boundaries."""
    rhos = p["rhos"]
    ratios = a["ratios"]
    d = len(p["mu"])
    cmap = ListedColormap(["#eeeeee", *coord_colors(d)])
    with new_figure(out, 1, len(rhos) + 1, figsize=(3.3 * (len(rhos) + 1), 3.6)) as f:
        for i, rho in enumerate(rhos):
            ax = f.axes[i]
            dom = a[f"rho{i}_dom"]
            S = a[f"rho{i}_s"]
            # a collapsing trajectory has no dominant feature: draw it in the "none" colour
            shown = np.where((a[f"rho{i}_regime"] == 0)[:, None], -1, dom)
            # rasterized: a vector PDF of the 8,000-cell maps took most of the job's CPU
            im = ax.pcolormesh(S, ratios, shown + 1, cmap=cmap, vmin=-0.5, vmax=d + 0.5,
                               shading="nearest", rasterized=True)
            for b in s["boundaries"]:
                if b["rho"] == rho:
                    ax.axhline(b["alpha_over_rho"], color="k", ls="--", lw=1)
                    ax.text(S[0] + 0.02 * (S[-1] - S[0]), b["alpha_over_rho"],
                            f"{b['alpha_over_rho']:.3f}", fontsize=6, va="bottom", ha="left",
                            bbox={"facecolor": "white", "alpha": 0.7, "pad": 0.5, "lw": 0})
            ax.set_yscale("log")
            ax.set_xlabel("rescaled time $s$")
            ax.set_ylabel(r"$\alpha/\rho$")
            ax.set_title(f"ρ={rho}: dominant coordinate", fontsize=9)
            reg = a[f"rho{i}_regime"]
            f.add_rows({"panel": "regime", "rho": rho, "alpha_over_rho": float(r),
                        "regime": REGIMES[int(reg[k])]} for k, r in enumerate(ratios))
            # the heat map itself: dominant coordinate (1-based; 0 = none/tie) over (alpha, s)
            f.add_rows({"panel": "heatmap", "rho": rho, "alpha_over_rho": float(r), "s": float(t),
                        "dominant": int(dom[k, m]) + 1}
                       for k, r in enumerate(ratios) for m, t in enumerate(S))
        cb = f.fig.colorbar(im, ax=f.axes[len(rhos) - 1], ticks=range(d + 1))
        cb.ax.set_yticklabels(["none / collapse"] + [str(j + 1) for j in range(d)])
        ax = f.axes[-1]
        for i, rho in enumerate(rhos):
            ax.plot(ratios, a[f"rho{i}_regime"] + 0.05 * (i - 1), "o-", ms=3, lw=0.8,
                    label=f"ρ={rho}")
        for b in s["boundaries"]:
            ax.axvline(b["alpha_over_rho"], color="k", ls="--", lw=0.6)
        ax.set_xscale("log")
        ax.set_yticks([0, 1, 2], list(REGIMES))
        ax.set_xlabel(r"$\alpha/\rho$")
        ax.set_title("regime vs α/ρ (boundaries dashed)", fontsize=9)
        ax.legend(fontsize=7)
        f.title(f"ℓ2-SAM, L=2, μ={tuple(p['mu'])}: three regimes, boundaries computed from "
                "trajectories")
        bl = "; ".join(f"rho={b['rho']}: {b['from']}->{b['to']} at alpha/rho="
                       f"{b['alpha_over_rho']:.3f}" for b in s["boundaries"])
        cap = (f"Regimes of l2-SAM on the L=2 diagonal model, one example mu={p['mu']}, uniform "
               f"init alpha. Heat maps: dominant coordinate (argmax |beta_j|) over rescaled time "
               f"for {p['n_alpha']} values of alpha/rho in [{p['ratio_min']}, {p['ratio_max']}] "
               f"and rho in {rhos} (discrete, loss-normalised step {p['h']}). Regimes are "
               f"classified from each trajectory (collapse: ||beta|| shrinks; sequential: a minor "
               f"coordinate dominates first; major-first) and the boundaries refined on a "
               f"{p['refine']}-point grid inside each bracket: {bl}. The boundaries coincide in "
               f"alpha/rho across rho, as the scale symmetry (w, rho) -> (c w, c rho) predicts.")
        f.save(cap, inputs=inputs, params=p, tight=True)
