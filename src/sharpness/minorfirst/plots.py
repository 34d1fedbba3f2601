"""The figures of the ``minorfirst`` paper by id, drawn from the arrays and summaries of
:mod:`.compute` (and :mod:`.cnn`); one module per figure family, shared panel code in
:mod:`.panels`. ``sharpness minorfirst plot ID`` calls ``PLOTS[ID]``."""

from __future__ import annotations

from collections.abc import Callable

from sharpness.minorfirst.fig_cnn import plot_cnn_synthetic
from sharpness.minorfirst.fig_flow import plot_flow_vs_discrete
from sharpness.minorfirst.fig_linf import plot_deep_l, plot_linf_depth
from sharpness.minorfirst.fig_margin import plot_l1_maxmargin, plot_l2_limit
from sharpness.minorfirst.fig_regimes import plot_l2_regimes
from sharpness.minorfirst.fig_shares import plot_l2_sequential, plot_multi_example

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
