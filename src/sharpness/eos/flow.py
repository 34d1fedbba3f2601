"""Gradient-flow reference for a network: ``d theta / dt = -grad L(theta)`` on the full train set.

Two integrators, chosen by ``method``:

* ``"RK45"`` (the reference; any ``scipy.integrate.solve_ivp`` method name works): explicit
  adaptive Runge-Kutta on the flat float64 parameter vector. Its step is limited by stability
  to about ``3 / S`` (``S`` the sharpness), so a flow whose sharpness grows large is stiff and
  costs many gradients: each right-hand side is one full-batch gradient.
* ``"cvode"``: SUNDIALS CVODE (through ``scikit-sundae``), BDF with a matrix-free GMRES linear
  solver. The Jacobian of the flow is ``-H`` (the loss Hessian), so each Jacobian-vector
  product is one Hessian-vector product of the package's own
  :func:`sharpness.curvature.hvp_from_loss` (double backward); no Jacobian is ever formed.
  Its step follows the accuracy of the path, not ``1 / S``.

The path is recorded every ``record_dt`` units of flow time, where ``record_dt`` follows the
current curvature (``record_factor / max(S, |lambda|max)``: a fixed number of
"edge-of-stability steps" per record, so fast and slow phases are sampled alike) and grows at
least geometrically (``record_growth * t``) so the number of records stays bounded. The first
interval is also capped by the time the loss needs to fall by ``record_first_drop`` of itself
at its initial rate (``record_first_drop * L / ||grad L||^2``): when ``S(0) <= 0`` there is no
curvature scale and the first interval used to be the whole flow. At every record the top
algebraic Hessian eigenvalue ``S`` and the largest magnitude ``|lambda|max`` (Lanczos,
warm-started; they agree at minima), the loss and the norms are measured.

``s_GF`` is the largest recorded sharpness ``S`` up to the first time the loss falls below the
loss goal (a terminal event of either integrator), and ``eta_c = 2 / s_GF``. The flow time
``t`` corresponds to ``step * eta`` of a GD run, which is how the figures overlay the two.

Costs are counted, never timed: ``nfev`` full-batch gradients (for ``cvode`` including those
that build the graph of a Hessian-vector product), ``jvps`` the integrator's Hessian-vector
products (``cvode`` only; a product costs about two gradients) and ``hvps`` the Lanczos
products of the records.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from torch import Tensor, nn

from sharpness.eos.integrators import CvodeIntegrator, FlatModel, Integrator, ScipyIntegrator
from sharpness.eos.measures import sharpness as lanczos_sharpness
from sharpness.eos.norms import parameter_norms
from sharpness.runs.state import divergence

Criterion = Callable[[Tensor, Tensor], Tensor]

#: ``method`` values that select CVODE (BDF + GMRES); anything else goes to ``solve_ivp``.
CVODE_METHODS = ("cvode",)


@dataclass
class FlowResult:
    """Recorded gradient-flow path and its summary."""

    t: list[float] = field(default_factory=list)
    loss: list[float] = field(default_factory=list)
    sharpness: list[float] = field(default_factory=list)  # top algebraic eigenvalue
    abs_sharpness: list[float] = field(default_factory=list)  # |lambda|max
    l1: list[float] = field(default_factory=list)
    l2: list[float] = field(default_factory=list)
    nuclear: list[float] = field(default_factory=list)
    status: str = "running"  # "ok" (loss goal), "t_max", "max_evals", "diverged"
    method: str = "RK45"
    nfev: int = 0  # full-batch gradients
    jvps: int = 0  # the integrator's Hessian-vector products (cvode)
    hvps: int = 0  # Lanczos Hessian-vector products of the records
    explicit_intervals: int = 0  # cvode: record intervals integrated by RK45 (saddles)
    wall_s: float = 0.0

    @property
    def s_gf(self) -> float:
        """Largest sharpness along the recorded flow."""
        return float(np.nanmax(self.sharpness)) if self.sharpness else float("nan")

    @property
    def eta_c(self) -> float:
        """``2 / s_GF``."""
        return 2.0 / self.s_gf

    @property
    def loss_rises(self) -> int:
        """Records whose loss is above the previous one by more than 1e-6 relative. A gradient
        flow's loss never rises (dL/dt = -||g||^2), so a positive count means the integration
        was not accurate enough (e.g. a loose ``rtol`` on a net with a few sharp directions)."""
        return int(sum(b > a * (1 + 1e-6) + 1e-12 for a, b in zip(self.loss, self.loss[1:],
                                                                  strict=False)))

    @property
    def cost(self) -> int:
        """The integrator's cost in gradient units: gradients + 2 x Hessian-vector products."""
        return self.nfev + 2 * self.jvps

    def summary(self) -> dict[str, Any]:
        """JSON-ready summary (no arrays)."""
        return {"status": self.status, "method": self.method, "s_gf": self.s_gf,
                "eta_c": self.eta_c,
                "abs_s_max": (float(np.nanmax(self.abs_sharpness)) if self.abs_sharpness
                              else None),
                "t_end": self.t[-1] if self.t else None,
                "final_loss": self.loss[-1] if self.loss else None,
                "final_sharpness": self.sharpness[-1] if self.sharpness else None,
                "argmax_t": self.t[int(np.nanargmax(self.sharpness))] if self.sharpness else None,
                "records": len(self.t), "loss_rises": self.loss_rises,
                "nfev": self.nfev, "jvps": self.jvps,
                "hvps": self.hvps, "cost": self.cost,
                "explicit_intervals": self.explicit_intervals, "wall_s": round(self.wall_s, 3)}

    def arrays(self) -> dict[str, np.ndarray]:
        """The path as arrays (for ``.npz``)."""
        return {k: np.asarray(getattr(self, k), dtype=np.float64)
                for k in ("t", "loss", "sharpness", "abs_sharpness", "l1", "l2", "nuclear")}



def _eigen_pair(model: nn.Module, criterion: Criterion, x: Tensor, y: Tensor, *, mode: str,
                starts: dict[str, np.ndarray | None], tol: float, seed: int,
                ) -> tuple[float, float, int]:
    """Top algebraic eigenvalue ``S`` and largest magnitude ``|lambda|max`` of the Hessian.

    One Lanczos run for the eigenvalue of largest magnitude; if it is positive it is also the
    top algebraic one (then ``S = |lambda|max``), otherwise a second run finds ``S``. The
    eigenvectors are kept in ``starts`` as warm starts for the next record."""
    lam, starts["LM"], hvps = lanczos_sharpness(model, criterion, x, y, mode=mode,
                                                v0=starts.get("LM"), tol=tol, seed=seed,
                                                which="LM")
    if lam >= 0:
        starts["LA"] = starts["LM"]
        return lam, abs(lam), hvps
    s, starts["LA"], more = lanczos_sharpness(model, criterion, x, y, mode=mode,
                                              v0=starts.get("LA"), tol=tol, seed=seed)
    return s, abs(lam), hvps + more



def gradient_flow(model: nn.Module, criterion: Criterion, x: Tensor, y: Tensor, *,
                  loss_goal: float, t_max: float = 1e4, method: str = "RK45",
                  rtol: float = 1e-4, atol: float = 1e-7, record_factor: float = 4.0,
                  record_growth: float = 0.1, record_first_drop: float = 0.5,
                  max_evals: int = 200_000, krylov_dim: int = 20, mode: str = "train",
                  lanczos_tol: float = 1e-3, seed: int = 0,
                  on_record: Callable[[dict[str, float]], None] | None = None) -> FlowResult:
    """Integrate gradient flow from the model's current parameters until ``loss < loss_goal``.

    ``method`` is ``"cvode"`` (BDF + GMRES, matrix-free) or a ``solve_ivp`` method (``RK45``,
    the reference). ``max_evals`` caps the integrator's cost in gradient units
    (:attr:`FlowResult.cost`: gradients + 2 x Hessian-vector products). The model is left at
    the flow's final point. ``status`` is ``ok`` when the goal was reached, else ``t_max`` /
    ``max_evals`` / ``diverged`` (then ``s_GF`` is the maximum over the part integrated, which
    the caller must report as a lower bound).
    """
    start = time.perf_counter()
    use_cvode = method.lower() in CVODE_METHODS
    flat = FlatModel(model, criterion, x, y, mode, keep_graph=use_cvode)
    theta = flat.current()
    result = FlowResult(method="cvode" if use_cvode else method)
    starts: dict[str, np.ndarray | None] = {}

    def record(theta_now: np.ndarray, t_now: float) -> float:
        loss = flat.loss(theta_now)
        s, s_abs, hvps = _eigen_pair(model, criterion, x, y, mode=mode, starts=starts,
                                     tol=lanczos_tol, seed=seed)
        norms = parameter_norms(model)
        result.t.append(t_now)
        result.loss.append(loss)
        result.sharpness.append(s)
        result.abs_sharpness.append(s_abs)
        result.l1.append(norms["l1"])
        result.l2.append(norms["l2"])
        result.nuclear.append(norms["nuclear"])
        result.hvps += hvps
        if on_record is not None:
            on_record({"t": t_now, "loss": loss, "sharpness": s, "abs_sharpness": s_abs,
                       **norms, "nfev": flat.nfev, "jvps": flat.jvps, "hvps": result.hvps})
        return loss

    def goal(_t: float, th: np.ndarray) -> float:
        return flat.loss(th) - loss_goal
    goal.terminal = True  # type: ignore[attr-defined]
    goal.direction = -1  # type: ignore[attr-defined]

    loss = record(theta, 0.0)
    integ: Integrator | None = None
    first_cap = math.inf
    if loss < loss_goal:
        result.status = "ok"
    else:
        # the first interval: at most the time to lose record_first_drop of the loss at the
        # initial rate (dL/dt = -||g||^2); the gradient is one more evaluation
        g2 = float(np.dot(g := flat.rhs(0.0, theta), g))
        first_cap = record_first_drop * loss / g2 if g2 > 0 and loss > 0 else math.inf
        flat.release()
        if use_cvode:
            integ = CvodeIntegrator(flat, theta, goal, loss_goal, t_max, rtol, atol,
                                     krylov_dim)
        else:
            integ = ScipyIntegrator(flat, theta, goal, method, rtol, atol)
    while result.status == "running":
        assert integ is not None
        t = integ.t
        scale = max(result.sharpness[-1], result.abs_sharpness[-1], 1e-8)
        dt = max(record_factor / scale, record_growth * t)
        if t == 0.0:
            dt = min(dt, first_cap)
        t_to = min(t + dt, t_max)
        # a dominant negative eigenvalue: a saddle, integrated explicitly (see CvodeIntegrator)
        saddle = result.abs_sharpness[-1] > result.sharpness[-1] * (1 + 1e-6)
        event = integ.advance(t_to, scale=scale, saddle=saddle)
        t, theta = integ.t, integ.theta
        loss = record(theta, t)
        result.nfev, result.jvps = flat.nfev, flat.jvps
        if event or loss < loss_goal:
            result.status = "ok"
        elif t >= t_max * (1 - 1e-12):
            result.status = "t_max"
        elif result.cost >= max_evals:
            result.status = "max_evals"
        elif divergence(loss, result.loss[0]) is not None:  # the one rule (runs.state)
            result.status = "diverged"
    flat.release()
    flat.load(theta)
    result.nfev, result.jvps = flat.nfev, flat.jvps
    if isinstance(integ, CvodeIntegrator):
        result.explicit_intervals = integ.explicit_intervals
    result.wall_s = time.perf_counter() - start
    return result
