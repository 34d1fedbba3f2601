"""Claims of paper `eos` on its ablations (``fig_ablations``): the trade-off across the
factors the paper varies, and across this project's extensions, each run set counted once.

Split from :mod:`sharpness.claims.eos` (which lists these in its ``PREDICATES``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd

from sharpness.claims.eos_common import converged
from sharpness.claims.independence import RUN_ID, distinct_by_records
from sharpness.claims.model import ItemData, Result
from sharpness.claims.rules import SeedRules
from sharpness.evidence.stats import INCONCLUSIVE, count_rule

D = Mapping[str, ItemData]
Params = Mapping[str, Any]  # a claim's registered parameters (claims.yaml)


#: the ablation factors paper 003 names, and those this project adds (config names)
PAPER_FACTORS = ("width", "depth", "activation", "loss", "data_size")
EXTENSION_FACTORS = ("init_scale", "loss_goal", "parametrization")
ABLATION_FACTORS = PAPER_FACTORS + EXTENSION_FACTORS


def _records(part: pd.DataFrame) -> list[tuple[str, str]] | None:
    """The run records one ablation value's rows name: one ``run_id`` per row (the id of the
    run's signed provenance record, which hashes its resolved training config, seed, code and
    data: two settings that resolve to the same runs name the same records). None when a row
    names none, or two rows name one record (rows that do not say which runs they are)."""
    if RUN_ID not in part.columns:
        return None
    ids = [v.strip() for v in part[RUN_ID] if isinstance(v, str) and v.strip()]
    if len(ids) != len(part) or len(set(ids)) != len(ids):
        return None
    return [("run", i) for i in ids]


def ablations(d: D, factors: tuple[str, ...], params: Params, rules: SeedRules) -> Result:
    """Per ablation value of ``factors`` whose runs their records prove distinct: above η_c a
    larger ℓ2 norm and a lower sharpness than below, values counted by the registered count
    rule (``share``). Two values are the same runs only when their rows name the same run
    records (``run_id``; :func:`sharpness.claims.independence.distinct_by_records`): a value
    whose rows name a record another value's rows already named is counted once and named,
    whatever its numbers; values with other records count apart, even with equal numbers. A
    value whose rows name no record is read (its numbers and the count's p-value are stated)
    but keeps the row from deciding, and is named. Nothing is read from the numbers to decide
    which values are the same runs. A value without a converged run on both sides is named
    with its cause. Every factor of the registered ``required`` list must have been varied: a
    missing one keeps the row from ``supported`` (the claim is made across the factors the
    paper varies). ``n``: the distinct values read (each a network trained from its own
    setting)."""
    df = d["eos/fig_ablations"].rows
    order = {f: k for k, f in enumerate(ABLATION_FACTORS)}
    groups = sorted(df.groupby(["factor", "value"], sort=False),
                    key=lambda g: order.get(str(g[0][0]), len(order)))
    # the paper's factors first: they own a run another factor's value shares
    found = distinct_by_records((f"{factor}={value}", _records(part))
                                for (factor, value), part in groups)
    ok = bad = 0
    names, repeats, dropped, unproven = [], [], [], []
    decided: set[str] = set()  # factors with at least one value read on both sides of η_c
    for (factor, value), part in groups:
        key = f"{factor}={value}"
        if str(factor) not in factors:
            continue
        if key in found.copies:
            repeats.append(f"{key} (same runs as {found.copies[key]})")
            continue
        if key in found.unproven:
            unproven.append(key)
        conv = converged(part)
        eta_c = float(part["eta_c"].iloc[0])
        eos = conv[conv["eta"].astype(float) > eta_c]
        below = conv[conv["eta"].astype(float) < eta_c]
        if eos.empty or below.empty:
            side = part[part["eta"].astype(float) < eta_c] if below.empty else \
                part[part["eta"].astype(float) > eta_c]
            why = ", ".join(sorted({f"{r['status']}/{r['reason']}" for _, r in side.iterrows()}))
            dropped.append(f"{key} (no converged run {'below' if below.empty else 'above'} "
                           f"η_c: {why or 'none run'})")
            continue
        hit = eos["l2"].astype(float).median() > below["l2"].astype(float).median() and \
            eos["sharpness"].astype(float).median() < below["sharpness"].astype(float).median()
        ok += hit
        bad += not hit
        decided.add(str(factor))
        names.append(f"{key}: {'yes' if hit else 'no'} ({len(below)} below, {len(eos)} above)")
    present = set(df["factor"].astype(str))
    missing = [f for f in factors if f not in present]
    # a required factor counts as varied only when one of its values was read: a factor
    # whose every run diverged was not varied as far as the claim can tell
    required = [str(f) for f in params.get("required", ()) if str(f) not in decided]
    test = count_rule(ok, bad, float(params["share"]), rules.level)
    verdict, low, high = test.verdict, test.low, test.high
    if required or unproven:
        verdict = INCONCLUSIVE
    notes = [x for x in (
        f"required factors not varied (no value read on both sides of η_c): "
        f"{', '.join(required)}: the design cannot decide the claim, inconclusive"
        if required else "",
        f"independence not proven, the row does not decide: no run record names the runs of "
        f"{', '.join(unproven)} (their rows carry no run_id; nothing is read from the numbers)"
        if unproven else "",
        f"counted once (their rows name another value's run records): {'; '.join(repeats)}"
        if repeats else "",
        f"dropped: {'; '.join(dropped)}" if dropped else "",
        f"factors not varied in this profile: {', '.join(missing)}" if missing else "") if x]
    return Result(verdict, f"above η_c larger ℓ2 and lower sharpness (medians) "
                  f"than below in {ok}/{ok + bad} distinct ablation values (exact "
                  f"{rules.level:.0%} [{low:.2f}, {high:.2f}] against {params['share']:g})"
                  + (f" ({', '.join(names)})" if names else ""), note="; ".join(notes),
                  estimate=ok / max(ok + bad, 1), n=ok + bad, p_value=test.p_value)


def ablations_paper(d: D, params: Params, rules: SeedRules) -> Result:
    """The trade-off across the factors paper 003 varies."""
    return ablations(d, PAPER_FACTORS, params, rules)


def ablations_ext(d: D, params: Params, rules: SeedRules) -> Result:
    """The trade-off across this project's extension factors."""
    return ablations(d, EXTENSION_FACTORS, params, rules)
