"""Sharpness and the other sharpness measures of the `eos` study, on a full data set.

* :func:`sharpness` - top eigenvalue of the full-batch loss Hessian by Lanczos
  (:func:`sharpness.curvature.top_eigenvalues`, ``eigsh`` on
  :class:`sharpness.curvature.HessianOperator`). It accepts
  the previous top eigenvector as the start vector: along a GD path the eigenvector moves
  slowly, so a warm start cuts the Hessian-vector products a measurement costs.
* :func:`hessian_trace` - Hutchinson (:func:`sharpness.curvature.hutchinson_trace`), the
  "average-curvature" measure.
* :func:`worst_case_sharpness` - ``max_{||e||_2 <= rho} L(theta + e) - L(theta)`` by projected
  gradient ascent started from the first-order (SAM) point ``rho g / ||g||``; a lower bound of
  the true maximum that is exact to first order.
* :func:`adaptive_sharpness` - the same with the ball scaled elementwise by ``|theta|``
  (``||e / |theta| ||_2 <= rho``, Kwon et al. 2021 / Andriushchenko et al. 2023), which is
  invariant to the layer rescalings that leave a ReLU network's function unchanged.
* :func:`average_sharpness` - ``E_{e ~ N(0, sigma^2 I)} L(theta + e) - L(theta)`` (Monte Carlo).

All of them treat the model's trainable parameters as one flat vector and evaluate the loss
in the ``mode`` given (``"train"`` for full-batch GD on nets without batch statistics or with
BatchNorm in batch mode, as the engine trains them).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from typing import Any

import numpy as np
import torch
from scipy.sparse.linalg import ArpackError, ArpackNoConvergence
from torch import Tensor, nn
from torch.nn.attention import SDPBackend, sdpa_kernel

from sharpness.curvature import HessianOperator, hutchinson_trace, model_mode, top_eigenvalues
from sharpness.curvature.hvp import flatten, trainable_parameters

Criterion = Callable[[Tensor, Tensor], Tensor]


def single_threaded_blas() -> AbstractContextManager[Any]:
    """Limit BLAS (OpenBLAS/MKL) to one thread inside the block.

    ARPACK's Lanczos bookkeeping calls BLAS on vectors of the parameter dimension; with the
    default thread pool on a loaded 2-core machine those calls spin and wait, and ``eigsh``
    ran 15 times slower (9.4 s vs 0.64 s for one top eigenvalue of a 57k-dimensional operator,
    measured). ``threadpoolctl`` is used when installed; otherwise nothing changes.
    """
    try:
        from threadpoolctl import threadpool_limits  # lazy: optional dependency
    except ImportError:  # pragma: no cover - optional
        return nullcontext()
    return threadpool_limits(limits=1, user_api="blas")


def math_attention() -> AbstractContextManager[Any]:
    """Use PyTorch's plain ("math") attention inside the block.

    Hessian-vector products differentiate twice; the fused CPU flash-attention kernel has no
    double backward ("derivative for _scaled_dot_product_flash_attention_for_cpu_backward is
    not implemented"), the math kernel has. Same function, so the same Hessian.
    """

    return sdpa_kernel([SDPBackend.MATH])


def sharpness(model: nn.Module, criterion: Criterion, x: Tensor, y: Tensor, *,
              mode: str = "train", v0: np.ndarray | None = None, tol: float = 1e-3,
              ncv: int | None = None, seed: int = 0,
              which: str = "LA") -> tuple[float, np.ndarray, int]:
    """Top Hessian eigenvalue of the mean loss on ``(x, y)`` by Lanczos (``eigsh``).

    Returns ``(eigenvalue, eigenvector, number of Hessian-vector products)``. ``v0`` (e.g.
    the previous eigenvector) is the Lanczos start vector; without it a seeded random one.
    If ARPACK does not reach ``tol`` the best Ritz value it has is returned. ``which`` is
    ``eigsh``'s: ``"LA"`` (largest algebraic, the sharpness) or ``"LM"`` (largest magnitude,
    signed).
    """
    op = HessianOperator(model, criterion, (x, y), mode=mode)  # type: ignore[arg-type]
    if v0 is None or v0.shape != (op.dim,) or not np.all(np.isfinite(v0)):
        v0 = np.random.default_rng(seed).standard_normal(op.dim)
    ncv = ncv or min(op.dim - 1, 12)

    def solve(start: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        try:
            with single_threaded_blas(), math_attention():
                res = top_eigenvalues(op, k=1, tol=tol, ncv=ncv, maxiter=op.dim * 10,
                                      return_eigenvectors=True, v0=start, which=which)
            assert res.eigenvectors is not None
            return res.eigenvalues, res.eigenvectors
        except ArpackNoConvergence as err:  # pragma: no cover - rare, keep the best estimate
            return err.eigenvalues, err.eigenvectors

    try:
        values, vectors = solve(v0)
    except ArpackError:
        # ARPACK rejects a start vector whose Krylov space collapses (e.g. a warm start that is
        # (numerically) in the null space of a saturated network's Hessian): retry from a
        # seeded random vector; a Hessian that maps it to zero has top eigenvalue 0.
        start = np.random.default_rng(seed + 1).standard_normal(op.dim)
        with math_attention():
            hv = op.matvec(torch.from_numpy(start))
        if float(hv.abs().max()) == 0.0:
            op.release()
            return 0.0, start / np.linalg.norm(start), op.num_hvps
        values, vectors = solve(start)
    op.release()
    return float(values[0]), np.asarray(vectors[:, 0]), op.num_hvps


def hessian_trace(model: nn.Module, criterion: Criterion, x: Tensor, y: Tensor, *,
                  mode: str = "train", num_samples: int = 20, seed: int = 0) -> float:
    """Hutchinson estimate of ``tr H`` of the mean loss on ``(x, y)``."""
    op = HessianOperator(model, criterion, (x, y), mode=mode)  # type: ignore[arg-type]
    with math_attention():
        est = hutchinson_trace(op, num_samples=num_samples, seed=seed)
    op.release()
    return est.mean


@contextmanager
def _perturbed(params: list[Tensor], delta: Tensor) -> Iterator[None]:
    """Add the flat ``delta`` to the parameters inside the block, restore them after."""
    saved = [p.detach().clone() for p in params]
    offset = 0
    with torch.no_grad():
        for p in params:
            n = p.numel()
            p.add_(delta[offset:offset + n].view_as(p).to(p))
            offset += n
    try:
        yield
    finally:
        with torch.no_grad():
            for p, s in zip(params, saved, strict=True):
                p.copy_(s)


def _loss_and_grad(model: nn.Module, criterion: Criterion, x: Tensor, y: Tensor,
                   params: list[Tensor]) -> tuple[float, Tensor]:
    with torch.enable_grad():
        loss = criterion(model(x), y)
        grads = torch.autograd.grad(loss, params, allow_unused=True)
    grads = [torch.zeros_like(p) if g is None else g for g, p in zip(grads, params, strict=True)]
    return float(loss.detach()), flatten(grads).detach()


def _ascent(model: nn.Module, criterion: Criterion, x: Tensor, y: Tensor, *, rho: float,
            scale: Tensor | None, steps: int, mode: str) -> float:
    """Projected gradient ascent of ``L(theta + s * d)`` over ``||d||_2 <= rho``
    (``s`` = ``scale`` elementwise, or 1); returns the best ``L(theta + s d) - L(theta)``."""
    params = trainable_parameters(model)
    with model_mode(model, mode):  # type: ignore[arg-type]
        base, g = _loss_and_grad(model, criterion, x, y, params)
        s = torch.ones_like(g) if scale is None else scale.to(g)
        gd = s * g
        if float(gd.norm()) < 1e-12:  # at a critical point: start from a seeded random direction
            gd = torch.randn(g.shape, generator=torch.Generator().manual_seed(0)).to(g)
        d = rho * gd / gd.norm().clamp_min(1e-30)
        best = -float("inf")
        step_size = rho / 2
        for _ in range(max(steps, 1)):
            with _perturbed(params, s * d):
                loss, gp = _loss_and_grad(model, criterion, x, y, params)
            best = max(best, loss)
            direction = s * gp
            d = d + step_size * direction / direction.norm().clamp_min(1e-30)
            d = d * min(1.0, rho / float(d.norm().clamp_min(1e-30)))
        with _perturbed(params, s * d):
            loss, _ = _loss_and_grad(model, criterion, x, y, params)
        best = max(best, loss)
    return best - base


def worst_case_sharpness(model: nn.Module, criterion: Criterion, x: Tensor, y: Tensor, *,
                         rho: float, steps: int = 5, mode: str = "train") -> float:
    """``max_{||e||_2 <= rho} L(theta + e) - L(theta)`` (projected ascent, ``steps`` steps)."""
    return _ascent(model, criterion, x, y, rho=rho, scale=None, steps=steps, mode=mode)


def adaptive_sharpness(model: nn.Module, criterion: Criterion, x: Tensor, y: Tensor, *,
                       rho: float, steps: int = 5, mode: str = "train") -> float:
    """``max_{||e / |theta| ||_2 <= rho} L(theta + e) - L(theta)`` (elementwise-scaled ball)."""
    scale = flatten([p.detach().abs() for p in trainable_parameters(model)])
    return _ascent(model, criterion, x, y, rho=rho, scale=scale, steps=steps, mode=mode)


@torch.no_grad()
def average_sharpness(model: nn.Module, criterion: Criterion, x: Tensor, y: Tensor, *,
                      sigma: float, num_samples: int = 10, seed: int = 0,
                      mode: str = "train") -> float:
    """``E L(theta + e) - L(theta)``, ``e ~ N(0, sigma^2 I)``, over ``num_samples`` draws."""
    params = trainable_parameters(model)
    dim = sum(p.numel() for p in params)
    gen = torch.Generator().manual_seed(seed)
    with model_mode(model, mode):  # type: ignore[arg-type]
        base = float(criterion(model(x), y))
        total = 0.0
        for _ in range(num_samples):
            e = sigma * torch.randn(dim, generator=gen)
            with _perturbed(params, e):
                total += float(criterion(model(x), y))
    return total / num_samples - base


def all_measures(model: nn.Module, criterion: Criterion, x: Tensor, y: Tensor, *,
                 rho: float, adaptive_rho: float, sigma: float, trace_samples: int = 20,
                 ascent_steps: int = 5, avg_samples: int = 10, mode: str = "train",
                 seed: int = 0) -> dict[str, float]:
    """Every measure of :mod:`sharpness.eos.measures` except the top eigenvalue."""
    return {
        "hessian_trace": hessian_trace(model, criterion, x, y, mode=mode,
                                       num_samples=trace_samples, seed=seed),
        "worst_case": worst_case_sharpness(model, criterion, x, y, rho=rho, steps=ascent_steps,
                                           mode=mode),
        "adaptive": adaptive_sharpness(model, criterion, x, y, rho=adaptive_rho,
                                       steps=ascent_steps, mode=mode),
        "average": average_sharpness(model, criterion, x, y, sigma=sigma,
                                     num_samples=avg_samples, seed=seed, mode=mode),
    }
