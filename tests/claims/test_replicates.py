"""Replicates proven by their records (issue 48, point 3): a run's record carries the
fingerprints of its initial weights and data order, and two runs are independent only when
all of them differ."""

from __future__ import annotations

import pytest

from sharpness.claims.independence import distinct_by_records
from sharpness.evidence.records import parse_train_records, train_records_text
from sharpness.evidence.stats import INCONCLUSIVE, SUPPORTED


def test_a_table_cell_carries_each_runs_fingerprints() -> None:
    finals = [(0, {"final_train_loss": 0.5, "final_train_acc": 0.9, "num_classes": 10,
                   "init_sha256": "a" * 64, "order_sha256": "b" * 64}),
              (1, {"final_train_loss": 0.4, "final_train_acc": 0.9, "num_classes": 10})]
    cell = train_records_text(finals)
    assert cell == f"0:0.5000/0.9000/10/{'a' * 16}/{'b' * 16} 1:0.4000/0.9000/10"
    recs = parse_train_records(cell)
    assert recs[0].proven and recs[0].init == "a" * 16 and not recs[1].proven


def test_runs_count_as_independent_only_when_every_fingerprint_differs() -> None:
    runs = [(0, [("init", "i0"), ("order", "o0")]),
            (1, [("init", "i1"), ("order", "o1")]),
            (2, [("init", "i2"), ("order", "o0")]),   # seed 0's data order: not independent
            (3, [("init", "i1"), ("order", "o3")]),   # seed 1's initial weights
            (1, [("init", "i4"), ("order", "o4")])]   # a label used twice
    found = distinct_by_records(runs)
    assert found.kept == [0, 1] and found.copies == {2: 0, 3: 1} and found.relabelled == [1]


# -- the ledger's rows: only runs their records prove count ---------------------------------------
def _run(cid: str, data: dict) -> dict:
    from sharpness.claims.ledger import all_claims, evaluate_claim

    return evaluate_claim(next(c for c in all_claims() if c.id == cid), data, "paper")


def _series(data: dict, name: str, kind: str, label: int = 9) -> dict:
    """``data`` with seed 0's run of ``name`` added again under seed ``label``: as it is
    (``copied``), with its values nudged by 1e-9 (``nudged``) or its steps shifted by one
    (``shifted``); the copy carries seed 0's record (its run id and fingerprints), as a copy
    of a run does."""
    import pandas as pd

    from sharpness.claims.model import ItemData

    one = data[name]
    copy = one.rows[one.rows["seed"] == 0].copy()
    copy["seed"] = label
    if kind == "nudged":
        for col in copy.columns:
            if col not in ("seed", "step", "alpha") and pd.api.types.is_float_dtype(copy[col]):
                copy[col] = copy[col] + 1e-9
    if kind == "shifted":
        copy["step"] = copy["step"] + 1
    rows = pd.concat([one.rows, copy], ignore_index=True)
    return {**data, name: ItemData(one.item, rows, dict(one.params))}


COPIES = ("copied", "nudged", "shifted")
SERIES = [("ls-signal-sam", "lesam/fig_signal", lambda: _fx().signal(False, seeds=3)),
          ("mf-cnn", "minorfirst/cnn_synthetic", lambda: _fx().cnn(False))]


def _fx():  # noqa: ANN202 (the fixtures module, imported late: it builds frames)
    from tests.claims import fixtures

    return fixtures


@pytest.mark.parametrize("kind", COPIES)
@pytest.mark.parametrize(("cid", "name", "build"), SERIES, ids=[c for c, _, _ in SERIES])
def test_a_copy_of_a_run_under_a_new_seed_label_is_refused(cid, name, build, kind) -> None:
    data = build()
    honest = _run(cid, data)
    row = _run(cid, _series(data, name, kind))
    assert row["n"] == honest["n"], (kind, row["value"])  # the copy is not counted
    assert "refused as copies" in row["note"] and "seed 9 = seed 0" in row["note"], row["note"]


@pytest.mark.parametrize(("cid", "name", "build"), SERIES, ids=[c for c, _, _ in SERIES])
def test_distinct_numbers_without_a_record_prove_nothing(cid, name, build) -> None:
    """Runs whose numbers all differ but whose rows carry no fingerprint: the row does not
    decide, and names the runs no record proves (nothing is read from the numbers)."""
    data = build()
    assert _run(cid, data)["verdict"] == SUPPORTED
    frame = data[name].rows
    frame.loc[frame["seed"] == 1, ["init_sha256", "order_sha256"]] = ""
    row = _run(cid, data)
    assert row["verdict"] == INCONCLUSIVE, row["value"]
    assert "no record proves seed(s) 1 independent" in row["note"], row["note"]
    # its test is still stated, and its p-value stays in the Holm family: refusing proof
    # never eases another row's correction
    assert row["p_raw"] is not None
    gone = data[name].rows.drop(columns=["init_sha256", "order_sha256"])
    data[name].rows = gone
    row = _run(cid, data)
    assert row["verdict"] == INCONCLUSIVE and "no record proves seed(s) 0, 1, 2" in row["note"]


@pytest.mark.parametrize("kind", ("copied", "nudged"))
def test_a_paired_copy_is_refused_whatever_its_values(kind: str) -> None:
    """ls-domain with seed 3 a copy of seed 0's runs (its per_seed_train carries seed 0's
    fingerprints), its accuracies as they were or nudged by 1e-9: counted once."""
    fx = _fx()
    nudge = 1e-9 if kind == "nudged" else 0.0
    copy = fx.trained(1).replace("0:", "3:", 1)
    rows = [{"label": "lesam", "per_seed": f"0:30 1:31 2:30.5 3:{30 + nudge}",
             "per_seed_train": f"{fx.trained(3)} {copy}"},
            {"label": "sam", "per_seed": "0:26 1:27.2 2:26.8 3:26",
             "per_seed_train": f"{fx.trained(3)} {copy}"}]
    row = _run("ls-domain", {"lesam/table_domain_gen": fx.item("lesam/table_domain_gen", rows)})
    assert row["n"] == 3 and "seed 3 = seed 0" in row["note"], row["note"]


def test_a_paired_row_with_an_unproven_seed_does_not_decide() -> None:
    fx = _fx()
    rows = [{"label": "lesam", "per_seed": "0:30 1:31 2:30.5 3:30.2",
             "per_seed_train": fx.trained(3) + " 3:0.5000/0.8500/10"},
            {"label": "sam", "per_seed": "0:26 1:27.2 2:26.8 3:26.1",
             "per_seed_train": fx.trained(3) + " 3:0.5000/0.8500/10"}]
    row = _run("ls-domain", {"lesam/table_domain_gen": fx.item("lesam/table_domain_gen", rows)})
    assert row["verdict"] == INCONCLUSIVE and "no record proves seed(s) 3" in row["note"]


def test_dynamics_and_above_chance_count_only_proven_runs() -> None:
    fx = _fx()
    data = fx.dynamics(False)
    assert _run("ls-dynamics", data)["verdict"] == SUPPORTED
    data["lesam/fig_dynamics"].rows = data["lesam/fig_dynamics"].rows.drop(
        columns=["init_sha256", "order_sha256"])
    row = _run("ls-dynamics", data)
    assert row["verdict"] == INCONCLUSIVE and "no record proves" in row["note"], row["note"]
    table = fx.cifar(False)
    assert _run("ls-above-chance", table)["verdict"] == SUPPORTED
    df = table["lesam/table_cifar"].rows
    df["per_seed_train"] = df["per_seed_train"].str.replace(
        r"/[0-9a-f]{16}/[0-9a-f]{16}", "", regex=True)
    row = _run("ls-above-chance", table)
    assert row["verdict"] == INCONCLUSIVE and "no record proves" in row["note"], row["note"]


def test_a_run_id_joins_rows_to_one_record() -> None:
    """Two seed labels whose rows name one record (run id) are one run, whatever their
    fingerprints say; a label whose rows name two records proves nothing."""
    fx = _fx()
    data = fx.signal(False, seeds=3)
    frame = data["lesam/fig_signal"].rows
    one = frame["seed"] == 2
    frame.loc[one, "run_id"] = frame.loc[one, "optimizer"].map(
        {o: fx.recorded(0, o)["run_id"] for o in ("sam", "lesam")})
    row = _run("ls-signal-sam", data)
    assert "seed 2 = seed 0" in row["note"] and row["n"] == 2, row["note"]
    data = fx.signal(False, seeds=3)
    frame = data["lesam/fig_signal"].rows
    first = frame.index[frame["seed"] == 1][0]
    frame.loc[first, "run_id"] = "another-record"
    row = _run("ls-signal-sam", data)
    assert row["verdict"] == INCONCLUSIVE and "no record proves seed(s) 1" in row["note"]


def test_fig_flatness_rows_are_joined_to_their_records_by_run_id() -> None:
    """ls-flatness reads fig_flatness's ``run_id``: seed 2's LE-SAM row names seed 0's record
    (its own fingerprints otherwise): one run under two labels, counted once."""
    fx = _fx()
    data = fx.flatness(False)
    assert _run("ls-flatness", data)["verdict"] == SUPPORTED
    frame = data["lesam/fig_flatness"].rows
    assert frame["run_id"].notna().all()  # the fixture's rows name their records, as the CSV's
    frame.loc[(frame["seed"] == 2) & (frame["optimizer"] == "lesam"), "run_id"] = \
        fx.recorded(0, "lesam")["run_id"]
    row = _run("ls-flatness", data)
    assert row["verdict"] == INCONCLUSIVE and "seed 2 = seed 0" in row["note"], row["note"]
