"""Helpers the predicates share: last point of each curve, dominant coordinates, fits."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from sharpness.claims.model import ItemData
from sharpness.diagonal.regimes import dominant, dominant_sequence


def rows(data: ItemData, **where: Any) -> pd.DataFrame:
    """The item's rows whose columns equal ``where`` (a column absent: no rows)."""
    df = data.rows
    for key, value in where.items():
        if key not in df.columns:
            return df.iloc[0:0]
        df = df[df[key] == value]
    return df


def last_per_curve(df: pd.DataFrame, keys: Sequence[str], time: str) -> pd.DataFrame:
    """The row with the largest ``time`` of each curve (group of ``keys``; NaN keys kept)."""
    if df.empty:
        return df
    ordered = df.sort_values(time)
    return ordered.groupby(list(keys), dropna=False, sort=False).tail(1)


def share_matrix(df: pd.DataFrame, time: str = "s", coord: str = "coord",
                 value: str = "share") -> tuple[np.ndarray, np.ndarray]:
    """``(times, shares[T, d])`` from tidy share rows of one trajectory."""
    wide = df.pivot_table(index=time, columns=coord, values=value, aggfunc="first")
    wide = wide.sort_index()
    return wide.index.to_numpy(float), wide.to_numpy(float)


def dominant_coords(shares: np.ndarray, times: np.ndarray | None = None) -> list[int]:
    """The sequence of distinct dominant coordinates (1-based), ties and ``s = 0`` dropped."""
    sh = np.asarray(shares, float)
    if times is not None:
        sh = sh[np.asarray(times) > 0]
    return [j + 1 for j in dominant_sequence(dominant(sh))]


def never_moves_down(seq: Sequence[int]) -> bool:
    """Whether a dominant sequence is non-decreasing (minor first, major last)."""
    return all(b > a for a, b in zip(seq, seq[1:], strict=False))


def loglog_slope(x: Sequence[float], y: Sequence[float]) -> float:
    """Least-squares slope of log y against log x (positive values only)."""
    xa, ya = np.asarray(x, float), np.asarray(y, float)
    keep = (xa > 0) & (ya > 0) & np.isfinite(xa) & np.isfinite(ya)
    if keep.sum() < 2:
        return float("nan")
    return float(np.polyfit(np.log(xa[keep]), np.log(ya[keep]), 1)[0])


def fmt(x: float | None, digits: int = 3) -> str:
    """A number for the ledger (``n/a`` for None/NaN)."""
    if x is None or not np.isfinite(x):
        return "n/a"
    return f"{x:.{digits}g}" if abs(x) < 1e-2 or abs(x) >= 1e4 else f"{x:.{digits}f}"
