"""Figures ``l1_maxmargin`` and ``l2_limit``: where the direction of beta ends (1 - cos to a
max-margin direction against rescaled time, one example and Gaussian examples side by side)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from sharpness.minorfirst.panels import A, cosine_rows, log_axes, one_minus_cos
from sharpness.plots import method_color, method_label, new_figure


def plot_l1_maxmargin(a: A, s: dict, p: dict, out: str, inputs: Sequence[Path]) -> None:
    """1 - cos to the l2 max-margin vs rescaled time, per data set, method, (alpha, rho)."""
    with new_figure(out, 1, 2, figsize=(9.5, 3.6), sharey=True) as f:
        combos = s["combos"]
        styles = ["-", "--", ":", "-."]
        for ax, name in zip(f.axes, ("single", "multi"), strict=True):
            for m in ("gd", "l2", "linf"):
                S, C = a[f"{name}_{m}_s"], a[f"{name}_{m}_cos"]
                for k, (al, r) in enumerate(combos):
                    if m == "gd" and k % len(p["rhos"]):
                        continue
                    lab = f"{method_label(m)} α={al}" + ("" if m == "gd" else f" ρ={r}")
                    one_minus_cos(ax, S[k], C[k], styles[k % 4], color=method_color(m), lw=1.2,
                                  marker="o" if m != "gd" else None, markevery=0.2, ms=3,
                                  label=lab)
                    f.add_rows(cosine_rows(S[k], C[k]), data=name, method=m, alpha=al,
                               rho=r if m != "gd" else None)
            if name == "single":
                for k in range(0, len(combos), len(p["rhos"])):
                    one_minus_cos(ax, a["single_gd_s"][0], a["single_closed_cos"][k], "-",
                                  color="k", lw=0.8, alpha=0.7,
                                  label="closed form β=α1+sμ" if k == 0 else None)
            log_axes(ax)
            ax.set_xlabel("rescaled time $s$")
            ax.set_title({"single": f"single example μ={tuple(p['mu'])}",
                          "multi": f"{p['multi']['n']} Gaussian examples (QP max margin)"}[name],
                         fontsize=9)
        f.axes[0].set_ylabel(r"$1-\cos(\beta, \beta^\star_{\ell_2})$")
        f.axes[1].legend(fontsize=6, ncol=2, loc="lower left")
        f.title("L=1: GD, ℓ2-SAM and ℓ∞-SAM all converge to the ℓ2 max-margin direction")
        cap = (f"Depth L=1 diagonal model, logistic loss. One minus the cosine between beta and "
               f"the l2 max-margin direction against rescaled time s, for GD, l2-SAM and "
               f"l_inf-SAM with alpha in {p['alphas']} and rho in {p['rhos']}; discrete steps "
               f"with loss-normalised step h={p['h']} ({p['steps']} steps). Left: one example "
               f"mu={p['mu']} (black: closed form beta(s)=alpha 1 + s mu, the same for all three "
               f"methods). Right: {p['multi']['n']} separable Gaussian examples (scales "
               f"{p['multi']['scales']}, noise {p['multi']['noise']}), max margin from an SLSQP "
               f"QP. Smallest final cosine over all curves: {s['min_final_cosine']:.6f} (check: "
               f"> 0.999).")
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
