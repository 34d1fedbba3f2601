"""Stability edges and measured thresholds of ``bridges/sam_eos`` (numpy only, no torch).

The formulas are derived in :mod:`sharpness.bridges.sam_eos`; they live here so that the
figure job (:mod:`sharpness.bridges.sam_eos_plot`) reads them without importing torch.
"""

from __future__ import annotations

import math
from typing import Any

from sharpness.optim.radius import LESAM_RHO_MAX, LESAM_SIGMA, SAM_RHO, lesam_radius


def sam_edge(grad_norm: float, eta: float, rho: float) -> float:
    """Long-Bartlett SAM edge ``||g||/(2 rho) (sqrt(1 + 8 rho/(eta ||g||)) - 1)`` (``2/eta`` at rho=0)."""
    if rho <= 0 or grad_norm <= 0:
        return 2.0 / eta if rho <= 0 else 0.0
    return grad_norm / (2 * rho) * (math.sqrt(1 + 8 * rho / (eta * grad_norm)) - 1)


def edge_for(opt: dict[str, Any], grad_norm: float, eta: float) -> float:
    """The stability edge of an optimizer at a gradient norm; unset hyper-parameters take the
    optimizers' defaults (:mod:`sharpness.optim.radius`)."""
    h = opt.get("hparams", {})
    if opt["name"] == "gd":
        return 2.0 / eta
    if opt["name"] == "sam":
        return sam_edge(grad_norm, eta, float(h.get("rho", SAM_RHO)))
    # the idealised radius sigma / ||g|| of the edge formula: no varrho guard
    rho_t, _ = lesam_radius(grad_norm, float(h.get("sigma", LESAM_SIGMA)),
                            h.get("rho_max", LESAM_RHO_MAX))
    return sam_edge(grad_norm, eta, float(rho_t))




def thresholds(rows: list[dict[str, Any]], names: list[str]) -> dict[str, dict[str, Any]]:
    """Per optimizer: the bracket ``(last_ok, first_fail]`` of its stability threshold.

    ``last_ok`` is the largest learning rate whose run converged below the smallest diverged
    one (``first_diverged``); ``first_fail`` the smallest learning rate above ``last_ok`` whose
    run did not converge (diverged or stopped without reaching the loss goal). A run that is
    merely too slow at a *small* learning rate does not count as a failure. ``None`` where the
    grid has no such run (the threshold then lies outside the grid).
    """
    out: dict[str, dict[str, Any]] = {}
    for name in names:
        rs = sorted((r for r in rows if r["optimizer"] == name), key=lambda r: r["lr"])
        first_div = min((r["lr"] for r in rs if r["diverged"]), default=None)
        ok = [r["lr"] for r in rs if r["converged"] and (first_div is None or r["lr"] < first_div)]
        last_ok = max(ok) if ok else None
        fails = [r["lr"] for r in rs if not r["converged"]
                 and (last_ok is None or r["lr"] > last_ok)]
        out[name] = {"last_ok": last_ok, "first_fail": min(fails) if fails else None,
                     "first_diverged": first_div}
    return out
