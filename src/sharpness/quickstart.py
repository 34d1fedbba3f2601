"""The pipeline's smallest real experiment: GD on a depth-1 diagonal model (the end-to-end slice).

One example ``(mu, +1)``, logistic loss, ``beta = w`` (L = 1). Gradient descent's direction
tends to the l2 max-margin direction ``mu / |mu|`` (Soudry et al., 2018), at a logarithmic
rate: the slice records ``cos(beta_t, mu)`` and the loss over time, so the figure shows a real
convergence, cheaply, from data through provenance to a rendered figure.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np


@dataclass(frozen=True)
class SliceParams:
    """Settings of the slice run (all of them are in the provenance)."""

    mu: tuple[float, ...] = (1.0, 2.0)
    alpha: tuple[float, ...] = (1.0, 0.1)
    lr: float = 0.5
    steps: int = 20000
    record_every: int = 10

    def to_dict(self) -> dict[str, object]:
        """Plain-dict form for JSON and provenance."""
        return asdict(self)


def run_l1_gd(p: SliceParams) -> dict[str, np.ndarray]:
    """GD on ``log(1 + exp(-<w, mu>))`` from ``w = alpha``; returns the recorded trajectory."""
    mu = np.asarray(p.mu, dtype=float)
    w = np.asarray(p.alpha, dtype=float).copy()
    if mu.shape != w.shape:
        raise ValueError(f"mu has {mu.size} coordinates but alpha has {w.size}")
    target = mu / np.linalg.norm(mu)
    steps, cosines, losses, betas = [], [], [], []
    for t in range(p.steps + 1):
        margin = float(w @ mu)
        if t % p.record_every == 0 or t == p.steps:
            steps.append(t)
            cosines.append(float(w @ target / np.linalg.norm(w)))
            losses.append(float(np.logaddexp(0.0, -margin)))
            betas.append(w.copy())
        w -= p.lr * (-mu / (1.0 + np.exp(margin)))
    return {"step": np.array(steps), "cosine": np.array(cosines), "loss": np.array(losses),
            "beta": np.array(betas), "maxmargin": target}
