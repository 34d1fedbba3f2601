"""``fig_measures``: Hessian trace, worst-case, adaptive and average sharpness of the final
models vs eta, and each against the final l2 norm (the norm-sharpness trade-off)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import numpy as np

from sharpness.eos.figures.common import (
    eta_panel,
    load_sweeps,
    setting_label,
    sweep_figure,
    tidy_rows,
)

MEASURES = {"hessian_trace": "Hessian trace (Hutchinson)",
            "worst_case": r"worst-case $\max_{\|\epsilon\|\leq\rho}\Delta L$",
            "adaptive": r"adaptive $\max_{\|\epsilon/|\theta|\|\leq\rho}\Delta L$",
            "average": r"average $E_{\epsilon\sim N(0,\sigma^2)}\Delta L$"}


def fig_measures(sweep_paths: Sequence[str | os.PathLike[str]],
                 out: str | os.PathLike[str]) -> None:
    """Final Hessian trace, worst-case, adaptive and average sharpness vs eta, plus the
    trade-off (l2 norm against each measure), one row per setting."""
    sweeps = load_sweeps(sweep_paths)
    keys = list(MEASURES)
    rows: list[dict[str, Any]] = []
    with sweep_figure(out, sweeps, len(sweeps), len(keys) + 1, 2.9, 2.4) as f:
        axes = f.axes
        for i, sw in enumerate(sweeps):
            r = sw["rows"]
            for j, key in enumerate(keys):
                ax = axes[i, j]
                eta_panel(ax, sw, key, f"C{j}", None, legend=False)
                ax.set_title(MEASURES[key], fontsize=7)
            axes[i, 0].set_ylabel(setting_label(sw), fontsize=8)
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
            rows += tidy_rows(sw, keys + ["sharpness", "l1", "l2", "nuclear"], "fig_measures")
        m = sweeps[0]["setting"]["measures"] if sweeps else {}
        f.title(f"Other sharpness measures vs learning rate (rho={m.get('rho')}, adaptive "
                f"rho={m.get('adaptive_rho')}, sigma={m.get('sigma')})", y=1.0)
        f.add_rows(rows)
        f.save("Hessian trace, worst-case, adaptive and average sharpness of the final models "
               "vs eta (dashed: eta_c), and each against the final l2 norm.",
               inputs=list(sweep_paths), params={"figure": "fig_measures", "measures": m},
               tight=True)

