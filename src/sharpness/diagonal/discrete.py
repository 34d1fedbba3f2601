"""Discrete GD, l2-SAM and l_inf-SAM on the diagonal network, vectorised over a batch.

One call advances a whole batch of networks (a grid of initial scales, radii or step sizes) as
one array computation: ``theta`` has shape ``(B, L, d)`` and ``eta``/``rho`` may be scalars or
``(B,)`` arrays.

The step is ``theta <- theta - eta * G(theta + eps(theta))``, where ``G`` is the loss gradient in
the chosen clock (see :mod:`sharpness.diagonal.model`). With ``clock="original"`` this is plain
SAM (or GD) with constant step ``eta``; the rescaled time ``s`` is accumulated alongside
(``ds = eta * mean|l'|`` at the perturbed point), so a discrete run can be compared with the
rescaled flow and its closed forms at matching ``s``. With ``clock="rescaled"`` the step is
divided by ``mean|l'|`` at the perturbed point (SAM with the loss-normalised step size
``eta / mean|l'|``): the Euler scheme of the rescaled flow, the only practical way to follow
logistic-loss dynamics to large margins, since the original clock slows down exponentially.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from sharpness.diagonal.model import (
    Clock,
    Dataset,
    Method,
    grad,
    loss,
    loss_derivative_scale,
    perturbation,
    predictor,
)


@dataclass
class Trajectory:
    """Recorded states of a batch run.

    ``beta``: ``(B, T, d)`` predictors; ``theta``: final parameters ``(B, L, d)``; ``step``:
    ``(T,)`` iteration numbers; ``t``: ``(B, T)`` original time (NaN in the rescaled clock);
    ``s``: ``(B, T)`` rescaled time; ``loss``: ``(B, T)``; ``diverged``: ``(B,)`` whether the run
    produced a non-finite value (the batch element is then frozen at its last finite state) and
    ``diverged_step``: the step it happened (-1 if never).
    """

    beta: np.ndarray
    theta: np.ndarray
    step: np.ndarray
    t: np.ndarray
    s: np.ndarray
    loss: np.ndarray
    diverged: np.ndarray
    diverged_step: np.ndarray


def _as_batch(x: float | np.ndarray, B: int) -> np.ndarray:
    a = np.asarray(x, dtype=float)
    return np.broadcast_to(a, (B,)).copy() if a.ndim == 0 else a.reshape(B)


def sam_step(
    theta: np.ndarray,
    data: Dataset,
    method: Method,
    rho: float | np.ndarray,
    eta: float | np.ndarray,
    clock: Clock = "original",
) -> tuple[np.ndarray, np.ndarray]:
    """One GD/SAM step for the batch ``theta``. Returns ``(new_theta, ds)``.

    ``ds`` is the rescaled-time increment of the step: ``eta * mean|l'(theta + eps)|`` in the
    original clock and ``eta`` in the rescaled one.
    """
    B = theta.shape[0]
    eta_b = _as_batch(eta, B)
    if method == "gd":
        pert = theta
    else:
        pert = theta + perturbation(grad(theta, data, "rescaled"), method, _as_batch(rho, B))
    direction = grad(pert, data, clock)
    new = theta - eta_b[:, None, None] * direction
    ds = eta_b * loss_derivative_scale(pert, data) if clock == "original" else eta_b
    return new, ds


def simulate(
    data: Dataset,
    theta0: np.ndarray,
    method: Method,
    *,
    rho: float | np.ndarray = 0.0,
    eta: float | np.ndarray = 1e-2,
    steps: int = 1000,
    clock: Clock = "original",
    record_every: int = 1,
) -> Trajectory:
    """Run ``steps`` GD/SAM iterations from ``theta0`` (``(B, L, d)``) and record every few steps.

    ``method`` is ``"gd"``, ``"l2"`` (l2-SAM) or ``"linf"`` (l_inf-SAM). ``eta`` and ``rho`` are
    scalars or one value per batch element. Non-finite states mark the element diverged.
    """
    theta = np.array(theta0, dtype=float, copy=True)
    if theta.ndim != 3:
        raise ValueError("theta0 must have shape (B, L, d)")
    eta_b = _as_batch(eta, theta.shape[0])
    return run_steps(data, theta, lambda th: sam_step(th, data, method, rho, eta_b, clock),
                     eta_b=eta_b, steps=steps, clock=clock, record_every=record_every)


StepFn = Callable[[np.ndarray], tuple[np.ndarray, np.ndarray]]


def run_steps(data: Dataset, theta: np.ndarray, step: StepFn, *, eta_b: np.ndarray, steps: int,
              clock: Clock, record_every: int) -> Trajectory:
    """Iterate ``step`` (``theta -> (new theta, rescaled-time increment)``) on a batch.

    The shared loop of every discrete optimizer on the diagonal network: records the predictor,
    times and loss every ``record_every`` steps; an element whose state or predictor becomes
    non-finite is marked diverged (with its step) and frozen.
    """
    B = theta.shape[0]
    n_rec = steps // record_every + 1
    betas = np.empty((B, n_rec, theta.shape[-1]))
    t_rec = np.empty((B, n_rec))
    s_rec = np.empty((B, n_rec))
    l_rec = np.empty((B, n_rec))
    step_rec = np.arange(n_rec) * record_every
    diverged = np.zeros(B, dtype=bool)
    div_step = np.full(B, -1)
    s = np.zeros(B)

    def record(k: int) -> None:
        betas[:, k] = predictor(theta)
        t_rec[:, k] = step_rec[k] * eta_b if clock == "original" else np.nan
        s_rec[:, k] = s
        l_rec[:, k] = loss(theta, data)

    record(0)
    with np.errstate(over="ignore", invalid="ignore"):
        for it in range(1, steps + 1):
            new, ds = step(theta)
            ok = (
                np.all(np.isfinite(new), axis=(-2, -1))
                & np.all(np.isfinite(predictor(new)), axis=-1)
                & np.isfinite(ds)
                & ~diverged
            )
            bad = ~ok & ~diverged
            div_step[bad] = it
            diverged |= bad
            theta = np.where(ok[:, None, None], new, theta)
            s = np.where(ok, s + ds, s)
            if it % record_every == 0:
                record(it // record_every)
    return Trajectory(betas, theta, step_rec, t_rec, s_rec, l_rec, diverged, div_step)
