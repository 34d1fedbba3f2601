"""Hutchinson's estimator of the Hessian trace, with a confidence interval.

``tr H = E[z^T H z]`` for any random ``z`` with ``E[z z^T] = I``; Rademacher vectors (entries
+-1) give the smallest variance among such distributions for a fixed matrix. The estimate is
the mean of ``num_samples`` independent quadratic forms; its confidence interval is the
Student-t interval of that mean. Draws come from a ``torch.Generator`` seeded by ``seed``, so
the estimate is reproducible.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from sharpness.curvature.hvp import HessianOperator


@dataclass
class TraceEstimate:
    """Hutchinson estimate: mean, standard error, ``confidence`` interval and raw samples."""

    mean: float
    stderr: float
    ci_low: float
    ci_high: float
    confidence: float
    samples: np.ndarray

    @property
    def num_hvps(self) -> int:
        """Products used: one per sample."""
        return int(self.samples.size)


def hutchinson_trace(
    operator: HessianOperator,
    num_samples: int = 100,
    *,
    seed: int = 0,
    confidence: float = 0.95,
    distribution: str = "rademacher",
) -> TraceEstimate:
    """Estimate ``tr H`` from ``num_samples`` products ``z^T H z`` (``z`` Rademacher or Gaussian)."""
    if num_samples < 2:
        raise ValueError("num_samples must be at least 2 to give a confidence interval")
    if distribution not in ("rademacher", "gaussian"):
        raise ValueError(f"distribution must be 'rademacher' or 'gaussian', got {distribution!r}")
    generator = torch.Generator(device="cpu").manual_seed(seed)
    samples = np.empty(num_samples, dtype=np.float64)
    for i in range(num_samples):
        if distribution == "rademacher":
            z = torch.randint(0, 2, (operator.dim,), generator=generator, dtype=torch.int64) * 2 - 1
            z = z.to(torch.float64)
        else:
            z = torch.randn(operator.dim, generator=generator, dtype=torch.float64)
        hz = operator.matvec(z)
        samples[i] = float(torch.dot(z.to(hz), hz))
    mean = float(samples.mean())
    stderr = float(samples.std(ddof=1) / np.sqrt(num_samples))
    # imported here: scipy.stats costs about 1 CPU-s, which every training job would pay
    from scipy import stats  # lazy: scipy.stats; training jobs import this package

    half = float(stats.t.ppf(0.5 + confidence / 2.0, df=num_samples - 1)) * stderr
    return TraceEstimate(mean, stderr, mean - half, mean + half, confidence, samples)
