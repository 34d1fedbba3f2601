"""Curvature of a model's loss: Hessian-vector products, spectra, trace, quadratic terms.

Public API::

    from sharpness.curvature import HessianOperator, top_eigenvalues, hutchinson_trace
    op = HessianOperator(model, criterion, (x, y), mode="eval")   # or a DataLoader
    top5 = top_eigenvalues(op, k=5).eigenvalues                     # Lanczos (scipy eigsh)
    tr = hutchinson_trace(op, num_samples=100, seed=0)              # tr.mean, tr.ci_low, tr.ci_high
    curvature_term(op, eps)                                         # 0.5 * eps^T H eps

``dense_hessian`` is the oracle for tiny models (``lanczos_relative_error`` compares Lanczos
with it where a run is evaluated); ``power_iteration`` is the plain baseline;
``top_eigenvalue_on_data`` gives the full-batch sharpness of a data set held as tensors.
"""

from sharpness.curvature.dense import dense_hessian
from sharpness.curvature.hvp import (
    HessianOperator,
    flatten,
    hvp_from_loss,
    trainable_parameters,
    unflatten,
)
from sharpness.curvature.modes import frozen_bn_stats, model_mode
from sharpness.curvature.selfcheck import lanczos_relative_error
from sharpness.curvature.spectrum import (
    EigenResult,
    PowerResult,
    power_iteration,
    top_eigenvalue_on_data,
    top_eigenvalues,
)
from sharpness.curvature.terms import curvature_term, first_order_term
from sharpness.curvature.trace import TraceEstimate, hutchinson_trace

__all__ = [
    "EigenResult",
    "HessianOperator",
    "PowerResult",
    "TraceEstimate",
    "curvature_term",
    "dense_hessian",
    "first_order_term",
    "flatten",
    "frozen_bn_stats",
    "hutchinson_trace",
    "hvp_from_loss",
    "lanczos_relative_error",
    "model_mode",
    "power_iteration",
    "top_eigenvalue_on_data",
    "top_eigenvalues",
    "trainable_parameters",
    "unflatten",
]
