"""Rescaled-flow paths of GD, l2-SAM and LE-SAM for a batch of diagonal networks, with step control.

The regime maps need hundreds of paths followed from tiny to huge margins. A fixed Euler step
is either too slow (the predictor grows like ``e^{2 mu_d s}``) or unstable where the LE-SAM
field is stiff (near the origin its radius ``sigma / ||g||`` diverges). So each batch element
takes Euler steps of the rescaled flow ``d theta/ds = F(theta)`` with its own step

    h = min(eta_max, rel_step * ||theta|| / ||F(theta)||, next record time - s),

i.e. at most a fraction ``rel_step`` of relative change per step (this is the discrete
optimizer with a loss-normalised, capped step size; as ``rel_step -> 0`` it is the flow, which
the tests check against ``solve_ivp``). An element stops when its outcome is settled:

* ``margin``: every margin exceeds ``u_stop`` (the loss is ~``e^{-u_stop}``; for GD, l2-SAM and
  clipped LE-SAM the field is then GD's up to ``O(rho/||theta||)`` and the dominant coordinate
  only moves up);
* ``rest``: the relative speed ``||F|| / ||theta||`` fell below ``rest_tol`` (unclipped LE-SAM's
  rest point at a finite margin);
* ``collapse``: ``max|beta| < collapse`` (the path reached the origin in finite time);
* ``max_steps``: the step budget ran out (reported, never hidden).

States are recorded on a common grid of rescaled times; after an element stops its later
records are NaN (the plotted curves end there) and ``beta_end`` keeps its last state.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from sharpness.bridges.lesam_flow import BridgeMethod, lesam_perturbation
from sharpness.diagonal import Dataset, grad, margins, predictor, sam_direction
from sharpness.diagonal.discrete import _as_batch

STOP_REASONS: tuple[str, ...] = ("margin", "rest", "collapse", "max_steps", "s_max")


@dataclass
class PathBatch:
    """Recorded paths: ``s`` ``(T,)``, ``beta`` ``(B, T, d)`` (NaN after a stop), ``beta_end``
    ``(B, d)``, ``s_end`` ``(B,)``, ``stop`` ``(B,)`` reasons, ``steps`` ``(B,)`` Euler steps taken,
    ``min_margin_end`` ``(B,)``."""

    s: np.ndarray
    beta: np.ndarray
    beta_end: np.ndarray
    s_end: np.ndarray
    stop: np.ndarray
    steps: np.ndarray
    min_margin_end: np.ndarray


def rescaled_field(
    data: Dataset,
    method: BridgeMethod,
    *,
    rho: float | np.ndarray = 0.0,
    sigma: float | np.ndarray = 0.0,
    rho_max: float | np.ndarray = np.inf,
    varrho: float = 0.0,
) -> Callable[[np.ndarray, np.ndarray], np.ndarray]:
    """``(theta, active) -> F(theta)``: the rescaled-flow field of the method for a batch.

    ``active`` (``(B,)`` bool) selects the elements whose field is needed; per-element
    parameters are sliced to match.
    """

    def field(theta: np.ndarray, active: np.ndarray) -> np.ndarray:
        B = active.size
        if method == "gd":
            return -grad(theta, data, "rescaled")
        if method == "l2":
            return -sam_direction(theta, data, "l2", _as_batch(rho, B)[active], "rescaled")
        if method == "lesam":
            eps = lesam_perturbation(theta, data, _as_batch(sigma, B)[active],
                                     _as_batch(rho_max, B)[active], varrho)
            return -grad(theta + eps, data, "rescaled")
        raise ValueError(f"unknown method {method!r}")

    return field


def rescaled_paths(
    data: Dataset,
    theta0: np.ndarray,
    method: BridgeMethod,
    *,
    rho: float | np.ndarray = 0.0,
    sigma: float | np.ndarray = 0.0,
    rho_max: float | np.ndarray = np.inf,
    varrho: float = 0.0,
    s_grid: np.ndarray,
    rel_step: float = 0.02,
    eta_max: float = 0.05,
    u_stop: float = 50.0,
    rest_tol: float = 1e-7,
    collapse: float = 1e-10,
    max_steps: int = 20000,
) -> PathBatch:
    """Follow the rescaled flow of ``method`` from every ``theta0[b]`` (``(B, L, d)``); see module doc."""
    theta = np.array(theta0, dtype=float, copy=True)
    B, _, d = theta.shape
    s_grid = np.asarray(s_grid, dtype=float)
    T = s_grid.size
    field = rescaled_field(data, method, rho=rho, sigma=sigma, rho_max=rho_max, varrho=varrho)
    beta = np.full((B, T, d), np.nan)
    beta[:, 0] = predictor(theta)
    nxt = np.ones(B, dtype=int)  # index of the next record time
    s = np.zeros(B)
    steps = np.zeros(B, dtype=int)
    stop = np.array([""] * B, dtype=object)
    active = np.ones(B, dtype=bool)
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        for _ in range(max_steps):
            idx = np.flatnonzero(active)
            if idx.size == 0:
                break
            th = theta[idx]
            bet = predictor(th)
            u_min = margins(th, data).min(-1)
            F = field(th, active)
            th_n = np.sqrt(np.sum(th * th, axis=(-2, -1)))
            F_n = np.sqrt(np.sum(F * F, axis=(-2, -1)))
            done = np.full(idx.size, "", dtype=object)
            done[~np.all(np.isfinite(F), axis=(-2, -1))] = "max_steps"
            done[np.abs(bet).max(-1) < collapse] = "collapse"
            done[(F_n < rest_tol * th_n) & (done == "")] = "rest"
            done[(u_min > u_stop) & (done == "")] = "margin"
            done[(nxt[idx] >= T) & (done == "")] = "s_max"
            fin = done != ""
            stop[idx[fin]] = done[fin]
            active[idx[fin]] = False
            go = ~fin
            if not go.any():
                continue
            i_go = idx[go]
            h = np.minimum(eta_max, rel_step * th_n[go] / np.where(F_n[go] > 0, F_n[go], 1.0))
            h = np.minimum(h, s_grid[np.minimum(nxt[i_go], T - 1)] - s[i_go])
            theta[i_go] = th[go] + h[:, None, None] * F[go]
            s[i_go] += h
            steps[i_go] += 1
            hit = np.isclose(s[i_go], s_grid[np.minimum(nxt[i_go], T - 1)], rtol=0, atol=1e-12)
            rec = i_go[hit]
            beta[rec, nxt[rec]] = predictor(theta[rec])
            nxt[rec] += 1
    stop[active] = "max_steps"
    return PathBatch(s_grid, beta, predictor(theta), s, stop, steps, margins(theta, data).min(-1))
