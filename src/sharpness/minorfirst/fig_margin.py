"""Figures ``l1_maxmargin`` and ``l2_limit``: where the direction of beta ends (1 - cos to a
max-margin direction against rescaled time, one example and Gaussian examples side by side)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from matplotlib.lines import Line2D

from sharpness.minorfirst.panels import A, cosine_rows, log_axes, one_minus_cos
from sharpness.plots import method_color, method_label, new_figure

#: each method's marker, its draw order (GD on top: it is the reference the SAM curves are
#: read against) and where along the curve its markers start, so that three curves that
#: coincide still show three kinds of marker side by side
MARKERS = {"l2": ("o", 2, 0.0), "linf": ("^", 3, 0.33), "gd": ("s", 4, 0.66)}
STYLES = ["-", "--", ":", "-."]


def panel_letter(ax: Any, letter: str) -> None:
    """``(a)``, ``(b)``, ... in the panel's upper left corner, as the papers label panels."""
    ax.text(-0.02, 1.02, f"({letter})", transform=ax.transAxes, ha="right", va="bottom",
            fontsize=10, fontweight="bold")


def _method_legend(ax: Any, closed_form: bool) -> None:
    """A legend of what colour and marker encode (the method), and the closed form."""
    handles = [Line2D([], [], color=method_color(m), marker=MARKERS[m][0], ms=4, lw=1.4,
                      mfc="white" if m == "gd" else method_color(m), label=method_label(m))
               for m in ("gd", "l2", "linf")]
    if closed_form:
        handles.append(Line2D([], [], color="k", lw=1.0, ls=":",
                              label="closed form β(s)=α1+sμ"))
    ax.legend(handles=handles, fontsize=7, loc="lower left", title="method", title_fontsize=7)


def plot_l1_maxmargin(a: A, s: dict, p: dict, out: str, inputs: Sequence[Path]) -> None:
    """1 - cos to the l2 max-margin vs rescaled time, per data set, method, (alpha, rho):
    colour and marker give the method (legend in panel a), line style the (alpha, rho)
    setting (legend in panel b); GD is drawn last, and each method's markers sit at their own
    places along the curve, so curves that coincide (as they do at L=1) all stay visible."""
    with new_figure(out, 1, 2, figsize=(9.5, 3.8), sharey=True) as f:
        combos = s["combos"]
        for ax, name, letter in zip(f.axes, ("single", "multi"), "ab", strict=True):
            for m in ("l2", "linf", "gd"):
                marker, order, start = MARKERS[m]
                S, C = a[f"{name}_{m}_s"], a[f"{name}_{m}_cos"]
                for k, (al, r) in enumerate(combos):
                    if m == "gd" and k % len(p["rhos"]):
                        continue
                    one_minus_cos(ax, S[k], C[k], STYLES[k % 4], color=method_color(m),
                                  lw=1.8 if m == "gd" else 1.2, marker=marker, ms=4,
                                  markevery=(start / 5 + 0.02 * k, 0.2), zorder=order,
                                  mfc="white" if m == "gd" else None)
                    f.add_rows(cosine_rows(S[k], C[k]), data=name, method=m, alpha=al,
                               rho=r if m != "gd" else None)
            if name == "single":
                for k in range(0, len(combos), len(p["rhos"])):
                    one_minus_cos(ax, a["single_gd_s"][0], a["single_closed_cos"][k], ":",
                                  color="k", lw=1.0, zorder=5)
            log_axes(ax)
            ax.set_xlabel("rescaled time $s$")
            ax.set_title({"single": f"one example μ={tuple(p['mu'])}",
                          "multi": f"{p['multi']['n']} Gaussian examples (QP max margin)"}[name],
                         fontsize=9)
            panel_letter(ax, letter)
        f.axes[0].set_ylabel(r"$1-\cos(\beta, \beta^\star_{\ell_2})$")
        _method_legend(f.axes[0], closed_form=True)
        f.axes[1].legend(handles=[Line2D([], [], color="0.3", ls=STYLES[k % 4], lw=1.2,
                                         label=f"α={al}, ρ={r}")
                                  for k, (al, r) in enumerate(combos)],
                         fontsize=7, loc="lower left", title="setting (GD: α only)",
                         title_fontsize=7)
        f.title("L=1: GD, ℓ2-SAM and ℓ∞-SAM all converge to the ℓ2 max-margin direction")
        cap = (f"Depth L=1 diagonal model, logistic loss. One minus the cosine between beta and "
               f"the l2 max-margin direction against rescaled time s, for GD (squares, drawn "
               f"on top), l2-SAM (circles) and l_inf-SAM (triangles) with alpha in "
               f"{p['alphas']} and rho in {p['rhos']} (line styles); discrete steps with "
               f"loss-normalised step h={p['h']} ({p['steps']} steps). (a) One example "
               f"mu={p['mu']}; the dotted black line is the closed form beta(s)=alpha 1 + s mu, "
               f"the same for all three methods, so their curves coincide on it. (b) "
               f"{p['multi']['n']} separable Gaussian examples (scales {p['multi']['scales']}, "
               f"noise {p['multi']['noise']}), max margin from an SLSQP QP. Smallest final "
               f"cosine over all curves: {s['min_final_cosine']:.6f} (check: > 0.999).")
        f.save(cap, inputs=inputs, params=p)


def plot_l2_limit(a: A, s: dict, p: dict, out: str, inputs: Sequence[Path]) -> None:
    """1 - cos to the l1 max-margin over a long horizon, l2-SAM vs GD."""
    with new_figure(out, 1, 2, figsize=(9.5, 3.6), sharey=True) as f:
        for ax, name in zip(f.axes, ("single", "multi"), strict=True):
            for m in ("gd", "l2"):
                for k, al in enumerate(p["alphas"]):
                    S, C = a[f"{name}_{m}_s"][k], a[f"{name}_{m}_cos"][k]
                    one_minus_cos(ax, S, C, ["-", "--", ":"][k % 3], color=method_color(m),
                                  label=f"{method_label(m)} α={al}")
                    f.add_rows(cosine_rows(S, C), data=name, method=m, alpha=al)
            ax.set_yscale("log")
            ax.set_xlabel("rescaled time $s$")
            target = ", ".join(f"{float(x):.3g}" for x in np.round(a[f"{name}_target"], 3))
            ax.set_title(f"{name}: ℓ1 max margin (LP) = ({target})", fontsize=8)
        f.axes[0].set_ylabel(r"$1-\cos(\beta, \beta^\star_{\ell_1})$")
        f.axes[0].legend(fontsize=7)
        f.title("L=2: ℓ2-SAM, like GD, converges to the ℓ1 max-margin direction")
        cap = (f"Long-horizon l2-SAM (rho={p['rho']}) and GD on the L=2 diagonal model from "
               f"uniform init alpha in {p['alphas']}, discrete with loss-normalised step "
               f"{p['h']} ({p['steps']} steps). Left: one example mu={p['mu']} (l1 max margin "
               f"e_d). Right: {p['multi']['n']} Gaussian examples (scales "
               f"{p['multi']['scales']}); l1 max margin from a HiGHS LP, restricted to beta >= 0 "
               f"(the reachable set of a balanced positive init; here equal to the unrestricted "
               f"LP: {s['multi_nonneg_equals_free']}). Smallest final cosine: "
               f"{s['min_final_cosine']:.5f} (check > 0.99).")
        f.save(cap, inputs=inputs, params=p)
