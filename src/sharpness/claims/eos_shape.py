"""Claim of paper `eos` on the test error against η (``fig_test_vs_lr``): U-shaped in many
settings, read only where the test set can separate the points.

Split from :mod:`sharpness.claims.eos` (which lists it in its ``PREDICATES``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from sharpness.claims.eos_common import by_network, count_result, loss_of
from sharpness.claims.model import ItemData, Result
from sharpness.claims.rules import SeedRules
from sharpness.evidence.stats import separated_minimum, wilson_interval

D = Mapping[str, ItemData]
Params = Mapping[str, Any]  # a claim's registered parameters (claims.yaml)


def _u_class(err: np.ndarray, n: int, level: float) -> str:
    """One setting's test-error curve (sorted by η, finite) read at test-set size ``n``:
    ``u`` (the best η interior and its Wilson interval below both ends'), ``not u`` (the best
    η is an end and its interval lies below the worst point's: the curve is separated and
    not U-shaped), or ``unseparated`` (the test set cannot tell)."""
    if separated_minimum(list(err), n, level) is not None:
        return "u"
    k, worst = int(np.argmin(err)), int(np.argmax(err))
    best_hi = wilson_interval(err[k] * n, n, level)[1]
    worst_lo = wilson_interval(err[worst] * n, n, level)[0]
    return "not u" if k in (0, len(err) - 1) and best_hi < worst_lo else "unseparated"


def u_shape(d: D, params: Params, rules: SeedRules) -> Result:
    """"Test error is U-shaped in η in many settings": per setting with ≥ 3 runs, U-shaped
    when the lowest error is an interior η whose Wilson interval lies below both ends', not
    U-shaped when the curve is separated with its best η at an end. Only those two count
    (the registered count rule, exact); a setting whose test set cannot separate its points,
    one with a missing (NaN) error, and the cross-entropy settings the paper itself sets apart
    ("with cross-entropy the relation may be more complex") are counted apart and named."""
    d = by_network(d, params)  # the settings of the networks the row names
    df = d["eos/fig_test_vs_lr"].rows
    if "n_test" not in df.columns:
        raise ValueError("fig_test_vs_lr.csv has no n_test column (the test-set size)")
    ok, flat, thin, apart, missing, excluded = [], [], [], [], [], []
    losses = loss_of(df)
    for setting, part in df[df["status"] != "diverged"].groupby("setting", sort=False):
        part = part.sort_values("eta")
        if (losses[part.index] == "ce").all():
            excluded.append(str(setting))
            continue
        if len(part) < 3:
            thin.append(str(setting))
            continue
        err = pd.to_numeric(part["test_error"], errors="coerce").to_numpy(float)
        if not np.isfinite(err).all():
            missing.append(str(setting))
            continue
        n = int(part["n_test"].iloc[0])
        kind = _u_class(err, n, rules.level)
        {"u": ok, "not u": flat, "unseparated": apart}[kind].append(f"{setting} (n={n})")
    notes = [x for x in (
        f"undetermined, a test error missing: {', '.join(missing)}" if missing else "",
        f"the test set cannot separate the points (not counted): {', '.join(apart)}"
        if apart else "",
        f"cross-entropy settings the paper itself excludes from the U-shape: "
        f"{', '.join(excluded)}" if excluded else "",
        f"{len(thin)} settings with < 3 finite runs" if thin else "") if x]
    out = count_result(len(ok), len(flat), params, rules,
                        "U-shape with the best η separated from both ends (Wilson) in "
                        f"{len(ok)}/{len(ok) + len(flat)} settings that separate"
                        + (f": {', '.join(ok)}" if ok else "")
                        + (f"; not U-shaped: {', '.join(flat)}" if flat else ""),
                        len(ok) + len(flat), note="; ".join(notes))
    if not ok and not flat:
        out.note = "; ".join(["no setting can decide: inconclusive", out.note])
    return out
