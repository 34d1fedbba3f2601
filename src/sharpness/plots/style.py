"""The shared figure style: readable at column width, colour-blind-safe, vector output."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import seaborn as sns  # noqa: E402

#: Colour-blind-safe palette (seaborn "colorblind"); each method's fixed colour in it is set
#: by the methods table (:mod:`sharpness.plots.methods`).
PALETTE = sns.color_palette("colorblind", 10)


@contextmanager
def figure_style(context: str = "paper", font_scale: float = 1.1) -> Iterator[None]:
    """Apply the project's style inside a ``with`` block (restores the previous one after)."""
    rc = {
        "figure.dpi": 150,
        "savefig.dpi": 200,
        "savefig.bbox": "tight",
        "axes.grid": True,
        "grid.alpha": 0.3,
        "axes.spines.top": False,
        "axes.spines.right": False,
        "legend.frameon": False,
        "pdf.fonttype": 42,
        "lines.linewidth": 1.6,
        "lines.markersize": 4.5,
    }
    with plt.rc_context(), sns.axes_style("ticks"):
        sns.set_context(context, font_scale=font_scale)
        sns.set_palette(PALETTE)
        plt.rcParams.update(rc)
        yield
