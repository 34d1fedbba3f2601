"""The integrators behind :func:`sharpness.eos.flow.gradient_flow`: the model as a function of
one flat float64 vector (loss, gradient and Hessian-vector product, with counted costs), and
the two ways of advancing the flow one record interval: ``solve_ivp`` (explicit Runge-Kutta,
the reference) and CVODE (BDF + matrix-free GMRES, falling back to explicit steps at saddles).
"""

from __future__ import annotations

import contextlib
import io
from collections.abc import Callable

import numpy as np
import torch
from scipy.integrate import solve_ivp
from torch import Tensor, nn
from torch.nn.utils import parameters_to_vector, vector_to_parameters

from sharpness.curvature import hvp_from_loss, model_mode
from sharpness.curvature.hvp import trainable_parameters
from sharpness.eos.measures import math_attention, single_threaded_blas
from sharpness.runs.progress import say

Criterion = Callable[[Tensor, Tensor], Tensor]


class FlatModel:
    """The model's loss, gradient and Hessian-vector product as functions of one flat vector.

    For CVODE the gradient graph of the last point is kept (``create_graph``) so that the
    Jacobian-vector products of the linear solves that follow at the same point cost one
    double backward each. Any later ``load`` invalidates it (the graph reads the parameters).
    """

    def __init__(self, model: nn.Module, criterion: Criterion, x: Tensor, y: Tensor,
                 mode: str, keep_graph: bool = False) -> None:
        self.model, self.criterion, self.x, self.y, self.mode = model, criterion, x, y, mode
        self.params = trainable_parameters(model)
        self.keep_graph = keep_graph
        self.nfev = 0
        self.jvps = 0
        self._loads = 0
        self._graph: tuple[int, np.ndarray, Callable[[Tensor], Tensor]] | None = None

    def load(self, theta: np.ndarray) -> None:
        """Write ``theta`` into the model's parameters."""
        vec = torch.from_numpy(np.require(theta, np.float64, ["C", "W"])).to(self.params[0])
        vector_to_parameters(vec, self.params)
        self._loads += 1

    def current(self) -> np.ndarray:
        """The model's parameters as a float64 vector."""
        return parameters_to_vector(self.params).detach().double().cpu().numpy()

    def loss(self, theta: np.ndarray) -> float:
        """Mean loss at ``theta``."""
        self.load(theta)
        with torch.no_grad(), model_mode(self.model, self.mode):  # type: ignore[arg-type]
            return float(self.criterion(self.model(self.x), self.y))

    def _build_graph(self, theta: np.ndarray) -> Tensor:
        """Load ``theta``, take the gradient with its graph kept, cache the HVP closure."""
        self.load(theta)
        self.nfev += 1
        with (torch.enable_grad(), model_mode(self.model, self.mode),  # type: ignore[arg-type]
              math_attention()):  # double backward: see math_attention
            loss = self.criterion(self.model(self.x), self.y)
            grad, product = hvp_from_loss(loss, self.params)
        self._graph = (self._loads, np.array(theta, copy=True), product)
        return grad

    def rhs(self, _t: float, theta: np.ndarray) -> np.ndarray:
        """``-grad L(theta)`` as float64."""
        if self.keep_graph:
            return -self._build_graph(theta).double().cpu().numpy()
        self.load(theta)
        self.nfev += 1
        with torch.enable_grad(), model_mode(self.model, self.mode):  # type: ignore[arg-type]
            loss = self.criterion(self.model(self.x), self.y)
            grads = torch.autograd.grad(loss, self.params, allow_unused=True)
        flat = torch.cat([(torch.zeros_like(p) if g is None else g).reshape(-1)
                          for g, p in zip(grads, self.params, strict=True)])
        return -flat.detach().double().cpu().numpy()

    def prepare_jvp(self, theta: np.ndarray) -> None:
        """Make the next :meth:`jvp` products act at ``theta`` (reuses the rhs graph if valid)."""
        g = self._graph
        if g is None or g[0] != self._loads or not np.array_equal(g[1], theta):
            self._build_graph(theta)

    def jvp(self, v: np.ndarray) -> np.ndarray:
        """``J v = -H v`` at the point of the last :meth:`prepare_jvp`."""
        assert self._graph is not None, "prepare_jvp first"
        self.jvps += 1
        vec = torch.from_numpy(np.require(v, np.float64, ["C", "W"]))
        with model_mode(self.model, self.mode), math_attention():  # type: ignore[arg-type]
            hv = self._graph[2](vec)
        return -hv.double().cpu().numpy()

    def release(self) -> None:
        """Drop the kept graph."""
        self._graph = None



class Integrator:
    """Advance the flow record interval by record interval (``advance(t_to)``)."""

    t: float
    theta: np.ndarray

    def advance(self, t_to: float, scale: float = 0.0, saddle: bool = False) -> bool:
        """Integrate to ``t_to`` or the loss-goal event; True when the event stopped it.
        ``scale`` (``max(S, |lambda|max)`` at the start) and ``saddle`` (a dominant negative
        eigenvalue) let an implicit integrator choose an explicit interval."""
        raise NotImplementedError


class ScipyIntegrator(Integrator):
    """``solve_ivp`` restarted on each record interval (the step size carries over)."""

    def __init__(self, flat: FlatModel, theta: np.ndarray, goal: Callable[..., float],
                 method: str, rtol: float, atol: float) -> None:
        self.flat, self.theta, self.goal = flat, theta, goal
        self.method, self.rtol, self.atol = method, rtol, atol
        self.t = 0.0
        self.first_step: float | None = None

    def advance(self, t_to: float, scale: float = 0.0, saddle: bool = False) -> bool:
        first = self.first_step
        if first is not None:
            first = min(first, t_to - self.t)
        with single_threaded_blas():  # the solver's vector norms: see single_threaded_blas
            sol = solve_ivp(self.flat.rhs, (self.t, t_to), self.theta, method=self.method,
                            rtol=self.rtol, atol=self.atol, events=self.goal,
                            first_step=first)
        if not sol.success:
            raise RuntimeError(f"solve_ivp failed at t={self.t:g}: {sol.message}")
        if len(sol.t) >= 2 and sol.t[-1] > sol.t[-2]:
            self.first_step = float(sol.t[-1] - sol.t[-2])
        if sol.status == 1 and sol.t_events[0].size:
            self.t, self.theta = float(sol.t_events[0][0]), sol.y_events[0][0]
            return True
        self.t, self.theta = float(sol.t[-1]), sol.y[:, -1]
        return False


class CvodeIntegrator(Integrator):
    """CVODE (BDF + GMRES, Jacobian-vector products = -HVPs), with explicit intervals.

    BDF pays off where the flow is stiff: many explicit steps of about ``3 / S`` per unit of
    time, while BDF's step follows the path. It does not pay off

    * near a saddle (``|lambda|max > S``: a negative eigenvalue dominates and the flow escapes
      along a direction growing like ``exp(|lambda| t)``): the Newton matrix ``I + gamma H``
      is indefinite and GMRES struggles (measured on the quick ResNet from its init, where
      ``lambda_min = -890`` against ``S = 32``: 794 gradient units for ``t <= 0.0095``
      against RK45's 82);
    * on a short interval after a restart (BDF starts at order 1 with small steps).

    So an interval goes to RK45 when it is a saddle, or when BDF is *blocked*: an interval
    whose BDF cost exceeded twice the explicit estimate ``2 dt max(S, |lambda|max)`` (RK45
    takes about 2 gradients per unit of ``S t`` on the quick MNIST FCN), or hit
    ``max_bdf_steps``, blocks BDF until the curvature scale has doubled. After an explicit
    interval BDF restarts from the current point."""

    def __init__(self, flat: FlatModel, theta: np.ndarray, goal: Callable[..., float],
                 loss_goal: float, t_max: float, rtol: float, atol: float,
                 krylov_dim: int, max_bdf_steps: int = 200) -> None:
        try:
            from sksundae.cvode import CVODE, CVODEJacTimes  # lazy: optional, cvode only
        except ImportError as err:  # pragma: no cover - pinned in envs/
            raise ImportError("method='cvode' needs scikit-sundae (pip install "
                              "scikit-sundae, pinned in envs/requirements.txt)") from err
        self.flat, self.t, self.theta, self.t_max = flat, 0.0, theta, t_max
        self.explicit = ScipyIntegrator(flat, theta, goal, "RK45", rtol, atol)
        self.started = False
        self.explicit_intervals = 0
        self.blocked_below = 0.0  # BDF waits until the curvature scale reaches this

        def rhsfn(t: float, y: np.ndarray, yp: np.ndarray) -> None:
            yp[:] = flat.rhs(t, y)

        def eventsfn(_t: float, y: np.ndarray, events: np.ndarray) -> None:
            events[0] = flat.loss(y) - loss_goal
        eventsfn.terminal = [True]  # type: ignore[attr-defined]
        eventsfn.direction = [-1]  # type: ignore[attr-defined]

        def jt_setup(_t: float, y: np.ndarray, _fy: np.ndarray) -> None:
            flat.prepare_jvp(y)

        def jt_solve(_t: float, _y: np.ndarray, _fy: np.ndarray, v: np.ndarray,
                     jv: np.ndarray) -> None:
            jv[:] = flat.jvp(v)

        self.solver = CVODE(rhsfn, method="BDF", rtol=rtol, atol=atol, linsolver="gmres",
                            krylov_dim=krylov_dim, jactimes=CVODEJacTimes(jt_setup, jt_solve),
                            eventsfn=eventsfn, num_events=1, max_num_steps=max_bdf_steps)
        self.max_bdf_steps = max_bdf_steps

    def _explicit(self, t_to: float) -> bool:
        self.explicit_intervals += 1
        self.flat.keep_graph = False
        self.explicit.t, self.explicit.theta = self.t, self.theta
        event = self.explicit.advance(t_to)
        self.t, self.theta = self.explicit.t, self.explicit.theta
        self.started = False  # BDF restarts from here
        return event

    def advance(self, t_to: float, scale: float = 0.0, saddle: bool = False) -> bool:
        if saddle or scale < self.blocked_below:
            return self._explicit(t_to)
        estimate = 2.0 * (t_to - self.t) * scale  # RK45's gradients for this interval
        before = self.flat.nfev + 2 * self.flat.jvps
        self.flat.keep_graph = True
        t_from = self.t
        # scikit-sundae prints SUNDIALS' own messages ("[CVode, Error: -1] ... mxstep ...")
        # to stdout; they are caught here and said in words below
        with single_threaded_blas(), contextlib.redirect_stdout(io.StringIO()) as raw:
            if not self.started:
                res = self.solver.init_step(self.t, np.array(self.theta, dtype=np.float64))
                if not res.success:
                    raise RuntimeError(f"CVODE failed to start at t={self.t:g}: {res.message} "
                                       f"{raw.getvalue().strip()}")
                self.started = True
            res = self.solver.step(t_to, tstop=self.t_max)
        if not res.success and res.status != -1:  # -1: max_bdf_steps reached, handled below
            raise RuntimeError(f"CVODE failed at t={self.t:g}: {res.message} "
                               f"{raw.getvalue().strip()}")
        t_arr = np.atleast_1d(res.t)
        self.t, self.theta = float(t_arr[-1]), np.array(res.y, dtype=np.float64).reshape(-1)
        if res.status == -1 or self.flat.nfev + 2 * self.flat.jvps - before > 2 * estimate:
            self.blocked_below = 2.0 * scale
            if res.status == -1:  # finish the interval explicitly
                say(f"gradient flow: the implicit solver (CVODE, BDF) hit its step limit "
                    f"({self.max_bdf_steps} steps) between t = {t_from:.4g} and t = {t_to:.4g}, "
                    f"stopping at t = {self.t:.4g}; finishing the interval with the explicit "
                    f"RK45 and restarting BDF once the curvature scale has doubled "
                    f"(above {self.blocked_below:.4g})")
                return self._explicit(t_to)
            say(f"gradient flow: the implicit solver cost more than twice the explicit "
                f"estimate on t = {t_from:.4g} .. {self.t:.4g}; using RK45 until the curvature "
                f"scale doubles (above {self.blocked_below:.4g})")
        return res.status == 2  # CV_ROOT_RETURN: the loss-goal event

