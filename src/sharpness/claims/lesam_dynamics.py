"""Claims of paper `lesam` read over the epochs of training (``fig_dynamics``): LE-SAM ahead
of SAM throughout, and SAM's gain over SGD arriving only late while LE-SAM's holds early.

Each seed's test accuracy is averaged over a window of epochs and the windows are compared
paired over seeds under the profile's seed rules (:func:`sharpness.claims.rules.paired_verdict`),
so a late lead cannot hide an early deficit.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from sharpness.claims.independence import PRINT_COLUMNS, recorded
from sharpness.claims.model import ItemData, Predicate, Result
from sharpness.claims.rules import Arm, SeedRules, combine_results, paired_verdict
from sharpness.evidence.records import TrainRecord
from sharpness.evidence.stats import INCONCLUSIVE

D = Mapping[str, ItemData]
Params = Mapping[str, Any]  # a claim's registered parameters (claims.yaml)


def _dynamics_arms(d: D, classes: int = 10) -> tuple[dict[str, dict[int, dict[int, float]]],
                                                     dict[str, dict[int, TrainRecord]]]:
    """Per optimizer: seed -> epoch -> test accuracy (%), and seed -> its last epoch's train
    record (fig_dynamics' per-epoch rows), with the fingerprints of initial weights and data
    order the run's rows carry (what proves it independent; none: unproven)."""
    df = d["lesam/fig_dynamics"].rows
    runs = df[df["run"].notna()] if "run" in df.columns else df
    acc: dict[str, dict[int, dict[int, float]]] = {}
    recs: dict[str, dict[int, TrainRecord]] = {}
    for (opt, run), part in runs.groupby(["optimizer", "run"]):
        seed = int(str(run).rsplit("-s", 1)[1])
        part = part.sort_values("epoch")
        acc.setdefault(str(opt), {})[seed] = dict(zip(part["epoch"].astype(int),
                                                      100 * part["test_acc"].astype(float),
                                                      strict=True))
        last = part.iloc[-1]
        train_acc = last.get("train_acc")
        recs.setdefault(str(opt), {})[seed] = TrainRecord(
            float(last["train_loss"]) if pd.notna(last.get("train_loss")) else None,
            float(train_acc) if train_acc is not None and pd.notna(train_acc) else None,
            classes, *(recorded(part, col) for col in PRINT_COLUMNS.values()))
    return acc, recs


def _window_arm(name: str, acc: dict[int, dict[int, float]], recs: dict[int, TrainRecord],
                epochs: list[int]) -> Arm:
    """An arm whose per-seed value is the mean test accuracy over ``epochs``."""
    return Arm(name, {s: float(np.mean([a[e] for e in epochs])) for s, a in acc.items()
                      if all(e in a for e in epochs)}, recs)


def _common_epochs(acc: dict[str, dict[int, dict[int, float]]], names: tuple[str, ...]
                   ) -> list[int]:
    sets = [set(e) for n in names for e in acc.get(n, {}).values()]
    return sorted(set.intersection(*sets)) if sets else []


def dynamics(d: D, rules: SeedRules, params: Params) -> Result:
    """"Throughout": LE-SAM − SAM test accuracy, each seed's mean over the epochs of each of
    ``windows`` consecutive windows of the run, paired over seeds; the row holds only when
    LE-SAM is ahead in every window (an average over all epochs would let a late lead hide an
    early deficit)."""
    acc, recs = _dynamics_arms(d)
    epochs = _common_epochs(acc, ("lesam", "sam"))
    windows = int(params["windows"])
    if len(epochs) < windows:
        return Result(INCONCLUSIVE, f"fig_dynamics has {len(epochs)} epoch(s) both LE-SAM and "
                      f"SAM ran, fewer than the {windows} windows the claim is read over")
    parts = {}
    for chunk in np.array_split(np.asarray(epochs), windows):
        window = [int(e) for e in chunk]
        name = f"epochs {window[0]}–{window[-1]}"
        parts[name] = paired_verdict(
            _window_arm("lesam", acc.get("lesam", {}), recs.get("lesam", {}), window),
            _window_arm("sam", acc.get("sam", {}), recs.get("sam", {}), window), name, rules)
    return combine_results(parts, rules)


def late_gain(d: D, rules: SeedRules) -> Result:
    """"SAM's gain arrives only late in training, LE-SAM's holds throughout": over the first
    half of the epochs LE-SAM's gain over SGD exceeds SAM's (LE-SAM − SAM > 0) and LE-SAM
    gains over SGD (> 0); over the second half LE-SAM still gains over SGD (> 0) and SAM's
    gain has arrived (SAM − SGD > 0); and "only late": SAM's gain over the second half exceeds
    its gain over the first (paired over seeds)."""
    acc, recs = _dynamics_arms(d)
    if "sgd" not in acc:
        return Result(INCONCLUSIVE, "fig_dynamics has no SGD arm: the gains cannot be read",
                      note="run fig_dynamics with optimizers [sgd, sam, lesam]")
    epochs = _common_epochs(acc, ("lesam", "sam", "sgd"))
    if len(epochs) < 2:
        return Result(INCONCLUSIVE, f"{len(epochs)} common epoch(s): no early and late half")
    half = len(epochs) // 2
    early, late = epochs[:half], epochs[half:]

    def arm_(name: str, window: list[int]) -> Arm:
        return _window_arm(name, acc.get(name, {}), recs.get(name, {}), window)

    parts = {
        f"early (epochs {early[0]}–{early[-1]}) LE-SAM − SAM":
            paired_verdict(arm_("lesam", early), arm_("sam", early), "early", rules),
        "early LE-SAM − SGD": paired_verdict(arm_("lesam", early), arm_("sgd", early), "early",
                                             rules),
        f"late (epochs {late[0]}–{late[-1]}) LE-SAM − SGD":
            paired_verdict(arm_("lesam", late), arm_("sgd", late), "late", rules),
        "late SAM − SGD": paired_verdict(arm_("sam", late), arm_("sgd", late), "late", rules),
        "SAM's gain late − early (only late)": paired_verdict(
            _gain_arm("sam late gain", arm_("sam", late), arm_("sgd", late)),
            _gain_arm("sam early gain", arm_("sam", early), arm_("sgd", early)),
            "SAM − SGD", rules)}
    return combine_results(parts, rules)


def _gain_arm(name: str, arm: Arm, base: Arm) -> Arm:
    """Per seed ``arm − base`` (a gain over a window), with ``arm``'s training records."""
    seeds = sorted(set(arm.values) & set(base.values))
    return Arm(name, {s: arm.values[s] - base.values[s] for s in seeds}, arm.records)


# The predicates the ledger's rows (claims.yaml) name in their `test` field.
PREDICATES: dict[str, Predicate] = {
    "dynamics": dynamics,
    "late_gain": late_gain,
}
