"""Panel code shared by the minorfirst figures (written once, used by every figure module).

Convention in every panel: lines are theory (closed form) or the ODE flow, markers are the
discrete optimizer; colours are the methods' fixed colours (:mod:`sharpness.plots.methods`:
GD, l2-SAM, l_inf-SAM) or, for coordinate shares, one colour per coordinate (viridis).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import matplotlib.pyplot as plt
import numpy as np

#: the arrays of a figure's ``data.npz``
A = dict[str, np.ndarray]


def coord_colors(d: int) -> list[Any]:
    """One colour per coordinate 1..d (viridis, light end left out)."""
    return list(plt.get_cmap("viridis")(np.linspace(0.0, 0.9, d)))


def find(items: Iterable[Mapping[str, Any]], **match: Any) -> Any:
    """The first summary record whose fields equal ``match`` (a clear error if none)."""
    for item in items:
        if all(item.get(k) == v for k, v in match.items()):
            return item
    raise KeyError(f"no summary record with {match}")


def sequence_text(sequence: Sequence[int], limit: int | None = None) -> str:
    """``[0, 2, 4]`` -> ``"1→3→5"`` (coordinates 1-based), cut after ``limit`` with ``…``."""
    shown = sequence if limit is None else sequence[:limit]
    more = "…" if limit is not None and len(sequence) > limit else ""
    return "→".join(str(j + 1) for j in shown) + more


def log_axes(ax: Any) -> None:
    """Both axes logarithmic."""
    ax.set_xscale("log")
    ax.set_yscale("log")


def share_rows(S: np.ndarray, share: np.ndarray, **common: Any) -> list[dict[str, Any]]:
    """Tidy rows ``{**common, s, coord, share}`` of a share trajectory (time x coordinate)."""
    return [{**common, "s": float(x), "coord": j + 1, "share": float(v)}
            for x, row in zip(S, share, strict=True) for j, v in enumerate(row)]


def cosine_rows(S: np.ndarray, C: np.ndarray, **common: Any) -> list[dict[str, Any]]:
    """Tidy rows ``{**common, s, one_minus_cos}`` of a cosine trajectory."""
    return [{**common, "s": float(x), "one_minus_cos": float(1 - c)}
            for x, c in zip(S, C, strict=True)]


def one_minus_cos(ax: Any, S: np.ndarray, C: np.ndarray, fmt: str, **kwargs: Any) -> None:
    """Plot ``1 - cos`` against rescaled time (the first point, at s = 0, left out; floored at
    1e-16 so that the log axis keeps a converged curve)."""
    ax.plot(S[1:], np.maximum(1 - C[1:], 1e-16), fmt, **kwargs)


def shares_panel(ax: Any, S: np.ndarray, sh: np.ndarray, Ss: np.ndarray | None,
                 shs: np.ndarray | None, title: str) -> None:
    """Coordinate shares ``|beta_j| / ||beta||_1`` over time: flow lines, discrete circles."""
    cc = coord_colors(sh.shape[1])
    for j in range(sh.shape[1]):
        ax.plot(S, sh[:, j], color=cc[j], label=f"$j={j + 1}$")
        if Ss is not None and shs is not None:
            ax.plot(Ss, shs[:, j], "o", color=cc[j], ms=3, mfc="none")
    ax.set_title(title, fontsize=8)
    ax.set_xlabel("rescaled time $s$")
    ax.set_ylabel(r"share $|\beta_j|/\|\beta\|_1$")
    ax.set_ylim(0, 1.02)
