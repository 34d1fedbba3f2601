"""What the eos claims share: which runs converged (a verdict from counting settings is
:func:`sharpness.evidence.stats.count_rule`)."""

from __future__ import annotations

import pandas as pd


def converged(df: pd.DataFrame) -> pd.DataFrame:
    """The runs that ended ``ok`` by reaching the loss goal."""
    return df[(df["status"] == "ok") & (df["reason"] == "loss_goal")]
