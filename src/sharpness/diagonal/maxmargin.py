"""Max-margin directions of separable data: l2 (a QP) and l1 (an LP).

``l2``: ``min ||beta||_2^2 / 2`` s.t. ``y_i <beta, x_i> >= 1``, solved with SLSQP (analytic
gradients and constraint Jacobian); the limit direction of GD (and SAM) at ``L = 1``.
``l1``: ``min ||beta||_1`` s.t. the same constraints, as the linear program in
``beta = p - q``, ``p, q >= 0`` solved by ``scipy.optimize.linprog`` (HiGHS); the limit
direction of GD at ``L = 2``. ``nonneg=True`` restricts to ``beta >= 0``: the reachable set of a
balanced positive-init even-depth network, whose predictor ``w_j^L`` cannot change sign.
"""

from __future__ import annotations

import numpy as np
from scipy.optimize import linprog, minimize

from sharpness.diagonal.model import Dataset


def l2_max_margin(data: Dataset) -> np.ndarray:
    """Unit-norm l2 max-margin direction (hard-margin SVM without bias)."""
    Z = data.Z
    x0 = np.linalg.lstsq(Z, np.ones(data.n), rcond=None)[0]
    x0 = x0 / max(np.min(Z @ x0), 1e-12) if np.min(Z @ x0) > 0 else Z.mean(0) / max(np.min(Z @ Z.mean(0)), 1e-12)
    res = minimize(
        lambda b: 0.5 * b @ b, x0, jac=lambda b: b, method="SLSQP",
        constraints=[{"type": "ineq", "fun": lambda b: Z @ b - 1.0, "jac": lambda b: Z}],
        options={"ftol": 1e-14, "maxiter": 1000},
    )
    if not res.success:
        raise RuntimeError(f"l2 max-margin QP failed: {res.message}")
    return res.x / np.linalg.norm(res.x)


def l1_max_margin(data: Dataset, nonneg: bool = False) -> np.ndarray:
    """Unit-l2-norm direction of the l1 max-margin solution (LP via HiGHS)."""
    Z = data.Z
    d = data.d
    if nonneg:
        res = linprog(np.ones(d), A_ub=-Z, b_ub=-np.ones(data.n), bounds=[(0, None)] * d, method="highs")
        beta = res.x if res.success else None
    else:
        c = np.ones(2 * d)
        A = -np.hstack([Z, -Z])
        res = linprog(c, A_ub=A, b_ub=-np.ones(data.n), bounds=[(0, None)] * (2 * d), method="highs")
        beta = res.x[:d] - res.x[d:] if res.success else None
    if beta is None:
        raise RuntimeError(f"l1 max-margin LP failed: {res.message}")
    return beta / np.linalg.norm(beta)


def cosine(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Cosine between the last axis of ``a`` and the vector ``b`` (0 where ``a`` is 0)."""
    a = np.asarray(a, float)
    b = np.asarray(b, float)
    na = np.linalg.norm(a, axis=-1)
    return np.where(na > 0, (a @ b) / np.where(na > 0, na, 1.0) / np.linalg.norm(b), 0.0)
