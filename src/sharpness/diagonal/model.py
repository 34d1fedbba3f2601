"""L-layer diagonal linear network with logistic loss: predictor, loss, gradients, SAM perturbations.

Parameters are stored as an array ``theta`` of shape ``(B, L, d)``: a batch of ``B`` networks
(one per initialisation, step size or radius of a sweep), ``L`` layers, ``d`` coordinates. The
predictor is ``beta = w^(1) * ... * w^(L)`` (elementwise) and ``f(x) = <beta, x>``. The loss is
the logistic loss ``log(1 + exp(-y <beta, x>))`` averaged over the ``n`` examples.

All gradients are written analytically (they are checked against ``torch.autograd`` in the
tests). Two clocks are supported:

* ``"original"``: the true gradient of the mean logistic loss;
* ``"rescaled"``: the gradient divided by the positive scalar ``mean_i |l'(u_i)|`` evaluated at
  the same point. Dividing a vector field by a positive scalar changes the clock, not the path,
  so the rescaled flow traces exactly the path of the original flow (for a single example this
  is the paper's rescaled flow, obtained by dividing by ``-l'``). The ratio is computed from
  softmax weights, so it stays finite when the loss underflows.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np
from scipy.special import expit, log_expit

Clock = Literal["original", "rescaled"]
Method = Literal["gd", "l2", "linf"]
METHODS: tuple[str, ...] = ("gd", "l2", "linf")


@dataclass(frozen=True)
class Dataset:
    """Binary classification data ``{(x_i, y_i)}`` with ``X`` of shape ``(n, d)``, ``y`` in {-1, +1}."""

    X: np.ndarray
    y: np.ndarray

    def __post_init__(self) -> None:
        X = np.atleast_2d(np.asarray(self.X, dtype=float))
        y = np.asarray(self.y, dtype=float).reshape(-1)
        if X.shape[0] != y.shape[0]:
            raise ValueError(f"X has {X.shape[0]} rows but y has {y.shape[0]} labels")
        if not np.all(np.isin(y, (-1.0, 1.0))):
            raise ValueError("labels must be -1 or +1")
        object.__setattr__(self, "X", X)
        object.__setattr__(self, "y", y)
        object.__setattr__(self, "_Z", y[:, None] * X)

    @property
    def n(self) -> int:
        """Number of examples."""
        return int(self.X.shape[0])

    @property
    def d(self) -> int:
        """Number of coordinates (features)."""
        return int(self.X.shape[1])

    @property
    def Z(self) -> np.ndarray:
        """Signed examples ``y_i x_i`` (rows); the margin of ``beta`` on example i is ``Z[i] @ beta``."""
        return self._Z  # type: ignore[attr-defined]


def single_example(mu: np.ndarray | list[float]) -> Dataset:
    """The paper's single-example data set ``{(mu, +1)}``."""
    mu = np.asarray(mu, dtype=float).reshape(1, -1)
    return Dataset(mu, np.ones(1))


def gaussian_classes(
    n: int, scales: np.ndarray | list[float], noise: float, seed: int = 0
) -> Dataset:
    """Separable two-class data ``x_i = y_i * scales + noise * z_i`` (``z`` standard normal).

    The class mean ``scales`` spreads the feature strength over coordinates (minor to major), as
    the paper's multi-example experiments do. Rows whose signed example has a non-positive
    coordinate sum are resampled so that ``beta = scales`` separates the data.
    """
    rng = np.random.default_rng(seed)
    scales = np.asarray(scales, dtype=float)
    y = np.where(np.arange(n) % 2 == 0, 1.0, -1.0)
    X = np.empty((n, scales.size))
    for i in range(n):
        while True:
            z = scales + noise * rng.standard_normal(scales.size)
            if z @ scales > 0:
                break
        X[i] = y[i] * z
    return Dataset(X, y)


def init_theta(alpha: float | np.ndarray, L: int, d: int) -> np.ndarray:
    """Balanced positive initialisation ``w^(l)_j(0) = alpha_j`` for every layer, shape ``(1, L, d)``.

    ``alpha`` is a scalar (uniform init ``alpha * 1``), a ``(d,)`` vector (per coordinate) or an
    ``(L, d)`` array (per layer and coordinate).
    """
    return np.broadcast_to(np.asarray(alpha, dtype=float), (L, d))[None].copy()


def init_batch(alphas: np.ndarray | list[float], L: int, d: int) -> np.ndarray:
    """A batch of initialisations, shape ``(B, L, d)``, one per entry of ``alphas``.

    ``alphas`` is ``(B,)`` (uniform scales), ``(B, d)`` (per coordinate) or ``(B, L, d)``.
    """
    a = np.asarray(alphas, dtype=float)
    if a.ndim == 1:
        a = a[:, None, None]
    elif a.ndim == 2:
        a = a[:, None, :]
    return np.broadcast_to(a, (a.shape[0], L, d)).copy()


def predictor(theta: np.ndarray) -> np.ndarray:
    """``beta = prod_l w^(l)`` for ``theta`` of shape ``(B, L, d)``; returns ``(B, d)``."""
    return np.prod(theta, axis=-2)


def _prod_except(theta: np.ndarray) -> np.ndarray:
    """``prod_{k != l} w^(k)`` for every layer l (prefix/suffix products, exact at zeros)."""
    L = theta.shape[-2]
    if L == 1:
        return np.ones_like(theta)
    if L == 2:
        return theta[..., ::-1, :]
    ones = np.ones_like(theta[..., :1, :])
    prefix = np.concatenate([ones, np.cumprod(theta, axis=-2)[..., :-1, :]], axis=-2)
    rev = theta[..., ::-1, :]
    suffix = np.concatenate([ones, np.cumprod(rev, axis=-2)[..., :-1, :]], axis=-2)[..., ::-1, :]
    out = prefix * suffix
    assert out.shape[-2] == L
    return out


def margins(theta: np.ndarray, data: Dataset) -> np.ndarray:
    """Margins ``u_i = y_i <beta, x_i>``, shape ``(B, n)``."""
    return predictor(theta) @ data.Z.T


def loss(theta: np.ndarray, data: Dataset) -> np.ndarray:
    """Mean logistic loss per batch element, shape ``(B,)`` (stable for large margins)."""
    return np.mean(np.logaddexp(0.0, -margins(theta, data)), axis=-1)


def margin_weights(u: np.ndarray, clock: Clock) -> np.ndarray:
    """Weights ``c_i`` with ``dL/dbeta = -sum_i c_i y_i x_i``.

    ``original``: ``c_i = |l'(u_i)| / n = sigmoid(-u_i) / n``. ``rescaled``: the same divided by
    their sum, computed in log space (softmax of ``log sigmoid(-u_i)``) so it never underflows.
    """
    if clock == "original":
        return expit(-u) / u.shape[-1]
    if clock == "rescaled":
        logw = log_expit(-u)
        w = np.exp(logw - logw.max(axis=-1, keepdims=True))
        return w / w.sum(axis=-1, keepdims=True)
    raise ValueError(f"unknown clock {clock!r}")


def loss_derivative_scale(theta: np.ndarray, data: Dataset) -> np.ndarray:
    """``mean_i |l'(u_i)|``: the positive factor that turns the original clock into the rescaled one."""
    return np.mean(expit(-margins(theta, data)), axis=-1)


def grad(theta: np.ndarray, data: Dataset, clock: Clock = "original") -> np.ndarray:
    """Gradient of the mean logistic loss w.r.t. ``theta`` (``(B, L, d)``), in the given clock."""
    c = margin_weights(margins(theta, data), clock)  # (B, n)
    dbeta = -(c @ data.Z)  # (B, d)
    return dbeta[..., None, :] * _prod_except(theta)


def perturbation(
    g: np.ndarray, method: Method, rho: float | np.ndarray
) -> np.ndarray:
    """SAM ascent step ``epsilon`` from the gradient ``g`` (``(B, L, d)``).

    ``l2``: ``rho * g / ||g||_2`` (norm over all parameters; zero where ``g = 0``);
    ``linf``: ``rho * sign(g)`` (``sign(0) = 0``); ``gd``: zero. ``rho`` is a scalar or ``(B,)``.
    Both are invariant to a positive rescaling of ``g``, so either clock's gradient may be used.
    """
    r = np.asarray(rho, dtype=float)
    r = r.reshape(r.shape + (1, 1)) if r.ndim == 1 else r
    if method == "gd":
        return np.zeros_like(g)
    if method == "l2":
        nrm = np.sqrt(np.sum(g * g, axis=(-2, -1), keepdims=True))
        safe = np.where(nrm > 0, nrm, 1.0)
        return np.where(nrm > 0, r * g / safe, 0.0)
    if method == "linf":
        return r * np.sign(g)
    raise ValueError(f"unknown method {method!r}; expected one of {METHODS}")


def sam_direction(
    theta: np.ndarray,
    data: Dataset,
    method: Method,
    rho: float | np.ndarray,
    clock: Clock = "original",
) -> np.ndarray:
    """The descent direction of one SAM step: ``grad L(theta + epsilon(theta))`` in the given clock.

    With ``method="gd"`` this is the plain gradient. The rescaled clock divides by the loss
    derivative scale at the perturbed point, so the rescaled flow is ``-sam_direction(...)``.
    """
    if method == "gd":
        return grad(theta, data, clock)
    eps = perturbation(grad(theta, data, "rescaled"), method, rho)
    return grad(theta + eps, data, clock)
