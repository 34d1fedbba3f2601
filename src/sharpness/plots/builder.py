"""The figure builder: what every figure does besides drawing, written once.

A figure function draws its panels and says what it shows; the builder owns the rest: the
project's style (:func:`figure_style`), the figure and its axes, the title line that names
every stand-in data set, the tidy CSV rows of the plotted numbers, the layout and the saving
(:func:`sharpness.plots.save_figure`: PDF, PNG, CSV, caption, provenance)::

    with new_figure(out, 1, 2, figsize=(9, 3.6), stand_ins=subs) as f:
        f.axes[0].plot(x, y)
        f.add_rows(({"x": a, "y": b} for a, b in zip(x, y)), panel="left")
        f.title("What the figure shows")
        f.save(caption, inputs=inputs, params=params)

A figure that is built but never saved is an error (a figure job that writes nothing must not
pass silently); on an exception the figure is closed and the exception propagates.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

import matplotlib.pyplot as plt

from sharpness.plots.save import save_figure
from sharpness.plots.style import figure_style


def stand_in_title(text: str, stand_ins: Sequence[str]) -> str:
    """``text`` with the stand-in data sets named after it (unchanged without stand-ins)."""
    return f"{text} (stand-in: {'; '.join(stand_ins)})" if stand_ins else text


class FigureBuilder:
    """One figure being built: ``fig``, ``axes`` (``None`` for a bare figure laid out by the
    caller with a grid spec), the CSV ``rows`` and the ``stand_ins`` it names."""

    def __init__(self, out: str | os.PathLike[str], fig: Any, axes: Any,
                 stand_ins: Sequence[str]) -> None:
        self.out = out
        self.fig = fig
        self.axes = axes
        self.stand_ins = list(stand_ins)
        self.rows: list[dict[str, Any]] = []
        self.record: dict[str, Any] | None = None

    def add_rows(self, rows: Iterable[Mapping[str, Any]], **common: Any) -> None:
        """Append tidy rows to the CSV, each prefixed with the ``common`` columns (in the
        order given, before the row's own)."""
        self.rows.extend({**common, **row} for row in rows)

    def title(self, text: str, **kwargs: Any) -> None:
        """The figure's title line, naming every stand-in (font size 10 unless given)."""
        kwargs.setdefault("fontsize", 10)
        self.fig.suptitle(stand_in_title(text, self.stand_ins), **kwargs)

    def save(self, caption: str, *, inputs: Sequence[str | os.PathLike[str]] = (),
             params: dict[str, Any] | None = None, data: Sequence[dict[str, Any]] = (),
             tight: bool | tuple[float, float, float, float] = False) -> dict[str, Any]:
        """Lay out (``tight``: ``True`` for ``tight_layout()``, a rect for
        ``tight_layout(rect=...)``) and save with the rows, caption and provenance.
        Returns the provenance record."""
        if self.record is not None:
            raise RuntimeError(f"figure {self.out} saved twice")
        if tight is True:
            self.fig.tight_layout()
        elif tight:
            self.fig.tight_layout(rect=tight)
        self.record = save_figure(self.fig, self.out, rows=self.rows, caption=caption,
                                  inputs=inputs, params=params, stand_ins=self.stand_ins,
                                  data=data)
        return self.record


@contextmanager
def new_figure(out: str | os.PathLike[str], nrows: int | None = 1, ncols: int = 1, *,
               figsize: tuple[float, float] | None = None, stand_ins: Sequence[str] = (),
               **subplots: Any) -> Iterator[FigureBuilder]:
    """Build the figure saved to ``out`` in the project style: ``nrows`` x ``ncols`` axes
    (``plt.subplots`` keywords pass through), or a bare figure when ``nrows`` is ``None``."""
    with figure_style():
        if nrows is None:
            fig, axes = plt.figure(figsize=figsize), None
        else:
            fig, axes = plt.subplots(nrows, ncols, figsize=figsize, **subplots)
        builder = FigureBuilder(out, fig, axes, stand_ins)
        try:
            yield builder
        except BaseException:
            plt.close(fig)
            raise
        if builder.record is None:
            plt.close(fig)
            raise RuntimeError(f"figure {out} was built but never saved (call .save())")
