"""``fig_phase``: the edge-of-stability phase picture of every network setting on shared axes.

All settings share the x axis eta / eta_c, so one panel shows the paper's headline for all of
them: final eta S / 2 (1 at the edge of stability, the +-0.1 band shaded), final sharpness
relative to the flow's s_GF (flat at 1 below eta_c), and the change of the final l1, l2 and
nuclear norms relative to the gradient flow's end point from the same init (0 where GD follows
the flow). Relative changes, not raw norms: a raw-norm axis autoscaled to one setting makes a
0.03 % change look large. A setting with no converged run is named in the legend and the caption
rather than drawn as if it were evidence.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import numpy as np

from sharpness.eos.figures.common import (
    dropped_note,
    load_sweeps,
    logx,
    setting_label,
    sweep_figure,
    tidy_rows,
)
import matplotlib.pyplot as plt

NORMS = ("l1", "l2", "nuclear")
BAND = 0.1  # the catalog's |eta S/2 - 1| < 0.1 check above 1.2 eta_c


def phase_rows(sweep: dict[str, Any]) -> list[dict[str, Any]]:
    """The sweep's CSV rows with the relative quantities the figure draws: ``s_over_gf`` =
    S / the flow's final sharpness (1 where GD ends where the flow does) and ``rel_<norm>`` =
    final norm / the flow's final norm - 1."""
    flow_norms = sweep["flow"].get("final_norms") or {}
    s_end = sweep["flow"].get("final_sharpness")
    rows = tidy_rows(sweep, ["sharpness", *NORMS, "eta_s_over_2"], "fig_phase")
    for row, run in zip(rows, sweep["rows"], strict=True):
        row["converged"] = bool(run["converged"])
        s = run.get("sharpness")
        row["gf_sharpness"] = s_end
        row["s_over_gf"] = s / s_end if s is not None and s_end else None
        for key in NORMS:
            ref, val = flow_norms.get(key), run.get(key)
            row[f"gf_{key}"] = ref
            row[f"rel_{key}"] = val / ref - 1 if ref and val is not None else None
    return rows


def evidence_counts(sweep: dict[str, Any]) -> dict[str, Any]:
    """Converged runs above 1.2 eta_c (the band check) and below eta_c (the flat check), and
    the worst |eta S/2 - 1| among the former (NaN when there is none)."""
    rows, eta_c = sweep["rows"], sweep["eta_c"]
    above = [x for x in rows if x["converged"] and x["lr"] > 1.2 * eta_c
             and x.get("eta_s_over_2") is not None]
    below = [x for x in rows if x["converged"] and x["lr"] < eta_c]
    worst = max((abs(x["eta_s_over_2"] - 1) for x in above), default=float("nan"))
    return {"above": len(above), "below": len(below), "worst": worst,
            "converged": sum(bool(x["converged"]) for x in rows)}


def _flow_remark(sweep: dict[str, Any]) -> str:
    flow = sweep["flow"]
    out = "" if flow["status"] == "ok" else f"; flow {flow['status']}: s_GF is a lower bound"
    if flow.get("loss_rises"):  # a gradient flow's loss never rises: the integration is off
        out += f"; flow loss rose at {flow['loss_rises']} records (inaccurate)"
    return out


def fig_phase(sweep_paths: Sequence[str | os.PathLike[str]], out: str | os.PathLike[str],
              dropped: dict[str, str] | None = None) -> None:
    """Final eta S/2, S relative to the flow's final S, and the relative l1/l2/nuclear norm change vs eta/eta_c, every
    setting on the same five panels (filled: converged; hollow: stopped at max_steps; x at the
    top: diverged). The caption counts each setting's evidence."""

    sweeps = load_sweeps(sweep_paths)
    rows: list[dict[str, Any]] = []
    checks, empty = [], []
    names = (r"$\ell_1$", r"$\ell_2$", "nuclear")
    panels = [("eta_s_over_2", r"final $\eta S/2$"),
              ("s_over_gf", "final S / flow's final S")] + [
        (f"rel_{k}", f"final {name} norm / flow's $-$ 1") for k, name in
        zip(NORMS, names, strict=True)]
    with sweep_figure(out, sweeps, 1, len(panels), 3.3, 3.0) as f:
        axes = f.axes[0]
        colors = plt.cm.tab10(np.arange(len(sweeps)) % 10)
        markers = "osD^v<>ph*"
        for i, sw in enumerate(sweeps):
            srows = phase_rows(sw)
            rows += srows
            counts = evidence_counts(sw)
            name = setting_label(sw)
            checks.append(f"{name}: {counts['above']} converged runs above 1.2 eta_c "
                          f"(max |eta S/2 - 1| = {counts['worst']:.3f}), {counts['below']} "
                          f"below eta_c{_flow_remark(sw)}")
            if counts["converged"] == 0:
                empty.append(name)
            label = name + (" (no converged run)" if counts["converged"] == 0 else "")
            for j, (key, _) in enumerate(panels):
                pts = [r for r in srows if r["status"] != "diverged" and r.get(key) is not None]
                xs = [r["eta_over_eta_c"] for r in pts]
                ys = [r[key] for r in pts]
                axes[j].plot(xs, ys, "-", color=colors[i], lw=0.8, alpha=0.5)
                conv = [(x, y) for x, y, r in zip(xs, ys, pts, strict=True) if r["converged"]]
                rest = [(x, y) for x, y, r in zip(xs, ys, pts, strict=True) if not r["converged"]]
                axes[j].plot(*(zip(*conv, strict=True) if conv else ([], [])),
                             markers[i % len(markers)], color=colors[i], ms=4,
                             label=label if j == 0 else None)
                if rest:
                    axes[j].plot(*zip(*rest, strict=True), markers[i % len(markers)], mfc="none",
                                 color=colors[i], ms=5)
                div = [r["eta_over_eta_c"] for r in srows if r["status"] == "diverged"]
                if div:
                    axes[j].plot(div, [0.97] * len(div), "x", color=colors[i], ms=6, mew=1.5,
                                 transform=axes[j].get_xaxis_transform(), clip_on=False)
        grid_x = np.geomspace(0.3, 20, 100)
        axes[0].axhspan(1 - BAND, 1 + BAND, color="0.85", zorder=0,
                        label=r"$|\eta S/2-1|<0.1$ (EoS band)")
        axes[0].plot(grid_x, np.minimum(grid_x, 1.0), ":", color="gray",
                     label=r"flow-aligned ($S=s_{GF}$) / EoS ($S=2/\eta$)")
        axes[1].axhline(1.0, color="gray", ls=":", lw=0.9)
        for j, (_, ylabel) in enumerate(panels):
            axes[j].axvline(1.0, color="k", ls="--", lw=0.9)
            axes[j].axvline(1.2, color="k", ls=":", lw=0.6)
            if j >= 2:  # from 1e-4 to several-fold: linear within +-1 %, log beyond
                axes[j].axhline(0.0, color="gray", lw=0.8)
                axes[j].set_yscale("symlog", linthresh=0.01)
            logx(axes[j])
            axes[j].set_xlim(axes[0].get_xlim())
            axes[j].set_xlabel(r"$\eta/\eta_c$  (dashed: $\eta_c$; dotted: 1.2 $\eta_c$)",
                               fontsize=8)
            axes[j].set_ylabel(ylabel, fontsize=8)
        axes[0].set_title("(a) edge of stability", fontsize=9)
        axes[1].set_title("(b) sharpness vs the flow's (1: flat below $\\eta_c$)", fontsize=9)
        for j, tag, name in zip(range(2, len(panels)), "cde", names, strict=False):
            axes[j].set_title(f"({tag}) {name} norm vs the flow's end point", fontsize=9)
        handles, labels = axes[0].get_legend_handles_labels()
        f.fig.legend(handles, labels, loc="lower center", ncol=min(4, len(labels)), fontsize=7,
                   bbox_to_anchor=(0.5, -0.02), frameon=False)
        f.title("Final sharpness and norms vs learning rate, every setting (full-batch GD, one "
                "init per setting; hollow: stopped at max_steps, x: diverged)", y=1.02)
        caption = ("Final eta S/2, final S over the flow's final S, and the l1/l2/nuclear norm change relative to the "
                   "gradient flow's end point, against eta/eta_c; every setting on the same "
                   "axes. Evidence per setting: " + " | ".join(checks)
                   + (f". No converged run (drawn hollow or not at all): {', '.join(empty)}"
                      if empty else "") + dropped_note(dropped))
        f.add_rows(rows)
        f.save(caption, inputs=list(sweep_paths),
               params={"figure": "fig_phase", "dropped": dropped or {}},
               tight=(0, 0.04 + 0.035 * (len(labels) // 4), 1, 1))
