"""One plot style and one way to save figures and tables (with numbers and provenance)."""

from sharpness.plots.save import save_figure, save_table
from sharpness.plots.style import PALETTE, figure_style, optimizer_color

__all__ = ["PALETTE", "figure_style", "optimizer_color", "save_figure", "save_table"]
