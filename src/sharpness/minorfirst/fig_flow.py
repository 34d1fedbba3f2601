"""Figure ``flow_vs_discrete``: the error of discrete GD / SAM against their flows, vs the step
size, with fitted log-log slopes (first order: slope 1)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from matplotlib.ticker import FuncFormatter, LogLocator

from sharpness.minorfirst.panels import A, find, log_axes
from sharpness.plots import method_color, method_label, new_figure

#: at most this many labelled step sizes on an axis (more overlap at the figure's width)
MAX_TICK_LABELS = 5


def eta_ticks(ax: Any, etas: Sequence[float]) -> None:
    """A tick at every step size, labelled at evenly spaced ones (at most
    :data:`MAX_TICK_LABELS`, always the first and the last) so that labels never overlap."""
    n = len(etas)
    shown = set(np.linspace(0, n - 1, min(n, MAX_TICK_LABELS)).round().astype(int).tolist())
    ax.set_xticks(list(etas), [f"{e:g}" if i in shown else "" for i, e in enumerate(etas)])


def plot_flow_vs_discrete(a: A, s: dict, p: dict, out: str, inputs: Sequence[Path]) -> None:
    """Log-log error of discrete GD/SAM against the flow vs step size, with fitted slopes."""
    etas = a["etas"]
    with new_figure(out, 1, 2, figsize=(9, 3.6), sharey=True) as f:
        for ax, L in zip(f.axes, (1, 2), strict=True):
            for m in ("gd", "l2", "linf"):
                err = a[f"L{L}_{m}_err"]
                slope = find(s["slopes"], L=L, method=m)["slope"]
                ax.plot(etas, err, "o", color=method_color(m),
                        label=f"{method_label(m)} (slope {slope:.3f})")
                fit = np.polyfit(np.log(etas), np.log(err), 1)
                ax.plot(etas, np.exp(np.polyval(fit, np.log(etas))), "-", color=method_color(m),
                        lw=1)
                f.add_rows({"L": L, "method": m, "eta": float(e), "error": float(v)}
                           for e, v in zip(etas, err, strict=True))
            ax.plot(etas, err[-1] * etas / etas[-1], "k:", lw=1, label="slope 1")
            log_axes(ax)
            eta_ticks(ax, etas)
            # label the error axis at 1, 2 and 5 times each power of ten: a span of less than
            # a decade would otherwise carry a single label
            ax.yaxis.set_major_locator(LogLocator(subs=(1.0, 2.0, 5.0)))
            ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:.0e}".replace("e-0", "e-")))
            ax.minorticks_off()
            ax.set_xlabel(r"step size $\eta$")
            ax.set_title(f"L={L}: reference = "
                         + ("closed form (Lambert W)" if L == 1 else "solve_ivp flow"),
                         fontsize=9)
            ax.legend(fontsize=7)
        f.axes[0].set_ylabel(r"$\max_{t\leq T}\|\beta_\eta(t)-\beta_{\rm flow}(t)\|_\infty$")
        f.title("Discrete GD/SAM vs flow: first-order error")
        slopes = ", ".join(f"L={q['L']} {q['method']}: {q['slope']:.3f}" for q in s["slopes"])
        f.save(f"Error between constant-step discrete GD, l2-SAM and l_inf-SAM "
               f"(rho={p['rho']}) and the corresponding flow in the original clock, max over "
               f"t <= T={p['T']}, against the step size eta in {p['etas']}; one example "
               f"mu={p['mu']}. L=1 (init {p['alpha_l1']}): exact closed form via Lambert W. L=2 "
               f"(init {p['alpha_l2']}): solve_ivp (DOP853, rtol 1e-11). Fitted slopes: "
               f"{slopes}.", inputs=inputs, params=p, tight=True)
