"""Claims of paper `lesam` (summary 002) and the catalog's checks on its items.

Accuracy comparisons are paired over seeds (the same seed gives the same init and data
order to both optimizers) with a Student-t interval; ``supported`` needs the interval to
exclude zero in the claimed direction. A comparison between models near chance (mean test
accuracy below twice chance) is marked ``smoke``: its numbers cannot bear on the claim.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd

from sharpness.claims.common import fmt
from sharpness.claims.model import SMOKE, WEAK, ItemData, Predicate, Result
from sharpness.claims.stats import (
    CONTRADICTED,
    INCONCLUSIVE,
    SUPPORTED,
    combine,
    decide,
    paired_differences,
    seeds_needed,
    t_interval,
    threshold,
)

P = "lesam"
D = Mapping[str, ItemData]

# Estimated cost of the paper profile (one A100-class GPU; estimates from the catalog's CPU
# timing and common GPU throughput, not measured here): ResNet-18 on CIFAR, 200 epochs, about
# 1 GPU-hour with SGD and 2 with SAM-type methods; WRN-28-10 and PyramidNet-110 about 5x that;
# ImageNet ResNet-50, 90 epochs, about 200 GPU-hours with SAM.
COST_IMAGENET = ("paper profile with data.imagenet set: ResNet-50 and ResNet-101, SGD/SAM/"
                 "LE-SAM, 90 epochs; estimated ≈ 200 GPU-h per SAM run on one A100, ≈ 1,500 "
                 "GPU-h for the table with 1 seed")
COST_SOTA = ("paper profile: full CIFAR-10/100 and CIFAR-100-LT at full width, 200 epochs "
             "(≈ 2 GPU-h per ResNet-18 LE-SAM run); the quick profile's embedded subsets and "
             "1/16-width nets are not comparable to these absolute numbers")


def _seed_map(text: object) -> dict[int, float]:
    """``"0:45.2 1:46.1"`` -> {0: 45.2, 1: 46.1} (the tables' ``per_seed`` column)."""
    out: dict[int, float] = {}
    if not isinstance(text, str):
        return out
    for part in text.split():
        seed, _, value = part.partition(":")
        out[int(seed)] = float(value)
    return out


def _pick(df: pd.DataFrame, **where: object) -> pd.Series:
    sel = df
    for key, value in where.items():
        sel = sel[sel[key].astype(str) == str(value)]
    if sel.empty:
        raise ValueError(f"no row with {where}")
    return sel.iloc[0]


def compare(a: pd.Series, b: pd.Series, chance: float, what: str, direction: int = 1
            ) -> Result:
    """Paired-over-seeds comparison of two table rows' ``per_seed`` accuracies (a − b)."""
    sa, sb = _seed_map(a["per_seed"]), _seed_map(b["per_seed"])
    diffs = paired_differences(sa, sb)
    iv = t_interval(diffs)
    verdict = decide(iv, direction)
    shared = set(sa) & set(sb)  # the means quoted are over the seeds the difference pairs
    sa_p, sb_p = ({k: v for k, v in s.items() if k in shared} or s for s in (sa, sb))
    means = (np.mean(list(sa_p.values())) if sa_p else float("nan"),
             np.mean(list(sb_p.values())) if sb_p else float("nan"))
    smoke = min(means) < 200 * chance  # accuracies in %, chance as a fraction
    level = SMOKE if smoke else (WEAK if verdict == INCONCLUSIVE else None)
    note = (f"smoke: accuracies {means[0]:.1f} / {means[1]:.1f} % are below twice chance "
            f"({200 * chance:.0f} %)" if smoke else "")
    if set(sa) != set(sb):
        note = (note + "; " if note else "") + (
            f"paired on the {len(shared)} seed(s) both rows have ({len(sa)} vs {len(sb)} run)")
    if iv.n < 2:
        note = (note + "; " if note else "") + "one seed: no interval (needs ≥ 2, better ≥ 3)"
    elif verdict == INCONCLUSIVE:
        need = seeds_needed(diffs)
        if need is not None:
            note = (note + "; " if note else "") + (
                f"about {need} seeds would resolve a paired difference of this size and "
                f"spread (80 % power, 5 % two-sided)")
    return Result(verdict, f"{what}: {means[0]:.2f} vs {means[1]:.2f} %; paired difference "
                  f"{iv.text(2)} points", level=level, estimate=iv.estimate,
                  low=iv.low if iv.has_interval else None,
                  high=iv.high if iv.has_interval else None, note=note)


def accuracy_claim(item: str, chance: float, group: str | None = None, a: str = "lesam",
                   b: str = "sam", where: Mapping[str, object] | None = None) -> Predicate:
    def test(d: D) -> Result:
        df = d[f"lesam/{item}"].rows
        extra = dict(where or {})
        if group is not None:
            extra["group"] = group
        return compare(_pick(df, label=a, **extra), _pick(df, label=b, **extra), chance,
                       f"{a} vs {b}")
    return test


def best_variant(d: D) -> Result:
    df = d["lesam/table_cifar"].rows
    df = df[df["group"] == "cifar10_resnet18"]
    others = [lab for lab in df["label"] if lab not in ("lesam", "sgd")]
    ref = _pick(df, label="lesam")
    res = {o: compare(ref, _pick(df, label=o), 0.10, f"lesam vs {o}") for o in others}
    verdict = combine([r.verdict for r in res.values()])
    smoke = any(r.level == SMOKE for r in res.values())
    return Result(verdict, "; ".join(f"−{o}: {fmt(r.estimate, 2)} ({r.verdict})"
                                     for o, r in res.items()),
                  level=SMOKE if smoke else None,
                  note="smoke: a model below twice chance" if smoke else "")


def above_chance(d: D) -> Result:
    df = d["lesam/table_cifar"].rows
    df = df[df["mean"].notna()]
    worst = df.loc[df["mean"].idxmin()]
    verdict = threshold(float(worst["mean"]), 10.0, below=False)
    weak = df[df["mean"] < 20.0]
    return Result(verdict, f"lowest mean accuracy {worst['mean']:.1f} % ({worst['optimizer']}, "
                  f"{worst['model']}); {len(weak)}/{len(df)} rows below twice chance (20 %)",
                  estimate=float(worst["mean"]))


def robustness(d: D) -> Result:
    df = d["lesam/table_robustness"].rows
    parts, results = [], []
    for attack, part in df.groupby("attack"):
        radius = part[part["label"] == "lesam"]["radius"].max()
        at = part[part["radius"] == radius]
        r = compare(_pick(at, label="lesam"), _pick(at, label="sam"), 0.10,
                    f"{attack} r={radius:g}")
        results.append(r)
        parts.append(r.value)
    verdict = combine([r.verdict for r in results])
    smoke = any(r.level == SMOKE for r in results)
    return Result(verdict, "; ".join(parts), level=SMOKE if smoke else None,
                  note="; ".join(r.note for r in results if r.note))


def pgd_monotone(d: D) -> Result:
    df = d["lesam/table_robustness"].rows
    bad, n = [], 0
    for (opt, attack), part in df.groupby(["label", "attack"]):
        part = part.sort_values("radius")
        clean = df[(df["label"] == opt) & (df["radius"] == 0)]["mean"]
        acc = ([float(clean.iloc[0])] if len(clean) and part["radius"].min() > 0 else []) \
            + list(part["mean"].astype(float))
        n += 1
        if any(b > a + 1e-9 for a, b in zip(acc, acc[1:], strict=False)):
            bad.append(f"{opt} {attack}")
    return Result(SUPPORTED if not bad else CONTRADICTED,
                  f"accuracy falls with the radius in {n - len(bad)}/{n} (optimizer, attack) "
                  "series" + (f"; rises in {', '.join(bad)}" if bad else ""))


def long_tail(d: D) -> Result:
    df = d["lesam/table_long_tail"].rows
    results = []
    for factor, part in df.groupby("imbalance factor"):
        results.append(compare(_pick(part, label="lesam"), _pick(part, label="sam"), 0.10,
                               f"IF {factor:g}"))
    verdict = combine([r.verdict for r in results])
    smoke = any(r.level == SMOKE for r in results)
    return Result(verdict, "; ".join(r.value for r in results), level=SMOKE if smoke else None,
                  note="; ".join(dict.fromkeys(r.note for r in results if r.note)))


def lt_profile(d: D) -> Result:
    df = d["lesam/table_long_tail"].rows
    worst = 0.0
    for _, row in df.drop_duplicates("imbalance factor").iterrows():
        counts = np.array([int(c) for c in str(row["train counts (head→tail)"]).split("/")])
        factor = float(row["imbalance factor"])
        k = np.arange(len(counts))
        expected = counts[0] * factor ** (-k / (len(counts) - 1))
        worst = max(worst, float(np.max(np.abs(counts - expected) / expected)))
    # counts are integers: allow the rounding of the smallest class (1 / its size) plus 1 %
    tol = 1.0 / max(1, int(min(int(c) for c in str(df["train counts (head→tail)"].iloc[0])
                               .split("/")))) + 0.01
    return Result(threshold(worst, tol), f"largest relative deviation of the class counts from "
                  f"n_max·IF^(−i/(C−1)): {fmt(worst)} (tolerance {fmt(tol)}: integer "
                  "rounding)", estimate=worst)


def flatness(d: D) -> Result:
    df = d["lesam/fig_flatness"].rows
    out, results = [], []
    for q in ("trace", "lambda_1"):
        by = {o: dict(zip(p["seed"].astype(int), p[q].astype(float), strict=True))
              for o, p in df.groupby("optimizer")}
        for other in ("sam", "sgd"):
            if "lesam" in by and other in by:
                iv = t_interval(paired_differences(by["lesam"], by[other]))
                results.append(decide(iv, -1))
                out.append(f"{q} lesam − {other}: {iv.text(3)}")
    verdict = combine(results)
    return Result(verdict, "; ".join(out), note="lower is flatter; paired over seeds")


def dynamics_early(d: D) -> Result:
    df = d["lesam/fig_dynamics"].rows
    runs = df[df["run"].notna()] if "run" in df.columns else df
    first = runs["epoch"].min()
    at = runs[runs["epoch"] == first]
    acc = {o: {int(str(r).rsplit("-s", 1)[1]): 100 * float(v) for r, v in
               zip(p["run"], p["test_acc"], strict=True)} for o, p in at.groupby("optimizer")}
    iv = t_interval(paired_differences(acc.get("lesam", {}), acc.get("sam", {})))
    verdict = decide(iv)
    means = [np.mean(list(acc.get(o, {}).values()) or [np.nan]) for o in ("lesam", "sam")]
    smoke = min(means) < 20.0
    return Result(verdict, f"epoch {int(first)}: LE-SAM {means[0]:.2f} vs SAM {means[1]:.2f} %, "
                  f"paired {iv.text(2)} points", level=SMOKE if smoke else None,
                  estimate=iv.estimate,
                  note="smoke: accuracies below twice chance" if smoke else "")


def signal_sam(d: D) -> Result:
    df = d["lesam/fig_signal"].rows
    sam = df[df["optimizer"] == "sam"].sort_values("step")
    early = sam.iloc[: max(1, len(sam) // 3)]
    ratio = early["g_dot_eps"].astype(float).abs() / early["curvature"].astype(float).abs()
    med = float(np.median(ratio))
    return Result(threshold(med, 10.0, below=False), f"median ⟨g,ε⟩ / |½εᵀHε| over the first "
                  f"third of SAM's probes = {fmt(med)} (range {fmt(float(ratio.min()))}–"
                  f"{fmt(float(ratio.max()))}, {len(early)} probes)", estimate=med)


def signal_lesam(d: D) -> Result:
    df = d["lesam/fig_signal"].rows
    le = df[(df["optimizer"] == "lesam")]
    if "clipped" in le.columns:
        le = le[~le["clipped"].astype(str).str.lower().isin(["true", "1", "1.0"])]
    le = le[le["sigma"].astype(float) > 0]
    rel = (le["g_dot_eps"].astype(float) / le["sigma"].astype(float) - 1).abs()
    worst = float(rel.max()) if len(rel) else float("nan")
    return Result(threshold(worst, 1e-3), f"largest |⟨g,ε⟩/σ_t − 1| over {len(le)} unclipped "
                  f"probes = {fmt(worst)}", estimate=worst)


def signal_residual(mode: str) -> Predicate:
    suffix = "" if mode == "train" else "_eval"

    def test(d: D) -> Result:
        df = d["lesam/fig_signal"].rows
        col = f"rise{suffix}"
        if col not in df.columns:
            raise ValueError(f"fig_signal.csv has no column {col!r}")
        le = df[df["optimizer"] == "lesam"].dropna(subset=[col])
        rise = le[col].astype(float)
        first = le[f"g_dot_eps{suffix}"].astype(float) if f"g_dot_eps{suffix}" in le.columns \
            else le["g_dot_eps"].astype(float)
        curv = le[f"curvature{suffix}"].astype(float)
        resid = rise - first - curv
        ratio = float(np.median(resid.abs() / curv.abs().clip(lower=1e-12)))
        return Result(threshold(ratio, 1.0), f"LE-SAM ({mode} mode, {len(le)} probes): median "
                      f"|rise − ⟨g,ε⟩ − ½εᵀHε| / |½εᵀHε| = {fmt(ratio)}; median residual "
                      f"{fmt(float(resid.median()))}, curvature {fmt(float(curv.median()))}",
                      estimate=ratio)
    return test


def cost(d: D) -> Result:
    df = d["lesam/table_cost"].rows
    by = {str(r["raw_optimizer"]): r for _, r in df.iterrows()}
    sam_sgd = float(by["sam"]["raw_ratio_vs_sgd"])
    le_sam = float(by["lesam"]["raw_ratio_vs_sam"])
    ok = 1.5 <= sam_sgd <= 2.5 and 0.8 <= le_sam <= 1.25
    return Result(SUPPORTED if ok else CONTRADICTED, f"SAM ÷ SGD = {sam_sgd:.2f} (expected "
                  f"1.5–2.5), LE-SAM ÷ SAM = {le_sam:.2f} (expected 0.8–1.25)",
                  estimate=le_sam, note="one timing run; tolerance, not an interval")


def ablation(d: D) -> Result:
    df = d["lesam/fig_ablation"].rows
    ref = df[df["variant"] == "LE-SAM (default)"].iloc[0]
    results = {lab: compare(ref, _pick(df, label=lab), 0.10, f"default vs {lab}")
               for lab in ("no_rho_max", "no_anneal") if (df["label"] == lab).any()}
    verdict = combine([r.verdict for r in results.values()])
    smoke = any(r.level == SMOKE for r in results.values())
    return Result(verdict, "; ".join(r.value for r in results.values()),
                  level=SMOKE if smoke else None,
                  note="; ".join(dict.fromkeys(r.note for r in results.values() if r.note)))




# The predicates the ledger's rows (claims.yaml) name in their `test` field.
PREDICATES: dict[str, Predicate] = {
    "best_variant": best_variant,
    "above_chance": above_chance,
    "robustness": robustness,
    "pgd_monotone": pgd_monotone,
    "long_tail": long_tail,
    "lt_profile": lt_profile,
    "flatness": flatness,
    "dynamics_early": dynamics_early,
    "signal_sam": signal_sam,
    "signal_lesam": signal_lesam,
    "cost": cost,
    "ablation": ablation,
    "cifar10_sam": accuracy_claim("table_cifar", 0.10, "cifar10_resnet18"),
    "cifar10_wrn": accuracy_claim("table_cifar", 0.10, "cifar10_wrn"),
    "imagenet_r50": accuracy_claim("table_imagenet", 0.10),
    "transfer": accuracy_claim("table_transfer", 0.20),
    "domain": accuracy_claim("table_domain_gen", 0.10),
    "signal_curvature": signal_residual("train"),
    "signal_curvature_eval": signal_residual("eval"),
}
