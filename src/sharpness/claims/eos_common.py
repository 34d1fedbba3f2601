"""What the eos claims share: which runs converged, and a verdict from counting settings."""

from __future__ import annotations

import pandas as pd

from sharpness.claims.stats import CONTRADICTED, INCONCLUSIVE, SUPPORTED


def converged(df: pd.DataFrame) -> pd.DataFrame:
    """The runs that ended ``ok`` by reaching the loss goal."""
    return df[(df["status"] == "ok") & (df["reason"] == "loss_goal")]


def count_verdict(ok: int, bad: int, undecided: int) -> str:
    """All decided settings agree: supported; most disagree: contradicted; else inconclusive."""
    if ok + bad == 0:
        return INCONCLUSIVE
    if bad == 0:
        return SUPPORTED
    if bad > ok:
        return CONTRADICTED
    return INCONCLUSIVE
