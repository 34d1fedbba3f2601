"""``fig_test_vs_lr``: test error (with Wilson 95 % intervals over the test images) and test loss
of the final models vs eta, one panel per setting.

A "best eta" is starred only where it is separated: its interval lies below the intervals of the
smallest and the largest finite eta (:func:`sharpness.evidence.stats.separated_minimum`, the rule
the claims ledger uses for the paper's U-shape claim), so a noise-level dip is not called best.
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from typing import Any

from sharpness.eos.figures.common import (
    dropped_note,
    eta_panel,
    load_sweeps,
    series,
    setting_label,
    sweep_figure,
    tidy_rows,
)
from sharpness.evidence.stats import separated_minimum, wilson_interval


def n_test(sweep: dict[str, Any]) -> int:
    """Test images the errors were measured on (the flow's data record)."""
    data = sweep["flow"].get("data") or {}
    n = data.get("n_test") or data.get("test_size")
    if not n:
        raise ValueError(f"{sweep.get('path')}: flow.data has no n_test; rerun the setting")
    return int(n)


def fig_test_vs_lr(sweep_paths: Sequence[str | os.PathLike[str]],
                   out: str | os.PathLike[str], dropped: dict[str, str] | None = None) -> None:
    """Test error (Wilson 95 % bars) and test loss vs eta, one panel per setting; a star
    where the lowest error is separated from both ends."""

    sweeps = load_sweeps(sweep_paths)
    ncol = min(4, len(sweeps))
    nrow = math.ceil(len(sweeps) / ncol)
    rows: list[dict[str, Any]] = []
    notes = []
    legend: dict[str, Any] = {}  # one legend for the figure, below the panels
    with sweep_figure(out, sweeps, nrow, ncol, 3.3, 2.6) as f:
        axes = f.axes
        for k, sw in enumerate(sweeps):
            ax = axes[k // ncol, k % ncol]
            r = sw["rows"]
            n = n_test(sw)
            eta_panel(ax, sw, "test_error", "C0", "test error")
            fin = sorted((x for x in r if not x["diverged"] and x.get("test_error") is not None),
                         key=lambda x: x["lr"])
            cis = [wilson_interval(x["test_error"] * n, n) for x in fin]
            if fin:
                ax.errorbar([x["lr"] for x in fin], [x["test_error"] for x in fin],
                            yerr=[[x["test_error"] - lo for x, (lo, _) in zip(fin, cis, strict=True)],
                                  [hi - x["test_error"] for x, (_, hi) in zip(fin, cis, strict=True)]],
                            fmt="none", ecolor="C0", elinewidth=0.8, capsize=2,
                            label="Wilson 95 % interval")
            best = separated_minimum([x["test_error"] for x in fin], n)
            if best is not None:
                b = fin[best]
                ax.plot(b["lr"], b["test_error"], "*", color="C1", ms=12,
                        label="best $\\eta$ (separated from both ends)")
                notes.append(f"{setting_label(sw)}: best eta {b['lr']:.3g} "
                             f"({b['lr_over_eta_c']:.2g} eta_c) separated from both ends")
            else:
                notes.append(f"{setting_label(sw)}: no eta separated from both ends "
                             f"({len(fin)} finite runs)")
            ax2 = ax.twinx()
            series(ax2, r, "test_loss", "C2", "test loss")
            ax2.set_ylabel("test loss", color="C2", fontsize=8)
            ax2.grid(False)
            ax.set_ylabel("test error", color="C0", fontsize=8)
            ax.set_title(f"{setting_label(sw)} (n={n} test images)", fontsize=8)
            for h, lab in zip(*ax.get_legend_handles_labels(), strict=True):
                legend.setdefault(lab, h)
            for h, lab in zip(*ax2.get_legend_handles_labels(), strict=True):
                legend.setdefault(lab, h)
            srows = tidy_rows(sw, ["test_error", "test_loss", "train_loss"], "fig_test_vs_lr")
            ci = {x["lr"]: c for x, c in zip(fin, cis, strict=True)}
            for row in srows:
                lo, hi = ci.get(row["eta"], (None, None))
                row.update(n_test=n, test_error_low=lo, test_error_high=hi,
                           best_separated=best is not None and row["eta"] == fin[best]["lr"])
            rows += srows
        for k in range(len(sweeps), nrow * ncol):
            axes[k // ncol, k % ncol].axis("off")
        f.title("Test error and loss vs learning rate", y=1.0)
        f.fig.legend(list(legend.values()), list(legend), loc="lower center",
                     ncol=min(6, len(legend)), fontsize=7, frameon=False)
        f.add_rows(rows)
        f.save(inputs=list(sweep_paths), params={"figure": "fig_test_vs_lr",
                                                 "dropped": dropped or {}},
               tight=(0, 0.05 if nrow > 1 else 0.1, 1, 1),
               caption="Test error (left axis, Wilson 95 % intervals over the test images) "
                            "and test loss (right axis) of the final models vs eta; dashed: "
                            "eta_c; crosses: diverged; star: the lowest error, drawn only when "
                            "its interval lies below those of the smallest and largest eta. "
                            + " | ".join(notes) + dropped_note(dropped))
