"""Per-figure computations for the ``minorfirst`` paper (diagonal networks; the CNN is in ``cnn``).

Each ``compute_<id>(p)`` takes the figure's config section (a dict) and returns
``(arrays, summary)``: named numpy arrays for the plot (saved as ``data.npz``) and a JSON-able
summary with the numbers the catalog's checks are made on (saved as ``summary.json`` and in the
run's provenance). Nothing here draws; :mod:`sharpness.minorfirst.plots` reads these outputs.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from sharpness.diagonal import (
    REGIMES,
    classify_regime,
    cosine,
    dominant,
    gaussian_classes,
    init_batch,
    init_theta,
    integrate_flow,
    l1_max_margin,
    l1_original,
    l2_max_margin,
    linf_blowup_times,
    linf_limit,
    shares,
    simulate,
    single_example,
)
from sharpness.diagonal.discrete import run_steps
from sharpness.diagonal.model import grad
from sharpness.minorfirst.linf_depth import compute_linf_depth

Arrays = dict[str, np.ndarray]
Summary = dict[str, Any]


def _multi_data(p: dict[str, Any]):  # noqa: ANN202 - returns Dataset
    m = p["multi"]
    return gaussian_classes(m["n"], np.asarray(m["scales"], float), m["noise"], m.get("seed", 0))


# --- l1_maxmargin -----------------------------------------------------------------------------
def compute_l1_maxmargin(p: dict[str, Any]) -> tuple[Arrays, Summary]:
    """L=1: cosine to the l2 max-margin over rescaled time, GD / l2-SAM / l_inf-SAM, several rho, alpha."""
    arrays: Arrays = {}
    summary: Summary = {"curves": []}
    sets = {"single": single_example(p["mu"]), "multi": _multi_data(p)}
    combos = [(a, r) for a in p["alphas"] for r in p["rhos"]]
    for name, data in sets.items():
        target = l2_max_margin(data)
        arrays[f"{name}_target"] = target
        for method in ("gd", "l2", "linf"):
            alphas = np.array([c[0] for c in combos])
            rhos = np.array([0.0 if method == "gd" else c[1] for c in combos])
            tr = simulate(data, init_batch(alphas, 1, data.d), method, rho=rhos, eta=p["h"],
                          steps=p["steps"], clock="rescaled", record_every=p["record_every"])
            cos = cosine(tr.beta, target)  # (B, T)
            arrays[f"{name}_{method}_s"] = tr.s
            arrays[f"{name}_{method}_cos"] = cos
            for k, (a, r) in enumerate(combos):
                summary["curves"].append({"data": name, "method": method, "alpha": a,
                                          "rho": None if method == "gd" else r,
                                          "final_cosine": float(cos[k, -1])})
        if name == "single":  # closed form: beta(s) = alpha 1 + s mu for all three methods
            s = arrays["single_gd_s"][0]
            arrays["single_closed_cos"] = np.stack([
                cosine(a * np.ones(data.d)[None, :] + s[:, None] * data.X[0][None, :], target)
                for a, _ in combos])
    summary["min_final_cosine"] = min(c["final_cosine"] for c in summary["curves"])
    summary["combos"] = combos
    return arrays, summary


# --- l2_sequential ----------------------------------------------------------------------------
def compute_l2_sequential(p: dict[str, Any]) -> tuple[Arrays, Summary]:
    """l2-SAM vs GD at L=2: coordinate shares over rescaled time (flow lines, discrete markers)."""
    arrays: Arrays = {}
    summary: Summary = {"cases": []}
    for idx, case in enumerate(p["cases"]):
        mu = np.asarray(case["mu"], float)
        data = single_example(mu)
        major = int(np.argmax(mu))
        for method in ("l2", "gd"):
            rho = p["rho"] if method == "l2" else 0.0
            s_line = np.linspace(0, case["s_max"], 400)
            fr = integrate_flow(data, init_theta(case["alpha"], 2, mu.size), method, rho=rho,
                                t_max=case["s_max"], t_eval=s_line)
            steps = int(case["s_max"] / p["h"])
            tr = simulate(data, init_theta(case["alpha"], 2, mu.size), method, rho=rho, eta=p["h"],
                          steps=steps, clock="rescaled", record_every=max(1, steps // p["markers"]))
            info = classify_regime(fr.beta, major, collapsed=fr.status == "collapse")
            info_sim = classify_regime(tr.beta[0], major)
            key = f"c{idx}_{method}"
            arrays.update({f"{key}_s": fr.time, f"{key}_share": shares(fr.beta),
                           f"{key}_s_sim": tr.s[0], f"{key}_share_sim": shares(tr.beta[0]),
                           f"{key}_dom": dominant(fr.beta)})
            summary["cases"].append({"case": idx, "mu": mu.tolist(), "alpha": case["alpha"],
                                     "method": method, "rho": rho, "regime": info.regime,
                                     "sequence": list(info.sequence), "monotone": info.monotone,
                                     "sequence_discrete": list(info_sim.sequence),
                                     "flow_status": fr.status})
        # the isolating run: the same init and rho, perturbation rho * grad L not normalised
        steps = int(case["s_max"] / p["h"])
        tr = unnormalised_sam(data, init_theta(case["alpha"], 2, mu.size), p["rho"], p["h"],
                              steps, max(1, steps // p["markers"]))
        info = classify_regime(tr.beta[0], major)
        arrays.update({f"c{idx}_unnormalised_s_sim": tr.s[0],
                       f"c{idx}_unnormalised_share_sim": shares(tr.beta[0])})
        summary["cases"].append({"case": idx, "mu": mu.tolist(), "alpha": case["alpha"],
                                 "method": "unnormalised", "rho": p["rho"],
                                 "regime": info.regime, "sequence": list(info.sequence),
                                 "monotone": info.monotone,
                                 "sequence_discrete": list(info.sequence), "flow_status": "n/a"})
    return arrays, summary


def unnormalised_sam(data: Any, theta0: np.ndarray, rho: float, eta: float, steps: int,
                     record_every: int) -> Any:
    """SAM with the perturbation ``ε = ρ ∇L`` (not ``ρ ∇L / ‖∇L‖``), in the rescaled clock of
    the l2-SAM run beside it: the run that isolates the normalisation as the cause of
    minor-first (the paper's argument predicts it amplifies the major coordinate first, as GD
    does, because an unnormalised ε shrinks with the gradient at a small init)."""

    theta = np.array(theta0, dtype=float, copy=True)
    eta_b = np.full(theta.shape[0], float(eta))

    def step(th: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        pert = th + rho * grad(th, data, "original")
        return th - eta * grad(pert, data, "rescaled"), eta_b

    return run_steps(data, theta, step, eta_b=eta_b, steps=steps, clock="rescaled",
                     record_every=record_every)


# --- l2_regimes -------------------------------------------------------------------------------
def _classify_batch(beta: np.ndarray, major: int) -> list[str]:
    return [classify_regime(beta[k], major).regime for k in range(beta.shape[0])]


def compute_l2_regimes(p: dict[str, Any]) -> tuple[Arrays, Summary]:
    """Dominant coordinate over (alpha, s) for several rho; regime boundaries refined on a fine grid."""
    mu = np.asarray(p["mu"], float)
    data = single_example(mu)
    major = int(np.argmax(mu))
    ratios = np.geomspace(p["ratio_min"], p["ratio_max"], p["n_alpha"])  # alpha / rho
    steps = int(p["s_max"] / p["h"])
    rec = max(1, steps // p["n_time"])
    arrays: Arrays = {"ratios": ratios, "rhos": np.asarray(p["rhos"], float)}
    summary: Summary = {"rhos": p["rhos"], "boundaries": []}
    rhos = np.asarray(p["rhos"], float)
    alphas_all = (rhos[:, None] * ratios[None, :]).ravel()
    rho_all = np.repeat(rhos, ratios.size)
    tr = simulate(data, init_batch(alphas_all, 2, mu.size), "l2", rho=rho_all, eta=p["h"],
                  steps=steps, clock="rescaled", record_every=rec)
    infos_all = [classify_regime(tr.beta[k], major) for k in range(alphas_all.size)]
    brackets = []
    for i, rho in enumerate(rhos):
        sl = slice(i * ratios.size, (i + 1) * ratios.size)
        infos = infos_all[sl]
        regimes = [inf.regime for inf in infos]
        alphas = alphas_all[sl]
        arrays[f"rho{i}_dom"] = dominant(tr.beta[sl])
        arrays[f"rho{i}_s"] = tr.s[i * ratios.size]
        arrays[f"rho{i}_regime"] = np.array([REGIMES.index(r) for r in regimes])
        arrays[f"rho{i}_monotone"] = np.array([inf.monotone for inf in infos])
        brackets += [(float(rho), alphas[k], alphas[k + 1]) for k in range(len(alphas) - 1)
                     if regimes[k] != regimes[k + 1]]
        summary.setdefault("regimes_found", {})[str(rho)] = sorted(set(regimes))
        summary.setdefault("non_monotone_sequential", {})[str(rho)] = [
            float(alphas[k] / rho) for k, inf in enumerate(infos)
            if inf.regime == "sequential" and not inf.monotone]
    # refine every change on a fine geometric grid inside its bracket: one batched run for all
    if brackets:
        fine = np.concatenate([np.geomspace(lo, hi, p["refine"]) for _, lo, hi in brackets])
        frho = np.repeat([b[0] for b in brackets], p["refine"])
        tf = simulate(data, init_batch(fine, 2, mu.size), "l2", rho=frho, eta=p["h"],
                      steps=steps, clock="rescaled", record_every=rec)
        for b, (rho, _, _) in enumerate(brackets):
            sl = slice(b * p["refine"], (b + 1) * p["refine"])
            rf = _classify_batch(tf.beta[sl], major)
            fa = fine[sl]
            j = next(m for m in range(len(rf) - 1) if rf[m] != rf[m + 1])
            boundary = float(np.sqrt(fa[j] * fa[j + 1]))
            summary["boundaries"].append({"rho": rho, "from": rf[j], "to": rf[j + 1],
                                          "alpha": boundary, "alpha_over_rho": boundary / rho})
    return arrays, summary


# --- l2_limit ---------------------------------------------------------------------------------
def compute_l2_limit(p: dict[str, Any]) -> tuple[Arrays, Summary]:
    """Long horizon at L=2: cosine to the l1 max-margin (e_d; LP for multi-example), l2-SAM vs GD."""
    arrays: Arrays = {}
    summary: Summary = {"curves": []}
    sets = {"single": single_example(p["mu"]), "multi": _multi_data(p)}
    for name, data in sets.items():
        target = l1_max_margin(data, nonneg=True)
        target_free = l1_max_margin(data)
        arrays[f"{name}_target"] = target
        summary[f"{name}_target"] = target.tolist()
        summary[f"{name}_nonneg_equals_free"] = bool(np.allclose(target, target_free, atol=1e-6))
        for method in ("gd", "l2"):
            rho = p["rho"] if method == "l2" else 0.0
            tr = simulate(data, init_batch(p["alphas"], 2, data.d), method, rho=rho, eta=p["h"],
                          steps=p["steps"], clock="rescaled", record_every=p["record_every"])
            cos = cosine(tr.beta, target)
            arrays[f"{name}_{method}_s"] = tr.s
            arrays[f"{name}_{method}_cos"] = cos
            for k, a in enumerate(p["alphas"]):
                summary["curves"].append({"data": name, "method": method, "alpha": a,
                                          "final_cosine": float(cos[k, -1]),
                                          "regime": classify_regime(tr.beta[k], data.d - 1).regime})
    summary["min_final_cosine"] = min(c["final_cosine"] for c in summary["curves"])
    return arrays, summary


# --- deep_l -----------------------------------------------------------------------------------
def compute_deep_l(p: dict[str, Any]) -> tuple[Arrays, Summary]:
    """L=3,4 l2-SAM shares (sequential amplification) and l_inf blow-up times vs closed form."""
    mu = np.asarray(p["mu"], float)
    data = single_example(mu)
    major = int(np.argmax(mu))
    arrays: Arrays = {}
    summary: Summary = {"shares": [], "blowup": []}
    for L, alpha in zip(p["depths"], p["alphas"], strict=True):
        fr = integrate_flow(data, init_theta(alpha, L, mu.size), "l2", rho=p["rho"],
                            t_max=p["s_max"], t_eval=np.linspace(0, p["s_max"], 600),
                            blowup=p["blowup"], rtol=1e-7, atol=1e-10)
        info = classify_regime(fr.beta, major, collapsed=fr.status == "collapse")
        arrays[f"L{L}_s"] = fr.time
        arrays[f"L{L}_share"] = shares(fr.beta)
        summary["shares"].append({"L": L, "alpha": alpha, "rho": p["rho"], "regime": info.regime,
                                  "sequence": list(info.sequence), "monotone": info.monotone,
                                  "status": fr.status, "t_end": fr.t_end})
    # l_inf blow-up: per coordinate times, closed form vs flow (single-coordinate runs) vs j*
    rows = []
    mu = np.asarray(p["blowup_mu"], float)
    data = single_example(mu)
    for L in p["blowup_depths"]:
        for alpha in p["blowup_alphas"]:
            alpha = np.asarray(alpha, float)
            rho_b = p["blowup_rho"]
            s_cf = linf_blowup_times(alpha, mu, rho_b, L)
            s_flow = np.full(mu.size, np.inf)
            for j in range(mu.size):  # each coordinate alone (the flow decouples)
                if np.isfinite(s_cf[j]):
                    fj = integrate_flow(single_example(mu[j:j + 1]), init_theta(alpha[j:j + 1], L, 1),
                                        "linf", rho=rho_b, t_max=2 * s_cf[j], blowup=p["blowup"],
                                        solver="RK45", rtol=1e-8)
                    s_flow[j] = fj.t_end if fj.status == "blowup" else np.inf
            full = integrate_flow(data, init_theta(alpha, L, mu.size), "linf", rho=rho_b,
                                  t_max=2 * float(np.min(s_cf)), blowup=p["blowup"],
                                  solver="RK45", rtol=1e-8)
            first = int(np.argmax(np.abs(full.beta[-1])))
            kind, jstar = linf_limit(alpha, mu, rho_b, L)
            order_sim = np.argsort(s_flow).tolist()
            order_cf = np.argsort(s_cf).tolist()
            rows.append({"L": L, "alpha": alpha.tolist(), "s_closed": s_cf.tolist(),
                         "s_flow": s_flow.tolist(), "first_blowup_full_flow": first,
                         "full_status": full.status, "full_t_end": full.t_end, "jstar": jstar,
                         "order_flow": order_sim, "order_closed": order_cf})
    summary["blowup"] = rows
    arrays["blowup_closed"] = np.array([r["s_closed"] for r in rows])
    arrays["blowup_flow"] = np.array([r["s_flow"] for r in rows])
    arrays["blowup_L"] = np.array([r["L"] for r in rows])
    return arrays, summary


# --- multi_example ----------------------------------------------------------------------------
def compute_multi_example(p: dict[str, Any]) -> tuple[Arrays, Summary]:
    """Separable Gaussian classes: coordinate shares over time, GD vs l2-SAM vs l_inf-SAM."""
    data = _multi_data(p)
    major = int(np.argmax(np.abs(np.asarray(p["multi"]["scales"]))))
    arrays: Arrays = {"X": data.X, "y": data.y}
    summary: Summary = {"runs": []}
    for method in ("gd", "l2", "linf"):
        rho = p["rho"] if method != "gd" else 0.0
        tr = simulate(data, init_batch(p["alphas"], 2, data.d), method, rho=rho, eta=p["h"],
                      steps=p["steps"], clock="rescaled", record_every=p["record_every"])
        arrays[f"{method}_s"] = tr.s
        arrays[f"{method}_share"] = shares(tr.beta)
        for k, a in enumerate(p["alphas"]):
            info = classify_regime(tr.beta[k], major)
            summary["runs"].append({"method": method, "alpha": a, "rho": rho,
                                    "regime": info.regime, "sequence": list(info.sequence),
                                    "monotone": info.monotone})
    return arrays, summary


# --- flow_vs_discrete -------------------------------------------------------------------------
def compute_flow_vs_discrete(p: dict[str, Any]) -> tuple[Arrays, Summary]:
    """max_t |beta_eta(t) - beta_flow(t)| on [0, T] vs eta: L=1 (closed form) and L=2 (solve_ivp)."""
    mu = np.asarray(p["mu"], float)
    data = single_example(mu)
    etas = np.asarray(p["etas"], float)
    T = p["T"]
    arrays: Arrays = {"etas": etas}
    summary: Summary = {"slopes": []}
    for L, alpha in ((1, p["alpha_l1"]), (2, p["alpha_l2"])):
        for method in ("gd", "l2", "linf"):
            errs = []
            fr = None
            if L == 2:
                fr = integrate_flow(data, init_theta(alpha, L, mu.size), method, rho=p["rho"],
                                    clock="original", t_max=T, t_eval=np.linspace(0, T, p["n_check"] + 1),
                                    rtol=1e-11, atol=1e-13)
            for eta in etas:
                steps = int(round(T / eta))
                every = max(1, steps // p["n_check"])
                tr = simulate(data, init_theta(alpha, L, mu.size), method, rho=p["rho"], eta=eta,
                              steps=steps, record_every=every)
                if L == 1:
                    ref = l1_original(np.asarray(alpha, float) * np.ones(mu.size), mu, tr.t[0], method, p["rho"])
                else:
                    ref = np.stack([np.interp(tr.t[0], fr.time, fr.beta[:, j]) for j in range(mu.size)], -1)
                errs.append(float(np.max(np.abs(tr.beta[0] - ref))))
            errs_arr = np.array(errs)
            slope = float(np.polyfit(np.log(etas), np.log(errs_arr), 1)[0])
            arrays[f"L{L}_{method}_err"] = errs_arr
            summary["slopes"].append({"L": L, "method": method, "slope": slope,
                                      "errors": errs})
    return arrays, summary


COMPUTE = {
    "l1_maxmargin": compute_l1_maxmargin,
    "linf_depth": compute_linf_depth,
    "l2_sequential": compute_l2_sequential,
    "l2_regimes": compute_l2_regimes,
    "l2_limit": compute_l2_limit,
    "deep_l": compute_deep_l,
    "multi_example": compute_multi_example,
    "flow_vs_discrete": compute_flow_vs_discrete,
}
