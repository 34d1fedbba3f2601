"""What the eos claims share: which runs converged, each run's loss, and the registered count
rule of a "many settings" row (:func:`sharpness.evidence.stats.count_rule`, an exact binomial
test)."""

from __future__ import annotations

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
