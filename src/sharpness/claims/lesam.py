"""Claims of paper `lesam` (summary 002) and the catalog's checks on its items.

Accuracy comparisons are paired over seeds (the same seed gives the same init and data
order to both optimizers) and decided by :func:`sharpness.claims.rules.paired_verdict` under
the profile's seed rules: every run must pass the sanity check (its ``per_seed_train``
record), a verdict needs the profile's minimum of paired seeds and an interval that excludes
zero, and the row reports each arm's training level. The claims read over the epochs of
training (dynamics, late gain) are in :mod:`sharpness.claims.lesam_dynamics`.
"""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pandas as pd

from sharpness.claims.common import fmt
from sharpness.claims.independence import distinct_by_records
from sharpness.claims.lesam_signal import (
    signal_curvature,
    signal_curvature_eval,
    signal_lesam,
    signal_sam,
)
from sharpness.claims.model import Items as D
from sharpness.claims.model import Params, Predicate, Result
from sharpness.claims.rules import Arm, SeedRules, combine_results, paired_verdict, row_pvalue
from sharpness.evidence.records import TrainRecord, parse_train_records, record_of_row
from sharpness.evidence.stats import (
    CONTRADICTED,
    INCONCLUSIVE,
    SUPPORTED,
    combine,
    decide,
    range_pvalue,
    t_interval,
    t_pvalue,
    threshold,
)

P = "lesam"


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


def arm(row: pd.Series, name: str | None = None) -> Arm:
    """A table row as one arm of a paired comparison: its ``per_seed`` values and its runs'
    ``per_seed_train`` records (absent: no run of the arm can pass the sanity check)."""
    return Arm(name or str(row.get("label", "?")), _seed_map(row.get("per_seed")),
               parse_train_records(row.get("per_seed_train")))


def compare(a: pd.Series, b: pd.Series, what: str, rules: SeedRules, direction: int = 1
            ) -> Result:
    """Paired-over-seeds comparison of two table rows' ``per_seed`` accuracies (a − b)."""
    return paired_verdict(arm(a), arm(b), what, rules, direction)


def accuracy_claim(item: str, group: str | None = None, a: str = "lesam", b: str = "sam"
                   ) -> Predicate:
    def test(d: D, rules: SeedRules) -> Result:
        df = d[f"lesam/{item}"].rows
        extra = {"group": group} if group is not None else {}
        return compare(_pick(df, label=a, **extra), _pick(df, label=b, **extra),
                       f"{a} vs {b}", rules)
    return test


#: the networks and data sets the paper says LE-SAM is best on (table_cifar groups)
BEST_GROUPS = tuple(f"{data}_{net}" for data in ("cifar10", "cifar100")
                    for net in ("resnet18", "wrn", "pyramid"))


def best_variant(d: D, rules: SeedRules) -> Result:
    """LE-SAM against every other method (SGD aside) in each of the paper's six
    (data set, network) groups; a group this profile did not run is named, and the row is
    not supported while one is missing."""
    df = d["lesam/table_cifar"].rows
    df = df[df["per_seed"].notna()] if "per_seed" in df.columns else df
    res: dict[str, Result] = {}
    missing = []
    for group in BEST_GROUPS:
        part = df[df["group"].astype(str) == group]
        if part.empty or not (part["label"] == "lesam").any():
            missing.append(group)
            continue
        ref = _pick(part, label="lesam")
        for other in part["label"].astype(str):
            if other != "sgd" and not other.startswith("lesam"):  # LE-SAM candidates aside
                res[f"{group} −{other}"] = compare(ref, _pick(part, label=other),
                                                   f"lesam vs {other}", rules)
    if not res:
        return Result(INCONCLUSIVE, "no (data set, network) group of the paper in this table",
                      note="groups not run: " + ", ".join(missing))
    out = combine_results(res, rules)
    if missing and out.verdict == SUPPORTED:
        out.verdict, out.level = INCONCLUSIVE, "weak"
    if missing:
        out.note = "; ".join(x for x in (f"groups of the claim not run in this profile: "
                                         f"{', '.join(missing)}", out.note) if x)
    return out


def above_chance(d: D, params: Params, rules: SeedRules) -> Result:
    """Every optimizer's runs test above chance (direction: above ``chance`` %), over the runs
    that pass the profile's sanity rule (a run without a training record, or that did not
    train, is excluded and named, as for claims); n is the number of runs counted, and more
    than ``rules.max_excluded`` of them excluded leaves the row inconclusive (level smoke).
    ``supported`` needs the interval wholly above the registered ``sesoi`` (points above
    chance), and its p-value tests that effect.
    An optimizer's runs count only when their records prove them distinct (initial weights
    and data order, :mod:`sharpness.claims.independence`); a run whose record carries no
    fingerprint leaves the row inconclusive."""
    df = d["lesam/table_cifar"].rows
    df = df[df["per_seed"].notna()] if "per_seed" in df.columns else df
    chance = float(params["chance"])
    kept: list[tuple[str, float]] = []
    excluded: list[str] = []
    refused: list[str] = []
    decides = True
    for _, row in df.iterrows():
        a = arm(row, f"{row.get('label')} ({row.get('group')})")
        found = distinct_by_records(
            (s, [(k, str(getattr(r, k))) for k in ("init", "order")]
             if (r := (a.records or {}).get(s)) is not None and r.proven else None)
            for s in sorted(a.values))
        decides &= found.decides
        if found.note():
            refused.append(f"{a.name}: {found.note()}")
        for seed, value in sorted(a.values.items()):
            if seed not in found.read:  # an unproven run is read, and the row not decided
                continue
            rec = (a.records or {}).get(seed)
            why = (rec.failure(rules.loss_margin, rules.acc_margin,
                               check_loss=rules.sanity != "accuracy") if rec is not None
                   else "no training record")
            if why is None and math.isfinite(value):
                kept.append((a.name, value))
            else:
                excluded.append(f"{a.name} seed {seed} ({why or 'not finite'})")
    total = len(kept) + len(excluded)
    note = "; ".join(x for x in (
        ("excluded by the sanity rule: " + "; ".join(excluded)) if excluded else "",
        *refused) if x)
    if not kept:
        return Result(INCONCLUSIVE, f"no run of {total} passes the sanity rule", level="smoke",
                      note=note, n=0)
    arms: dict[str, list[float]] = {}
    for name, acc in kept:
        arms.setdefault(name, []).append(acc - chance)
    # the decisive test: the optimizer whose runs sit lowest, its runs' t interval above 0
    name, diffs = min(arms.items(), key=lambda kv: float(np.mean(kv[1])))
    iv = t_interval(diffs, rules.level, unit="runs")
    p = t_pvalue(diffs)
    value = (f"lowest optimizer {name}: test accuracy − chance {iv.estimate:+.1f} points "
             f"[{iv.low:+.1f}, {iv.high:+.1f}] ({iv.level:.0%} t interval, n={iv.n} runs), "
             f"direction: above chance {chance:g} %; {len(kept)} runs counted, "
             f"{len(excluded)} excluded")
    if len(excluded) > rules.max_excluded * total:
        return Result(INCONCLUSIVE, value, level="smoke", n=iv.n, note="; ".join(x for x in (
            f"{len(excluded)}/{total} runs excluded (more than {rules.max_excluded:.0%})",
            note) if x))
    verdict = decide(iv, 1) if decides else INCONCLUSIVE
    sesoi = float(params["sesoi"])
    if verdict == SUPPORTED and not iv.low > sesoi:
        verdict = INCONCLUSIVE  # above chance, not by the smallest effect of interest
        note = "; ".join(x for x in (note, f"above chance but not wholly by the smallest "
                                            f"effect of interest {sesoi:g} points") if x)
    if verdict != CONTRADICTED:  # against the smallest effect, never below the test at 0
        p = max(p, t_pvalue(np.asarray(diffs) - sesoi))
    return Result(verdict, value, estimate=iv.estimate + chance, n=iv.n,
                  p_value=p if math.isfinite(p) else None, note=note)


def lanczos_check(d: D, params: Params) -> Result:
    """The catalog's check of the Lanczos code, as the flatness evaluation recorded it: on
    tiny models drawn from each evaluated run's seed, the top eigenvalues by Lanczos match the
    dense Hessian's within the registered relative ``tol`` in every draw, over at least the
    registered ``min_draws`` independent draws."""
    df = d["lesam/fig_flatness"].rows
    if "lanczos_rel_error" not in df.columns:
        return Result(INCONCLUSIVE, "fig_flatness.csv records no Lanczos check (made before the "
                      "evaluation carried one): rerun lesam eval flatness")
    per_seed = df.drop_duplicates("seed")
    draws = (per_seed["lanczos_draws"].astype(int).sum() if "lanczos_draws" in per_seed.columns
             else len(per_seed))
    worst = float(per_seed["lanczos_rel_error"].astype(float).max())
    tol, need = float(params["tol"]), int(params["min_draws"])
    value = (f"largest relative error of the top eigenvalues, Lanczos vs dense, over {draws} "
             f"draws: {worst:.2g} (tolerance {tol:g})")
    if draws < need:
        return Result(INCONCLUSIVE, value, note=f"fewer than the {need} draws registered",
                      estimate=worst, n=int(draws))
    return Result(threshold(worst, tol), value, estimate=worst, n=int(draws))


def robustness(d: D, rules: SeedRules) -> Result:
    """LE-SAM − SAM under attack, paired over seeds, at every radius > 0 of every attack (the
    claim is "more robust under PGD", not at one radius): supported when every radius is,
    contradicted when any is."""
    df = d["lesam/table_robustness"].rows
    results = {}
    for attack, part in df.groupby("attack"):
        radii = sorted(float(r) for r in set(part[part["label"] == "lesam"]["radius"]) if r > 0)
        for radius in radii:
            at = part[part["radius"].astype(float) == radius]
            if not (at["label"] == "sam").any():
                continue
            results[f"{attack} r={radius:g}"] = compare(_pick(at, label="lesam"),
                                                        _pick(at, label="sam"),
                                                        "lesam vs sam", rules)
    if not results:
        return Result(INCONCLUSIVE, "no attacked radius with both LE-SAM and SAM")
    return combine_results(results, rules)


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


def majority_share(counts: object) -> float | None:
    """The head class's share of a long-tailed train set (``"1000/599/…"``, head first): the
    train accuracy a network that predicts the head class alone reaches."""
    try:
        n = [int(c) for c in str(counts).split("/")]
    except ValueError:
        return None
    return n[0] / sum(n) if n and sum(n) > 0 else None


def long_tail(d: D, rules: SeedRules) -> Result:
    """GLMC + LE-SAM − GLMC + SAM per imbalance factor, paired over seeds. On a long-tailed
    train set the accuracy a collapsed network reaches is the head class's share, not 1/C: a
    run counts when its train accuracy is above that share by the rules' ``acc_margin`` (the
    claim's rules check the accuracy alone: GLMC's recorded loss is its re-balanced head's)."""
    df = d["lesam/table_long_tail"].rows
    results = {}
    for factor, part in df.groupby("imbalance factor"):
        a, b = _pick(part, label="lesam"), _pick(part, label="sam")
        head = majority_share(a.get("train counts (head→tail)"))
        records = arm(a).records or {}
        classes = next((r.classes for r in records.values() if r.classes), None)
        at = rules
        if head is not None and classes:
            # 1/C + margin' = head share + margin
            at = replace(rules, acc_margin=max(rules.acc_margin,
                                                head + rules.acc_margin - 1 / classes))
        results[f"IF {factor:g}"] = compare(a, b, "lesam vs sam", at)
    return combine_results(results, rules)


def lt_profile(d: D, params: Params) -> Result:
    df = d["lesam/table_long_tail"].rows
    worst = 0.0
    for _, row in df.drop_duplicates("imbalance factor").iterrows():
        counts = np.array([int(c) for c in str(row["train counts (head→tail)"]).split("/")])
        factor = float(row["imbalance factor"])
        k = np.arange(len(counts))
        expected = counts[0] * factor ** (-k / (len(counts) - 1))
        worst = max(worst, float(np.max(np.abs(counts - expected) / expected)))
    # counts are integers: allow the rounding of the smallest class (1 / its size) + slack
    tol = 1.0 / max(1, int(min(int(c) for c in str(df["train counts (head→tail)"].iloc[0])
                               .split("/")))) + float(params["slack"])
    return Result(threshold(worst, tol), f"largest relative deviation of the class counts from "
                  f"n_max·IF^(−i/(C−1)): {fmt(worst)} (tolerance {fmt(tol)}: integer "
                  "rounding)", estimate=worst)


def _records_of(part: pd.DataFrame) -> dict[int, TrainRecord] | None:
    """Training records from per-run columns (``final_train_loss`` …), if the rows carry them."""
    if "final_train_loss" not in part.columns:
        return None
    return {int(r["seed"]): record_of_row(r) for _, r in part.iterrows()}


def flatness(d: D, rules: SeedRules) -> Result:
    df = d["lesam/fig_flatness"].rows
    results = {}
    for q in ("trace", "lambda_1"):
        arms = {o: Arm(str(o), dict(zip(p["seed"].astype(int), p[q].astype(float),
                                        strict=True)), _records_of(p))
                for o, p in df.groupby("optimizer")}
        for other in ("sam", "sgd"):
            if "lesam" in arms and other in arms:
                results[f"{q} lesam − {other}"] = paired_verdict(
                    arms["lesam"], arms[other], q, rules, direction=-1, digits=3, unit="")
    out = combine_results(results, rules)
    out.note = "; ".join(x for x in ("lower is flatter", out.note) if x)
    return out


def cost(d: D, params: Params, rules: SeedRules) -> Result:
    """SAM ÷ SGD and LE-SAM ÷ SAM inside their registered ranges (``sam_over_sgd``,
    ``lesam_over_sam``: SAM two passes per step, LE-SAM the same passes), from the interleaved
    timing's per-round ratios: a t interval (at the rules' level) of the log ratio over the
    rounds; inside the range: supported, outside: contradicted, straddling an end:
    inconclusive (a loaded machine widens the interval, it does not flip the verdict). ``n``:
    the fewest timed rounds of the two ratios."""
    df = d["lesam/table_cost"].rows
    level = rules.level
    ranges = {"sam ÷ sgd": params["sam_over_sgd"], "lesam ÷ sam": params["lesam_over_sam"]}
    by = {str(r["raw_optimizer"]): r for _, r in df.iterrows()}
    col = {"sam ÷ sgd": ("sam", "raw_round_ratios_vs_sgd"),
           "lesam ÷ sam": ("lesam", "raw_round_ratios_vs_sam")}
    parts, verdicts, counts, missing, tests = [], [], [], [], []
    for name, (opt, column) in col.items():
        lo, hi = (float(x) for x in ranges[name])
        text = by[opt].get(column) if opt in by else None
        timed = [float(x) for x in str(text).split()] if isinstance(text, str) else []
        rounds = [x for x in timed if math.isfinite(x) and x > 0]  # a missing round is not one
        if len(rounds) < len(timed):
            missing.append(f"{name}: {len(timed) - len(rounds)} of {len(timed)} rounds not "
                           "finite (undetermined, not counted)")
        counts.append(len(rounds))
        if len(rounds) < 2:
            parts.append(f"{name}: {len(rounds)} timed round(s), no interval")
            verdicts.append(INCONCLUSIVE)
            continue
        iv = t_interval(np.log(rounds), level, unit="rounds")
        low, est, high = (float(np.exp(x)) for x in (iv.low, iv.estimate, iv.high))
        verdicts.append(SUPPORTED if lo <= low and high <= hi else
                        CONTRADICTED if high < lo or low > hi else INCONCLUSIVE)
        tests.append(Result(verdicts[-1], name, p_value=range_pvalue(np.log(rounds),
                                                                     math.log(lo),
                                                                     math.log(hi))))
        parts.append(f"{name} = {est:.2f} [{low:.2f}, {high:.2f}] ({level:.0%} CI over "
                     f"{iv.n} interleaved rounds; expected {lo}–{hi})")
    return Result(combine(verdicts), "; ".join(parts), level=None,
                  note="; ".join(missing + [
                      "geometric mean of per-round ratios; a verdict needs the whole interval "
                      "inside (or outside) the expected range"]),
                  n=min(counts), p_value=row_pvalue(tests))


def ablation(d: D, rules: SeedRules, params: Params) -> Result:
    """Each safeguard variant the claim registers (``variants``: labels the profiles give the
    removal or tightening of a safeguard, e.g. ``rho_max_0.03``) against the default LE-SAM,
    paired over seeds. A variant of the figure the claim does not read (another
    hyperparameter, e.g. ``sigma_0.02``) is named in the note; a variant whose records equal
    the default's (the same accuracies and training records: e.g. a ρ_max that never clips) is
    refused as not a distinct run and named."""
    df = d["lesam/fig_ablation"].rows
    ref = df[df["variant"] == "LE-SAM (default)"].iloc[0]
    registered = [str(v) for v in params["variants"]]
    others = [str(lab) for lab in df["label"].astype(str)
              if lab != str(ref.get("label")) and lab not in registered]
    results, refused = {}, []
    for lab in registered:
        if not (df["label"] == lab).any():
            continue
        row = _pick(df, label=lab)
        same = _seed_map(row.get("per_seed")) == _seed_map(ref.get("per_seed")) and \
            str(row.get("per_seed_train", "")) == str(ref.get("per_seed_train", ""))
        if same:
            refused.append(lab)
            continue
        results[f"default − {lab}"] = compare(ref, row, f"default vs {lab}", rules)
    unread = f"variants not read (not a safeguard of the claim): {', '.join(others)}" \
        if others else ""
    if not results:
        return Result(INCONCLUSIVE, "no variant that differs from the default",
                      note="; ".join(x for x in (
                          f"refused (records equal the default's): {', '.join(refused)}"
                          if refused else "no safeguard variant in fig_ablation", unread) if x))
    out = combine_results(results, rules)
    out.note = "; ".join(x for x in (
        f"refused, records equal the default's (not a distinct run): {', '.join(refused)}"
        if refused else "", unread, out.note) if x)
    return out


# The predicates the ledger's rows (claims.yaml) name in their `test` field.
PREDICATES: dict[str, Predicate] = {
    "best_variant": best_variant,
    "above_chance": above_chance,
    "robustness": robustness,
    "pgd_monotone": pgd_monotone,
    "long_tail": long_tail,
    "lt_profile": lt_profile,
    "flatness": flatness,
    "lanczos_check": lanczos_check,
    "signal_sam": signal_sam,
    "signal_lesam": signal_lesam,
    "cost": cost,
    "ablation": ablation,
    "cifar10_sam": accuracy_claim("table_cifar", "cifar10_resnet18"),
    "cifar10_wrn": accuracy_claim("table_cifar", "cifar10_wrn"),
    "imagenet_r50": accuracy_claim("table_imagenet"),
    "transfer": accuracy_claim("table_transfer"),
    "domain": accuracy_claim("table_domain_gen"),
    "signal_curvature": signal_curvature,
    "signal_curvature_eval": signal_curvature_eval,
}
