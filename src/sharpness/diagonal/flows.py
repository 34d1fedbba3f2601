"""Continuous-time GD and SAM flows on the diagonal network, integrated with ``scipy.integrate.solve_ivp``.

The flow is ``d theta / dt = -grad L(theta + eps(theta))`` (``eps = 0`` for gradient flow) in
the original clock, or the same field divided by ``mean|l'|`` at the perturbed point in the
rescaled clock (same path, new time ``s``).

Three things need care and are handled with ``solve_ivp`` events:

* **blow-up**: for ``L >= 3`` the rescaled flow reaches infinity in finite ``s``; integration stops
  when ``max|w|`` passes ``blowup`` and the time is reported (``status="blowup"``);
* **collapse**: l2-SAM's ``eps = rho g/||g||`` is undefined at the origin, which regime-1 runs
  reach in finite time; integration stops when ``max|beta|`` drops below ``collapse``;
* **sign discontinuity of l_inf-SAM**: ``eps = rho sign(g)`` jumps when a weight crosses 0. When
  a weight reaches 0 the field on both sides is evaluated; if both sides point back to 0
  (a Filippov sliding mode, as for a coordinate with ``alpha_j < rho`` at ``L = 2``) the weight
  is frozen at exactly 0; otherwise it is nudged across and integration restarts.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

import numpy as np
from scipy.integrate import solve_ivp

from sharpness.diagonal.model import Clock, Dataset, Method, predictor, sam_direction

Status = Literal["ok", "blowup", "collapse"]


@dataclass
class FlowResult:
    """Solution of a flow: times ``time`` (``(T,)``), ``theta`` (``(T, L, d)``), ``beta`` (``(T, d)``).

    ``status`` says how it ended; ``t_end`` is the last time reached (the blow-up or collapse
    time when ``status`` is not ``"ok"``); ``zero_hits`` lists ``(time, layer, coordinate)`` of
    weights frozen at 0 by the sliding rule; ``nfev`` counts field evaluations.
    """

    time: np.ndarray
    theta: np.ndarray
    beta: np.ndarray
    status: Status
    t_end: float
    zero_hits: list[tuple[float, int, int]] = field(default_factory=list)
    nfev: int = 0


Event = Callable[[float, np.ndarray], float]


def stop_events(L: int, d: int, blowup: float, collapse: float) -> tuple[Event, Event]:
    """Terminal ``solve_ivp`` events of a flow on one ``(L, d)`` state (flattened): ``max|w|``
    reaches ``blowup``, and the predictor falls to ``collapse`` (``max|beta|``, from above)."""

    def ev_blowup(_t: float, y: np.ndarray) -> float:
        return float(np.max(np.abs(y)) - blowup)

    def ev_collapse(_t: float, y: np.ndarray) -> float:
        return float(np.max(np.abs(predictor(y.reshape(1, L, d)))) - collapse)

    ev_blowup.terminal = True  # type: ignore[attr-defined]
    ev_collapse.terminal = True  # type: ignore[attr-defined]
    ev_collapse.direction = -1  # type: ignore[attr-defined]
    return ev_blowup, ev_collapse


def flow_field(
    data: Dataset, method: Method, rho: float, clock: Clock
) -> Callable[[np.ndarray], np.ndarray]:
    """The vector field ``theta -> -grad L(theta + eps(theta))`` for a single ``(L, d)`` state."""

    def f(theta: np.ndarray) -> np.ndarray:
        return -sam_direction(theta[None], data, method, rho, clock)[0]

    return f


def integrate_flow(
    data: Dataset,
    theta0: np.ndarray,
    method: Method,
    *,
    rho: float = 0.0,
    clock: Clock = "rescaled",
    t_max: float = 10.0,
    t_eval: np.ndarray | None = None,
    blowup: float = 1e5,
    collapse: float = 1e-12,
    rtol: float = 1e-9,
    atol: float = 1e-12,
    solver: str = "DOP853",
    max_restarts: int = 1000,
) -> FlowResult:
    """Integrate the GD/SAM flow from ``theta0`` (``(L, d)`` or ``(1, L, d)``) up to ``t_max``.

    ``t_eval`` (increasing, within ``[0, t_max]``) are the times to report; by default the
    solver's own steps. Times past a blow-up or collapse are dropped.
    """
    theta = np.array(theta0, dtype=float).reshape(np.shape(theta0)[-2:])
    L, d = theta.shape
    f = flow_field(data, method, rho, clock)
    frozen = np.zeros((L, d), dtype=bool)
    zero_hits: list[tuple[float, int, int]] = []
    nfev = 0

    def rhs(_t: float, y: np.ndarray) -> np.ndarray:
        th = y.reshape(L, d)
        out = f(np.where(frozen, 0.0, th))
        out[frozen] = 0.0
        return out.ravel()

    ev_blowup, ev_collapse = stop_events(L, d, blowup, collapse)

    def make_zero_event(k: int) -> Callable[[float, np.ndarray], float]:
        def ev(_t: float, y: np.ndarray) -> float:
            return 1.0 if frozen.flat[k] else float(y[k])

        ev.terminal = True  # type: ignore[attr-defined]
        return ev

    events: list[Callable[[float, np.ndarray], float]] = [ev_blowup]
    if method == "l2":
        events.append(ev_collapse)
    if method == "linf":
        events.extend(make_zero_event(k) for k in range(L * d))

    times: list[np.ndarray] = []
    states: list[np.ndarray] = []
    t0 = 0.0
    status: Status = "ok"
    if t_eval is None or (len(t_eval) and t_eval[0] > 0):
        times.append(np.array([0.0]))
        states.append(theta.reshape(1, L, d).copy())
    for _ in range(max_restarts):
        te = None
        if t_eval is not None:
            te = t_eval[(t_eval >= t0) & (t_eval <= t_max)]
        sol = solve_ivp(
            rhs, (t0, t_max), theta.ravel(), method=solver, t_eval=te, events=events,
            rtol=rtol, atol=atol,
        )
        nfev += sol.nfev
        if sol.y.shape[1]:
            times.append(sol.t)
            states.append(sol.y.T.reshape(-1, L, d))
        if sol.status == 0:
            t0 = t_max
            theta = sol.y[:, -1].reshape(L, d) if sol.y.shape[1] else theta
            break
        if sol.status == -1:
            raise RuntimeError(f"solve_ivp failed at t={sol.t[-1] if sol.t.size else t0}: {sol.message}")
        # a terminal event: find which
        t0 = float(sol.t_events[0][0]) if sol.t_events[0].size else None  # type: ignore[assignment]
        if sol.t_events[0].size:
            status = "blowup"
            t0 = float(sol.t_events[0][0])
            break
        if method == "l2" and sol.t_events[1].size:
            status = "collapse"
            t0 = float(sol.t_events[1][0])
            break
        offset = 1 + (method == "l2")
        hit = [k for k in range(L * d) if sol.t_events[offset + k].size]
        t0 = float(sol.t_events[offset + hit[0]][0])
        theta = sol.y_events[offset + hit[0]][0].reshape(L, d).copy()
        scale = max(float(np.max(np.abs(theta))), 1.0)
        for k in np.flatnonzero((np.abs(theta.ravel()) <= 1e-9 * scale) & ~frozen.ravel()):
            layer, j = divmod(int(k), d)
            delta = 1e-9 * scale
            plus, minus = theta.copy(), theta.copy()
            plus[layer, j], minus[layer, j] = delta, -delta
            fp = rhs(t0, plus.ravel()).reshape(L, d)[layer, j]
            fm = rhs(t0, minus.ravel()).reshape(L, d)[layer, j]
            if fp <= 0 <= fm:  # both sides point to 0: sliding, freeze
                frozen[layer, j] = True
                theta[layer, j] = 0.0
                zero_hits.append((t0, layer, j))
            else:  # crossing: step past 0 in the direction of the field
                theta[layer, j] = np.sign(fp if fp != 0 else fm) * 2 * delta
    else:
        raise RuntimeError("too many restarts of the flow integration")
    time = np.concatenate(times)
    th = np.concatenate(states)
    order = np.argsort(time, kind="stable")
    time, th = time[order], th[order]
    keep = np.concatenate([[True], np.diff(time) > 0])
    time, th = time[keep], th[keep]
    return FlowResult(time, th, predictor(th), status, float(t0), zero_hits, nfev)
