"""Dominant coordinates and the three regimes of l2-SAM, read off trajectories (never hard-coded).

* ``collapse`` (regime 1): the predictor shrinks to the origin;
* ``sequential`` (regime 2): the first coordinate to dominate is a minor one (not the major
  ``argmax mu``), and dominance moves up later (minor first, major last);
* ``major-first`` (regime 3): the major coordinate dominates from the start, as under GD.

The dominant coordinate at a time is ``argmax_j |beta_j| / ||beta||_1``; times where the two
largest shares are within ``tie_tol`` (e.g. the uniform init itself) have no dominant coordinate
(-1).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

REGIMES: tuple[str, ...] = ("collapse", "sequential", "major-first")


def shares(beta: np.ndarray) -> np.ndarray:
    """``|beta_j| / ||beta||_1`` along the last axis (0 where ``beta = 0``)."""
    a = np.abs(np.asarray(beta, float))
    tot = a.sum(-1, keepdims=True)
    return np.where(tot > 0, a / np.where(tot > 0, tot, 1.0), 0.0)


def dominant(beta: np.ndarray, tie_tol: float = 1e-6) -> np.ndarray:
    """Index of the dominant coordinate along the last axis, -1 at ties or at ``beta = 0``."""
    sh = shares(beta)
    top2 = np.sort(sh, axis=-1)[..., -2:] if sh.shape[-1] > 1 else np.concatenate([0 * sh, sh], -1)
    dom = np.argmax(sh, axis=-1)
    return np.where((top2[..., 1] - top2[..., 0] > tie_tol) & (sh.sum(-1) > 0), dom, -1)


def dominant_sequence(dom: np.ndarray) -> list[int]:
    """The distinct dominant coordinates in order of appearance (ties dropped, repeats merged)."""
    seq: list[int] = []
    for j in np.asarray(dom).tolist():
        if j >= 0 and (not seq or seq[-1] != j):
            seq.append(int(j))
    return seq


@dataclass(frozen=True)
class RegimeInfo:
    """Classification of one trajectory: the regime, the dominant sequence and two of its properties."""

    regime: str
    sequence: tuple[int, ...]
    monotone: bool
    reached_major: bool
    norm_ratio: float


def classify_regime(
    beta: np.ndarray,
    major: int,
    collapse_ratio: float = 0.5,
    tie_tol: float = 1e-6,
    collapsed: bool = False,
) -> RegimeInfo:
    """Classify a trajectory ``beta`` (``(T, d)``) given the index of the major coordinate.

    Collapse: ``collapsed`` (a flow's collapse event) or ``||beta(T)||_1 < collapse_ratio *
    ||beta(0)||_1``. Otherwise ``sequential`` if the first dominant coordinate is not ``major``,
    else ``major-first``.
    """
    beta = np.asarray(beta, float)
    n0 = float(np.abs(beta[0]).sum())
    nT = float(np.abs(beta[-1]).sum())
    ratio = nT / n0 if n0 > 0 else np.inf
    seq = dominant_sequence(dominant(beta, tie_tol))
    monotone = all(b > a for a, b in zip(seq, seq[1:], strict=False))
    reached = bool(seq) and seq[-1] == major
    if collapsed or ratio < collapse_ratio:
        regime = "collapse"
    elif seq and seq[0] != major:
        regime = "sequential"
    else:
        regime = "major-first"
    return RegimeInfo(regime, tuple(seq), monotone, reached, ratio)


def regime_changes(alphas: np.ndarray, regimes: list[str]) -> list[tuple[float, float, str, str]]:
    """Grid intervals ``(alpha_lo, alpha_hi, regime_lo, regime_hi)`` where the regime changes."""
    out = []
    for k in range(len(regimes) - 1):
        if regimes[k] != regimes[k + 1]:
            out.append((float(alphas[k]), float(alphas[k + 1]), regimes[k], regimes[k + 1]))
    return out


def refine_boundary(
    classify: Callable[[float], str], lo: float, hi: float, rel_tol: float = 1e-3, geometric: bool = True
) -> float:
    """Bisection for the init scale where ``classify`` changes between ``lo`` and ``hi``."""
    r_lo = classify(lo)
    while hi / lo - 1 > rel_tol if geometric else hi - lo > rel_tol * hi:
        mid = float(np.sqrt(lo * hi)) if geometric else 0.5 * (lo + hi)
        if classify(mid) == r_lo:
            lo = mid
        else:
            hi = mid
    return float(np.sqrt(lo * hi)) if geometric else 0.5 * (lo + hi)
