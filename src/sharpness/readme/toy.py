"""The eos diagonal toy's numbers for ``docs/api_eos.md``, computed (block ``eos-toy``).

The catalog states s_GF ≈ 7.14, η_c ≈ 0.28, ‖β‖₁ 0.61 → 1.14 and "divergence from about
η = 0.6". Where GD first diverges depends on the grid of step sizes: the quick profile's grid
skips some values, so this block scans a fine grid and the quick grid side by side, from the
same code (:mod:`sharpness.eos.toy`) and the quick profile's toy settings.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import yaml

from sharpness.eos.toy import DiagonalToy, gd, gradient_flow

FINE = [round(0.4 + 0.005 * k, 3) for k in range(61)]  # 0.400, 0.405, ..., 0.700


def _first_diverged(model: object, init: np.ndarray, etas: list[float], loss_goal: float,
                    max_steps: int) -> tuple[float | None, list[float]]:
    """The first diverging η of ``etas`` and the ones above it that converge again."""

    status = {eta: gd(model, init, eta, loss_goal=loss_goal, max_steps=max_steps).status
              for eta in etas}
    first = next((eta for eta in etas if status[eta] == "diverged"), None)
    again = [eta for eta in etas if first is not None and eta > first
             and status[eta] != "diverged"]
    return first, again


def toy_block(root: Path) -> str:
    """The block's Markdown, from ``workflow/config/quick.yaml``'s ``eos.toy`` settings."""

    settings = yaml.safe_load((root / "workflow/config/quick.yaml").read_text())["eos"]["toy"]
    model = DiagonalToy(np.asarray(settings["x"], float), float(settings["y"]))
    init = np.full(model.x.size, float(settings["w0"]))
    goal, cap = float(settings["loss_goal"]), int(settings["max_steps"])
    flow = gradient_flow(model, init)
    l1 = {eta: float(gd(model, init, eta, loss_goal=goal, max_steps=cap).beta.sum())
          for eta in (0.05, 0.5)}
    goals = [1e-4, 1e-6, 1e-8, 1e-10, 1e-12]
    l1_goal = [float(gd(model, init, 0.5, loss_goal=g, max_steps=cap).beta.sum()) for g in goals]
    eta_s = []
    for eta in settings["lrs"]:
        run = gd(model, init, float(eta), loss_goal=goal, max_steps=cap)
        if float(eta) > flow.eta_c and run.status == "ok":
            eta_s.append(float(eta) * run.sharpness)
    fine, fine_again = _first_diverged(model, init, FINE, goal, cap)
    grid = [float(e) for e in settings["lrs"]]
    quick, _ = _first_diverged(model, init, grid, goal, cap)
    below = [e for e in grid if quick is not None and e < quick]
    verb = "converges" if len(fine_again) == 1 else "converge"
    again = (f"; above it, η = {', '.join(f'{e:g}' for e in fine_again)} {verb} again (the "
             "edge is ragged)") if fine_again else ""
    return (
        "Computed by `sharpness readme refresh --only eos-toy` from the quick profile's toy "
        f"(x = {settings['x']}, y = {settings['y']:g}, w0 = {settings['w0']:g}, loss goal "
        f"{goal:g}; a test checks it is current):\n\n"
        f"* s_GF = {flow.s_gf:.4f}, η_c = 2/s_GF = {flow.eta_c:.4f} (catalog: 7.14, 0.28);\n"
        f"* ‖β‖₁ = {l1[0.05]:.3f} at η = 0.05 and {l1[0.5]:.3f} at η = 0.5 (catalog: 0.61 "
        "and 1.14); at η = 0.5 it ranges over "
        f"{min(l1_goal):.3f}-{max(l1_goal):.3f} for loss goals {goals[0]:g} to {goals[-1]:g};\n"
        f"* final η·S of the converged runs above η_c on the quick grid: "
        f"{min(eta_s):.2f}-{max(eta_s):.2f} (the edge of stability is η·S = 2);\n"
        f"* on a grid of step 0.005 from {FINE[0]:g} to {FINE[-1]:g}, GD first diverges at "
        f"η = {fine:g}{again};\n"
        f"* the quick profile's grid has no value between {max(below, default=0):g} and "
        f"{quick:g}, so its figure and the ledger's `eos-toy-numbers` row report the first "
        f"diverged η as {quick:g}. Both are below the catalog's \"about 0.6\".\n")
