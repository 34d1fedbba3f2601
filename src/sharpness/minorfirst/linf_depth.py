"""The ``linf_depth`` figure's computation: l_inf-SAM at depth L = 2 and 3, its closed form
against discrete SAM and the flow, the phase diagram of where long runs end (the j* rule), and
where plain GD ends from the same inits.

Like every ``compute_<id>`` of :mod:`sharpness.minorfirst.compute` (whose ``COMPUTE`` table
lists it), it takes the figure's config section and returns ``(arrays, summary)``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from sharpness.diagonal import (
    init_batch,
    init_theta,
    integrate_flow,
    linf_blowup_times,
    linf_limit,
    linf_predictor,
    simulate,
    single_example,
)

#: the limits' names as the figure's CSV writes them (e_j 1-based); the phase arrays' values
#: index this tuple
LABELS = ("e1", "e2", "0", "rho^L 1", "undecided")


def _simulated_limit(beta_end: np.ndarray, beta0: np.ndarray, rho: float, L: int) -> str:
    """Read the limit of a long l_inf-SAM run: e_j, zero, rho (odd L: bounded by rho^L, rising)."""
    a = np.abs(beta_end)
    sh = a / a.sum() if a.sum() > 0 else a
    if a.max() > 1e3 * np.abs(beta0).max() and sh.max() > 0.99:
        return f"e{int(np.argmax(sh))}"
    if np.all(a < 0.05 * np.abs(beta0)):
        return "zero"
    if L % 2 == 1 and np.all(beta_end > beta0) and np.all(beta_end <= rho**L * (1 + 1e-9)):
        return "rho"
    return "undecided"


def compute_linf_depth(p: dict[str, Any]) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    """l_inf-SAM at L=2, 3: closed form vs discrete SAM and flow; phase diagram of limits vs j* rule.

    ``L{L}_phase_gd`` holds the limit of plain GD (rescaled clock, the phase runs' step and
    horizon) from every grid init, as indices into ``summary["labels"]``.
    """
    mu = np.asarray(p["mu"], float)
    data = single_example(mu)
    rho = p["rho"]
    arrays: dict[str, np.ndarray] = {}
    summary: dict[str, Any] = {"rho": rho, "traj": [], "phase": []}
    for L in p["depths"]:
        alphas_t = np.asarray(p["alphas"], float)
        ends = np.full(len(alphas_t), float(p["s_max"]))
        if L >= 3:
            ends = np.minimum(ends, [p["blowup_fraction"] * float(np.min(
                linf_blowup_times(a, mu, rho, L))) for a in alphas_t])
        h = p["h_traj"]
        steps = int(ends.max() / h)
        # one batched run; each element's step is scaled so that all reach their own end time
        etas = h * ends / ends.max()
        tr = simulate(data, init_batch(alphas_t, L, mu.size), "linf", rho=rho, eta=etas,
                      steps=steps, clock="rescaled", record_every=max(1, steps // p["markers"]))
        for idx, alpha in enumerate(alphas_t):
            s_end = float(ends[idx])
            s_line = np.linspace(0, s_end, 300)
            fr = integrate_flow(data, init_theta(alpha, L, mu.size), "linf", rho=rho, t_max=s_end,
                                t_eval=s_line)
            cf_line = linf_predictor(alpha, mu, rho, L, s_line)
            cf_at_sim = linf_predictor(alpha, mu, rho, L, tr.s[idx])
            scale = np.maximum(np.abs(cf_at_sim).max(-1), 1e-12)
            rel = float(np.max(np.abs(tr.beta[idx] - cf_at_sim).max(-1) / scale))
            cf_at_flow = linf_predictor(alpha, mu, rho, L, fr.time)
            rel_flow = float(np.max(np.abs(fr.beta - cf_at_flow).max(-1)
                                    / np.maximum(np.abs(cf_at_flow).max(-1), 1e-12)))
            key = f"L{L}_{idx}"
            arrays.update({f"{key}_s_sim": tr.s[idx], f"{key}_beta_sim": tr.beta[idx],
                           f"{key}_s_line": s_line, f"{key}_beta_cf": cf_line,
                           f"{key}_s_flow": fr.time, f"{key}_beta_flow": fr.beta})
            summary["traj"].append({"L": L, "alpha": alpha.tolist(), "h": float(etas[idx]),
                                    "s_end": s_end, "rel_err_discrete": rel,
                                    "rel_err_flow": rel_flow})
        grid = np.linspace(p["grid_min"], p["grid_max"], p["grid_n"])
        a1, a2 = np.meshgrid(grid, grid, indexing="ij")
        alphas = np.stack([a1.ravel(), a2.ravel()], -1)
        h = p["h_phase"]
        tr = simulate(data, init_batch(alphas, L, 2), "linf", rho=rho, eta=h,
                      steps=int(p["s_phase"] / h), clock="rescaled",
                      record_every=int(p["s_phase"] / h))
        labels = ["e0", "e1", "zero", "rho", "undecided"]
        sim = np.array([labels.index(_simulated_limit(tr.beta[k, -1], tr.beta[k, 0], rho, L))
                        for k in range(len(alphas))])
        # plain GD from the same inits, same step and horizon, read by the same reader (the
        # claim's other half: which limit GD picks); at L >= 3 its runs blow up in finite s
        # and are read at their last finite state
        gd = simulate(data, init_batch(alphas, L, 2), "gd", eta=h, steps=int(p["s_phase"] / h),
                      clock="rescaled", record_every=int(p["s_phase"] / h))
        sim_gd = np.array([labels.index(_simulated_limit(gd.beta[k, -1], gd.beta[k, 0], rho, L))
                           for k in range(len(alphas))])
        pred = []
        for alpha in alphas:
            kind, j = linf_limit(alpha, mu, rho, L)
            pred.append(labels.index(f"e{j}" if kind == "e" else kind))
        pred = np.array(pred)
        arrays[f"L{L}_grid"] = grid
        arrays[f"L{L}_phase_sim"] = sim.reshape(a1.shape)
        arrays[f"L{L}_phase_pred"] = pred.reshape(a1.shape)
        arrays[f"L{L}_phase_gd"] = sim_gd.reshape(a1.shape)
        summary["phase"].append({"L": L, "points": int(len(alphas)),
                                 "agree": int(np.sum(sim == pred)),
                                 "disagree_at": alphas[sim != pred].tolist(),
                                 "gd_counts": {k: int(np.sum(sim_gd == i)) for i, k in
                                               enumerate(LABELS) if np.any(sim_gd == i)}})
    summary["max_rel_err_discrete"] = max(t["rel_err_discrete"] for t in summary["traj"])
    summary["labels"] = list(LABELS)
    return arrays, summary
