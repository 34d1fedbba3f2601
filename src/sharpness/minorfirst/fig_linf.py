"""Figures ``linf_depth`` and ``deep_l``: depth L >= 2 under l_inf-SAM (closed form against
discrete SAM and the flow, the limit phase diagram and the j* rule, blow-up times) and the
coordinate shares of the l2-SAM flow at L = 3, 4."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from matplotlib.colors import ListedColormap
from matplotlib.patches import Patch

from sharpness.minorfirst.panels import (
    A,
    coord_colors,
    find,
    log_axes,
    sequence_text,
    share_rows,
    shares_panel,
)
from sharpness.plots import new_figure

#: colours of the limits in the phase diagram: e_1, e_2, 0, rho^L 1, undecided
PHASE_COLORS = ("#0173b2", "#de8f05", "#cccccc", "#029e73", "#d55e00")
PHASE_NAMES = ("$e_1$", "$e_2$", "$\\mathbf{0}$", "$\\rho^L\\mathbf{1}$")


def _trajectory_panel(f: Any, ax: Any, a: A, s: dict, p: dict, L: int, idx: int,
                      alpha: Sequence[float], legend: bool) -> None:
    key = f"L{L}_{idx}"
    cc = coord_colors(len(p["mu"]))
    for j in range(len(p["mu"])):
        ax.plot(a[f"{key}_s_line"], a[f"{key}_beta_cf"][:, j], color=cc[j], lw=1.4,
                label=f"closed form $\\beta_{j + 1}$")
        ax.plot(a[f"{key}_s_sim"], a[f"{key}_beta_sim"][:, j], "o", color=cc[j], ms=3.5,
                mfc="none", label=f"discrete SAM $\\beta_{j + 1}$")
        ax.plot(a[f"{key}_s_flow"][::15], a[f"{key}_beta_flow"][::15, j], "x", color=cc[j],
                ms=3, label=f"flow (solve_ivp) $\\beta_{j + 1}$")
        f.add_rows(({"s": float(x), "beta": float(y)} for x, y in
                    zip(a[f"{key}_s_sim"], a[f"{key}_beta_sim"][:, j], strict=True)),
                   L=L, alpha=str(alpha), coord=j + 1, source="discrete")
    err = find(s["traj"], L=L, alpha=list(map(float, alpha)))
    f.add_rows([{"L": L, "alpha": str(alpha), "source": "rel_err",
                 "rel_err_discrete": float(err["rel_err_discrete"])}])
    ax.set_yscale("log")
    ax.set_title(f"L={L}, α={tuple(alpha)}: rel. err {err['rel_err_discrete']:.1e}", fontsize=8)
    ax.set_xlabel("rescaled time $s$")
    ax.set_ylabel(r"$\beta_j(s)$")
    if legend:
        ax.legend(fontsize=6)


def _phase_panel(f: Any, ax: Any, a: A, s: dict, p: dict, L: int) -> None:
    grid = a[f"L{L}_grid"]
    sim = a[f"L{L}_phase_sim"]
    cmap = ListedColormap(list(PHASE_COLORS))
    ax.pcolormesh(grid, grid, sim.T, cmap=cmap, vmin=-0.5, vmax=4.5, shading="nearest",
                  rasterized=True)  # a cell map: pixels in the PDF, not one path per cell
    rho = p["rho"]
    ax.axvline(rho, color="k", lw=1)
    ax.axhline(rho, color="k", lw=1)
    mu = np.asarray(p["mu"], float)
    x = np.linspace(rho, grid.max(), 100)
    # j* boundary: mu1 (a1-rho)^(L-2) = mu2 (a2-rho)^(L-2) (for L=2: the whole quadrant is e2)
    if L >= 3:
        ax.plot(x, rho + (x - rho) * (mu[0] / mu[1]) ** (1 / (L - 2)), "k--", lw=1.2,
                label=r"$j^*$ rule boundary")
    bad = sim != a[f"L{L}_phase_pred"]
    if bad.any():
        gi, gj = np.nonzero(bad)
        ax.plot(grid[gi], grid[gj], "rx", ms=6, label="simulation ≠ rule")
    gd = a[f"L{L}_phase_gd"]
    not_major = gd != s["labels"].index("e2")
    if not_major.any():
        gi, gj = np.nonzero(not_major)
        ax.plot(grid[gi], grid[gj], "k.", ms=3, label=r"GD limit $\neq e_2$")
    ax.text(0.98, 0.02, "GD: " + gd_text(gd, s["labels"]), transform=ax.transAxes,
            ha="right", va="bottom", fontsize=6,
            bbox={"facecolor": "white", "alpha": 0.9, "edgecolor": "0.5", "lw": 0.5})
    ph = find(s["phase"], L=L)
    ax.set_title(f"L={L} limit (simulated); rule agrees {ph['agree']}/{ph['points']}", fontsize=8)
    ax.set_xlabel(r"$\alpha_1$")
    ax.set_ylabel(r"$\alpha_2$")
    # outlined swatches on an opaque legend box: a swatch must not vanish into the region of
    # its own colour behind the legend (e_2 fills the top of every panel)
    handles = [Patch(facecolor=PHASE_COLORS[i], edgecolor="k", lw=0.5, label=lab)
               for i, lab in enumerate(PHASE_NAMES)]
    ax.legend(handles=handles + ax.get_legend_handles_labels()[0], fontsize=6,
              loc="upper left", frameon=True, facecolor="white", framealpha=0.9,
              edgecolor="0.5")
    f.add_rows({"L": L, "alpha_1": float(g1), "alpha_2": float(g2), "source": "phase",
                "simulated": s["labels"][int(sim[i, j])],
                "rule": s["labels"][int(a[f"L{L}_phase_pred"][i, j])]}
               for i, g1 in enumerate(grid) for j, g2 in enumerate(grid))
    f.add_rows({"L": L, "alpha_1": float(g1), "alpha_2": float(g2), "source": "gd_phase",
                "simulated": s["labels"][int(gd[i, j])]}
               for i, g1 in enumerate(grid) for j, g2 in enumerate(grid))


def gd_text(gd: np.ndarray, labels: Sequence[str]) -> str:
    """``"e2 at 144/144"`` or ``"e1 at 36, e2 at 108 of 144"``: GD's limits on a phase grid."""
    found = [(labels[int(k)], int(n)) for k, n in zip(*np.unique(gd, return_counts=True),
                                                       strict=True)]
    if len(found) == 1:
        return f"{found[0][0]} at {found[0][1]}/{gd.size}"
    return ", ".join(f"{lab} at {n}" for lab, n in found) + f" of {gd.size}"


def plot_linf_depth(a: A, s: dict, p: dict, out: str, inputs: Sequence[Path]) -> None:
    """Closed form (lines) vs discrete l_inf-SAM (markers) at L=2, 3; phase diagrams with the
    j* rule and GD's limits from the same inits."""
    depths = p["depths"]
    with new_figure(out, 2, len(depths) + 1, figsize=(11, 6.4)) as f:
        for r, L in enumerate(depths):
            for idx, alpha in enumerate(p["alphas"]):
                _trajectory_panel(f, f.axes[r, idx], a, s, p, L, idx, alpha,
                                  legend=r == 0 and idx == 0)
            _phase_panel(f, f.axes[r, -1], a, s, p, L)
        f.title(f"ℓ∞-SAM, μ={tuple(p['mu'])}, ρ={p['rho']}: closed form vs discrete SAM and "
                "the $j^*$ rule")
        cap = (f"l_inf-SAM on the L-layer diagonal model, one example mu={p['mu']}, "
               f"rho={p['rho']}, balanced init alpha. Left panels: beta_j(s) from the derived "
               f"closed form (lines), the solve_ivp rescaled flow (crosses) and discrete SAM with "
               f"loss-normalised step {p['h_traj']} (circles); L>=3 runs stop at "
               f"{p['blowup_fraction']} of the first blow-up time. Largest relative error closed "
               f"form vs discrete: {s['max_rel_err_discrete']:.2e} (check < 1e-2). Right: limit "
               f"reached by discrete l_inf-SAM (h={p['h_phase']}, s={p['s_phase']}) on a "
               f"{p['grid_n']}x{p['grid_n']} grid of (alpha_1, alpha_2) (colours) against the j* "
               f"rule (black lines: alpha_j = rho and the j* tie line); red crosses would mark "
               f"disagreements: "
               + "; ".join(f"L={q['L']}: {q['agree']}/{q['points']} agree" for q in s["phase"])
               + ". Plain GD from the same inits (same step and horizon, same reader of the "
               "limit; black dots mark grid points where its limit is not e2): "
               + "; ".join(f"L={L}: {gd_text(a[f'L{L}_phase_gd'], s['labels'])}"
                           for L in depths)
               + ".")
        f.save(cap, inputs=inputs, params=p, tight=True)


def plot_deep_l(a: A, s: dict, p: dict, out: str, inputs: Sequence[Path]) -> None:
    """Shares under l2-SAM at L=3, 4 and l_inf blow-up times: closed form vs flow."""
    n = len(p["depths"]) + 1
    with new_figure(out, 1, n, figsize=(4 * n, 3.6)) as f:
        for i, L in enumerate(p["depths"]):
            info = s["shares"][i]
            shares_panel(f.axes[i], a[f"L{L}_s"], a[f"L{L}_share"], None, None,
                         f"ℓ2-SAM L={L}, α={info['alpha']}, ρ={p['rho']}\ndominant "
                         f"{sequence_text(info['sequence'])} ({info['regime']}), ends: "
                         f"{info['status']} at s={info['t_end']:.2f}")
            f.add_rows(share_rows(a[f"L{L}_s"], a[f"L{L}_share"], panel=f"L{L}"))
        f.axes[0].legend(fontsize=7)
        ax = f.axes[-1]
        cf, fl, Ls = a["blowup_closed"], a["blowup_flow"], a["blowup_L"]
        for L, mk in zip(sorted(set(Ls.tolist())), "os^", strict=False):
            sel = Ls == L
            fin = np.isfinite(cf[sel])
            ax.plot(cf[sel][fin], fl[sel][fin], mk, mfc="none", label=f"L={L}: flow event")
        lim = [np.nanmin(cf[np.isfinite(cf)]) * 0.8, np.nanmax(cf[np.isfinite(cf)]) * 1.2]
        ax.plot(lim, lim, "k-", lw=1, label="closed form $s^*_j$")
        log_axes(ax)
        ax.set_xlabel(r"closed form $s^*_j=[(L-2)\mu_j(\alpha_j-\rho)^{L-2}]^{-1}$")
        ax.set_ylabel("blow-up time of the flow")
        ok = all(r["order_flow"] == r["order_closed"] and r["first_blowup_full_flow"] == r["jstar"]
                 for r in s["blowup"])
        ax.set_title(f"ℓ∞-SAM blow-up, ρ={p['blowup_rho']}: order = $j^*$ rule: {ok}",
                     fontsize=8)
        ax.legend(fontsize=7)
        f.add_rows({"panel": "blowup", "L": r["L"], "alpha": str(r["alpha"]), "coord": j + 1,
                    "s_closed": c, "s_flow": fl_, "jstar": r["jstar"] + 1}
                   for r in s["blowup"]
                   for j, (c, fl_) in enumerate(zip(r["s_closed"], r["s_flow"], strict=True)))
        cap = (f"Depth L>=3. Left: coordinate shares under the rescaled l2-SAM flow "
               f"(rho={p['rho']}, mu={p['mu']}, uniform init {p['alphas']} for L={p['depths']}); "
               f"integration stops at blow-up (|w| > {p['blowup']}). Right: l_inf-SAM blow-up "
               f"times per coordinate, closed form vs solve_ivp event (mu={p['blowup_mu']}, "
               f"rho={p['blowup_rho']}, inits {p['blowup_alphas']}); the first coordinate to "
               f"blow up in the full flow equals the j* rule in every case: {ok}.")
        f.save(cap, inputs=inputs, params=p, tight=True)
