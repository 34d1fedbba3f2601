"""Inputs that are wrong on purpose: copies of one run, missing values, designs that cannot
decide, a relabelled seed, a wrong design parameter. None may give a decided verdict.

Each case's docstring says what a naive reading (without the independence, missing-data and
design checks) makes of it; every one of those verdicts is decided.
"""

from __future__ import annotations

import math

import pandas as pd
import pytest

from sharpness.claims.ledger import evaluate_claim
from sharpness.claims.model import ItemData
from sharpness.evidence.stats import CONTRADICTED, INCONCLUSIVE, NOT_RUN, SUPPORTED
from tests.catalog import CLAIMS as ALL_CLAIMS
from tests.claims import fixtures as fx

CLAIMS = {c.id: c for c in ALL_CLAIMS}
DECIDED = (SUPPORTED, CONTRADICTED)


def run(cid: str, data: dict, profile: str = "paper") -> dict:
    return evaluate_claim(CLAIMS[cid], data, profile)


def _frame(data: dict[str, ItemData], name: str) -> pd.DataFrame:
    return data[name].rows


# -- copies of one run ----------------------------------------------------------------------------
def cnn_copied(labels: int = 5) -> dict[str, ItemData]:
    """One CNN run (seed 0) copied under ``labels`` seed labels."""
    one = fx.cnn(False, seeds=1)["minorfirst/cnn_synthetic"]
    rows = pd.concat([one.rows.assign(seed=k) for k in range(labels)], ignore_index=True)
    return {"minorfirst/cnn_synthetic": ItemData(one.item, rows, dict(one.params))}


def test_one_cnn_run_under_five_seed_labels_is_one_run() -> None:
    """mf-cnn, one run copied under five seed labels. Read naively: supported, 5/5."""
    row = run("mf-cnn", cnn_copied())
    assert row["verdict"] == INCONCLUSIVE and row["n"] == 1, row["value"]
    assert "refused as copies" in row["note"] and "seed 4 = seed 0" in row["note"]


def test_one_gradcam_pair_copied_five_times_is_refused() -> None:
    """A Grad-CAM pair copied five times (difference +0.01 each). Read naively: supported, p = 0."""
    copies = fx.gradcam(1, n=5, sam_means=[0.41] * 5)
    row = run("mf-gradcam-mnist-l2", _copied_records(copies, {k: 0 for k in range(1, 5)}))
    assert row["verdict"] == INCONCLUSIVE and row["n"] == 1
    assert "refused as copies" in row["note"]


def _copied_records(data: dict, copied: dict[int, int]) -> dict:
    """``data`` whose runs ``copied`` (seed -> the seed it copies) carry the copied run's
    recorded fingerprints: a copy under another label, as its record shows it."""
    from tests.claims.fixtures_common import draw

    for d in data.values():
        if "per_seed_train" not in d.rows.columns:
            continue
        for seed, of in copied.items():
            d.rows["per_seed_train"] = d.rows["per_seed_train"].astype(str).str.replace(
                f"/{draw(seed, 'init')}/{draw(seed, 'order')}",
                f"/{draw(of, 'init')}/{draw(of, 'order')}", regex=False)
    return data


def test_identical_differences_of_distinct_runs_are_refused() -> None:
    """Distinct seeds whose paired differences are all +10.00 (zero spread). Before:
    supported (a zero-width interval)."""
    data = fx.ablation(False)
    df = _frame(data, "lesam/fig_ablation")
    df.loc[df["label"] != "lesam", "per_seed"] = fx.seeds([50, 51, 50.5])
    row = run("ls-ablation", data)
    assert row["verdict"] == INCONCLUSIVE and "zero spread" in row["note"], row["note"]


def test_a_relabelled_seed_is_counted_once() -> None:
    """Seed 2 is seed 0's run under another label: three labels, two runs."""
    data = _copied_records(fx.gradcam(1, n=3, sam_means=[0.45, 0.455, 0.45]), {2: 0})
    row = run("mf-gradcam-mnist-l2", data)
    assert row["verdict"] not in DECIDED and row["n"] == 2
    assert "seed 2 = seed 0" in row["note"]


def test_a_nudged_copy_is_refused_by_its_record() -> None:
    """Seed 2 is seed 0's run with its values nudged by 1e-6 (the numbers differ, the record
    is seed 0's): counted once. Runs without fingerprints are not counted and the row does
    not decide: nothing is read from the numbers."""
    data = _copied_records(fx.gradcam(1, n=3, sam_means=[0.45, 0.455, 0.45 + 1e-6]), {2: 0})
    row = run("mf-gradcam-mnist-l2", data)
    assert row["n"] == 2 and "seed 2 = seed 0" in row["note"]
    unproven = fx.gradcam(1, n=3)
    for d in unproven.values():
        if "per_seed_train" in d.rows.columns:
            d.rows["per_seed_train"] = d.rows["per_seed_train"].astype(str).str.replace(
                r"/[0-9a-f]{16}/[0-9a-f]{16}", "", regex=True)
    row = run("mf-gradcam-mnist-l2", unproven)
    assert row["verdict"] == INCONCLUSIVE and "no record proves seed(s) 0, 1, 2" in row["note"]


def test_one_signal_run_copied_three_times_is_one_run() -> None:
    """ls-signal-sam on one probe run copied under three seeds. Read naively: supported, n = 3."""
    one = fx.signal(False, seeds=1)["lesam/fig_signal"]
    rows = pd.concat([one.rows.assign(seed=k) for k in range(3)], ignore_index=True)
    row = run("ls-signal-sam", {"lesam/fig_signal": ItemData(one.item, rows)})
    assert row["verdict"] == INCONCLUSIVE and row["n"] == 1
    assert "refused as copies" in row["note"]


# -- a wrong design parameter ---------------------------------------------------------------------
def test_cnn_data_made_with_another_gain_are_not_the_registered_design() -> None:
    """mf-cnn data made with gain 0.05 against the registered 0.2. Read naively, the
    data's own gain decides, and a contradicted row becomes supported."""
    data = fx.cnn(False)
    data["minorfirst/cnn_synthetic"].params["gain"] = 0.05
    row = run("mf-cnn", data)
    assert row["verdict"] == INCONCLUSIVE and "not the registered design" in row["note"]
    assert "gain 0.05, registered 0.2" in row["value"]


# -- missing values -------------------------------------------------------------------------------
def test_nan_sharpness_below_eta_c_is_undetermined() -> None:
    """eos-flat-below with NaN sharpness below η_c. Read naively: contradicted."""
    data = fx.phase(False)
    df = _frame(data, "eos/fig_phase")
    df.loc[df["eta"] < df["eta_c"], "sharpness"] = float("nan")
    row = run("eos-flat-below", data)
    assert row["verdict"] == INCONCLUSIVE and "undetermined" in row["note"], row["note"]


def test_nan_test_error_is_undetermined() -> None:
    """eos-u-shape with NaN test errors. Read naively: contradicted."""
    data = fx.test_vs_lr(False)
    _frame(data, "eos/fig_test_vs_lr")["test_error"] = float("nan")
    row = run("eos-u-shape", data)
    assert row["verdict"] == INCONCLUSIVE and "undetermined" in row["note"]


def test_cost_counts_finite_rounds_only() -> None:
    """ls-cost with 2 finite rounds and 4 NaN. Read naively: supported, n = 6."""
    nan = float("nan")
    row = run("ls-cost", fx.cost(False, sam_rounds=[2.0, 2.05, nan, nan, nan, nan]))
    assert row["n"] == 2 and row["verdict"] == INCONCLUSIVE
    assert "4 of 6 rounds not finite" in row["note"]
    assert "replicates (registered): timing rounds of one process" in row["note"]


# -- designs that cannot decide -------------------------------------------------------------------
def test_a_u_shape_on_twenty_test_examples_cannot_be_separated() -> None:
    """A true U-shape measured on 20 test examples. Read naively: contradicted ("not separated"
    counted as "not U-shaped")."""
    data = fx.test_vs_lr(False)
    _frame(data, "eos/fig_test_vs_lr")["n_test"] = 20
    row = run("eos-u-shape", data)
    assert row["verdict"] == INCONCLUSIVE and "cannot separate" in row["note"], row["note"]


def test_a_separated_monotone_curve_is_not_a_u() -> None:
    """The counter-check: a curve the test set does separate, best at an end, counts against."""
    row = run("eos-u-shape", fx.test_vs_lr(True))
    assert row["verdict"] == CONTRADICTED and "not U-shaped" in row["value"]


def test_band_without_its_trajectories_is_not_met() -> None:
    """eos-band: 3 runs above η_c, 2 in the band, no trajectory. Read naively: supported."""
    rows = [{"setting": "A", "eta": e, "eta_c": 0.1, "status": "ok", "reason": "loss_goal",
             "sharpness": 2 / e * b, "l2": 5.0, "eta_s_over_2": b}
            for e, b in ((0.05, 0.4), (0.2, 1.01), (0.3, 0.99), (0.4, 1.4))]
    traj = [{"source": "flow", "setting": "A", "eta": 0.2, "step": 0, "sharpness": 1.0,
             "l2": 5.0}]
    row = run("eos-band", {"eos/fig_phase": fx.item("eos/fig_phase", rows),
                           "eos/fig_trajectories": fx.item("eos/fig_trajectories", traj)})
    assert row["verdict"] == INCONCLUSIVE and "second half is not met" in row["note"]


def test_width_only_ablation_with_the_other_factors_diverged() -> None:
    """eos-ablations: only width read; every run of the other factors diverged. Before:
    supported."""
    rows = fx.ablation_rows("width", 16, 0.1) + fx.ablation_rows("width", 64, 0.1, l2_shift=1)
    for k, factor in enumerate(("depth", "activation", "loss", "data_size")):
        for r in fx.ablation_rows(factor, k, 0.1):
            rows.append({**r, "status": "diverged", "reason": "nan"})
    row = run("eos-ablations", {"eos/fig_ablations": fx.item("eos/fig_ablations", rows)})
    assert row["verdict"] == INCONCLUSIVE and "required factors not varied" in row["note"]


def test_symmetry_with_one_rho_compares_nothing() -> None:
    """mf-l2-symmetry on a grid with one ρ. Read naively: supported, "0 of 0 points"."""
    data = fx.regimes(False)
    df = _frame(data, "minorfirst/l2_regimes")
    data["minorfirst/l2_regimes"].rows = df[df["rho"] == 0.5]
    row = run("mf-l2-symmetry", data)
    assert row["verdict"] == NOT_RUN and "nothing compared" in row["value"]


def test_a_smoke_run_never_refutes_a_paper() -> None:
    """The quick profile (a smoke test) with eos settings of 32–128 test examples. Before:
    eos-u-shape and eos-band contradicted (evidence)."""
    data = fx.test_vs_lr(True)
    _frame(data, "eos/fig_test_vs_lr")["n_test"] = 64
    u = run("eos-u-shape", data, "quick")
    band = run("eos-band", fx.phase(True), "quick")
    for row in (u, band):
        assert row["verdict"] == INCONCLUSIVE and row["level"] == "smoke", row["note"]
        assert "smoke run neither supports nor refutes" in row["note"]


# -- every predicate, fed copies and missing values -----------------------------------------------
def _nan_everywhere(data: dict[str, ItemData]) -> dict[str, ItemData]:
    """Every numeric cell NaN (labels kept): nothing was measured."""
    out = {}
    for name, d in data.items():
        rows = d.rows.copy()
        for col in rows.columns:
            if pd.api.types.is_float_dtype(rows[col]) and col not in ("eta", "eta_c", "alpha",
                                                                      "rho", "s", "step"):
                rows[col] = math.nan
        out[name] = ItemData(name, rows, dict(d.params))
    return out


#: claims whose fixture carries its measurement in float cells (NaN-able)
NAN_CASES = ("eos-flat-below", "eos-u-shape", "eos-measures", "eos-traj-monotone",
             "ls-signal-sam", "ls-signal-curvature", "mf-l1", "mf-l2-limit")


@pytest.mark.parametrize("cid", NAN_CASES)
def test_no_measurement_decides_nothing(cid: str) -> None:
    builder = fx.CASES[cid][0]
    try:
        row = run(cid, _nan_everywhere(builder(False)))
    except Exception as err:  # noqa: BLE001 - a clear refusal is as good as undecided
        assert "failed on the CSV" in str(err)
        return
    assert row["verdict"] not in DECIDED, (cid, row["value"], row["note"])
