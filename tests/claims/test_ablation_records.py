"""eos ablation values proven distinct by their run records, never by their numbers (issue
48, point 3): two values are the same runs only when their rows name the same run records
(``run_id``), and a value whose rows name none keeps the row from deciding."""

from __future__ import annotations

from typing import Any

from sharpness.claims.ledger import all_claims, evaluate_claim
from sharpness.evidence.stats import INCONCLUSIVE, SUPPORTED
from tests.claims import fixtures as fx

PAPER_VALUES = (("width", 16), ("width", 64), ("depth", 1), ("depth", 3), ("activation", "relu"),
                ("loss", "ce"), ("data_size", 64))


def _run(cid: str, rows: list[dict[str, Any]]) -> dict[str, Any]:
    claim = next(c for c in all_claims() if c.id == cid)
    return evaluate_claim(claim, {"eos/fig_ablations": fx.item("eos/fig_ablations", rows)},
                          "paper")


def _paper_rows(**extra: dict[str, Any]) -> list[dict[str, Any]]:
    """Seven values of the paper's factors, each its own runs, each holding the trade-off
    (7/7 clears the registered share 0.5 by the exact interval); ``extra[key]``: keyword
    arguments of :func:`fx.ablation_rows` for the value ``key`` (``"width=64"``)."""
    rows: list[dict[str, Any]] = []
    for k, (factor, value) in enumerate(PAPER_VALUES):
        kw = {"l2_shift": 0.1 * k, **extra.get(f"{factor}={value}", {})}
        rows += fx.ablation_rows(factor, value, 0.1, **kw)
    return rows


def test_distinct_values_with_their_own_records_decide() -> None:
    row = _run("eos-ablations", _paper_rows())
    assert row["verdict"] == SUPPORTED and "7/7 distinct" in row["value"], row


def test_a_copied_value_relabelled_with_nudged_numbers_is_counted_once() -> None:
    """depth=3's rows copy depth=1's runs (their records), relabelled, every number nudged by
    a tiny amount: a fingerprint of the numbers would call them distinct; the records do not."""
    rows = _paper_rows()
    copy = [{**r, "value": 3, "l2": r["l2"] * (1 + 1e-7), "sharpness": r["sharpness"] + 1e-9}
            for r in rows if r["factor"] == "depth" and r["value"] == 1]
    rows = [r for r in rows if not (r["factor"] == "depth" and r["value"] == 3)] + copy
    row = _run("eos-ablations", rows)
    assert "6/6 distinct" in row["value"], row["value"]
    assert "depth=3 (same runs as depth=1)" in row["note"]


def test_distinct_records_with_identical_numbers_count_apart() -> None:
    """width=64's numbers equal width=16's, to the last digit, but its rows name other run
    records: two distinct values (a fingerprint of the numbers would call them one)."""
    rows = _paper_rows(**{"width=64": {"l2_shift": 0.0}})
    same = [r for r in rows if r["factor"] == "width"]
    assert [(r["l2"], r["sharpness"], r["eta"]) for r in same[:2]] == \
        [(r["l2"], r["sharpness"], r["eta"]) for r in same[2:]]
    row = _run("eos-ablations", rows)
    assert row["verdict"] == SUPPORTED and "7/7 distinct" in row["value"], row["value"]
    assert "same runs" not in row["note"]


def test_a_value_whose_rows_name_no_record_is_unproven() -> None:
    rows = _paper_rows(**{"loss=ce": {"proven": False}})
    row = _run("eos-ablations", rows)
    assert row["verdict"] == INCONCLUSIVE
    assert "7/7 distinct" in row["value"]  # read and stated, with the count's p-value
    assert row["p_raw"] is not None
    assert "independence not proven" in row["note"] and "loss=ce" in row["note"]
    # a figure made before its rows carried run_id: every value unproven
    bare = [{k: v for k, v in r.items() if k != "run_id"} for r in _paper_rows()]
    assert _run("eos-ablations", bare)["verdict"] == INCONCLUSIVE


def test_an_extension_value_sharing_a_paper_values_records_is_not_counted() -> None:
    rows = _paper_rows() + fx.ablation_rows("parametrization", "SP", 0.1, runs="width=64") \
        + fx.ablation_rows("loss_goal", 0.05, 0.1, l2_shift=3)
    row = _run("eos-ablations-ext", rows)
    assert "1/1 distinct" in row["value"], row["value"]
    assert "parametrization=SP (same runs as width=64)" in row["note"]
