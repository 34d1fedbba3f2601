"""Figures of the ``minorfirst`` paper, drawn from the arrays and summaries of :mod:`.compute`.

Convention in every panel: lines are theory (closed form) or the ODE flow, markers are the
discrete optimizer; colours are the optimizers' fixed colours (GD, l2-SAM, l_inf-SAM) or, for
coordinate shares, one colour per coordinate.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.colors import ListedColormap

from sharpness.plots import figure_style, method_color, method_label, save_figure

A = dict[str, np.ndarray]


def _coord_colors(d: int) -> list[Any]:
    return list(plt.get_cmap("viridis")(np.linspace(0.0, 0.9, d)))


def plot_l1_maxmargin(a: A, s: dict, p: dict, out: str, inputs: Sequence[Path]) -> None:
    """1 - cos to the l2 max-margin vs rescaled time, per data set, method, (alpha, rho)."""
    rows = []
    with figure_style():
        fig, axes = plt.subplots(1, 2, figsize=(9.5, 3.6), sharey=True)
        combos = s["combos"]
        styles = ["-", "--", ":", "-."]
        for ax, name in zip(axes, ("single", "multi"), strict=True):
            for m in ("gd", "l2", "linf"):
                S, C = a[f"{name}_{m}_s"], a[f"{name}_{m}_cos"]
                for k, (al, r) in enumerate(combos):
                    if m == "gd" and k % len(p["rhos"]):
                        continue
                    lab = f"{method_label(m)} α={al}" + ("" if m == "gd" else f" ρ={r}")
                    ax.plot(S[k, 1:], 1 - C[k, 1:] + 1e-16, styles[k % 4], color=method_color(m), lw=1.2,
                            marker="o" if m != "gd" else None, markevery=0.2, ms=3, label=lab)
                    rows += [{"data": name, "method": m, "alpha": al, "rho": r if m != "gd" else None,
                              "s": float(x), "one_minus_cos": float(1 - c)} for x, c in zip(S[k], C[k], strict=True)]
            if name == "single":
                for k in range(0, len(combos), len(p["rhos"])):
                    ax.plot(a["single_gd_s"][0, 1:], 1 - a["single_closed_cos"][k, 1:] + 1e-16, color="k",
                            lw=0.8, alpha=0.7, label="closed form β=α1+sμ" if k == 0 else None)
            ax.set_xscale("log")
            ax.set_yscale("log")
            ax.set_xlabel("rescaled time $s$")
            ax.set_title({"single": f"single example μ={tuple(p['mu'])}",
                          "multi": f"{p['multi']['n']} Gaussian examples (QP max margin)"}[name], fontsize=9)
        axes[0].set_ylabel(r"$1-\cos(\beta, \beta^\star_{\ell_2})$")
        axes[1].legend(fontsize=6, ncol=2, loc="lower left")
        fig.suptitle("L=1: GD, ℓ2-SAM and ℓ∞-SAM all converge to the ℓ2 max-margin direction", fontsize=10)
        cap = (f"Depth L=1 diagonal model, logistic loss. One minus the cosine between beta and the l2 "
               f"max-margin direction against rescaled time s, for GD, l2-SAM and l_inf-SAM with "
               f"alpha in {p['alphas']} and rho in {p['rhos']}; discrete steps with loss-normalised "
               f"step h={p['h']} ({p['steps']} steps). Left: one example mu={p['mu']} (black: closed "
               f"form beta(s)=alpha 1 + s mu, the same for all three methods). Right: {p['multi']['n']} "
               f"separable Gaussian examples (scales {p['multi']['scales']}, noise {p['multi']['noise']}), "
               f"max margin from an SLSQP QP. Smallest final cosine over all curves: "
               f"{s['min_final_cosine']:.6f} (check: > 0.999).")
        save_figure(fig, out, rows=rows, caption=cap, inputs=inputs, params=p)


def plot_linf_depth(a: A, s: dict, p: dict, out: str, inputs: Sequence[Path]) -> None:
    """Closed form (lines) vs discrete l_inf-SAM (markers) at L=2, 3; phase diagrams with the j* rule."""
    rows = []
    depths = p["depths"]
    cc = _coord_colors(len(p["mu"]))
    with figure_style():
        fig, axes = plt.subplots(2, len(depths) + 1, figsize=(11, 6.4))
        for r, L in enumerate(depths):
            for idx, alpha in enumerate(p["alphas"]):
                ax = axes[r, idx]
                key = f"L{L}_{idx}"
                for j in range(len(p["mu"])):
                    ax.plot(a[f"{key}_s_line"], a[f"{key}_beta_cf"][:, j], color=cc[j], lw=1.4,
                            label=f"closed form $\\beta_{j + 1}$")
                    ax.plot(a[f"{key}_s_sim"], a[f"{key}_beta_sim"][:, j], "o", color=cc[j], ms=3.5,
                            mfc="none", label=f"discrete SAM $\\beta_{j + 1}$")
                    ax.plot(a[f"{key}_s_flow"][::15], a[f"{key}_beta_flow"][::15, j], "x", color=cc[j],
                            ms=3, label=f"flow (solve_ivp) $\\beta_{j + 1}$")
                    rows += [{"L": L, "alpha": str(alpha), "coord": j + 1, "source": "discrete", "s": float(x),
                              "beta": float(y)} for x, y in zip(a[f"{key}_s_sim"], a[f"{key}_beta_sim"][:, j], strict=True)]
                err = next(t for t in s["traj"] if t["L"] == L and t["alpha"] == list(map(float, alpha)))
                rows.append({"L": L, "alpha": str(alpha), "source": "rel_err",
                             "rel_err_discrete": float(err["rel_err_discrete"])})
                ax.set_yscale("log")
                ax.set_title(f"L={L}, α={tuple(alpha)}: rel. err {err['rel_err_discrete']:.1e}", fontsize=8)
                ax.set_xlabel("rescaled time $s$")
                ax.set_ylabel(r"$\beta_j(s)$")
                if r == 0 and idx == 0:
                    ax.legend(fontsize=6)
            ax = axes[r, -1]
            grid = a[f"L{L}_grid"]
            sim = a[f"L{L}_phase_sim"]
            cmap = ListedColormap(["#0173b2", "#de8f05", "#cccccc", "#029e73", "#d55e00"])
            ax.pcolormesh(grid, grid, sim.T, cmap=cmap, vmin=-0.5, vmax=4.5, shading="nearest")
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
            ph = next(q for q in s["phase"] if q["L"] == L)
            ax.set_title(f"L={L} limit (simulated); rule agrees {ph['agree']}/{ph['points']}", fontsize=8)
            ax.set_xlabel(r"$\alpha_1$")
            ax.set_ylabel(r"$\alpha_2$")
            from matplotlib.patches import Patch

            handles = [Patch(color=cmap.colors[i], label=lab) for i, lab in enumerate(["$e_1$", "$e_2$", "$\\mathbf{0}$", "$\\rho^L\\mathbf{1}$"])]
            ax.legend(handles=handles + ax.get_legend_handles_labels()[0], fontsize=6, loc="upper left")
            for i, g1 in enumerate(grid):
                for j, g2 in enumerate(grid):
                    rows.append({"L": L, "alpha_1": float(g1), "alpha_2": float(g2), "source": "phase",
                                 "simulated": s["labels"][int(sim[i, j])],
                                 "rule": s["labels"][int(a[f'L{L}_phase_pred'][i, j])]})
        fig.suptitle(f"ℓ∞-SAM, μ={tuple(p['mu'])}, ρ={p['rho']}: closed form vs discrete SAM and the $j^*$ rule", fontsize=10)
        fig.tight_layout()
        cap = (f"l_inf-SAM on the L-layer diagonal model, one example mu={p['mu']}, rho={p['rho']}, balanced "
               f"init alpha. Left panels: beta_j(s) from the derived closed form (lines), the solve_ivp "
               f"rescaled flow (crosses) and discrete SAM with loss-normalised step {p['h_traj']} (circles); "
               f"L>=3 runs stop at {p['blowup_fraction']} of the first blow-up time. Largest relative error "
               f"closed form vs discrete: {s['max_rel_err_discrete']:.2e} (check < 1e-2). Right: limit "
               f"reached by discrete l_inf-SAM (h={p['h_phase']}, s={p['s_phase']}) on a {p['grid_n']}x"
               f"{p['grid_n']} grid of (alpha_1, alpha_2) (colours) against the j* rule (black lines: "
               f"alpha_j = rho and the j* tie line); red crosses would mark disagreements: "
               + "; ".join(f"L={q['L']}: {q['agree']}/{q['points']} agree" for q in s["phase"]) + ".")
        save_figure(fig, out, rows=rows, caption=cap, inputs=inputs, params=p)


def _shares_panel(ax: Any, S: np.ndarray, sh: np.ndarray, Ss: np.ndarray | None, shs: np.ndarray | None,
                  title: str) -> None:
    cc = _coord_colors(sh.shape[1])
    for j in range(sh.shape[1]):
        ax.plot(S, sh[:, j], color=cc[j], label=f"$j={j + 1}$")
        if Ss is not None:
            ax.plot(Ss, shs[:, j], "o", color=cc[j], ms=3, mfc="none")
    ax.set_title(title, fontsize=8)
    ax.set_xlabel("rescaled time $s$")
    ax.set_ylabel(r"share $|\beta_j|/\|\beta\|_1$")
    ax.set_ylim(0, 1.02)


def plot_l2_sequential(a: A, s: dict, p: dict, out: str, inputs: Sequence[Path]) -> None:
    """Shares over time, l2-SAM vs GD, for each case (flow lines, discrete markers)."""
    rows = []
    cases = p["cases"]
    with figure_style():
        fig, axes = plt.subplots(len(cases), 2, figsize=(9, 3.2 * len(cases)), squeeze=False)
        for i, case in enumerate(cases):
            for c, m in enumerate(("l2", "gd")):
                info = next(q for q in s["cases"] if q["case"] == i and q["method"] == m)
                key = f"c{i}_{m}"
                seq = "→".join(str(j + 1) for j in info["sequence"])
                _shares_panel(axes[i, c], a[f"{key}_s"], a[f"{key}_share"], a[f"{key}_s_sim"],
                              a[f"{key}_share_sim"],
                              f"{method_label(m)}, μ={tuple(case['mu'])}, α={case['alpha']}"
                              + (f", ρ={p['rho']}" if m == "l2" else "") + f"\ndominant: {seq} ({info['regime']})")
                for x, row in zip(a[f"{key}_s"], a[f"{key}_share"], strict=True):
                    rows += [{"case": i, "method": m, "s": float(x), "coord": j + 1, "share": float(v)}
                             for j, v in enumerate(row)]
        axes[0, 0].legend(fontsize=7, title="coordinate", title_fontsize=7)
        fig.suptitle("ℓ2-SAM at L=2 amplifies minor coordinates first (lines: flow, circles: discrete)", fontsize=10)
        fig.tight_layout()
        cap = (f"Sequential feature amplification. L=2 diagonal model, one example, balanced uniform init. "
               f"Coordinate shares |beta_j|/||beta||_1 against rescaled time under l2-SAM (rho={p['rho']}, "
               f"left) and GD (right) from the same init. Lines: rescaled flow (solve_ivp); circles: "
               f"discrete steps with loss-normalised step {p['h']}. Dominant sequences (flow): "
               + "; ".join(f"case {q['case']} {q['method']}: {[j + 1 for j in q['sequence']]}" for q in s["cases"]) + ".")
        save_figure(fig, out, rows=rows, caption=cap, inputs=inputs, params=p)


def plot_l2_regimes(a: A, s: dict, p: dict, out: str, inputs: Sequence[Path]) -> None:
    """Heat maps of the dominant coordinate over (alpha/rho, s) with computed regime boundaries."""
    rows = []
    rhos = p["rhos"]
    ratios = a["ratios"]
    d = len(p["mu"])
    cmap = ListedColormap(["#eeeeee", *_coord_colors(d)])
    with figure_style():
        fig, axes = plt.subplots(1, len(rhos) + 1, figsize=(3.3 * (len(rhos) + 1), 3.6))
        for i, rho in enumerate(rhos):
            ax = axes[i]
            dom = a[f"rho{i}_dom"]
            S = a[f"rho{i}_s"]
            # a collapsing trajectory has no dominant feature: draw it in the "none" colour
            shown = np.where((a[f"rho{i}_regime"] == 0)[:, None], -1, dom)
            im = ax.pcolormesh(S, ratios, shown + 1, cmap=cmap, vmin=-0.5, vmax=d + 0.5, shading="nearest")
            for b in s["boundaries"]:
                if b["rho"] == rho:
                    ax.axhline(b["alpha_over_rho"], color="k", ls="--", lw=1)
                    ax.text(S[0] + 0.02 * (S[-1] - S[0]), b["alpha_over_rho"], f"{b['alpha_over_rho']:.3f}",
                            fontsize=6, va="bottom", ha="left",
                            bbox={"facecolor": "white", "alpha": 0.7, "pad": 0.5, "lw": 0})
            ax.set_yscale("log")
            ax.set_xlabel("rescaled time $s$")
            ax.set_ylabel(r"$\alpha/\rho$")
            ax.set_title(f"ρ={rho}: dominant coordinate", fontsize=9)
            reg = a[f"rho{i}_regime"]
            for k, r in enumerate(ratios):
                rows.append({"panel": "regime", "rho": rho, "alpha_over_rho": float(r),
                             "regime": ["collapse", "sequential", "major-first"][int(reg[k])]})
            # the heat map itself: dominant coordinate (1-based; 0 = none/tie) over (alpha, s)
            for k, r in enumerate(ratios):
                rows += [{"panel": "heatmap", "rho": rho, "alpha_over_rho": float(r), "s": float(t),
                          "dominant": int(dom[k, m]) + 1} for m, t in enumerate(S)]
        cb = fig.colorbar(im, ax=axes[len(rhos) - 1], ticks=range(d + 1))
        cb.ax.set_yticklabels(["none / collapse"] + [str(j + 1) for j in range(d)])
        ax = axes[-1]
        names = ["collapse", "sequential", "major-first"]
        for i, rho in enumerate(rhos):
            ax.plot(ratios, a[f"rho{i}_regime"] + 0.05 * (i - 1), "o-", ms=3, lw=0.8, label=f"ρ={rho}")
        for b in s["boundaries"]:
            ax.axvline(b["alpha_over_rho"], color="k", ls="--", lw=0.6)
        ax.set_xscale("log")
        ax.set_yticks([0, 1, 2], names)
        ax.set_xlabel(r"$\alpha/\rho$")
        ax.set_title("regime vs α/ρ (boundaries dashed)", fontsize=9)
        ax.legend(fontsize=7)
        fig.suptitle(f"ℓ2-SAM, L=2, μ={tuple(p['mu'])}: three regimes, boundaries computed from trajectories", fontsize=10)
        fig.tight_layout()
        bl = "; ".join(f"rho={b['rho']}: {b['from']}->{b['to']} at alpha/rho={b['alpha_over_rho']:.3f}" for b in s["boundaries"])
        cap = (f"Regimes of l2-SAM on the L=2 diagonal model, one example mu={p['mu']}, uniform init alpha. "
               f"Heat maps: dominant coordinate (argmax |beta_j|) over rescaled time for {p['n_alpha']} values "
               f"of alpha/rho in [{p['ratio_min']}, {p['ratio_max']}] and rho in {rhos} (discrete, "
               f"loss-normalised step {p['h']}). Regimes are classified from each trajectory (collapse: "
               f"||beta|| shrinks; sequential: a minor coordinate dominates first; major-first) and the "
               f"boundaries refined on a {p['refine']}-point grid inside each bracket: {bl}. The boundaries "
               f"coincide in alpha/rho across rho, as the scale symmetry (w, rho) -> (c w, c rho) predicts.")
        save_figure(fig, out, rows=rows, caption=cap, inputs=inputs, params=p)


def plot_l2_limit(a: A, s: dict, p: dict, out: str, inputs: Sequence[Path]) -> None:
    """1 - cos to the l1 max-margin over a long horizon, l2-SAM vs GD."""
    rows = []
    with figure_style():
        fig, axes = plt.subplots(1, 2, figsize=(9.5, 3.6), sharey=True)
        for ax, name in zip(axes, ("single", "multi"), strict=True):
            for m in ("gd", "l2"):
                for k, al in enumerate(p["alphas"]):
                    S, C = a[f"{name}_{m}_s"][k], a[f"{name}_{m}_cos"][k]
                    ax.plot(S[1:], np.maximum(1 - C[1:], 1e-16), ["-", "--", ":"][k % 3], color=method_color(m),
                            label=f"{method_label(m)} α={al}")
                    rows += [{"data": name, "method": m, "alpha": al, "s": float(x), "one_minus_cos": float(1 - c)}
                             for x, c in zip(S, C, strict=True)]
            ax.set_yscale("log")
            ax.set_xlabel("rescaled time $s$")
            t = ", ".join(f"{float(x):.3g}" for x in np.round(a[f"{name}_target"], 3))
            ax.set_title(f"{name}: ℓ1 max margin (LP) = ({t})", fontsize=8)
        axes[0].set_ylabel(r"$1-\cos(\beta, \beta^\star_{\ell_1})$")
        axes[0].legend(fontsize=7)
        fig.suptitle("L=2: ℓ2-SAM, like GD, converges to the ℓ1 max-margin direction", fontsize=10)
        cap = (f"Long-horizon l2-SAM (rho={p['rho']}) and GD on the L=2 diagonal model from uniform init "
               f"alpha in {p['alphas']}, discrete with loss-normalised step {p['h']} ({p['steps']} steps). "
               f"Left: one example mu={p['mu']} (l1 max margin e_d). Right: {p['multi']['n']} Gaussian "
               f"examples (scales {p['multi']['scales']}); l1 max margin from a HiGHS LP, restricted to "
               f"beta >= 0 (the reachable set of a balanced positive init; here equal to the unrestricted "
               f"LP: {s['multi_nonneg_equals_free']}). Smallest final cosine: {s['min_final_cosine']:.5f} "
               f"(check > 0.99).")
        save_figure(fig, out, rows=rows, caption=cap, inputs=inputs, params=p)


def plot_deep_l(a: A, s: dict, p: dict, out: str, inputs: Sequence[Path]) -> None:
    """Shares under l2-SAM at L=3, 4 and l_inf blow-up times: closed form vs flow."""
    rows = []
    with figure_style():
        fig, axes = plt.subplots(1, len(p["depths"]) + 1, figsize=(4 * (len(p["depths"]) + 1), 3.6))
        for i, L in enumerate(p["depths"]):
            info = s["shares"][i]
            seq = "→".join(str(j + 1) for j in info["sequence"])
            _shares_panel(axes[i], a[f"L{L}_s"], a[f"L{L}_share"], None, None,
                          f"ℓ2-SAM L={L}, α={info['alpha']}, ρ={p['rho']}\ndominant {seq} ({info['regime']}), ends: {info['status']} at s={info['t_end']:.2f}")
            for x, row in zip(a[f"L{L}_s"], a[f"L{L}_share"], strict=True):
                rows += [{"panel": f"L{L}", "s": float(x), "coord": j + 1, "share": float(v)} for j, v in enumerate(row)]
        axes[0].legend(fontsize=7)
        ax = axes[-1]
        cf, fl, Ls = a["blowup_closed"], a["blowup_flow"], a["blowup_L"]
        for L, mk in zip(sorted(set(Ls.tolist())), "os^", strict=False):
            sel = Ls == L
            fin = np.isfinite(cf[sel])
            ax.plot(cf[sel][fin], fl[sel][fin], mk, mfc="none", label=f"L={L}: flow event")
        lim = [np.nanmin(cf[np.isfinite(cf)]) * 0.8, np.nanmax(cf[np.isfinite(cf)]) * 1.2]
        ax.plot(lim, lim, "k-", lw=1, label="closed form $s^*_j$")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel(r"closed form $s^*_j=[(L-2)\mu_j(\alpha_j-\rho)^{L-2}]^{-1}$")
        ax.set_ylabel("blow-up time of the flow")
        ok = all(r["order_flow"] == r["order_closed"] and r["first_blowup_full_flow"] == r["jstar"] for r in s["blowup"])
        ax.set_title(f"ℓ∞-SAM blow-up, ρ={p['blowup_rho']}: order = $j^*$ rule: {ok}", fontsize=8)
        ax.legend(fontsize=7)
        for r in s["blowup"]:
            for j, (c, f) in enumerate(zip(r["s_closed"], r["s_flow"], strict=True)):
                rows.append({"panel": "blowup", "L": r["L"], "alpha": str(r["alpha"]), "coord": j + 1,
                             "s_closed": c, "s_flow": f, "jstar": r["jstar"] + 1})
        fig.tight_layout()
        cap = (f"Depth L>=3. Left: coordinate shares under the rescaled l2-SAM flow (rho={p['rho']}, "
               f"mu={p['mu']}, uniform init {p['alphas']} for L={p['depths']}); integration stops at blow-up "
               f"(|w| > {p['blowup']}). Right: l_inf-SAM blow-up times per coordinate, closed form vs "
               f"solve_ivp event (mu={p['blowup_mu']}, rho={p['blowup_rho']}, inits {p['blowup_alphas']}); "
               f"the first coordinate to blow up in the full flow equals the j* rule in every case: {ok}.")
        save_figure(fig, out, rows=rows, caption=cap, inputs=inputs, params=p)


def plot_multi_example(a: A, s: dict, p: dict, out: str, inputs: Sequence[Path]) -> None:
    """Coordinate shares on multi-example data, GD vs l2-SAM vs l_inf-SAM, per init scale."""
    rows = []
    al = p["alphas"]
    with figure_style():
        fig, axes = plt.subplots(3, len(al), figsize=(3.4 * len(al), 8), squeeze=False)
        for r, m in enumerate(("gd", "l2", "linf")):
            for k, alpha in enumerate(al):
                info = next(q for q in s["runs"] if q["method"] == m and q["alpha"] == alpha)
                seq = "→".join(str(j + 1) for j in info["sequence"][:8]) + ("…" if len(info["sequence"]) > 8 else "")
                collapsed = info["regime"] == "collapse"
                _shares_panel(axes[r, k], a[f"{m}_s"][k], a[f"{m}_share"][k], None, None,
                              f"{method_label(m)}, α={alpha}: {info['regime']}\n"
                              + ("β → 0: shares of a vanishing β" if collapsed else f"dominant {seq}"))
                if collapsed:
                    axes[r, k].set_facecolor("#f0f0f0")
                for x, row in zip(a[f"{m}_s"][k], a[f"{m}_share"][k], strict=True):
                    rows += [{"method": m, "alpha": alpha, "s": float(x), "coord": j + 1, "share": float(v)}
                             for j, v in enumerate(row)]
        axes[0, 0].legend(fontsize=7)
        fig.suptitle(f"Multi-example data ({p['multi']['n']} Gaussian examples, class-mean scales {p['multi']['scales']})", fontsize=10)
        fig.tight_layout()
        cap = (f"L=2 diagonal model on {p['multi']['n']} separable examples x = y*scales + {p['multi']['noise']} z, "
               f"scales {p['multi']['scales']} (coordinate 1 minor ... 5 major). Shares |beta_j|/||beta||_1 over "
               f"rescaled time for GD, l2-SAM and l_inf-SAM (rho={p['rho']}) at init scales {al}; discrete, "
               f"loss-normalised step {p['h']}. Regimes and dominant sequences are read off each run.")
        save_figure(fig, out, rows=rows, caption=cap, inputs=inputs, params=p)


def plot_flow_vs_discrete(a: A, s: dict, p: dict, out: str, inputs: Sequence[Path]) -> None:
    """Log-log error of discrete GD/SAM against the flow vs step size, with fitted slopes."""
    rows = []
    etas = a["etas"]
    with figure_style():
        fig, axes = plt.subplots(1, 2, figsize=(9, 3.6), sharey=True)
        for ax, L in zip(axes, (1, 2), strict=True):
            for m in ("gd", "l2", "linf"):
                err = a[f"L{L}_{m}_err"]
                slope = next(q["slope"] for q in s["slopes"] if q["L"] == L and q["method"] == m)
                ax.plot(etas, err, "o", color=method_color(m), label=f"{method_label(m)} (slope {slope:.3f})")
                fit = np.polyfit(np.log(etas), np.log(err), 1)
                ax.plot(etas, np.exp(np.polyval(fit, np.log(etas))), "-", color=method_color(m), lw=1)
                rows += [{"L": L, "method": m, "eta": float(e), "error": float(v)} for e, v in zip(etas, err, strict=True)]
            ax.plot(etas, err[-1] * etas / etas[-1], "k:", lw=1, label="slope 1")
            ax.set_xscale("log")
            ax.set_yscale("log")
            ax.set_xticks(etas, [f"{e:g}" for e in etas])
            ax.minorticks_off()
            ax.set_xlabel(r"step size $\eta$")
            ax.set_title(f"L={L}: reference = " + ("closed form (Lambert W)" if L == 1 else "solve_ivp flow"), fontsize=9)
            ax.legend(fontsize=7)
        axes[0].set_ylabel(r"$\max_{t\leq T}\|\beta_\eta(t)-\beta_{\rm flow}(t)\|_\infty$")
        fig.suptitle("Discrete GD/SAM vs flow: first-order error", fontsize=10)
        cap = (f"Error between constant-step discrete GD, l2-SAM and l_inf-SAM (rho={p['rho']}) and the "
               f"corresponding flow in the original clock, max over t <= T={p['T']}, against the step "
               f"size eta in {p['etas']}; one example mu={p['mu']}. L=1 (init {p['alpha_l1']}): exact "
               f"closed form via Lambert W. L=2 (init {p['alpha_l2']}): solve_ivp (DOP853, rtol 1e-11). "
               f"Fitted slopes: " + ", ".join(f"L={q['L']} {q['method']}: {q['slope']:.3f}" for q in s["slopes"]) + ".")
        save_figure(fig, out, rows=rows, caption=cap, inputs=inputs, params=p)


#: the CNN optimizers in display order (full-batch "sgd" is GD, labelled so)
CNN_ORDER = ("sgd", "sam", "sam_linf")


def _cnn_label(m: str) -> str:
    return method_label("gd" if m == "sgd" else m)


def _cnn_optimizer_text(m: str, hp: dict) -> str:
    what = {"sgd": "GD", "sam": "l2-SAM (rho = radius of the global l2 ball)",
            "sam_linf": "l_inf-SAM (rho = per-coordinate radius)"}.get(m, m)
    return f"{what} [{m}{', ' if hp else ''}{', '.join(f'{k}={v}' for k, v in hp.items())}]"


def plot_cnn_synthetic(a: A, s: dict, p: dict, out: str, inputs: Sequence[Path]) -> None:
    """Filter alignment with the strong and the weak feature over GD steps: optimizers x init scales."""
    rows = []
    order = list(CNN_ORDER)  # GD first, then the SAM variants, then anything else configured
    opts = sorted(p["optimizers"], key=lambda m: order.index(m) if m in order else len(order))
    al = p["alphas"]
    strong_c, weak_c = "#1b6ca8", "#d95f02"
    with figure_style():
        fig, axes = plt.subplots(len(opts), len(al), figsize=(3.4 * len(al), 2.7 * len(opts)),
                                 squeeze=False, sharex=True)
        for r, m in enumerate(opts):
            steps = a[f"{m}_steps"]
            rho = p["optimizers"][m].get("rho")
            for k, alpha in enumerate(al):
                ax = axes[r, k]
                info = next(q for q in s["runs"] if q["optimizer"] == m and q["alpha"] == alpha)
                align, loss = a[f"{m}_align"][k], a[f"{m}_loss"][k]
                for j, (feat, col) in enumerate((("strong", strong_c), ("weak", weak_c))):
                    ax.plot(steps, align[:, j], color=col, label=f"{feat} feature")
                    ax.axhline(align[0, j] + p["gain"], color=col, ls=":", lw=0.8)
                    hit = info[f"step_{feat}"]
                    if hit is not None:
                        ax.axvline(hit, color=col, ls="--", lw=0.9)
                    rows += [{"optimizer": m, "alpha": alpha, "step": int(t), "quantity": f"align_{feat}",
                              "value": float(v)} for t, v in zip(steps, align[:, j], strict=True)]
                rows += [{"optimizer": m, "alpha": alpha, "step": int(t), "quantity": "loss", "value": float(v)}
                         for t, v in zip(steps, loss, strict=True)]
                tw = ax.twinx()
                tw.plot(steps, loss, color="0.6", lw=0.9, label="train loss (right axis)")
                tw.set_ylim(0, 0.75)
                tw.grid(False)
                if k == len(al) - 1:
                    tw.set_ylabel("train loss", color="0.45", fontsize=8)
                else:
                    tw.tick_params(right=False, labelright=False)
                hits = ", ".join(f"{f} @ {info[f'step_{f}']}" for f in ("weak", "strong") if info[f"step_{f}"] is not None)
                ax.set_title(_cnn_label(m) + (f" (ρ={rho})" if rho is not None else "")
                             + f", α={alpha}\nfirst aligned: {info['first']}" + (f" ({hits})" if hits else ""),
                             fontsize=8, color=method_color(m) if m in CNN_ORDER else "k")
                if k == 0:
                    ax.set_ylabel(r"alignment $\max_j\langle w_j, v\rangle$")
                if r == len(opts) - 1:
                    ax.set_xlabel("training step")
        h1, l1 = axes[0, 0].get_legend_handles_labels()
        fig.legend(h1 + [plt.Line2D([], [], color="0.6", lw=0.9)], l1 + ["train loss (right axis)"],
                   loc="lower center", ncol=3, fontsize=8, bbox_to_anchor=(0.5, -0.01))
        check = s["middle_first"]
        fig.suptitle(f"2-layer CNN on strong/weak-feature patch data: which feature the filters learn first "
                     f"(middle init α={s['middle_alpha']}: " + ", ".join(f"{_cnn_label(o)} {v}" for o, v in check.items())
                     + ")", fontsize=10)
        fig.tight_layout(rect=(0, 0.04, 1, 1))
        holds = "holds" if s["catalog_check_holds"] else "does NOT hold"
        cap = (f"2-layer CNN f(x) = sum_j a_j sum_p relu(<w_j, x_p>)^{p['power']} with {p['width']} filters per class, "
               f"fixed second layer a_j = +-1/{p['width']}, first layer w_j ~ alpha N(0, I/d), on {p['n']} examples of "
               f"{p['patches']} patches in d={p['d']}: one patch holds " + (
                   "y times the strong feature (shared by both classes; " if p.get("shared_features") else
                   "the class's own strong feature (one direction per class; ")
               + f"amplitude {p['mu_strong']}, probability {p['p_strong']}) or the weak one (amplitude {p['mu_weak']}), "
               f"the others Gaussian noise (sd {p['noise']}) orthogonal to the feature directions. "
               f"Full-batch training, {p['steps']} steps of the plain gradient base step (lr {p['lr']}, no momentum or "
               f"weight decay), with " + ", ".join(_cnn_optimizer_text(m, p["optimizers"][m]) for m in opts)
               + f", from init scales alpha in {al} (data and init seed {p.get('seed', 0)}). Lines: alignment with the strong and the weak feature (best filter "
               f"of each class, averaged over the classes); dotted: init value + {p['gain']}; dashed: the step at which "
               f"the feature first gains {p['gain']} ('first aligned'). Grey: training loss. Catalog check (l2-SAM at the "
               f"middle init aligns with the weak feature first, GD with the strong one): {holds} "
               f"(middle alpha {s['middle_alpha']}: " + ", ".join(f"{o} first {v}" for o, v in check.items()) + "). "
               + "Per run: " + "; ".join(f"{q['optimizer']} alpha={q['alpha']}: {q['first']}, final loss "
                                       f"{q['final_loss']:.3g}" for q in s["runs"]) + ".")
        save_figure(fig, out, rows=rows, caption=cap, inputs=inputs, params=p)


PLOTS: dict[str, Callable[..., None]] = {
    "l1_maxmargin": plot_l1_maxmargin,
    "linf_depth": plot_linf_depth,
    "l2_sequential": plot_l2_sequential,
    "l2_regimes": plot_l2_regimes,
    "l2_limit": plot_l2_limit,
    "deep_l": plot_deep_l,
    "multi_example": plot_multi_example,
    "flow_vs_discrete": plot_flow_vs_discrete,
    "cnn_synthetic": plot_cnn_synthetic,
}
