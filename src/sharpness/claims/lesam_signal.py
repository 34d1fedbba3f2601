"""Claims of paper `lesam` on its mechanism (``fig_signal``): the first-order term dominates
SAM's rise early, LE-SAM fixes it at σ_t, and the curvature term is what is left.

Split from :mod:`sharpness.claims.lesam` (which lists these in its ``PREDICATES``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from sharpness.claims.common import fmt
from sharpness.claims.independence import distinct_frames
from sharpness.claims.model import ItemData, Result
from sharpness.claims.rules import OverRunsEffect, SeedRules, over_runs_effect, row_pvalue
from sharpness.evidence.records import record_of_row
from sharpness.evidence.stats import (
    CONTRADICTED,
    INCONCLUSIVE,
    SUPPORTED,
    ThresholdTest,
    combine,
    threshold,
    threshold_test,
)

D = Mapping[str, ItemData]
Params = Mapping[str, Any]  # a claim's registered parameters (claims.yaml)


def runs_of(df: pd.DataFrame) -> list[tuple[object, pd.DataFrame]]:
    """The probe series of each independent training run (``seed`` column; one run when the
    CSV has none)."""
    return list(df.groupby("seed")) if "seed" in df.columns else [(0, df)]


def trained_runs(df: pd.DataFrame, optimizers: tuple[str, ...], rules: SeedRules
                 ) -> tuple[list[tuple[object, pd.DataFrame]], list[str], bool]:
    """The seeds whose probe runs of every one of ``optimizers`` trained (the rules' sanity
    check on the run's training record, the ``final_train_*`` columns), why each other seed
    was left out, and whether the row may decide. A probe run that did not train cannot bear
    on the claim; a seed counts only when its runs' recorded fingerprints (the
    ``init_sha256`` / ``order_sha256`` columns, per optimizer) prove it distinct from every
    other (:func:`~sharpness.claims.independence.distinct_frames`), and a seed whose rows
    carry none is unproven: the row does not decide (nothing is read from the numbers)."""
    kept, excluded = [], []
    runs, found = distinct_frames(runs_of(df), arms=("optimizer",))
    if found.note():
        excluded.append(found.note())
    for seed, part in runs:
        why = []
        for opt in optimizers:
            rows = part[part["optimizer"] == opt]
            if rows.empty:
                why.append(f"{opt} not probed")
                continue
            fail = record_of_row(rows.iloc[0]).failure(rules.loss_margin, rules.acc_margin)
            if fail is not None:
                why.append(f"{opt} {fail}")
        if why:
            excluded.append(f"seed {seed} ({', '.join(why)})")
        else:
            kept.append((seed, part))
    return kept, excluded, found.decides


def _excluded_note(excluded: list[str]) -> str:
    return ("runs left out (not trained, not distinct, or not proven): "
            + "; ".join(excluded)) if excluded else ""


def _undecided(out: Result, decides: bool) -> Result:
    """``out``, inconclusive when a run it read is not proven independent by its record."""
    if not decides:
        out.verdict = INCONCLUSIVE
    return out


def _runs_text(test: ThresholdTest, bound: float, side: str) -> str:
    """The t test's words: the geometric mean over runs against the bound, with its interval."""
    iv = test.interval
    if not iv.has_interval:
        return f"n = {iv.n} run(s), no interval"

    def back(x: float) -> str:  # from the log scale of the test to the ratio's own
        return fmt(bound * float(np.exp(x)))

    p = f", p = {test.p_value:.2g}" if test.p_value is not None else ""
    return (f"geometric mean over {iv.n} runs {back(iv.estimate)} [{back(iv.low)}, "
            f"{back(iv.high)}] "
            f"({iv.level:.0%} t interval) {side} {bound:g}{p}")


def _over_runs(what: str, values: list[float], parts: list[str], bound: float, *,
               below: bool, rules: SeedRules, notes: list[str], effect: OverRunsEffect,
               estimate: float | None = None) -> Result:
    """A row decided by :func:`threshold_test` over one value per run, against its registered
    smallest effect of interest (``effect``): ``what``, then each run's words (``parts``),
    then the test's; ``notes`` that are not empty become its note."""
    test = threshold_test(values, bound, below=below, margin=effect.margin, level=rules.level,
                          min_runs=rules.min_runs)
    return effect.apply(Result(test.verdict,
                               what + ("; ".join(parts) or "no run that trained")
                               + (f"; {_runs_text(test, bound, 'against')}" if values else ""),
                               estimate=estimate, n=len(values), p_value=test.p_value,
                               note="; ".join(x for x in notes if x)))


def signal_sam(d: D, params: Params, rules: SeedRules) -> Result:
    """Per run (seed) that trained: the median ⟨g,ε⟩ / |½εᵀHε| over the first
    ``early_fraction`` of SAM's probes; the row holds when the t interval over the runs (of the
    log median) lies above the registered ``ratio`` (``n``: the runs that trained)."""
    df = d["lesam/fig_signal"].rows
    parts, meds = [], []
    kept, excluded, decides = trained_runs(df, ("sam",), rules)
    for seed, part in ((s, p[p["optimizer"] == "sam"]) for s, p in kept):
        sam = part.sort_values("step")
        early = sam.iloc[: max(1, int(len(sam) * float(params["early_fraction"])))]
        ratio = early["g_dot_eps"].astype(float).abs() / early["curvature"].astype(float).abs()
        med = float(np.median(ratio))
        meds.append(med)
        parts.append(f"seed {seed}: {fmt(med)} (range {fmt(float(ratio.min()))}–"
                     f"{fmt(float(ratio.max()))}, {len(early)} probes)")
    bound = float(params["ratio"])
    return _undecided(_over_runs(
        f"median ⟨g,ε⟩ / |½εᵀHε| over the early SAM probes (> {bound:g}): ", meds, parts,
        bound, below=False, rules=rules, effect=over_runs_effect(params),
        notes=[_excluded_note(excluded)], estimate=min(meds) if meds else None), decides)


def signal_lesam(d: D, params: Params) -> Result:
    df = d["lesam/fig_signal"].rows
    le = df[(df["optimizer"] == "lesam")]
    if "clipped" in le.columns:
        le = le[~le["clipped"].astype(str).str.lower().isin(["true", "1", "1.0"])]
    le = le[le["sigma"].astype(float) > 0]
    rel = (le["g_dot_eps"].astype(float) / le["sigma"].astype(float) - 1).abs()
    worst = float(rel.max()) if len(rel) else float("nan")
    return Result(threshold(worst, params["tol"]), f"largest |⟨g,ε⟩/σ_t − 1| over {len(le)} unclipped "
                  f"probes = {fmt(worst)}", estimate=worst)


def _residual_ratio(df: pd.DataFrame, optimizer: str, suffix: str
                    ) -> tuple[float, int, int, float, float]:
    """Median |rise − ⟨g,ε⟩ − ½εᵀHε| / |½εᵀHε| over the optimizer's probes that perturbed
    (σ > 0 for LE-SAM, a non-zero curvature term for any): a probe with ε = 0 has every term 0
    and would count as a perfect fit. Returns (ratio, probes used, probes dropped, median
    residual, median curvature)."""
    col = f"rise{suffix}"
    if col not in df.columns:
        raise ValueError(f"fig_signal.csv has no column {col!r}")
    part = df[df["optimizer"] == optimizer].dropna(subset=[col])
    first_col = f"g_dot_eps{suffix}" if f"g_dot_eps{suffix}" in part.columns else "g_dot_eps"
    curv = part[f"curvature{suffix}"].astype(float)
    keep = curv.abs() > 0
    if "sigma" in part.columns:
        sigma = pd.to_numeric(part["sigma"], errors="coerce")
        keep &= ~(sigma.notna() & (sigma <= 0))
    used = part[keep]
    resid = used[col].astype(float) - used[first_col].astype(float) - \
        used[f"curvature{suffix}"].astype(float)
    c = used[f"curvature{suffix}"].astype(float)
    ratio = float(np.median(resid.abs() / c.abs())) if len(used) else float("nan")
    return (ratio, len(used), int((~keep).sum()),
            float(resid.median()) if len(used) else float("nan"),
            float(c.median()) if len(used) else float("nan"))


def signal_curvature(d: D, params: Params, rules: SeedRules) -> Result:
    """Per run (seed) that trained: LE-SAM's median |residual| / |curvature| (train mode); the
    row holds when the t interval over the runs (of the log ratio) lies below the registered
    ``ratio`` (``n``: runs)."""
    ratios, parts, dropped_all = [], [], 0
    kept, excluded, decides = trained_runs(d["lesam/fig_signal"].rows, ("lesam",), rules)
    for seed, df in kept:
        ratio, n, dropped, resid, curv = _residual_ratio(df, "lesam", "")
        dropped_all += dropped
        ratios.append(ratio)
        parts.append(f"seed {seed}, {n} probes with ε ≠ 0: {fmt(ratio)} (median residual "
                     f"{fmt(resid)}, curvature {fmt(curv)})")
    return _undecided(_over_runs(
        "LE-SAM (train mode): median |rise − ⟨g,ε⟩ − ½εᵀHε| / |½εᵀHε| per run: ", ratios,
        parts, float(params["ratio"]), below=True, rules=rules, effect=over_runs_effect(params),
        notes=[f"{dropped_all} probe(s) with σ = 0 or no curvature term left out"
               if dropped_all else "", _excluded_note(excluded)]), decides)


def signal_curvature_eval(d: D, params: Params, rules: SeedRules) -> Result:
    """The residual is train-mode BatchNorm's: for every optimizer probed (LE-SAM and SAM),
    the t interval over the runs whose two probe runs trained puts the eval-mode ratio
    |residual| / |curvature| below the registered ``ratio`` and the train-mode one above it
    (the contrast). Supported when all four tests are; contradicted when an eval-mode
    interval lies above the ratio (eval mode does not remove it); otherwise, or with no
    train-mode residual to explain, inconclusive. Its p-value: :func:`row_pvalue` over the
    four tests (supported) or the eval-mode ones (contradicted)."""
    bound = float(params["ratio"])
    effect = over_runs_effect(params)  # registered, or the row decides nothing
    parts, tests, evals_tests, decided = [], [], [], []
    runs, excluded, decides = trained_runs(d["lesam/fig_signal"].rows, ("lesam", "sam"),
                                           rules)
    dropped_all = 0
    for opt in ("lesam", "sam"):
        probed = [df for _, df in runs if (df["optimizer"] == opt).any()]
        if len(probed) < len(runs) or not runs:
            parts.append(f"{opt}: not probed in every run")
            decided.append(INCONCLUSIVE)
            continue
        evals = [_residual_ratio(df, opt, "_eval") for df in probed]
        dropped_all += sum(e[2] for e in evals)
        trains = [_residual_ratio(df, opt, "")[0] for df in probed]
        ev = threshold_test([e[0] for e in evals], bound, below=True, level=rules.level,
                            margin=effect.margin, min_runs=rules.min_runs)
        tr = threshold_test(trains, bound, below=False, level=rules.level,
                            margin=effect.margin, min_runs=rules.min_runs)
        tests += [ev, tr]
        evals_tests.append(ev)
        # the contrast the row names: no residual in eval mode, and one in train mode for
        # BatchNorm to explain (without it the eval-mode fit says nothing about the cause)
        decided.append(ev.verdict if ev.verdict != SUPPORTED else
                       SUPPORTED if tr.verdict == SUPPORTED else INCONCLUSIVE)
        parts.append(f"{opt}: eval mode per run " + ", ".join(fmt(e[0]) for e in evals)
                     + f" ({_runs_text(ev, bound, 'below')}); train mode per run "
                     + ", ".join(fmt(t) for t in trains)
                     + f" ({_runs_text(tr, bound, 'above')})")
    verdict = combine(decided) if decides else INCONCLUSIVE
    deciding = evals_tests if verdict == CONTRADICTED else tests
    return effect.apply(Result(
        verdict, "; ".join(parts) or "no run that trained", n=len(runs),
        p_value=row_pvalue(deciding) if verdict != INCONCLUSIVE else None,
        note="; ".join(x for x in (
            f"{dropped_all} probe(s) with σ = 0 or no curvature term left out"
            if dropped_all else "", _excluded_note(excluded)) if x)))
