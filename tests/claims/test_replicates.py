"""Replicates proven by their records (issue 48, point 3): a run's record carries the
fingerprints of its initial weights and data order, and two runs are independent only when
all of them differ."""

from __future__ import annotations

from sharpness.claims.independence import distinct_by_records
from sharpness.evidence.records import parse_train_records, train_records_text


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
