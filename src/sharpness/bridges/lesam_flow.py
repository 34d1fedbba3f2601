r"""LE-SAM on the L-layer diagonal network: perturbation, discrete steps, flow and rescaled flow.

This extends :mod:`sharpness.diagonal` (GD, l2-SAM, l_inf-SAM) with the loss-equated
perturbation of paper 002 without touching that package: the model, gradients and clocks are
reused from :mod:`sharpness.diagonal.model`.

Discrete LE-SAM (catalog, paper ``lesam``), with ``g = grad L(theta)`` in the *original*
clock (the true gradient of the mean logistic loss)::

    rho_t = min(sigma / (||g|| + varrho), rho_max),    eps = rho_t g / ||g||,
    theta <- theta - eta grad L(theta + eps).

Flow (the same derivation as for l2-SAM: let the step go to zero at fixed sigma, rho_max)::

    d theta / dt = -grad L(theta + eps(theta)),   eps(theta) = min(sigma/||g||, rho_max) g/||g||.

Unclipped and with ``varrho = 0``, ``eps = sigma g / ||g||^2``: the first-order loss rise
``<g, eps> = sigma`` is fixed, so the perturbation no longer has the length ``rho`` of l2-SAM but
``sigma / ||g||``, which *grows* as the gradient shrinks.

Rescaled flow. Write ``g = S(theta) r(theta)`` with ``S = mean_i |l'(u_i)| > 0`` the loss
derivative scale and ``r`` the rescaled gradient (:func:`sharpness.diagonal.model.grad` with
``clock="rescaled"``). For l2-SAM ``eps = rho r/||r||`` does not depend on ``S``, so dividing the
field by ``S(theta + eps)`` gives a rescaled flow that involves only ``r``. For LE-SAM::

    eps = rho_eff(theta) r / ||r||,    rho_eff = min(sigma / (S(theta) ||r(theta)||), rho_max),

and the rescaled flow ``d theta / ds = -r(theta + eps(theta))`` is l2-SAM's rescaled flow with
a *state-dependent radius* ``rho_eff`` that carries the loss derivative ``S``: as the margins
grow, ``S ~ e^{-u}`` falls and the radius grows exponentially in the margin until ``rho_max``
caps it. Dividing by the positive ``S(theta + eps)`` changes the clock only, so the path is the
same as the original flow's (checked in the tests).

Single example ``{(mu, +1)}``, ``L = 2``, balanced ``w^(1) = w^(2) = w`` (so ``u = sum_j mu_j
w_j^2``, ``|l'(u)| = 1/(1 + e^u)``, ``||r|| = sqrt(2) ||mu * w||``)::

    l2-SAM:  dw_j/ds = mu_j w_j (1 - rho mu_j / (sqrt(2) ||mu * w||)),
    LE-SAM:  dw_j/ds = mu_j w_j (1 - sigma mu_j (1 + e^u) / (2 ||mu * w||^2))   (unclipped).

Both have the "minor first" form ``mu_j w_j (1 - c mu_j)``: coordinate j grows iff
``mu_j < 1/c`` and fastest at ``mu_j = 1/(2c)``. For l2-SAM ``c = rho / (sqrt(2)||mu w||)``
falls as ``w`` grows, so dominance moves up to the major coordinate. For unclipped LE-SAM
``c = sigma (1 + e^u) / (2 ||mu w||^2)`` falls while ``||mu w||^2`` outgrows ``1 + e^u`` and
then *rises* again (exponentially in the margin ``u``): dominance moves back down. A
one-coordinate rest point on ``e_j`` solves ``2 u = sigma (1 + e^u)`` (``u = mu_j w_j^2``); at
it every ``k`` with ``mu_k < mu_j`` has ``c mu_k = mu_k / mu_j < 1`` and grows, so the only
stable rest point sits on the *minor* coordinate ``e_1``, at a finite margin (a loss floor).
The clip ``rho_max`` removes this: once ``rho_eff = rho_max`` the flow is l2-SAM with radius
``rho_max``, which returns to the l1 max-margin. These predictions are *derived*; the
``bridges/lesam_diagonal`` figure tests them against simulation.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

import numpy as np
from scipy.integrate import solve_ivp
from scipy.optimize import brentq
from scipy.special import log_expit, logsumexp

from sharpness.diagonal import Dataset, Trajectory, grad, perturbation, predictor, simulate
from sharpness.diagonal.discrete import _as_batch, run_steps
from sharpness.diagonal.flows import stop_events
from sharpness.diagonal.model import Clock, loss_derivative_scale, margins
from sharpness.optim import radius

BridgeMethod = Literal["gd", "l2", "lesam"]
BRIDGE_METHODS: tuple[str, ...] = ("gd", "l2", "lesam")


def log_loss_scale(theta: np.ndarray, data: Dataset) -> np.ndarray:
    """``log S(theta) = log mean_i |l'(u_i)|`` per batch element, computed without underflow."""
    u = margins(theta, data)
    return logsumexp(log_expit(-u), axis=-1) - np.log(u.shape[-1])


def lesam_radius(theta: np.ndarray, data: Dataset, sigma: float | np.ndarray,
                 rho_max: float | np.ndarray = np.inf, varrho: float = 0.0) -> np.ndarray:
    """LE-SAM radius ``min(sigma / (||g|| + varrho), rho_max)`` per batch element, shape ``(B,)``.

    ``||g|| = S ||r||`` is formed in log space, so a loss that underflows gives an infinite
    unclipped radius (then ``rho_max``) rather than a division by zero. ``sigma``/``rho_max``
    are scalars or one value per batch element; ``rho_max = inf`` means no clip.
    """
    B = theta.shape[0]
    r = grad(theta, data, "rescaled")
    log_g = log_loss_scale(theta, data) + 0.5 * np.log(np.sum(r * r, axis=(-2, -1)))
    with np.errstate(over="ignore", divide="ignore"):
        gnorm = np.exp(log_g)
    return radius.lesam_radius(gnorm, _as_batch(sigma, B), _as_batch(rho_max, B), varrho)[0]


def lesam_perturbation(theta: np.ndarray, data: Dataset, sigma: float | np.ndarray,
                       rho_max: float | np.ndarray = np.inf, varrho: float = 0.0) -> np.ndarray:
    """``eps = rho_t g / ||g||`` of LE-SAM (``(B, L, d)``); zero where the gradient is zero."""
    rho = lesam_radius(theta, data, sigma, rho_max, varrho)
    return perturbation(grad(theta, data, "rescaled"), "l2", rho)


def lesam_step(theta: np.ndarray, data: Dataset, sigma: float | np.ndarray,
               eta: float | np.ndarray, rho_max: float | np.ndarray = np.inf,
               varrho: float = 0.0, clock: Clock = "original") -> tuple[np.ndarray, np.ndarray]:
    """One LE-SAM step for the batch; returns ``(new_theta, ds)`` like :func:`sharpness.diagonal.sam_step`."""
    B = theta.shape[0]
    eta_b = _as_batch(eta, B)
    pert = theta + lesam_perturbation(theta, data, sigma, rho_max, varrho)
    new = theta - eta_b[:, None, None] * grad(pert, data, clock)
    ds = eta_b * loss_derivative_scale(pert, data) if clock == "original" else eta_b
    return new, ds


def simulate_lesam(data: Dataset, theta0: np.ndarray, *, sigma: float | np.ndarray,
                   rho_max: float | np.ndarray = np.inf, varrho: float = 0.0,
                   eta: float | np.ndarray = 1e-2, steps: int = 1000, clock: Clock = "original",
                   record_every: int = 1) -> Trajectory:
    """Discrete LE-SAM from ``theta0`` (``(B, L, d)``), recorded as a :class:`~sharpness.diagonal.Trajectory`.

    ``clock="original"``: plain LE-SAM with constant step ``eta``; the rescaled time ``s`` is
    accumulated. ``clock="rescaled"``: the Euler scheme of the rescaled flow (step divided by
    the loss derivative scale at the perturbed point). Non-finite states mark an element
    diverged and freeze it, as in :func:`sharpness.diagonal.simulate`.
    """
    theta = np.array(theta0, dtype=float, copy=True)
    if theta.ndim != 3:
        raise ValueError("theta0 must have shape (B, L, d)")
    B = theta.shape[0]
    eta_b = _as_batch(eta, B)
    sigma_b, rmax_b = _as_batch(sigma, B), _as_batch(rho_max, B)
    return run_steps(data, theta,
                     lambda th: lesam_step(th, data, sigma_b, eta_b, rmax_b, varrho, clock),
                     eta_b=eta_b, steps=steps, clock=clock, record_every=record_every)


def simulate_method(data: Dataset, theta0: np.ndarray, method: BridgeMethod, *,
                    rho: float | np.ndarray = 0.0, sigma: float | np.ndarray = 0.0,
                    rho_max: float | np.ndarray = np.inf, varrho: float = 0.0,
                    eta: float | np.ndarray = 1e-2, steps: int = 1000,
                    clock: Clock = "rescaled", record_every: int = 1) -> Trajectory:
    """GD, l2-SAM (both through :func:`sharpness.diagonal.simulate`) or LE-SAM, one signature."""
    if method == "lesam":
        return simulate_lesam(data, theta0, sigma=sigma, rho_max=rho_max, varrho=varrho,
                              eta=eta, steps=steps, clock=clock, record_every=record_every)
    if method in ("gd", "l2"):
        return simulate(data, theta0, method, rho=rho, eta=eta, steps=steps, clock=clock,
                        record_every=record_every)
    raise ValueError(f"unknown method {method!r}; expected one of {BRIDGE_METHODS}")


@dataclass
class LesamFlow:
    """Solution of the LE-SAM flow: ``time`` ``(T,)``, ``theta`` ``(T, L, d)``, ``beta`` ``(T, d)``.

    ``status`` is ``"ok"``, ``"blowup"`` (``max|w|`` passed the bound) or ``"collapse"`` (the
    predictor reached the origin, where the perturbation is undefined); ``t_end`` the last time.
    """

    time: np.ndarray
    theta: np.ndarray
    beta: np.ndarray
    status: str
    t_end: float
    nfev: int


def lesam_flow_field(
    data: Dataset, sigma: float, rho_max: float = np.inf, varrho: float = 0.0,
    clock: Clock = "original",
) -> Callable[[np.ndarray], np.ndarray]:
    """``theta -> -grad L(theta + eps(theta))`` for one ``(L, d)`` state (LE-SAM flow field)."""

    def f(theta: np.ndarray) -> np.ndarray:
        th = theta[None]
        return -grad(th + lesam_perturbation(th, data, sigma, rho_max, varrho), data, clock)[0]

    return f


def integrate_lesam_flow(data: Dataset, theta0: np.ndarray, *, sigma: float,
                         rho_max: float = np.inf, varrho: float = 0.0,
                         clock: Clock = "original", t_max: float = 10.0,
                         t_eval: np.ndarray | None = None, blowup: float = 1e5,
                         collapse: float = 1e-12, rtol: float = 1e-9, atol: float = 1e-12,
                         solver: str = "DOP853") -> LesamFlow:
    """Integrate the LE-SAM flow (original or rescaled clock) with ``solve_ivp``.

    The field is continuous away from the origin (the ``min`` with ``rho_max`` is continuous),
    so no restarts are needed; terminal events stop at a blow-up or a collapse to the origin.
    """
    theta = np.array(theta0, dtype=float).reshape(np.shape(theta0)[-2:])
    L, d = theta.shape
    f = lesam_flow_field(data, sigma, rho_max, varrho, clock)

    def rhs(_t: float, y: np.ndarray) -> np.ndarray:
        return f(y.reshape(L, d)).ravel()

    sol = solve_ivp(rhs, (0.0, t_max), theta.ravel(), method=solver, t_eval=t_eval,
                    events=list(stop_events(L, d, blowup, collapse)), rtol=rtol, atol=atol)
    if sol.status == -1:
        raise RuntimeError(f"solve_ivp failed: {sol.message}")
    status = "ok"
    t_end = float(t_max)
    if sol.status == 1:
        status = "blowup" if sol.t_events[0].size else "collapse"
        t_end = float((sol.t_events[0] if sol.t_events[0].size else sol.t_events[1])[0])
    th = sol.y.T.reshape(-1, L, d)
    return LesamFlow(sol.t, th, predictor(th), status, t_end, int(sol.nfev))


def first_order_rise(theta: np.ndarray, data: Dataset, eps: np.ndarray) -> np.ndarray:
    """``<g, eps>`` with ``g`` the original-clock gradient: LE-SAM holds it at ``sigma`` (unclipped)."""
    return np.sum(grad(theta, data, "original") * eps, axis=(-2, -1))


def single_coordinate_rest_margin(sigma: float) -> float:
    """The stable root ``u*`` of ``2u = sigma (1 + e^u)`` (the larger one), or NaN if none.

    For ``L = 2``, one example, the unclipped LE-SAM rescaled flow has a rest point on ``e_j``
    with margin ``u*`` (independent of ``j``); the loss floor there is ``log(1 + e^{-u*})``.
    Roots exist iff ``sigma`` is below the tangency value (about 0.557).
    """

    h = lambda u: 2 * u - sigma * (1 + np.exp(u))  # noqa: E731
    # h is concave with its maximum at u = log(2 / sigma)
    u_top = np.log(2.0 / sigma)
    if h(u_top) <= 0:
        return float("nan")
    return float(brentq(h, u_top, u_top + 50.0))
