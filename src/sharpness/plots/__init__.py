"""One plot style, one methods table and one way to save figures and tables (with numbers
and provenance)."""

from sharpness.plots.builder import FigureBuilder, new_figure, stand_in_title
from sharpness.plots.methods import (
    METHODS,
    Method,
    find_method,
    method,
    method_color,
    method_label,
    method_text,
)
from sharpness.plots.save import save_figure, save_table
from sharpness.plots.style import PALETTE, figure_style

__all__ = ["METHODS", "PALETTE", "FigureBuilder", "Method", "figure_style", "find_method",
           "method", "method_color", "method_label", "method_text", "new_figure",
           "save_figure", "save_table", "stand_in_title"]
