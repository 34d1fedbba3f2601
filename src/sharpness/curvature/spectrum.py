"""Top Hessian eigenvalues: Lanczos (scipy ``eigsh``) and plain power iteration.

* :func:`top_eigenvalues` runs ARPACK's implicitly restarted Lanczos
  (``scipy.sparse.linalg.eigsh``, ``which="LA"``: largest algebraic) on the Hessian as a
  ``LinearOperator``. It is the default everywhere; the start vector comes from a seeded RNG,
  so results are reproducible.
* :func:`power_iteration` is the textbook method. It is kept as the baseline of the benchmark
  (``benchmarks/bench_lanczos.py``) and for Eigen-SAM, which needs only a rough, warm-started
  top eigenvector every few hundred steps. It converges to the eigenvalue of largest
  *magnitude*, which is the top one only when that one is positive and dominates the most
  negative eigenvalue.
* :func:`top_eigenvalue_on_data` is the one-call helper for "the sharpness of the full-batch
  loss on this data set" (the edge-of-stability study).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import torch
from torch import Tensor, nn

from sharpness.curvature.hvp import Criterion, HessianOperator
from sharpness.curvature.modes import Mode


@dataclass
class EigenResult:
    """Eigenvalues in descending order, optional eigenvectors (columns), and the HVP count."""

    eigenvalues: np.ndarray
    eigenvectors: np.ndarray | None
    num_hvps: int


def top_eigenvalues(
    operator: HessianOperator,
    k: int = 1,
    *,
    tol: float = 0.0,
    seed: int = 0,
    ncv: int | None = None,
    maxiter: int | None = None,
    return_eigenvectors: bool = False,
    v0: np.ndarray | None = None,
    which: str = "LA",
) -> EigenResult:
    """The ``k`` largest (algebraic) eigenvalues of ``operator`` by Lanczos (``eigsh``).

    ``tol=0`` asks ARPACK for machine precision; a looser ``tol`` trades accuracy for fewer
    Hessian-vector products. ``num_hvps`` counts the products this call used. ``v0`` is the
    Lanczos start vector (e.g. the previous top eigenvector, a warm start); without it a
    random one seeded by ``seed``. ``which`` is ``eigsh``'s: ``"LA"`` (largest algebraic, the
    sharpness) or ``"LM"`` (largest magnitude). ARPACK's errors propagate to the caller.
    """
    if not 1 <= k < operator.dim:
        raise ValueError(f"k must be in [1, {operator.dim - 1}], got {k}")
    start = operator.num_hvps
    if v0 is None:
        v0 = np.random.default_rng(seed).standard_normal(operator.dim)
    from scipy.sparse.linalg import eigsh  # lazy: scipy; training jobs import this package

    values, vectors = eigsh(
        operator.as_linear_operator(),
        k=k,
        which=which,
        tol=tol,
        v0=v0,
        ncv=ncv,
        maxiter=maxiter,
        return_eigenvectors=True,
    )
    order = np.argsort(values)[::-1]
    return EigenResult(
        eigenvalues=np.asarray(values)[order],
        eigenvectors=np.asarray(vectors)[:, order] if return_eigenvectors else None,
        num_hvps=operator.num_hvps - start,
    )


@dataclass
class PowerResult:
    """Outcome of :func:`power_iteration`: Rayleigh-quotient history included."""

    eigenvalue: float
    vector: Tensor
    iterations: int
    converged: bool
    history: list[float] = field(default_factory=list)


def power_iteration(
    matvec: Callable[[Tensor], Tensor],
    v0: Tensor,
    *,
    max_iters: int = 100,
    rtol: float = 1e-3,
) -> PowerResult:
    """Power iteration ``v <- H v / ||H v||`` from ``v0`` (one product per iteration).

    The estimate after each product is the Rayleigh quotient ``v^T H v`` of the current unit
    vector. It stops when two successive estimates differ by less than ``rtol`` relative to
    the newer one, or after ``max_iters`` products.
    """
    v = v0 / v0.norm().clamp_min(torch.finfo(v0.dtype).tiny)
    history: list[float] = []
    eigenvalue = float("nan")
    converged = False
    for _ in range(max_iters):
        hv = matvec(v)
        eigenvalue = float(torch.dot(v, hv))
        history.append(eigenvalue)
        norm = hv.norm()
        if not torch.isfinite(norm) or float(norm) == 0.0:
            break
        v = hv / norm
        if len(history) >= 2 and abs(history[-1] - history[-2]) <= rtol * abs(history[-1]):
            converged = True
            break
    return PowerResult(eigenvalue, v, len(history), converged, history)


def top_eigenvalue_on_data(
    model: nn.Module,
    criterion: Criterion,
    inputs: Tensor,
    targets: Tensor,
    *,
    mode: Mode,
    batch_size: int | None = None,
    k: int = 1,
    tol: float = 1e-6,
    seed: int = 0,
) -> np.ndarray | float:
    """Sharpness of the mean loss on the data set ``(inputs, targets)``.

    The data are cut into chunks of ``batch_size`` (all at once by default) only to bound
    memory: the operator is the Hessian of the full-data mean loss either way (as long as the
    model has no batch-dependent layers in ``mode``, e.g. BatchNorm in train mode). Returns the
    top eigenvalue as a float for ``k=1``, else the ``k`` largest in descending order.
    """
    n = int(inputs.shape[0])
    if batch_size is None or batch_size >= n:
        data: object = (inputs, targets)
    else:
        data = [
            (inputs[i : i + batch_size], targets[i : i + batch_size])
            for i in range(0, n, batch_size)
        ]
    operator = HessianOperator(model, criterion, data, mode=mode)  # type: ignore[arg-type]
    result = top_eigenvalues(operator, k=k, tol=tol, seed=seed)
    operator.release()
    return float(result.eigenvalues[0]) if k == 1 else result.eigenvalues
