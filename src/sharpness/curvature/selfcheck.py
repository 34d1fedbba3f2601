"""Lanczos against the dense Hessian, as a run's own record: the check a flatness evaluation
carries beside its numbers.

The unit tests compare :func:`~sharpness.curvature.top_eigenvalues` with the dense Hessian
once, in the test environment. A flatness evaluation repeats that comparison in the
environment that produced its eigenvalues (its torch build, BLAS and float32 arithmetic), on
a tiny model drawn from the evaluated run's seed, so the ledger can decide the catalog's
"Lanczos matches the dense Hessian" check from independent draws of the pipeline's own runs.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

from sharpness.curvature.dense import dense_hessian
from sharpness.curvature.hvp import HessianOperator
from sharpness.curvature.spectrum import top_eigenvalues


def lanczos_relative_error(seed: int, k: int = 5) -> float:
    """Largest relative error of the top ``k`` Lanczos eigenvalues of a float32 tanh MLP
    (5-8-3, 40 random points, cross-entropy, drawn from ``seed``) against the eigenvalues of
    its dense float64 Hessian (``numpy.linalg.eigvalsh``)."""
    gen = torch.Generator().manual_seed(seed)
    model = nn.Sequential(nn.Linear(5, 8), nn.Tanh(), nn.Linear(8, 3)).double()
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(torch.randn(p.shape, generator=gen, dtype=torch.float64) * 0.5)
    x = torch.randn(40, 5, generator=gen, dtype=torch.float64)
    y = torch.randint(0, 3, (40,), generator=gen)
    dense = dense_hessian(model, F.cross_entropy, x, y, mode="eval")
    exact = np.sort(np.linalg.eigvalsh(dense.numpy()))[::-1][:k]
    op = HessianOperator(model.float(), F.cross_entropy, (x.float(), y), mode="eval")
    found = np.sort(top_eigenvalues(op, k=k, seed=seed).eigenvalues)[::-1]
    return float(np.max(np.abs(found - exact) / np.abs(exact)))
