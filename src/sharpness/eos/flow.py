"""Gradient-flow reference for a network: ``d theta / dt = -grad L(theta)`` on the full train set.

The flow is integrated with ``scipy.integrate.solve_ivp`` (adaptive Runge-Kutta, RK45 by
default) on the flat float64 parameter vector (``parameters_to_vector`` /
``vector_to_parameters``); each right-hand side is one full-batch gradient of the model. The
path is recorded every ``record_dt`` units of flow time, where ``record_dt`` follows the
current sharpness (``record_factor / S``: a fixed number of "edge-of-stability steps" per
record, so fast and slow phases are sampled alike) and grows at least geometrically
(``record_growth * t``) so the number of records stays bounded. At every record the top
Hessian eigenvalue (Lanczos, warm-started), the loss and the norms are measured.

``s_GF`` is the largest recorded sharpness up to the first time the loss falls below the
loss goal (a terminal ``solve_ivp`` event), and ``eta_c = 2 / s_GF``. The flow time ``t``
corresponds to ``step * eta`` of a GD run, which is how the figures overlay the two.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
from scipy.integrate import solve_ivp
from torch import Tensor, nn
from torch.nn.utils import parameters_to_vector, vector_to_parameters

from sharpness.curvature import model_mode
from sharpness.curvature.hvp import trainable_parameters
from sharpness.eos.measures import sharpness as lanczos_sharpness
from sharpness.eos.measures import single_threaded_blas
from sharpness.eos.norms import parameter_norms

Criterion = Callable[[Tensor, Tensor], Tensor]


@dataclass
class FlowResult:
    """Recorded gradient-flow path and its summary."""

    t: list[float] = field(default_factory=list)
    loss: list[float] = field(default_factory=list)
    sharpness: list[float] = field(default_factory=list)
    l1: list[float] = field(default_factory=list)
    l2: list[float] = field(default_factory=list)
    nuclear: list[float] = field(default_factory=list)
    status: str = "running"  # "ok" (loss goal), "t_max", "max_evals"
    nfev: int = 0
    hvps: int = 0
    wall_s: float = 0.0

    @property
    def s_gf(self) -> float:
        """Largest sharpness along the recorded flow."""
        return float(np.nanmax(self.sharpness)) if self.sharpness else float("nan")

    @property
    def eta_c(self) -> float:
        """``2 / s_GF``."""
        return 2.0 / self.s_gf

    def summary(self) -> dict[str, Any]:
        """JSON-ready summary (no arrays)."""
        return {"status": self.status, "s_gf": self.s_gf, "eta_c": self.eta_c,
                "t_end": self.t[-1] if self.t else None,
                "final_loss": self.loss[-1] if self.loss else None,
                "final_sharpness": self.sharpness[-1] if self.sharpness else None,
                "argmax_t": self.t[int(np.nanargmax(self.sharpness))] if self.sharpness else None,
                "records": len(self.t), "nfev": self.nfev, "hvps": self.hvps,
                "wall_s": round(self.wall_s, 3)}

    def arrays(self) -> dict[str, np.ndarray]:
        """The path as arrays (for ``.npz``)."""
        return {k: np.asarray(getattr(self, k), dtype=np.float64)
                for k in ("t", "loss", "sharpness", "l1", "l2", "nuclear")}


class _FlatModel:
    """The model's loss and gradient as functions of one flat float64 vector."""

    def __init__(self, model: nn.Module, criterion: Criterion, x: Tensor, y: Tensor,
                 mode: str) -> None:
        self.model, self.criterion, self.x, self.y, self.mode = model, criterion, x, y, mode
        self.params = trainable_parameters(model)
        self.nfev = 0

    def load(self, theta: np.ndarray) -> None:
        """Write ``theta`` into the model's parameters."""
        vec = torch.from_numpy(np.ascontiguousarray(theta)).to(self.params[0])
        vector_to_parameters(vec, self.params)

    def current(self) -> np.ndarray:
        """The model's parameters as a float64 vector."""
        return parameters_to_vector(self.params).detach().double().cpu().numpy()

    def loss(self, theta: np.ndarray) -> float:
        """Mean loss at ``theta``."""
        self.load(theta)
        with torch.no_grad(), model_mode(self.model, self.mode):  # type: ignore[arg-type]
            return float(self.criterion(self.model(self.x), self.y))

    def rhs(self, _t: float, theta: np.ndarray) -> np.ndarray:
        """``-grad L(theta)`` as float64."""
        self.load(theta)
        self.nfev += 1
        with torch.enable_grad(), model_mode(self.model, self.mode):  # type: ignore[arg-type]
            loss = self.criterion(self.model(self.x), self.y)
            grads = torch.autograd.grad(loss, self.params, allow_unused=True)
        flat = torch.cat([(torch.zeros_like(p) if g is None else g).reshape(-1)
                          for g, p in zip(grads, self.params, strict=True)])
        return -flat.detach().double().cpu().numpy()


def gradient_flow(model: nn.Module, criterion: Criterion, x: Tensor, y: Tensor, *,
                  loss_goal: float, t_max: float = 1e4, method: str = "RK45",
                  rtol: float = 1e-4, atol: float = 1e-7, record_factor: float = 4.0,
                  record_growth: float = 0.1, max_evals: int = 200_000, mode: str = "train",
                  lanczos_tol: float = 1e-3, seed: int = 0,
                  on_record: Callable[[dict[str, float]], None] | None = None) -> FlowResult:
    """Integrate gradient flow from the model's current parameters until ``loss < loss_goal``.

    The model is left at the flow's final point. ``status`` is ``ok`` when the goal was
    reached, else ``t_max`` / ``max_evals`` (then ``s_GF`` is the maximum over the part
    integrated, which the caller must report as a lower bound).
    """
    start = time.perf_counter()
    flat = _FlatModel(model, criterion, x, y, mode)
    theta = flat.current()
    result = FlowResult()
    v0: np.ndarray | None = None
    t = 0.0
    first_step: float | None = None

    def record(theta_now: np.ndarray, t_now: float) -> float:
        nonlocal v0
        loss = flat.loss(theta_now)
        s, v0, hvps = lanczos_sharpness(model, criterion, x, y, mode=mode, v0=v0,
                                        tol=lanczos_tol, seed=seed)
        norms = parameter_norms(model)
        result.t.append(t_now)
        result.loss.append(loss)
        result.sharpness.append(s)
        result.l1.append(norms["l1"])
        result.l2.append(norms["l2"])
        result.nuclear.append(norms["nuclear"])
        result.hvps += hvps
        if on_record is not None:
            on_record({"t": t_now, "loss": loss, "sharpness": s, **norms})
        return loss

    def goal(_t: float, th: np.ndarray) -> float:
        return flat.loss(th) - loss_goal
    goal.terminal = True  # type: ignore[attr-defined]
    goal.direction = -1  # type: ignore[attr-defined]

    loss = record(theta, t)
    if loss < loss_goal:
        result.status = "ok"
    while result.status == "running":
        s_now = max(result.sharpness[-1], 1e-8)
        dt = max(record_factor / s_now, record_growth * t)
        dt = min(dt, t_max - t)
        with single_threaded_blas():  # the solver's vector norms: see single_threaded_blas
            sol = solve_ivp(flat.rhs, (t, t + dt), theta, method=method, rtol=rtol, atol=atol,
                            events=goal, first_step=first_step)
        if not sol.success:
            raise RuntimeError(f"solve_ivp failed at t={t:g}: {sol.message}")
        if len(sol.t) >= 2:
            first_step = float(sol.t[-1] - sol.t[-2])
        if sol.status == 1 and sol.t_events[0].size:
            t, theta = float(sol.t_events[0][0]), sol.y_events[0][0]
            record(theta, t)
            result.status = "ok"
            break
        t, theta = float(sol.t[-1]), sol.y[:, -1]
        loss = record(theta, t)
        if loss < loss_goal:
            result.status = "ok"
        elif t >= t_max * (1 - 1e-12):
            result.status = "t_max"
        elif flat.nfev >= max_evals:
            result.status = "max_evals"
        elif not math.isfinite(loss):
            result.status = "diverged"
    flat.load(theta)
    result.nfev = flat.nfev
    result.wall_s = time.perf_counter() - start
    return result
