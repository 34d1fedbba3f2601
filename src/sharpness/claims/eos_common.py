"""What the eos claims share: which runs converged, each run's loss, and the registered count
rule of a "many settings" row (:func:`sharpness.evidence.stats.count_rule`, an exact binomial
test)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

import pandas as pd

from sharpness.claims.common import fmt
from sharpness.claims.model import Result
from sharpness.claims.rules import SeedRules
from sharpness.evidence.stats import count_rule


def converged(df: pd.DataFrame) -> pd.DataFrame:
    """The runs that ended ``ok`` by reaching the loss goal."""
    return df[(df["status"] == "ok") & (df["reason"] == "loss_goal")]


def loss_of(df: pd.DataFrame) -> pd.Series:
    """Each row's loss (``mse`` / ``ce``): the ``loss`` column, else read from the setting's
    label (a label with "CE" is cross-entropy)."""
    if "loss" in df.columns and df["loss"].notna().all():
        return df["loss"].astype(str).str.lower()
    return df["setting"].astype(str).map(lambda x: "ce" if " CE" in f" {x} " or
                                         x.endswith("CE") else "mse")



def count_result(ok: int, bad: int, params: Mapping[str, Any], rules: SeedRules, text: str,
                  n: int, note: str = "") -> Result:
    """A "many settings" row: the registered count rule (:func:`count_rule`, the exact
    binomial test of ``ok / (ok + bad)`` against ``params["share"]``) with its interval and
    p-value stated."""
    share = float(params["share"])
    test = count_rule(ok, bad, share, rules.level)
    p_text = f", p = {test.p_value:.2g}" if test.p_value is not None else ""
    return Result(test.verdict, f"{text}; {ok}/{ok + bad} (exact {rules.level:.0%} "
                  f"[{fmt(test.low)}, {fmt(test.high)}] against the registered share "
                  f"{share:g}{p_text})",
                  estimate=ok / max(ok + bad, 1), low=None if ok + bad == 0 else test.low,
                  high=None if ok + bad == 0 else test.high, n=n, note=note,
                  p_value=test.p_value)


def network_of(label: str) -> str:
    """The network family a setting's label names: the first word of the label that is a
    known family once its size suffix is cut (``ResNet-18/16`` -> ``ResNet``, ``ViT-small``
    -> ``ViT``); ``""`` when none is."""
    for word in str(label).split():
        head = word.split("-")[0].split("/")[0]
        if head.lower() in NETWORKS:
            return NETWORKS[head.lower()]
    return ""


#: the network families of the eos settings, as their labels spell them
NETWORKS = {"fcn": "FCN", "cnn": "CNN", "resnet": "ResNet", "vit": "ViT"}


def by_network(d: Mapping[str, Any], params: Mapping[str, Any]) -> dict[str, Any]:
    """The items without the rows of the settings whose network is among the claim's
    registered ``leave_out`` networks (absent: every setting is read). The paper's headline
    is decided on the settings a single GPU affords (FCN, CNN); the ResNet and ViT settings,
    which cost two orders of magnitude more, are read by the extension rows (``-all``)."""
    drop = {str(n) for n in params.get("leave_out") or ()}
    if not drop:
        return dict(d)
    out = {}
    for key, item in d.items():
        rows = item.rows
        if "setting" in rows.columns:
            keep = ~rows["setting"].astype(str).map(network_of).isin(drop)
            item = dataclasses.replace(item, rows=rows[keep])
        out[key] = item
    return out
