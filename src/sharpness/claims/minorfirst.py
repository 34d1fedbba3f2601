"""Claims of paper `minorfirst` (summaries 000 and 001) and the catalog's checks on its items.

The diagonal-network items are deterministic simulations (no seed): a check is decided by
its tolerance, so its verdict is `supported` or `contradicted` at the simulated setting. The
claims about trained networks (the synthetic CNN, Grad-CAM) are in
:mod:`sharpness.claims.minorfirst_networks`.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from sharpness.claims.common import (
    dominant_coords,
    fmt,
    last_per_curve,
    loglog_slope,
    never_moves_down,
    rows,
    share_matrix,
)
from sharpness.claims.model import Items as D
from sharpness.claims.model import Params, Predicate, Result
from sharpness.evidence.stats import (
    CONTRADICTED,
    INCONCLUSIVE,
    NOT_RUN,
    SUPPORTED,
    threshold,
)

P = "minorfirst"


# --- L = 1 --------------------------------------------------------------------------------
def l1_converges(d: D, params: Params) -> Result:
    df = d["minorfirst/l1_maxmargin"].rows
    last = last_per_curve(df, ["data", "method", "alpha", "rho"], "s")
    worst = float(last["one_minus_cos"].max())
    per = last.groupby("method")["one_minus_cos"].max()
    return Result(threshold(worst, params["tol"]), f"largest final 1 − cos = {fmt(worst)} over "
                  f"{len(last)} curves (" + ", ".join(f"{m} {fmt(v)}" for m, v in per.items())
                  + ")", estimate=1 - worst)


# --- l_inf-SAM ----------------------------------------------------------------------------
def linf_closed_form(d: D, params: Params) -> Result:
    df = rows(d["minorfirst/linf_depth"], source="rel_err")
    if df.empty:
        raise ValueError("linf_depth.csv has no rows with source=rel_err")
    worst = float(df["rel_err_discrete"].max())
    return Result(threshold(worst, params["tol"]), f"largest relative error closed form vs discrete "
                  f"SAM = {fmt(worst)} over {len(df)} trajectories (L = "
                  f"{sorted(set(df['L'].astype(int)))})", estimate=worst)


def linf_jstar(d: D) -> Result:
    df = rows(d["minorfirst/linf_depth"], source="phase")
    agree = int((df["simulated"] == df["rule"]).sum())
    verdict = SUPPORTED if agree == len(df) and len(df) else CONTRADICTED
    return Result(verdict, f"{agree}/{len(df)} grid points: simulated limit = j* rule",
                  estimate=agree / max(len(df), 1))


def _gd_where_stated(gd: pd.DataFrame) -> pd.DataFrame:
    """GD's grid points where the papers' "GD always picks the major feature" applies: depth
    L = 2 (the known result they cite: a 2-layer diagonal network converges to the ℓ1
    max-margin solution, the major feature here) and the uniform init α·1 at any depth (the
    init they train from, where μ_j α_j is largest at the major coordinate)."""
    if gd.empty:
        return gd
    uniform = np.isclose(gd["alpha_1"].astype(float), gd["alpha_2"].astype(float))
    return gd[(gd["L"].astype(int) == 2) | uniform]


def linf_init_sensitive(d: D) -> Result:
    """Both halves of the claim: over the (α1, α2) init grid l_inf-SAM reaches the minor limit
    e1, the major e2 and the degenerate one at every depth, and GD (rows ``source=gd_phase``)
    reaches e2 where the papers state it (:func:`_gd_where_stated`: L = 2 and the uniform
    init; its limit over the whole grid is the extension row ``mf-linf-gd-limit``). Without
    GD rows the second half is untested and the row is inconclusive, saying so."""
    df = rows(d["minorfirst/linf_depth"], source="phase")
    found = {}
    for L, part in df.groupby("L"):
        found[int(L)] = sorted(set(part["simulated"]))
    # the degenerate limit is 0 at even depth and rho^L 1 at odd depth (catalog, derived)
    ok = all({"e1", "e2", "0" if L % 2 == 0 else "rho^L 1"} <= set(v) for L, v in found.items())
    gd = _gd_where_stated(rows(d["minorfirst/linf_depth"], source="gd_phase"))
    gd_found = {int(L): sorted(set(p["simulated"])) for L, p in gd.groupby("L")}
    gd_ok = bool(gd_found) and all(v == ["e2"] for v in gd_found.values())
    text = ("l_inf-SAM limits over the init grid: " + "; ".join(
        f"L={L}: {', '.join(v)}" for L, v in found.items())
        + ("; GD (L = 2 and the uniform init α·1): " + "; ".join(
            f"L={L}: {', '.join(v)}" for L, v in gd_found.items())
           if gd_found else "; GD: not recorded"))
    verdict = (CONTRADICTED if not ok or (gd_found and not gd_ok) else
               SUPPORTED if gd_ok else INCONCLUSIVE)
    return Result(verdict, text,
                  note="minor (e1), major (e2) and the degenerate limit (0 at even L, ρ^L·1 at "
                       "odd L) must all occur at every depth, and GD must pick e2 at L = 2 and "
                       "from the uniform init"
                  + ("" if gd_found else "; linf_depth has no GD rows (source=gd_phase): GD's "
                     "half of the claim is untested"))


def linf_gd_limit(d: D, params: Params) -> Result:
    """This project's finding, beyond the papers: GD's limit from every init of the (α1, α2)
    grid is the coordinate with the largest μ_j α_j^(L−2), the j* rule at ρ = 0. In the
    rescaled clock each coordinate obeys w_j' = μ_j w_j^(L−1): for L ≥ 3 it blows up at
    1 / ((L−2) μ_j α_j^(L−2)), first where μ_j α_j^(L−2) is largest (at L = 3 and μ = (1, 2):
    e1 wherever α1 > 2·α2); at L = 2 it grows as e^(μ_j s), so the largest μ_j wins from every
    init. A deterministic simulation: supported when every grid point off a tie agrees,
    contradicted otherwise. The registered ``mu`` is the design; data made with another are
    refused."""
    data = d["minorfirst/linf_depth"]
    mu = [float(m) for m in params["mu"]]
    made = data.params.get("mu")
    if made is not None and [float(m) for m in made] != mu:
        return Result(INCONCLUSIVE, f"data made with μ = {made}, registered {mu}",
                      note="a deviation: the data are not the registered design")
    gd = rows(data, source="gd_phase")
    if gd.empty:
        return Result(NOT_RUN, "linf_depth has no GD rows (source=gd_phase)")
    power = gd["L"].astype(float) - 2
    s1 = mu[0] * gd["alpha_1"].astype(float) ** power
    s2 = mu[1] * gd["alpha_2"].astype(float) ** power
    tie = np.isclose(s1, s2)
    rule = np.where(s1 > s2, "e1", "e2")
    agree = (gd["simulated"].astype(str) == rule) & ~tie
    per = "; ".join(f"L={int(L)}: e1 at {int((p['simulated'] == 'e1').sum())} of {len(p)} inits"
                    for L, p in gd.groupby("L"))
    decided = int((~tie).sum())
    return Result(SUPPORTED if decided and bool(agree.sum() == decided) else CONTRADICTED,
                  f"GD's limit = argmax μ_j α_j^(L−2) at {int(agree.sum())}/{decided} grid points "
                  f"({per})", estimate=float(agree.sum()) / max(decided, 1),
                  note=f"{int(tie.sum())} ties (μ1α1^(L−2) = μ2α2^(L−2)) not read"
                  if tie.any() else "")


def linf_blowup_order(d: D, params: Params) -> Result:
    df = rows(d["minorfirst/deep_l"], panel="blowup")
    ok, n, worst = 0, 0, 0.0
    for (_, _), part in df.groupby(["L", "alpha"]):
        n += 1
        flow = part["s_flow"].to_numpy(float)
        closed = part["s_closed"].to_numpy(float)
        if np.isfinite(flow).any():
            first = int(part["coord"].to_numpy()[int(np.nanargmin(np.where(
                np.isfinite(flow), flow, np.inf)))])
            ok += first == int(part["jstar"].iloc[0])
        fin = np.isfinite(flow) & np.isfinite(closed) & (closed > 0)
        if fin.any():
            worst = max(worst, float(np.max(np.abs(flow[fin] / closed[fin] - 1))))
    verdict = SUPPORTED if ok == n and n and worst < params["tol"] else CONTRADICTED
    return Result(verdict, f"first blow-up = j* in {ok}/{n} cases; largest relative gap flow "
                  f"vs closed-form s*_j = {fmt(worst)}", estimate=ok / max(n, 1))


# --- l2-SAM at L = 2 ----------------------------------------------------------------------
def _sequences(df: pd.DataFrame, method: str) -> dict[int, list[int]]:
    out = {}
    for case, part in df[df["method"] == method].groupby("case"):
        t, sh = share_matrix(part)
        out[int(case)] = dominant_coords(sh, t)
    return out


def l2_sequential_check(d: D, params: Params) -> Result:
    df = d["minorfirst/l2_sequential"].rows
    l2, gd = _sequences(df, "l2"), _sequences(df, "gd")
    dims = {int(c): int(p["coord"].max()) for c, p in df.groupby("case")}
    ok_l2 = all(never_moves_down(s) for s in l2.values())
    five = [c for c, dd in dims.items() if dd >= params["visits_from_d"]]
    ok_visit = all(len(l2[c]) >= params["min_visits"] for c in five)
    ok_gd = all(s == [dims[c]] for c, s in gd.items())
    verdict = SUPPORTED if ok_l2 and ok_visit and ok_gd else CONTRADICTED
    return Result(verdict, "l2-SAM dominant sequences " + "; ".join(
        f"d={dims[c]}: {'→'.join(map(str, s))}" for c, s in l2.items()) + "; GD " + "; ".join(
        f"d={dims[c]}: {'→'.join(map(str, s))}" for c, s in gd.items()))


def l2_minor_first(d: D) -> Result:
    df = d["minorfirst/l2_sequential"].rows
    l2, gd = _sequences(df, "l2"), _sequences(df, "gd")
    dims = {int(c): int(p["coord"].max()) for c, p in df.groupby("case")}
    minor_first = all(s and s[0] < dims[c] and s[-1] == dims[c] for c, s in l2.items())
    gd_major = all(s and s[0] == dims[c] for c, s in gd.items())
    verdict = SUPPORTED if minor_first and gd_major else CONTRADICTED
    return Result(verdict, "first → last dominant coordinate, l2-SAM: " + "; ".join(
        f"d={dims[c]}: {s[0] if s else '-'}→{s[-1] if s else '-'}" for c, s in l2.items())
        + "; GD: " + "; ".join(f"d={dims[c]}: {s[0] if s else '-'}" for c, s in gd.items()))


def normalisation_causes(d: D) -> Result:
    """The isolating run: with the same init and ρ, the unnormalised perturbation ε = ρ∇L
    (method ``unnormalised`` in l2_sequential) picks the major coordinate first, as GD does,
    while l2-SAM (ε = ρ∇L/‖∇L‖) picks a minor one: the normalisation is what makes minor-first."""
    df = d["minorfirst/l2_sequential"].rows
    un, l2 = _sequences(df, "unnormalised"), _sequences(df, "l2")
    if not un:
        return Result(INCONCLUSIVE, "l2_sequential has no unnormalised-perturbation run",
                      note="rebuild minorfirst/l2_sequential (its compute adds the run)")
    dims = {int(c): int(p["coord"].max()) for c, p in df.groupby("case")}
    ok_un = all(s and s[0] == dims[c] for c, s in un.items())
    ok_l2 = all(s and s[0] < dims[c] for c, s in l2.items() if c in un)
    verdict = SUPPORTED if ok_un and ok_l2 else CONTRADICTED
    return Result(verdict, "first dominant coordinate, unnormalised ε = ρ∇L: " + "; ".join(
        f"d={dims[c]}: {s[0] if s else '-'}" for c, s in un.items()) + "; l2-SAM: " + "; ".join(
        f"d={dims[c]}: {s[0] if s else '-'}" for c, s in l2.items() if c in un))


REGIME_ORDER = ["collapse", "sequential", "major-first"]


def _regimes(d: D) -> pd.DataFrame:
    return rows(d["minorfirst/l2_regimes"], panel="regime") if "panel" in \
        d["minorfirst/l2_regimes"].rows.columns else d["minorfirst/l2_regimes"].rows


def l2_three_regimes(d: D) -> Result:
    df = _regimes(d)
    found = {float(r): sorted(set(p["regime"]), key=REGIME_ORDER.index)
             for r, p in df.groupby("rho")}
    ok = all(len(v) == 3 for v in found.values())
    return Result(SUPPORTED if ok else CONTRADICTED, "; ".join(
        f"ρ={r:g}: {', '.join(v)}" for r, v in found.items()))


def l2_regime_order(d: D) -> Result:
    df = _regimes(d)
    bad = []
    for r, p in df.groupby("rho"):
        idx = [REGIME_ORDER.index(x) for x in p.sort_values("alpha_over_rho")["regime"]]
        if any(b < a for a, b in zip(idx, idx[1:], strict=False)):
            bad.append(float(r))
    seqs = {float(r): "→".join(dict.fromkeys(p.sort_values("alpha_over_rho")["regime"]))
            for r, p in df.groupby("rho")}
    return Result(CONTRADICTED if bad else SUPPORTED, "regimes along growing α/ρ: " + "; ".join(
        f"ρ={r:g}: {s}" for r, s in seqs.items()) + (f"; out of order at ρ={bad}" if bad
                                                     else ""))


def l2_scale_symmetry(d: D) -> Result:
    df = _regimes(d)
    labels = {float(r): tuple(p.sort_values("alpha_over_rho")["regime"])
              for r, p in df.groupby("rho")}
    if len(labels) < 2:
        return Result(NOT_RUN, f"the regime grid has {len(labels)} ρ: nothing compared",
                      note="the symmetry needs a grid with at least two ρ")
    ref = next(iter(labels.values()))
    diff = {r: sum(a != b for a, b in zip(v, ref, strict=False)) for r, v in labels.items()}
    ok = all(v == 0 for v in diff.values())
    return Result(SUPPORTED if ok else CONTRADICTED, f"regime labels on the α/ρ grid differ "
                  f"from the first ρ at {sum(diff.values())} of "
                  f"{len(ref) * (len(labels) - 1)} points")


def _heat(d: D) -> pd.DataFrame:
    return rows(d["minorfirst/l2_regimes"], panel="heatmap")


def l2_monotone_all(d: D) -> Result:
    heat, reg = _heat(d), _regimes(d)
    if heat.empty:
        raise ValueError("l2_regimes.csv has no panel=heatmap rows")
    seq_ratios = reg[reg["regime"] == "sequential"]
    bad, n = [], 0
    for (rho, ratio), part in heat.groupby(["rho", "alpha_over_rho"]):
        if not ((seq_ratios["rho"] == rho) & np.isclose(seq_ratios["alpha_over_rho"],
                                                         ratio)).any():
            continue
        n += 1
        dom = part.sort_values("s")["dominant"].to_numpy(int)
        seq = [j for j in dominant_seq_from_labels(dom)]
        if not never_moves_down(seq):
            bad.append((float(rho), float(ratio), seq))
    text = f"{n - len(bad)}/{n} sequential-regime trajectories never move down"
    if bad:
        rho, ratio, seq = bad[0]
        text += (f"; e.g. ρ={rho:g}, α/ρ={ratio:.3f}: " + "→".join(map(str, seq)))
    return Result(SUPPORTED if not bad and n else CONTRADICTED, text,
                  estimate=(n - len(bad)) / max(n, 1))


def dominant_seq_from_labels(dom: np.ndarray) -> list[int]:
    """Distinct dominant coordinates (1-based) of a heat-map row (0 = none/tie, dropped)."""
    out: list[int] = []
    for j in dom.tolist():
        if j > 0 and (not out or out[-1] != j):
            out.append(int(j))
    return out


def l2_smaller_alpha_longer(d: D) -> Result:
    heat, reg = _heat(d), _regimes(d)
    if heat.empty:
        raise ValueError("l2_regimes.csv has no panel=heatmap rows")
    d_major = int(heat["dominant"].max())
    viol, pairs, found = 0, 0, {}
    for rho, part in heat.groupby("rho"):
        seq = reg[(reg["rho"] == rho) & (reg["regime"] == "sequential")]["alpha_over_rho"]
        times = []
        for ratio in sorted(seq):
            tr = part[np.isclose(part["alpha_over_rho"], ratio)].sort_values("s")
            hit = tr[tr["dominant"] == d_major]["s"]
            times.append((ratio, float(hit.iloc[0]) if len(hit) else float("inf")))
        found[float(rho)] = times
        for (_, a), (_, b) in zip(times, times[1:], strict=False):
            pairs += 1
            viol += b > a
    ex = next(iter(found.values()))
    verdict = INCONCLUSIVE if pairs == 0 else SUPPORTED if viol == 0 else CONTRADICTED
    return Result(verdict,
                  f"time until the major coordinate dominates falls with α in "
                  f"{pairs - viol}/{pairs} neighbouring pairs (ρ={next(iter(found)):g}: "
                  + ", ".join(f"α/ρ={r:.2f}: s={fmt(t)}" for r, t in ex[:: max(1, len(ex) // 4)])
                  + ")")


def l2_limit(d: D, params: Params) -> Result:
    df = d["minorfirst/l2_limit"].rows
    last = last_per_curve(df, ["data", "method", "alpha"], "s")
    worst = float(last["one_minus_cos"].max())
    return Result(threshold(worst, params["tol"]), f"smallest final cos to the ℓ1 max margin = "
                  f"{1 - worst:.5f} over {len(last)} curves (GD and l2-SAM)",
                  estimate=1 - worst)


def deep_minor_first(d: D) -> Result:
    df = d["minorfirst/deep_l"].rows
    df = df[df["panel"].astype(str).str.startswith("L")]
    out, ok = [], True
    for panel, part in df.groupby("panel"):
        t, sh = share_matrix(part)
        seq = dominant_coords(sh, t)
        dd = sh.shape[1]
        out.append(f"{panel}: {'→'.join(map(str, seq))}")
        ok &= bool(seq) and seq[0] < dd and never_moves_down(seq)
    return Result(SUPPORTED if ok else CONTRADICTED, "; ".join(out),
                  note="l2-SAM flows stop at blow-up; minor first = first dominant < d, and "
                       "the dominant coordinate never moves down (minor → major order)")


def multi_minor_first(d: D) -> Result:
    df = d["minorfirst/multi_example"].rows
    alphas = sorted(set(df["alpha"]))
    mid = alphas[(len(alphas) - 1) // 2]
    seqs = {}
    for m in ("l2", "gd"):
        part = df[(df["method"] == m) & (df["alpha"] == mid)]
        t, sh = share_matrix(part)
        seqs[m] = (dominant_coords(sh, t), sh.shape[1])
    seq, dd = seqs["l2"]
    ok = bool(seq) and seq[0] < dd and never_moves_down(seq)
    return Result(SUPPORTED if ok else CONTRADICTED, f"middle α={mid:g}: l2-SAM dominant "
                  + "→".join(map(str, seq[:8])) + ("…" if len(seq) > 8 else "")
                  + "; GD " + "→".join(map(str, seqs["gd"][0][:8])))


def flow_slope(d: D, params: Params) -> Result:
    df = d["minorfirst/flow_vs_discrete"].rows
    slopes = {f"L={int(L)} {m}": loglog_slope(p["eta"], p["error"])
              for (L, m), p in df.groupby(["L", "method"])}
    worst = max(abs(s - 1) for s in slopes.values())
    return Result(threshold(worst, params["tol"]), "fitted slopes " + ", ".join(
        f"{k}: {v:.3f}" for k, v in slopes.items()), estimate=worst)


# The predicates the ledger's rows (claims.yaml) name in their `test` field.
PREDICATES: dict[str, Predicate] = {
    "l1_converges": l1_converges,
    "linf_closed_form": linf_closed_form,
    "linf_jstar": linf_jstar,
    "linf_init_sensitive": linf_init_sensitive,
    "linf_gd_limit": linf_gd_limit,
    "linf_blowup_order": linf_blowup_order,
    "l2_sequential_check": l2_sequential_check,
    "l2_minor_first": l2_minor_first,
    "normalisation_causes": normalisation_causes,
    "l2_three_regimes": l2_three_regimes,
    "l2_regime_order": l2_regime_order,
    "l2_scale_symmetry": l2_scale_symmetry,
    "l2_monotone_all": l2_monotone_all,
    "l2_smaller_alpha_longer": l2_smaller_alpha_longer,
    "l2_limit": l2_limit,
    "deep_minor_first": deep_minor_first,
    "multi_minor_first": multi_minor_first,
    "flow_slope": flow_slope,
}
