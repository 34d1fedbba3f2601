"""The diagonal toy model of the `eos` paper: one sample, shared weights, square loss.

``f_w(x) = <w * w, x>``, one training pair ``(x, y)`` with ``x > 0``, ``y > 0`` and
``L(w) = 0.5 (<w * w, x> - y)^2``; the predictor is ``beta = w * w >= 0``.

Closed forms (derived in the catalog; each is checked numerically in ``tests/eos``):

* gradient ``2 r x * w`` with residual ``r = <beta, x> - y``;
* Hessian ``4 (x * w)(x * w)^T + 2 r diag(x)``; on the zero-loss set (``r = 0``) it is rank
  one with sharpness ``S = 4 sum_i x_i^2 beta_i``;
* the l1-norm minimiser on the zero-loss set puts all mass on the largest ``x_i``:
  ``beta = (y / x_max) e_argmax``, ``S = 4 y x_max``;
* the sharpness minimiser puts all mass on the smallest ``x_i``:
  ``beta = (y / x_min) e_argmin``, ``S = 4 y x_min``;
* a minimiser is linearly stable for GD with step ``eta`` iff ``eta S <= 2``.

Gradient flow is integrated with ``scipy.integrate.solve_ivp`` (adaptive RK45, tight
tolerances); its largest sharpness along the path is ``s_GF`` and ``eta_c = 2 / s_GF``.
Everything is float64 NumPy: the model has ``d`` parameters, so exact eigenvalues
(``numpy.linalg.eigvalsh``) are cheap.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from scipy.integrate import solve_ivp

from sharpness.runs.state import progressed


@dataclass(frozen=True)
class DiagonalToy:
    """One sample ``(x, y)`` of the shared-weight diagonal model."""

    x: np.ndarray
    y: float = 1.0

    def __post_init__(self) -> None:
        x = np.asarray(self.x, dtype=np.float64)
        if x.ndim != 1 or np.any(x <= 0):
            raise ValueError("x must be a 1-d vector of positive entries")
        if self.y <= 0:
            raise ValueError("y must be positive (the zero-loss set is then non-empty)")
        object.__setattr__(self, "x", x)

    # -- loss and derivatives ------------------------------------------------------------
    def residual(self, w: np.ndarray) -> float:
        """``<w * w, x> - y``."""
        return float(np.dot(w * w, self.x) - self.y)

    def loss(self, w: np.ndarray) -> float:
        """``0.5 r^2``."""
        return 0.5 * self.residual(w) ** 2

    def grad(self, w: np.ndarray) -> np.ndarray:
        """``2 r x * w``."""
        return 2.0 * self.residual(w) * self.x * w

    def hessian(self, w: np.ndarray) -> np.ndarray:
        """``4 (x * w)(x * w)^T + 2 r diag(x)``."""
        xw = self.x * w
        return 4.0 * np.outer(xw, xw) + 2.0 * self.residual(w) * np.diag(self.x)

    def sharpness(self, w: np.ndarray) -> float:
        """Top Hessian eigenvalue (exact, ``eigvalsh``)."""
        return float(np.linalg.eigvalsh(self.hessian(w))[-1])

    # -- closed forms on the zero-loss set ------------------------------------------------
    def sharpness_on_manifold(self, beta: np.ndarray) -> float:
        """``S = 4 sum x_i^2 beta_i`` for a zero-loss ``beta`` (rank-one Hessian)."""
        return float(4.0 * np.dot(self.x**2, beta))

    def norm_minimizer(self) -> np.ndarray:
        """The l1-norm minimiser ``(y / x_max) e_argmax`` of the zero-loss set."""
        beta = np.zeros_like(self.x)
        j = int(np.argmax(self.x))
        beta[j] = self.y / self.x[j]
        return beta

    def sharpness_minimizer(self) -> np.ndarray:
        """The sharpness minimiser ``(y / x_min) e_argmin`` of the zero-loss set."""
        beta = np.zeros_like(self.x)
        j = int(np.argmin(self.x))
        beta[j] = self.y / self.x[j]
        return beta

    @staticmethod
    def stable(eta: float, sharpness: float) -> bool:
        """Linear stability of GD at a minimum: ``eta S <= 2``."""
        return eta * sharpness <= 2.0


@dataclass
class ToyRun:
    """A discrete GD run of the toy: status, steps, final point and (optional) path."""

    eta: float
    status: str  # "ok" (loss goal), "diverged", "max_steps"
    steps: int
    w: np.ndarray
    loss: float
    sharpness: float
    path_w: np.ndarray = field(default_factory=lambda: np.empty((0, 0)))

    @property
    def beta(self) -> np.ndarray:
        """Predictor ``w * w``."""
        return self.w * self.w


def gd(model: DiagonalToy, w0: np.ndarray, eta: float, *, loss_goal: float = 1e-8,
       max_steps: int = 100_000, diverge_loss: float = 1e6, keep_path: bool = False) -> ToyRun:
    """Full-batch GD at constant ``eta`` until ``loss < loss_goal`` or divergence.

    Divergence (non-finite loss or loss above ``diverge_loss``) is a status, not an error;
    the returned point is then the last finite iterate.
    """
    w = np.asarray(w0, dtype=np.float64).copy()
    path = [w.copy()] if keep_path else []
    status = "max_steps"
    step = 0
    with np.errstate(over="ignore", invalid="ignore"):
        for step in range(max_steps + 1):
            if step % 256 == 0:
                progressed()  # the run's heartbeat (sharpness.runs.state)
            loss = model.loss(w)
            if not np.isfinite(loss) or loss > diverge_loss:
                status = "diverged"
                break
            if loss < loss_goal:
                status = "ok"
                break
            if step == max_steps:
                break
            w = w - eta * model.grad(w)
            if keep_path:
                path.append(w.copy())
    finite = np.all(np.isfinite(w))
    return ToyRun(eta=eta, status=status, steps=step, w=w,
                  loss=model.loss(w) if finite else float("inf"),
                  sharpness=model.sharpness(w) if finite else float("inf"),
                  path_w=np.array(path) if keep_path else np.empty((0, w.size)))


@dataclass
class ToyFlow:
    """Gradient-flow path: times, iterates, loss and sharpness on the solver's grid."""

    t: np.ndarray
    w: np.ndarray
    loss: np.ndarray
    sharpness: np.ndarray

    @property
    def s_gf(self) -> float:
        """Largest sharpness along the flow."""
        return float(np.max(self.sharpness))

    @property
    def eta_c(self) -> float:
        """``2 / s_GF``."""
        return 2.0 / self.s_gf


def gradient_flow(model: DiagonalToy, w0: np.ndarray, *, loss_goal: float = 1e-12,
                  t_max: float = 1e4, num_points: int = 2001, rtol: float = 1e-10,
                  atol: float = 1e-12) -> ToyFlow:
    """Integrate ``dw/dt = -grad L(w)`` with RK45 (``solve_ivp``) until ``loss < loss_goal``.

    The path is sampled on ``num_points`` times of the dense output (log-spaced, because the
    toy's flow spends most of its time near the start); sharpness is evaluated exactly there.
    """
    def goal(_t: float, w: np.ndarray) -> float:
        return model.loss(w) - loss_goal
    goal.terminal = True  # type: ignore[attr-defined]

    sol = solve_ivp(lambda _t, w: -model.grad(w), (0.0, t_max), np.asarray(w0, float),
                    method="RK45", rtol=rtol, atol=atol, dense_output=True, events=goal)
    t_end = float(sol.t[-1])
    t = np.concatenate([[0.0], np.geomspace(min(1e-3, t_end / 10), t_end, num_points - 1)])
    w = sol.sol(t).T
    return ToyFlow(t=t, w=w, loss=np.array([model.loss(v) for v in w]),
                   sharpness=np.array([model.sharpness(v) for v in w]))


def teacher_risk(beta: np.ndarray, teacher: np.ndarray) -> float:
    """Risk ``E_z (<beta - beta*, z>)^2 = ||beta - beta*||^2`` for isotropic test inputs
    ``z ~ N(0, I)`` and a linear teacher ``y = <beta*, z>`` (the catalog's "risk of each
    solution under a teacher model"; the teacher must fit the training pair)."""
    diff = np.asarray(beta, float) - np.asarray(teacher, float)
    return float(diff @ diff)


#: The catalog's worked example: ``x``, ``y``, ``w0`` and the numbers it states.
CATALOG_EXAMPLE = {
    "x": [2.0, 1.5, 1.0, 0.7, 0.5],
    "y": 1.0,
    "w0": 0.1,
    "s_gf": 7.14,
    "eta_c": 0.28,
    "l1_at": {0.05: 0.61, 0.5: 1.14},
    "diverge_from": 0.6,
}


def toy_study(x: list[float], y: float, w0: float, lrs: list[float], *, loss_goal: float = 1e-8,
              max_steps: int = 100_000, d2_x: list[float] | None = None,
              d2_lrs: list[float] | None = None) -> dict[str, object]:
    """Everything ``fig_diagonal`` shows, as JSON-ready data.

    * the flow from ``w0 * 1`` (``s_GF``, ``eta_c``, its end point);
    * GD end points over ``lrs`` (status, steps, final ``S``, ``eta S``, ``||beta||_1``, the
      predictor and its risk under three teachers that fit the sample: sparse on the largest
      ``x_i`` (= the norm minimiser), sparse on the smallest (= the sharpness minimiser) and
      the dense ``beta* = y x / ||x||^2`` (the minimum-l2 interpolator));
    * the two closed-form minimisers with their sharpness, norm and risks;
    * a ``d = 2`` instance (``d2_x``) with its zero-loss segment and GD paths for the picture.
    """
    model = DiagonalToy(np.asarray(x, float), y)
    init = np.full(model.x.size, w0, dtype=np.float64)
    flow = gradient_flow(model, init)
    teachers = {"sparse_max": model.norm_minimizer(), "sparse_min": model.sharpness_minimizer(),
                "dense": y * model.x / float(model.x @ model.x)}
    runs = []
    for eta in lrs:
        run = gd(model, init, eta, loss_goal=loss_goal, max_steps=max_steps)
        finite = run.status != "diverged"
        runs.append({
            "eta": eta, "status": run.status, "steps": run.steps,
            "sharpness": run.sharpness if finite else None,
            "eta_s": eta * run.sharpness if finite else None,
            "l1": float(run.beta.sum()) if finite else None,
            "beta": run.beta.tolist() if finite else None,
            **{f"risk_{k}": teacher_risk(run.beta, t) if finite else None
               for k, t in teachers.items()},
        })
    minimizers = {}
    for name, beta in (("norm", model.norm_minimizer()), ("sharpness", model.sharpness_minimizer()),
                       ("flow", flow.w[-1] ** 2)):
        minimizers[name] = {"beta": beta.tolist(), "l1": float(beta.sum()),
                            "sharpness": model.sharpness_on_manifold(beta),
                            **{f"risk_{k}": teacher_risk(beta, t) for k, t in teachers.items()}}
    out: dict[str, object] = {
        "x": model.x.tolist(), "y": y, "w0": w0, "loss_goal": loss_goal,
        "s_gf": flow.s_gf, "eta_c": flow.eta_c,
        "flow": {"t": flow.t.tolist(), "sharpness": flow.sharpness.tolist(),
                 "l1": (flow.w ** 2).sum(axis=1).tolist()},
        "runs": runs, "minimizers": minimizers,
        "teachers": {k: v.tolist() for k, v in teachers.items()},
        "first_diverged_eta": next((r["eta"] for r in runs if r["status"] == "diverged"), None),
    }
    if d2_x is not None:
        m2 = DiagonalToy(np.asarray(d2_x, float), y)
        i2 = np.full(2, w0)
        f2 = gradient_flow(m2, i2)
        paths = []
        for eta in d2_lrs or []:
            r2 = gd(m2, i2, eta, loss_goal=loss_goal, max_steps=max_steps, keep_path=True)
            betas = r2.path_w ** 2
            keep = np.all(np.isfinite(betas), axis=1) & (betas.max(axis=1) < 10 * y / m2.x.min())
            paths.append({"eta": eta, "status": r2.status,
                          "beta_path": betas[keep].tolist(),
                          "end": (r2.beta.tolist() if r2.status != "diverged" else None)})
        out["d2"] = {"x": m2.x.tolist(), "s_gf": f2.s_gf, "eta_c": f2.eta_c,
                     "flow_beta": (f2.w ** 2).tolist()[:: max(1, len(f2.t) // 200)],
                     "norm_min": m2.norm_minimizer().tolist(),
                     "sharp_min": m2.sharpness_minimizer().tolist(), "paths": paths}
    return out
