"""Claims of paper `eos` (summary 003) and the catalog's checks on its items.

Every sweep is full-batch GD from one fixed init, so a run's numbers have no seed noise:
checks are decided by their tolerance at the simulated setting. A claim made for "many
settings" is decided by counting settings, and a setting whose runs did not reach the loss
goal does not count either way.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

import numpy as np
import pandas as pd

from sharpness.claims.common import fmt
from sharpness.claims.model import ItemData, Predicate, Result
from sharpness.claims.reported import reported
from sharpness.claims.stats import (
    CONTRADICTED,
    INCONCLUSIVE,
    SUPPORTED,
    separated_minimum,
    threshold,
)

P = "eos"
D = Mapping[str, ItemData]


def _converged(df: pd.DataFrame) -> pd.DataFrame:
    return df[(df["status"] == "ok") & (df["reason"] == "loss_goal")]


def _count_verdict(ok: int, bad: int, undecided: int) -> str:
    """All decided settings agree: supported; most disagree: contradicted; else inconclusive."""
    if ok + bad == 0:
        return INCONCLUSIVE
    if bad == 0:
        return SUPPORTED
    if bad > ok:
        return CONTRADICTED
    return INCONCLUSIVE


# --- the diagonal toy -----------------------------------------------------------------------
def toy_numbers(d: D) -> Result:
    df = d["eos/fig_diagonal"].rows
    sweep = df[df["panel"] == "sweep"].copy()
    s_gf, eta_c = float(sweep["s_gf"].iloc[0]), float(sweep["eta_c"].iloc[0])
    sweep["eta"] = sweep["eta"].astype(float)

    def l1_at(eta: float) -> float:
        row = sweep[np.isclose(sweep["eta"], eta)]
        return float(row["l1"].iloc[0]) if len(row) else float("nan")

    div = sweep[sweep["status"] == "diverged"]["eta"]
    first_div = float(div.min()) if len(div) else float("nan")
    measured = {"s_gf": s_gf, "eta_c": eta_c, "l1_at_0.05": l1_at(0.05),
                "l1_at_0.5": l1_at(0.5)}
    bad = []
    for key, value in measured.items():
        ref = float(reported("fig_diagonal", key)["value"])  # type: ignore[index]
        if not abs(value - ref) <= 0.5 * 10 ** (np.floor(np.log10(abs(ref))) - 1) + 1e-12:
            bad.append(f"{key} {value:.3f} vs {ref}")
    about = float(reported("fig_diagonal", "diverge")["value"])  # type: ignore[index]
    div_ok = abs(first_div - about) <= 0.1
    verdict = SUPPORTED if not bad and div_ok else CONTRADICTED
    text = (f"s_GF {s_gf:.3f} (7.14), η_c {eta_c:.3f} (0.28), ‖β‖₁ {measured['l1_at_0.05']:.3f} "
            f"at η=0.05 (0.61), {measured['l1_at_0.5']:.3f} at 0.5 (1.14); first diverged η "
            f"{fmt(first_div)} (about 0.6)")
    return Result(verdict, text, estimate=s_gf,
                  note=("off by more than the 2nd digit: " + "; ".join(bad)) if bad else
                  ("" if div_ok else f"divergence at {fmt(first_div)}, not within 0.1 of 0.6"))


def toy_tradeoff(d: D) -> Result:
    df = d["eos/fig_diagonal"].rows
    sw = df[(df["panel"] == "sweep") & (df["status"] != "diverged")].copy()
    sw["eta"] = sw["eta"].astype(float)
    eta_c = float(sw["eta_c"].iloc[0])
    eos = sw[sw["eta"] > 1.2 * eta_c].sort_values("eta")
    band = float((eos["eta_s"].astype(float) / 2 - 1).abs().max())
    l1 = eos["l1"].astype(float).to_numpy()
    rises = bool(len(l1) >= 2 and np.all(np.diff(l1) >= -1e-9) and l1[-1] > l1[0])
    ok = band < 0.1 and rises
    return Result(SUPPORTED if ok else CONTRADICTED, f"{len(eos)} runs above 1.2 η_c: max "
                  f"|ηS/2 − 1| = {fmt(band)}; ‖β‖₁ {fmt(float(l1[0]) if len(l1) else None)} → "
                  f"{fmt(float(l1[-1]) if len(l1) else None)} (rises monotonically: {rises})",
                  estimate=band)


# --- networks -------------------------------------------------------------------------------
def band(d: D) -> Result:
    df = d["eos/fig_phase"].rows
    conv = _converged(df)
    per = {}
    for setting, part in df.groupby("setting", sort=False):
        eta_c = float(part["eta_c"].iloc[0])
        ok = conv[(conv["setting"] == setting) & (conv["eta"].astype(float) > 1.2 * eta_c)]
        vals = (ok["eta_s_over_2"].astype(float) - 1).abs()
        per[setting] = float(vals.max()) if len(vals) else float("nan")
    inside = [s for s, v in per.items() if v < 0.1]
    outside = [s for s, v in per.items() if v >= 0.1]
    undecided = [s for s, v in per.items() if not np.isfinite(v)]
    verdict = _count_verdict(len(inside), len(outside), len(undecided))
    return Result(verdict, f"{len(inside)}/{len(per)} settings inside the ±0.1 band; "
                  + ", ".join(f"{s}: {fmt(v)}" for s, v in per.items()),
                  estimate=len(inside) / max(len(per), 1),
                  note=(f"no converged run above 1.2 η_c: {', '.join(undecided)}"
                        if undecided else ""))


def _converged_settings(d: D, item: str = "eos/fig_phase"
                        ) -> Iterator[tuple[str, pd.DataFrame, float]]:
    """(setting, its converged runs, eta_c) for every setting of an eos figure's CSV."""
    for setting, part in _converged(d[item].rows).groupby("setting", sort=False):
        yield str(setting), part, float(part["eta_c"].iloc[0])


def flat_below(d: D) -> Result:
    ok, bad, thin = [], [], []
    for setting, part, eta_c in _converged_settings(d):
        below = part[part["eta"].astype(float) < eta_c]["sharpness"].astype(float)
        if len(below) < 2:
            thin.append(setting)
            continue
        spread = float(below.max() / below.min() - 1)
        (ok if spread < 0.1 else bad).append(f"{setting} {spread:.2f}")
    verdict = _count_verdict(len(ok), len(bad), len(thin))
    return Result(verdict, f"relative spread of final sharpness over converged η < η_c: "
                  f"{len(ok)} flat (< 0.1), {len(bad)} not" + (f" ({'; '.join(bad)})" if bad
                                                               else ""),
                  note=(f"{len(thin)} settings have fewer than two converged η below η_c, so "
                        "flatness cannot be read there" if thin else ""))


def norm_grows(d: D) -> Result:
    ok, bad, thin = [], [], []
    for setting, part, eta_c in _converged_settings(d):
        eos = part[part["eta"].astype(float) > eta_c].sort_values("eta")
        if len(eos) < 2:
            thin.append(setting)
            continue
        l2 = eos["l2"].astype(float).to_numpy()
        (ok if l2[-1] > l2[0] else bad).append(setting)
    verdict = _count_verdict(len(ok), len(bad), len(thin))
    return Result(verdict, f"final ℓ2 norm larger at the largest than at the smallest "
                  f"converged η > η_c in {len(ok)}/{len(ok) + len(bad)} settings"
                  + (f"; smaller in {', '.join(bad)}" if bad else ""),
                  note=f"{len(thin)} settings with < 2 converged runs above η_c" if thin else "")


def u_shape(d: D) -> Result:
    df = d["eos/fig_test_vs_lr"].rows
    ok, flat, thin = [], [], []
    for setting, part in df[df["status"] != "diverged"].groupby("setting", sort=False):
        part = part.sort_values("eta")
        if len(part) < 3:
            thin.append(setting)
            continue
        n = int(part["n_test"].iloc[0]) if "n_test" in part.columns else 500
        err = part["test_error"].astype(float).to_numpy()
        separated = separated_minimum(list(err), n) is not None
        (ok if separated else flat).append(setting)
    verdict = SUPPORTED if ok else INCONCLUSIVE
    return Result(verdict, f"U-shape with the best η separated from both ends (Wilson 95 %) in "
                  f"{len(ok)}/{len(ok) + len(flat)} settings" + (f": {', '.join(ok)}" if ok
                                                                 else ""),
                  note="the paper claims it for many, not all, settings: one separated U "
                       "supports it" + (f"; {len(thin)} settings with < 3 finite runs"
                                        if thin else ""))


def traj_monotone(d: D) -> Result:
    tr = d["eos/fig_trajectories"].rows
    phase = d["eos/fig_phase"].rows
    eta_c = phase.groupby("setting")["eta_c"].first()
    gd = tr[tr["source"] == "gd"].drop_duplicates(["setting", "eta"])
    gd = gd[[float(e) > float(eta_c.get(s, np.inf)) for s, e in zip(gd["setting"], gd["eta"],
                                                                   strict=True)]]
    vals = gd["monotone_after_eos"].astype(str).str.lower()
    never = int(((vals != "true") & (vals != "false")).sum())
    n_ok = int((vals == "true").sum())
    n = int((vals == "true").sum() + (vals == "false").sum())
    drops = gd["max_drop_after_eos"].astype(float) if "max_drop_after_eos" in gd else None
    worst = float(drops.max()) if drops is not None and drops.notna().any() else float("nan")
    verdict = threshold(n - n_ok, 0.5) if n else INCONCLUSIVE
    return Result(verdict, f"ℓ2 norm monotone (up to a 1e-3 relative drop) after entering EoS "
                  f"in {n_ok}/{n} runs above η_c; largest drop {fmt(worst)}",
                  estimate=n_ok / max(n, 1),
                  note=(f"{never} runs above η_c never reached 2/η" if never else ""))


MEASURES = ("hessian_trace", "worst_case", "adaptive", "average")


def measures(d: D) -> Result:
    columns = d["eos/fig_measures"].rows.columns
    found = {}
    for m in MEASURES:
        if m not in columns:
            continue
        ok = bad = 0
        for _, part, eta_c in _converged_settings(d, "eos/fig_measures"):
            eos = part[part["eta"].astype(float) > eta_c].sort_values("eta")
            if len(eos) < 2 or eos[m].isna().any():
                continue
            v, l2 = eos[m].astype(float).to_numpy(), eos["l2"].astype(float).to_numpy()
            if v[-1] < v[0] and l2[-1] > l2[0]:
                ok += 1
            else:
                bad += 1
        found[m] = (ok, bad)
    tot_ok = sum(o for o, _ in found.values())
    tot_bad = sum(b for _, b in found.values())
    return Result(_count_verdict(tot_ok, tot_bad, 0), "measure falls while ℓ2 rises above η_c: "
                  + ", ".join(f"{m} {o}/{o + b}" for m, (o, b) in found.items()))


def init_moves_eta_c(d: D) -> Result:
    df = d["eos/fig_ablations"].rows
    part = df[df["factor"] == "init_scale"]
    if part.empty:
        raise ValueError("fig_ablations.csv has no factor=init_scale rows")
    by = part.groupby("value")["eta_c"].first().sort_index()
    vals = by.to_numpy(float)
    change = float(vals[-1] / vals[0] - 1)
    return Result(threshold(abs(change), 0.05, below=False), "η_c " + ", ".join(
        f"α={k}: {v:.3g}" for k, v in by.items()) + f" (relative change {change:+.2f})",
                  estimate=change)


def ablations_all(d: D) -> Result:
    df = d["eos/fig_ablations"].rows
    conv = _converged(df)
    factors = list(dict.fromkeys(df["factor"].astype(str)))
    missing = [f for f in ABLATION_FACTORS if f not in factors]
    ok = bad = 0
    names = []
    for (factor, value), part in conv.groupby(["factor", "value"], sort=False):
        eta_c = float(part["eta_c"].iloc[0])
        eos = part[part["eta"].astype(float) > eta_c].sort_values("eta")
        below = part[part["eta"].astype(float) < eta_c]
        if eos.empty or below.empty:
            continue
        hit = eos["l2"].astype(float).max() > below["l2"].astype(float).max() and \
            eos["sharpness"].astype(float).min() < below["sharpness"].astype(float).max()
        ok += hit
        bad += not hit
        names.append(f"{factor}={value}: {'yes' if hit else 'no'}")
    return Result(_count_verdict(ok, bad, 0), f"above η_c the norm is larger and sharpness "
                  f"smaller than below in {ok}/{ok + bad} ablation settings ("
                  + ", ".join(names) + ")",
                  note=f"factors varied: {', '.join(factors)}"
                       + (f"; catalog factors not varied in this profile: {', '.join(missing)}"
                          if missing else ""))


# The paper's ablation factors, by the names the configs give them (eos.ablations.factors).
ABLATION_FACTORS = ("width", "depth", "data_size", "init_scale", "activation", "loss_goal",
                    "parametrization")

# The predicates the ledger's rows (claims.yaml) name in their `test` field.
PREDICATES: dict[str, Predicate] = {
    "toy_numbers": toy_numbers,
    "toy_tradeoff": toy_tradeoff,
    "band": band,
    "flat_below": flat_below,
    "norm_grows": norm_grows,
    "u_shape": u_shape,
    "traj_monotone": traj_monotone,
    "measures": measures,
    "init_moves_eta_c": init_moves_eta_c,
    "ablations_all": ablations_all,
}
