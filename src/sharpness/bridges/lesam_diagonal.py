"""Figure ``bridges/lesam_diagonal``: does LE-SAM's loss budget keep, remove or reverse minor-first?

Computed on the minorfirst diagonal networks (L = 2 by default; single example ``{(mu, +1)}``
and separable Gaussian classes), GD, l2-SAM (radius ``rho``) and LE-SAM (budget ``sigma``),
LE-SAM both unclipped (``rho_max = inf``: the pure loss-equated rule) and clipped at
``rho_max`` (the practical rule; late in training it becomes l2-SAM with radius ``rho_max``).
Clipping at ``rho_max = rho`` would be degenerate: with the matched budget below, the LE-SAM
radius ``sigma/||g||`` starts at ``rho`` and only grows while ``||g||`` falls, so the clip would
hold it at ``rho`` and LE-SAM would *be* l2-SAM.
All paths follow the rescaled flow with step control (:mod:`sharpness.bridges.paths`).

Regimes, read off each path (never hard-coded), extend :func:`sharpness.diagonal.classify_regime`:

* ``collapse``: the predictor shrinks to the origin (or half its initial l1 norm);
* ``sequential``: a minor coordinate dominates first and the major one at the end;
* ``major-first``: the major coordinate dominates first and at the end (GD-like);
* ``minor-last``: not collapsed, but the coordinate dominant at the end is *not* the major one
  (the reversal predicted for unclipped LE-SAM in :mod:`sharpness.bridges.lesam_flow`);
* ``unsettled``: the step budget ran out before the outcome was settled.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from sharpness.bridges.lesam_flow import single_coordinate_rest_margin
from sharpness.bridges.paths import PathBatch, rescaled_paths
from sharpness.diagonal import (
    Dataset,
    classify_regime,
    cosine,
    dominant,
    dominant_sequence,
    gaussian_classes,
    grad,
    init_batch,
    l1_max_margin,
    shares,
    single_example,
)
from sharpness.errors import reject_unknown

BRIDGE_REGIMES: tuple[str, ...] = ("collapse", "sequential", "major-first", "minor-last",
                                   "unsettled")
#: the four runs drawn side by side, as (key, method)
VARIANTS: tuple[tuple[str, str], ...] = (
    ("gd", "gd"),
    ("l2", "l2"),
    ("lesam_clip", "lesam"),
    ("lesam_free", "lesam"),
)


@dataclass
class LesamDiagonalParams:
    """Settings of the figure (the ``bridges.lesam_diagonal`` config section)."""

    L: int = 2
    mu: list[float] = field(default_factory=lambda: [1.0, 2.0, 3.0, 4.0, 5.0])
    rho: float = 0.5
    rho_max: float = 1.5
    sigma: float | None = None
    alpha: float = 0.2
    multi: dict[str, Any] = field(default_factory=lambda: {
        "n": 20, "scales": [1.0, 2.0, 3.0, 4.0, 5.0], "noise": 0.5, "seed": 0, "alpha": 0.2})
    alpha_grid: list[float] = field(default_factory=lambda: [0.02, 1.0, 12])
    sigma_grid: list[float] = field(default_factory=lambda: [0.01, 1.0, 10])
    rho_grid: list[float] = field(default_factory=lambda: [0.05, 2.0, 10])
    s_max: float = 30.0
    n_record: int = 301
    rel_step: float = 0.02
    eta_max: float = 0.05
    u_stop: float = 1e5
    rest_tol: float = 1e-7
    max_steps: int = 20000

    @classmethod
    def from_dict(cls, raw: dict[str, Any]) -> LesamDiagonalParams:
        """Build from a config section; an unknown key is a ``ConfigError`` naming it."""
        reject_unknown("bridges.lesam_diagonal", raw, cls.__dataclass_fields__)
        return cls(**raw)

    def to_dict(self) -> dict[str, Any]:
        """Plain dict (for provenance)."""
        return asdict(self)


def geomgrid(spec: list[float]) -> np.ndarray:
    """``[lo, hi, n]`` -> ``n`` log-spaced values."""
    lo, hi, n = spec
    return np.geomspace(float(lo), float(hi), int(n))


def initial_grad_norm(data: Dataset, L: int, alphas: np.ndarray) -> np.ndarray:
    """``||grad L(theta_0)||`` (original clock) at the uniform inits ``alpha * 1``, shape ``(len(alphas),)``."""
    th = init_batch(np.asarray(alphas, float), L, data.d)
    g = grad(th, data, "original")
    return np.sqrt(np.sum(g * g, axis=(-2, -1)))


def matched_sigma(data: Dataset, p: LesamDiagonalParams, alpha: float) -> float:
    """The budget whose initial LE-SAM radius equals l2-SAM's ``rho``: ``sigma = rho ||g(theta_0)||``.

    With it both methods take the same first step; what differs later is the budget mechanism
    alone. Above ``sigma = rho_max ||g(theta_0)||`` the clip is active from the start.
    """
    return float(p.rho * initial_grad_norm(data, p.L, np.array([alpha]))[0])


def classify_path(beta: np.ndarray, beta_end: np.ndarray, stop: str, major: int) -> str:
    """Regime of one recorded path (NaN rows dropped) and its final state; see the module doc."""
    rows = beta[np.all(np.isfinite(beta), axis=-1)]
    rows = np.vstack([rows, beta_end[None]])
    if stop == "max_steps":
        return "unsettled"
    info = classify_regime(rows, major, collapsed=stop == "collapse")
    if info.regime == "collapse":
        return "collapse"
    if int(dominant(beta_end)) != major:
        return "minor-last"
    return info.regime


def _paths(data: Dataset, p: LesamDiagonalParams, alphas: np.ndarray, method: str,
           **kw: Any) -> PathBatch:
    return rescaled_paths(
        data, init_batch(alphas, p.L, data.d), method,  # type: ignore[arg-type]
        s_grid=np.linspace(0.0, p.s_max, p.n_record), rel_step=p.rel_step, eta_max=p.eta_max,
        u_stop=p.u_stop, rest_tol=p.rest_tol, max_steps=p.max_steps, **kw)


def _variant_kwargs(key: str, p: LesamDiagonalParams, sigma: np.ndarray | float) -> dict[str, Any]:
    if key == "gd":
        return {}
    if key == "l2":
        return {"rho": p.rho}
    return {"sigma": sigma, "rho_max": p.rho_max if key == "lesam_clip" else np.inf}


def compute(p: LesamDiagonalParams) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    """All numbers of the figure: share paths, regime maps, limit cosines. Returns (arrays, summary)."""
    sets = {
        "single": (single_example(p.mu), p.alpha),
        "multi": (gaussian_classes(int(p.multi["n"]), np.asarray(p.multi["scales"], float),
                                   float(p.multi["noise"]), int(p.multi.get("seed", 0))),
                  float(p.multi["alpha"])),
    }
    alphas, sigmas, rhos = (geomgrid(g) for g in (p.alpha_grid, p.sigma_grid, p.rho_grid))
    arrays: dict[str, np.ndarray] = {"s": np.linspace(0.0, p.s_max, p.n_record),
                                     "alphas": alphas, "sigmas": sigmas, "rhos": rhos}
    summary: dict[str, Any] = {"paths": [], "maps": {}, "limit": []}
    for name, (data, alpha) in sets.items():
        target = l1_max_margin(data, nonneg=True)
        major = int(np.argmax(target))
        arrays[f"{name}_target"] = target
        summary[f"{name}_major"] = major
        sigma = matched_sigma(data, p, alpha) if p.sigma is None else float(p.sigma)
        summary[f"{name}_sigma"] = sigma
        # share paths at the chosen (alpha, sigma), plus the sigma sweep for the limit panel
        for key, method in VARIANTS:
            sweep = key.startswith("lesam")
            sig = np.concatenate([[sigma], sigmas]) if sweep else np.array([sigma])
            pb = _paths(data, p, np.full(sig.size, alpha), method, **_variant_kwargs(key, p, sig))
            arrays[f"{name}_{key}_share"] = np.where(  # NaN after the stop, not 0
                np.all(np.isfinite(pb.beta[0]), -1, keepdims=True), shares(pb.beta[0]), np.nan)
            regimes = [classify_path(pb.beta[b], pb.beta_end[b], pb.stop[b], major)
                       for b in range(sig.size)]
            cos = cosine(pb.beta_end, target)
            final_loss = np.log1p(np.exp(-np.clip(pb.min_margin_end, -50, 700)))
            seq = dominant_sequence(dominant(pb.beta[0][np.all(np.isfinite(pb.beta[0]), -1)]))
            summary["paths"].append({
                "set": name, "variant": key, "alpha": alpha, "sigma": sigma if sweep else None,
                "rho": p.rho if key == "l2" else None,
                "rho_max": p.rho_max if key == "lesam_clip" else None, "regime": regimes[0],
                "sequence": seq, "final_dominant": int(dominant(pb.beta_end[0])),
                "cosine_l1": float(cos[0]), "stop": str(pb.stop[0]), "s_end": float(pb.s_end[0]),
                "min_margin_end": float(pb.min_margin_end[0])})
            if sweep:
                arrays[f"{name}_{key}_limit_cos"] = cos[1:]
                arrays[f"{name}_{key}_limit_margin"] = pb.min_margin_end[1:]
                for k, sg in enumerate(sigmas):
                    summary["limit"].append({
                        "set": name, "variant": key, "alpha": alpha, "sigma": float(sg),
                        "regime": regimes[k + 1], "cosine_l1": float(cos[k + 1]),
                        "min_margin_end": float(pb.min_margin_end[k + 1]),
                        "loss_end": float(final_loss[k + 1]), "stop": str(pb.stop[k + 1])})
            else:
                arrays[f"{name}_{key}_limit_cos"] = cos
                arrays[f"{name}_{key}_limit_margin"] = pb.min_margin_end
    # regime maps on the single example: LE-SAM over (alpha, sigma), l2-SAM over (alpha, rho)
    data = sets["single"][0]
    major = summary["single_major"]
    A, S = np.meshgrid(alphas, sigmas, indexing="ij")
    for key in ("lesam_free", "lesam_clip"):
        pb = _paths(data, p, A.ravel(), "lesam", **_variant_kwargs(key, p, S.ravel()))
        _store_map(arrays, summary, key, pb, major, A.shape, arrays["single_target"])
    A, R = np.meshgrid(alphas, rhos, indexing="ij")
    pb = _paths(data, p, A.ravel(), "l2", rho=R.ravel())
    _store_map(arrays, summary, "l2", pb, major, A.shape, arrays["single_target"])
    return arrays, summary


def _store_map(arrays: dict[str, np.ndarray], summary: dict[str, Any], key: str, pb: PathBatch,
               major: int, shape: tuple[int, ...], target: np.ndarray) -> None:
    regimes = [classify_path(pb.beta[b], pb.beta_end[b], pb.stop[b], major)
               for b in range(pb.beta.shape[0])]
    codes = np.array([BRIDGE_REGIMES.index(r) for r in regimes]).reshape(shape)
    arrays[f"map_{key}_regime"] = codes
    arrays[f"map_{key}_cos"] = cosine(pb.beta_end, target).reshape(shape)
    arrays[f"map_{key}_margin"] = pb.min_margin_end.reshape(shape)
    counts = {r: int(np.sum(codes == i)) for i, r in enumerate(BRIDGE_REGIMES)}
    summary["maps"][key] = {"counts": counts, "stops": {
        s: int(np.sum(pb.stop == s)) for s in sorted(set(pb.stop.tolist()))},
        "max_steps_used": int(pb.steps.max())}


def rest_margin_theory(sigmas: np.ndarray) -> np.ndarray:
    """Predicted rest margin ``u*`` of unclipped LE-SAM (single example, L = 2) for each sigma."""

    return np.array([single_coordinate_rest_margin(float(s)) for s in sigmas])


def findings(arrays: dict[str, np.ndarray], summary: dict[str, Any],
             p: LesamDiagonalParams) -> dict[str, Any]:
    """Numbers the caption and docs state, all read from the computed data."""
    out: dict[str, Any] = {"paths": {}, "maps": {}}
    for row in summary["paths"]:
        out["paths"][f"{row['set']}/{row['variant']}"] = (row["regime"], row["sequence"],
                                                           row["cosine_l1"])
    for key, info in summary["maps"].items():
        c = info["counts"]
        alive = sum(v for k, v in c.items() if k != "collapse")
        out["maps"][key] = {**c, "alive": alive,
                            "minor_last_frac": c["minor-last"] / alive if alive else float("nan")}
    sig = arrays["sigmas"]
    theory = rest_margin_theory(sig)
    got = arrays["single_lesam_free_limit_margin"]
    rest = np.array([r["stop"] == "rest" for r in summary["limit"]
                     if r["set"] == "single" and r["variant"] == "lesam_free"])
    ok = rest & np.isfinite(theory)
    out["rest_rel_err"] = float(np.max(np.abs(got[ok] - theory[ok]) / theory[ok])) if ok.any() \
        else float("nan")
    out["rest_count"] = int(ok.sum())
    free, clip = out["maps"]["lesam_free"], out["maps"]["lesam_clip"]
    l2_seq = out["maps"]["l2"]["sequential"]
    early_minor = any(row["sequence"] and row["sequence"][0] != summary[f"{row['set']}_major"]
                      for row in summary["paths"] if row["variant"].startswith("lesam"))
    if free["minor_last_frac"] > 0.5:
        verdict = "reverses"
    elif free["sequential"] + clip["sequential"] > 0 and early_minor:
        verdict = "keeps"
    else:
        verdict = "removes"
    out["verdict"] = verdict
    out["l2_sequential"] = l2_seq
    out["early_minor"] = early_minor
    out["alpha_step"] = float(arrays["alphas"][1] / arrays["alphas"][0])
    out["sigma_step"] = float(arrays["sigmas"][1] / arrays["sigmas"][0])
    return out
