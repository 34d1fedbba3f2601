"""Closed forms for the single-example diagonal network ``{(mu, +1)}``, ``mu > 0``.

These are *derived* from the model (catalog, paper ``minorfirst``) and must be confirmed against
the flows and discrete optimizers: the tests and the ``linf_depth``/``deep_l`` figures do that.

* ``L = 1``: GD, l2-SAM and l_inf-SAM all have rescaled flow ``d beta/ds = mu``, so
  ``beta(s) = beta(0) + s mu``; in the original clock ``s(t)`` solves ``U + e^U = C`` (Lambert W).
* l_inf-SAM, balanced init ``alpha_j`` at any ``L``: the coordinates decouple,
  ``dw_j/ds = mu_j (w_j + eps_j)^(L-1)`` with ``eps_j = -rho sign(w_j^(L-1))``.
"""

from __future__ import annotations

import numpy as np
from scipy.special import lambertw


def l1_rescaled(beta0: np.ndarray, mu: np.ndarray, s: np.ndarray) -> np.ndarray:
    """``L = 1`` rescaled flow (GD, l2-SAM and l_inf-SAM alike): ``beta(s) = beta0 + s mu``; ``(T, d)``."""
    return np.asarray(beta0, float)[None, :] + np.asarray(s, float)[:, None] * np.asarray(mu, float)[None, :]


def l1_original(
    beta0: np.ndarray, mu: np.ndarray, t: np.ndarray, method: str = "gd", rho: float = 0.0
) -> np.ndarray:
    """``L = 1`` flow in the original clock, ``(T, d)``.

    The perturbation is constant: ``eps = -rho mu/||mu||`` (l2) or ``-rho sign(mu)`` (l_inf), so
    ``ds/dt = sigmoid(-U)`` with ``U = <beta(s) + eps, mu> = U0 + ||mu||^2 s``. Integrating,
    ``U + e^U = ||mu||^2 t + U0 + e^U0``, hence ``U = C - W(e^C)`` (principal Lambert W, computed
    as ``W(exp(C))`` in log form for large ``C``).
    """
    mu = np.asarray(mu, float)
    beta0 = np.asarray(beta0, float)
    eps = {"gd": 0 * mu, "l2": -rho * mu / np.linalg.norm(mu), "linf": -rho * np.sign(mu)}[method]
    m2 = float(mu @ mu)
    u0 = float((beta0 + eps) @ mu)
    C = m2 * np.asarray(t, float) + u0 + np.exp(u0)
    U = C - _lambertw_exp(C)
    s = (U - u0) / m2
    return beta0[None, :] + s[:, None] * mu[None, :]


def _lambertw_exp(C: np.ndarray) -> np.ndarray:
    """``W(exp(C))`` without overflow: Newton on ``w + log w = C`` started from lambertw or ``C - log C``."""
    C = np.asarray(C, float)
    w = np.where(C < 500, np.real(lambertw(np.exp(np.minimum(C, 500)))), C - np.log(np.maximum(C, 1.0)))
    for _ in range(50):
        step = (w + np.log(w) - C) / (1 + 1 / w)
        w = w - step
        if np.all(np.abs(step) <= 1e-15 * np.maximum(1.0, np.abs(w))):
            break
    return w


def linf_weight(alpha: np.ndarray, mu: np.ndarray, rho: float, L: int, s: np.ndarray) -> np.ndarray:
    """Closed-form weight ``w_j(s)`` of the rescaled l_inf-SAM flow (balanced init ``alpha_j > 0``).

    Returns ``(T, d)``; ``inf`` after a blow-up. With ``v = w - rho``:

    * ``L = 1``: ``w = alpha + mu s``;
    * ``L = 2``: ``w = rho + (alpha - rho) e^(mu s)`` until it reaches 0 (``alpha < rho``), then 0;
    * ``L >= 3``, ``alpha > rho``: ``v^(2-L) = v0^(2-L) - (L-2) mu s`` (blow-up at ``s*``);
      ``alpha < rho``, odd ``L``: ``|v|^(2-L) = |v0|^(2-L) + (L-2) mu s`` (``w -> rho``);
      ``alpha < rho``, even ``L``: ``|v|`` grows by the first formula until ``w = 0``, then 0.
    """
    alpha = np.asarray(alpha, float)[None, :]
    mu = np.asarray(mu, float)[None, :]
    s = np.asarray(s, float)[:, None]
    if L == 1:
        return alpha + mu * s
    v0 = alpha - rho
    if L == 2:
        w = rho + v0 * np.exp(mu * s)
        return np.where(v0 < 0, np.maximum(w, 0.0), w)
    p = L - 2
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        base_up = np.abs(v0) ** (-p) - p * mu * s  # growth of |v|
        grow = np.where(base_up > 0, base_up ** (-1.0 / p), np.inf)
        if L % 2 == 1:
            shrink = (np.abs(v0) ** (-p) + p * mu * s) ** (-1.0 / p)
            w_neg = rho - shrink
        else:
            w_neg = np.maximum(rho - grow, 0.0)
        w = np.where(v0 > 0, rho + grow, np.where(v0 < 0, w_neg, rho))
    return w


def linf_predictor(alpha: np.ndarray, mu: np.ndarray, rho: float, L: int, s: np.ndarray) -> np.ndarray:
    """Closed-form ``beta_j(s) = w_j(s)^L`` of the rescaled l_inf-SAM flow, ``(T, d)``."""
    with np.errstate(over="ignore"):
        return linf_weight(alpha, mu, rho, L, s) ** L


def linf_blowup_times(alpha: np.ndarray, mu: np.ndarray, rho: float, L: int) -> np.ndarray:
    """``s*_j = [(L-2) mu_j (alpha_j - rho)^(L-2)]^(-1)`` for ``alpha_j > rho`` (``inf`` otherwise; ``L >= 3``)."""
    if L < 3:
        raise ValueError("finite-time blow-up needs L >= 3")
    alpha, mu = np.asarray(alpha, float), np.asarray(mu, float)
    v = alpha - rho
    with np.errstate(divide="ignore"):
        return np.where(v > 0, 1.0 / ((L - 2) * mu * np.abs(v) ** (L - 2)), np.inf)


def linf_zero_times(alpha: np.ndarray, mu: np.ndarray, rho: float, L: int) -> np.ndarray:
    """Rescaled time at which ``w_j`` reaches 0 and slides (``alpha_j < rho``, even ``L``); ``inf`` otherwise."""
    alpha, mu = np.asarray(alpha, float), np.asarray(mu, float)
    v = rho - alpha
    out = np.full(alpha.shape, np.inf)
    if L % 2 == 1 or L == 1:
        return out
    with np.errstate(divide="ignore", invalid="ignore"):
        if L == 2:
            tz = np.log(rho / v) / mu
        else:
            p = L - 2
            tz = (v ** (-p) - rho ** (-p)) / (p * mu)
    return np.where(v > 0, tz, out)


def linf_limit(alpha: np.ndarray, mu: np.ndarray, rho: float, L: int) -> tuple[str, int | None]:
    """Predicted limit of the rescaled l_inf-SAM flow (the ``j*`` rule).

    Returns ``("e", j*)`` with ``j* = argmax_{j: alpha_j > rho} mu_j (alpha_j - rho)^(L-2)`` when
    some ``alpha_j > rho`` (direction ``e_{j*}``), else ``("zero", None)`` for even ``L``
    (``beta -> 0``) or ``("rho", None)`` for odd ``L`` (``beta -> rho^L 1``). ``L = 1`` is not
    covered (the limit direction is ``mu/||mu||``).
    """
    if L < 2:
        raise ValueError("the j* rule is for L >= 2")
    alpha, mu = np.asarray(alpha, float), np.asarray(mu, float)
    up = alpha > rho
    if not np.any(up):
        return ("zero", None) if L % 2 == 0 else ("rho", None)
    score = np.where(up, mu * np.abs(alpha - rho) ** (L - 2), -np.inf)
    return "e", int(np.argmax(score))
