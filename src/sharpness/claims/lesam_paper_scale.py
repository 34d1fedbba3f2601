"""Claims of paper `lesam` that only the paper profile can decide: the CIFAR-100 gain, the
PyramidNet gain, the absolute numbers the paper reports and ImageNet with ResNet-101.

Gains are paired over seeds (:func:`sharpness.claims.lesam.compare`) in each group the
claim names and combined (supported when every group is); a group the profile did not run
keeps the row from ``supported`` and is named. The absolute numbers are compared with the
reported ones (:mod:`sharpness.evidence.reported`) within a tolerance that lives beside the
claim in ``claims.yaml`` (its registered ``params``), not in code.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd

from sharpness.claims.lesam import D, accuracy_claim, arm, compare
from sharpness.claims.model import Predicate, Result
from sharpness.claims.rules import SeedRules, combine_results, row_pvalue
from sharpness.evidence.reported import reported
from sharpness.evidence.stats import (
    CONTRADICTED,
    INCONCLUSIVE,
    SUPPORTED,
    ThresholdTest,
    combine,
    range_pvalue,
    t_interval,
)


def gain_in_groups(groups: tuple[str, ...], item: str = "table_cifar") -> Predicate:
    """LE-SAM − SAM paired over seeds in each of ``groups`` of ``item``; all must hold."""
    def test(d: D, rules: SeedRules) -> Result:
        df = d[f"lesam/{item}"].rows
        results, missing = {}, []
        for group in groups:
            part = df[df["group"].astype(str) == group] if "group" in df.columns else df[:0]
            labels = set(part["label"].astype(str)) if len(part) else set()
            if not {"lesam", "sam"} <= labels:
                missing.append(group)
                continue
            results[group] = compare(part[part["label"] == "lesam"].iloc[0],
                                     part[part["label"] == "sam"].iloc[0], "lesam vs sam",
                                     rules)
        if not results:
            return Result(INCONCLUSIVE, f"no group of the claim in {item}",
                          note=f"groups not run in this profile: {', '.join(missing)}")
        out = combine_results(results, rules)
        if missing:
            if out.verdict == SUPPORTED:
                out.verdict, out.level = INCONCLUSIVE, "weak"
            out.note = "; ".join(x for x in (f"groups of the claim not run in this profile: "
                                             f"{', '.join(missing)}", out.note) if x)
        return out
    return test


#: table_cifar groups per data set, the data set's name in paper_reported.yaml
SOTA_SETS = {"CIFAR-10": ("cifar10_resnet18", "cifar10_wrn", "cifar10_pyramid"),
             "CIFAR-100": ("cifar100_resnet18", "cifar100_wrn", "cifar100_pyramid")}


def _best_lesam(df: pd.DataFrame, groups: tuple[str, ...]) -> pd.Series | None:
    """The LE-SAM row with the highest mean over ``groups`` (the paper does not say which
    backbone its number is from: its best is compared)."""
    part = df[(df["group"].astype(str).isin(groups)) & (df["label"] == "lesam")]
    part = part[part["mean"].notna()]
    return None if part.empty else part.loc[part["mean"].astype(float).idxmax()]


def sota_numbers(d: D, rules: SeedRules, params: Mapping[str, Any]) -> Result:
    """The best LE-SAM accuracy on CIFAR-10 and on CIFAR-100 against the reported number, as
    an equivalence test: the seeds' t interval wholly inside reported ± ``tolerance_points``
    is supported, wholly outside contradicted (two one-sided t tests, :func:`range_pvalue`);
    otherwise, with fewer seeds than the rules' minimum or a data set not run, inconclusive.
    The row's p-value: :func:`row_pvalue` over the data sets."""

    tol = float(params["tolerance_points"])
    df = d["lesam/table_cifar"].rows
    tests, parts, runs = [], [], []
    for name, groups in SOTA_SETS.items():
        entry = reported("table_cifar", name)
        row = _best_lesam(df, groups) if "group" in df.columns else None
        if row is None or entry is None:
            tests.append(ThresholdTest(INCONCLUSIVE, t_interval([]), None))
            parts.append(f"{name}: no LE-SAM row")
            continue
        values = list(arm(row).values.values())
        iv = t_interval(values, rules.level)
        if iv.n < rules.min_seeds:
            tests.append(ThresholdTest(INCONCLUSIVE, iv, None))
            parts.append(f"{name}: {iv.n} seed(s) < {rules.min_seeds}")
            continue
        runs.append(iv.n)
        lo, hi = float(entry["value"]) - tol, float(entry["value"]) + tol
        verdict = (SUPPORTED if lo <= iv.low and iv.high <= hi else
                   CONTRADICTED if iv.high < lo or iv.low > hi else INCONCLUSIVE)
        tests.append(ThresholdTest(verdict, iv, range_pvalue(values, lo, hi)))
        parts.append(f"{name} ({row['group']}): {iv.estimate:.2f} [{iv.low:.2f}, {iv.high:.2f}] "
                     f"({rules.level:.0%} CI, n={iv.n} seeds) vs reported {entry['value']} "
                     f"± {tol:g} ({verdict})")
    verdict = combine([t.verdict for t in tests])
    return Result(verdict, "; ".join(parts), n=min(runs) if runs else None,
                  p_value=row_pvalue(tests) if verdict != INCONCLUSIVE else None,
                  note="the best LE-SAM network per data set (the reported numbers name no "
                       "backbone); ImageNet 79.31 and CIFAR-100-LT are not compared: their "
                       "backbone or setting is not stated")


# The predicates the ledger's rows (claims.yaml) name in their `test` field.
PREDICATES: Mapping[str, Predicate] = {
    # the CIFAR-100 gain and the PyramidNet gain, one row per network and data set: the
    # networks' prices differ tenfold, so each is bought (and decided) on its own
    "cifar100_resnet18_gain": gain_in_groups(("cifar100_resnet18",)),
    "cifar100_wrn_gain": gain_in_groups(("cifar100_wrn",)),
    "cifar100_pyramid_gain": gain_in_groups(("cifar100_pyramid",)),
    "cifar10_pyramid_gain": gain_in_groups(("cifar10_pyramid",)),
    "sota_numbers": sota_numbers,
    "imagenet_r101": accuracy_claim("table_imagenet", "imagenet_resnet101"),
}
