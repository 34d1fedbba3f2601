"""Claims of paper `minorfirst` about trained networks: the synthetic two-feature CNN (which
feature SAM and GD align with first, counted over seeds) and the Grad-CAM background shares
(SAM − GD paired over seeds under the profile's seed rules)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from sharpness.claims.common import fmt
from sharpness.claims.independence import distinct_frames
from sharpness.claims.model import ItemData, Predicate, Result
from sharpness.claims.rules import Arm, SeedRules, paired_verdict
from sharpness.evidence.records import parse_train_records
from sharpness.evidence.stats import INCONCLUSIVE, count_rule

D = Mapping[str, ItemData]
Params = Mapping[str, Any]


def _first_aligned(df: pd.DataFrame, alpha: float, gain: float) -> dict[str, str]:
    """Per optimizer (sgd, sam): the feature whose alignment first gains ``gain`` over its
    start at init scale ``alpha`` (``neither`` when none does)."""
    first = {}
    for opt in ("sgd", "sam"):
        hit = {}
        for feat in ("strong", "weak"):
            part = df[(df["optimizer"] == opt) & (df["alpha"] == alpha)
                      & (df["quantity"] == f"align_{feat}")].sort_values("step")
            v = part["value"].to_numpy(float)
            idx = np.nonzero(v >= v[0] + gain)[0] if len(v) else []
            if len(idx):
                hit[feat] = int(part["step"].to_numpy()[idx[0]])
        first[opt] = min(hit, key=lambda k: hit[k]) if hit else "neither"
    return first


def cnn_first_aligned(d: D, params: Params, rules: SeedRules) -> Result:
    """Per seed (data and init draw; one draw when the CSV has no ``seed`` column) at the
    middle α: SAM aligns with the weak feature first and GD with the strong one, read at the
    registered ``gain``; data made with another gain (its sidecar's) are not the registered
    design and decide nothing. Seeds their records prove distinct (each run's ``init_sha256``
    and ``order_sha256`` columns, per optimizer and init scale; a copy of a run under another
    label is refused, :mod:`sharpness.claims.independence`) where both optimizers aligned are
    counted against the registered ``share`` by the exact binomial test; ``n``: the distinct
    seeds read. A seed whose rows carry no fingerprint is unproven and the row does not
    decide (nothing is read from the numbers)."""
    data = d["minorfirst/cnn_synthetic"]
    df = data.rows
    gain = float(params["gain"])
    made = data.params.get("gain")
    if made is not None and float(made) != gain:
        return Result(INCONCLUSIVE, f"data made with gain {float(made):g}, registered {gain:g}",
                      note="a deviation: the data are not the registered design; "
                           "inconclusive until rebuilt at the registered gain")
    alphas = sorted(set(df["alpha"]))
    mid = alphas[(len(alphas) - 1) // 2]
    groups = list(df.groupby("seed")) if "seed" in df.columns else [(0, df)]
    kept, found = distinct_frames(groups, arms=("optimizer", "alpha"))
    ok = bad = 0
    seen = []
    for seed, part in kept:
        first = _first_aligned(part, mid, gain)
        seen.append(f"seed {seed}: sgd {first['sgd']}, sam {first['sam']}")
        if "neither" in first.values():
            continue
        hit = first["sam"] == "weak" and first["sgd"] == "strong"
        ok += hit
        bad += not hit
    test = count_rule(ok, bad, params["share"], rules.level)
    verdict = test.verdict if found.decides else INCONCLUSIVE
    p_text = f", p = {test.p_value:.2g}" if test.p_value is not None else ""
    return Result(verdict, f"middle α={mid:g}, gain {gain:g}: SAM weak first and GD "
                  f"strong first in {ok}/{ok + bad} distinct seeds (exact {rules.level:.0%} "
                  f"[{fmt(test.low)}, {fmt(test.high)}] against {params['share']:g}{p_text}); "
                  + "; ".join(seen), note=found.note(),
                  estimate=ok / max(ok + bad, 1), low=test.low if ok + bad else None,
                  high=test.high if ok + bad else None, n=len(kept), p_value=test.p_value)


def _floats(text: object) -> list[float]:
    return [float(x) for x in str(text).split()] if isinstance(text, str) else []


def _gradcam_arm(row: pd.Series, name: str) -> Arm:
    """One optimizer's per-seed background shares (``per-seed means``, in seed order) and its
    runs' training records (``per_seed_train``, keyed by seed)."""
    records = parse_train_records(row.get("per_seed_train"))
    values = _floats(row.get("per-seed means"))
    keys = list(records) if records and len(records) == len(values) else range(len(values))
    return Arm(name, dict(zip(keys, values, strict=True)), records)


def gradcam_claim(dataset_label: str | tuple[str, ...], optimizer_label: str) -> Predicate:
    """A Grad-CAM claim on the data set row labelled `dataset_label` (a tuple names every label
    the profiles give that data set, e.g. the paper's "SVHN" and the quick "SVHN stand-in"):
    share(SAM) − share(GD) at the middle init, paired over seeds under the profile's rules
    (each seed's two models must both have trained; a collapsed SAM model whose near-uniform
    map reads as "background" is excluded from both arms)."""
    labels = (dataset_label,) if isinstance(dataset_label, str) else dataset_label

    def test(d: D, rules: SeedRules) -> Result:
        df = d["minorfirst/gradcam_table"].rows
        sel = df[df["data set"].isin(labels) & (df["optimizer"] == optimizer_label)]
        if sel.empty:
            raise ValueError(f"gradcam_table.csv has no row for {' or '.join(labels)}/"
                             f"{optimizer_label}")
        alphas = sorted(set(sel["alpha"]))
        mid = alphas[(len(alphas) - 1) // 2]
        row = sel[sel["alpha"] == mid].iloc[0]
        at = df[df["data set"].isin(labels) & (df["alpha"] == mid)]
        gd_rows = at[at["per-seed diff vs GD"].isna() | (at["per-seed diff vs GD"].astype(str)
                                                           .str.strip() == "")]
        if gd_rows.empty:
            raise ValueError(f"gradcam_table.csv has no GD row for {labels[0]} at α={mid}")
        gd = gd_rows.iloc[0]
        out = paired_verdict(_gradcam_arm(row, optimizer_label),
                             _gradcam_arm(gd, str(gd["optimizer"])),
                             f"α={mid:g} background share", rules, digits=3, unit="")
        massless = int(row["massless"])
        out.note = "; ".join(x for x in (out.note, f"{massless} massless maps dropped"
                                         if massless else "") if x)
        return out
    return test



# The predicates the ledger's rows (claims.yaml) name in their `test` field.
PREDICATES: dict[str, Predicate] = {
    "cnn_first_aligned": cnn_first_aligned,
    "gradcam_mnist_l2": gradcam_claim("MNIST", "l2-SAM"),
    "gradcam_mnist_linf": gradcam_claim("MNIST", "linf-SAM"),
    "gradcam_svhn": gradcam_claim(("SVHN", "SVHN stand-in"), "l2-SAM"),
    "gradcam_cifar": gradcam_claim("CIFAR-10", "l2-SAM"),
}
