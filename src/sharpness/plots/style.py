"""The shared figure style: readable at column width, colour-blind-safe, vector output."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import seaborn as sns  # noqa: E402

#: Colour-blind-safe palette (seaborn "colorblind"), one fixed colour per optimizer so that
#: every figure of every paper shows GD/SGD, SAM and LE-SAM in the same colours.
PALETTE = sns.color_palette("colorblind", 10)
_OPTIMIZER_ORDER = ("gd", "sgd", "sam", "sam_linf", "lesam", "asam", "esam", "fsam",
                    "eigensam", "gf")


def optimizer_color(name: str) -> tuple[float, float, float]:
    """The fixed colour of an optimizer (unknown names get a stable fallback)."""
    key = name.lower().replace("-", "_").replace("l2_sam", "sam").replace("linf_sam", "sam_linf")
    if key in _OPTIMIZER_ORDER:
        return PALETTE[_OPTIMIZER_ORDER.index(key) % len(PALETTE)]
    return PALETTE[sum(map(ord, key)) % len(PALETTE)]


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
