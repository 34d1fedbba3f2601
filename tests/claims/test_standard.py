"""One standard for every decided row: Holm's correction over the interval-decided paper
claims, at least ``min_runs`` independent runs for a row about runs, count rules by a Wilson
interval, what would settle an inconclusive row, and a second look that lists what moved."""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path

import pytest

from sharpness.claims.compare import compare_ledgers, compare_text
from sharpness.claims.ledger import adjust_multiplicity, evaluate_claim, to_csv
from sharpness.claims.readme import read_ledger_csv
from sharpness.claims.rules import rules_for
from sharpness.evidence.stats import (
    CONTRADICTED,
    INCONCLUSIVE,
    SUPPORTED,
    count_rule,
    holm,
    t_interval,
    t_pvalue,
)
from sharpness.planning.settle import annotate_to_settle, settings_to_settle, spread_from_interval
from tests.catalog import CLAIMS as ALL_CLAIMS
from tests.claims import fixtures as fx
from tests.conftest import REPO

CLAIMS = {c.id: c for c in ALL_CLAIMS}


def test_holm_against_a_hand_checked_example() -> None:
    # sorted 0.005, 0.01, 0.03, 0.04: ×4 = 0.02, ×3 = 0.03, ×2 = 0.06, ×1 = 0.04 → 0.06
    # (monotone); a nan is not a member of the family
    adj = holm([0.01, 0.04, 0.03, float("nan"), 0.005])
    assert [round(x, 10) for x in adj[:3]] == [0.03, 0.06, 0.06] and math.isnan(adj[3])
    assert round(adj[4], 10) == 0.02
    assert holm([0.5, 0.9]) == [1.0, 1.0]


def test_t_pvalue_matches_the_interval() -> None:
    diffs = [0.4, 0.9, 1.3, 0.2, 0.8]
    p, iv = t_pvalue(diffs), t_interval(diffs, 0.95)
    assert (p < 0.05) == (iv.low > 0)
    # at the level where the interval just touches zero the p-value is 1 − level
    level = 1 - p
    assert abs(t_interval(diffs, level).low) < 1e-9


def _row(cid: str, verdict: str, p: float | None, kind: str = "claim") -> dict:
    return {"id": cid, "kind": kind, "verdict": verdict, "level": "evidence", "p_raw": p,
            "p_adj": None, "note": ""}


def test_verdicts_use_holm_adjusted_p_values() -> None:
    rows = [_row("a", SUPPORTED, 0.01), _row("b", SUPPORTED, 0.04),
            _row("c", CONTRADICTED, 0.005), _row("x", SUPPORTED, 0.001, kind="extension"),
            _row("d", INCONCLUSIVE, 0.3), _row("e", SUPPORTED, None)]
    adjust_multiplicity(rows, 0.05)
    by = {r["id"]: r for r in rows}
    assert by["a"]["p_adj"] == pytest.approx(0.03) and by["a"]["verdict"] == SUPPORTED
    # b: raw 0.04 < 0.05 but Holm 0.08 (0.04 × 2, monotone): no longer decided, and says why
    assert by["b"]["p_adj"] == pytest.approx(0.08) and by["b"]["verdict"] == INCONCLUSIVE
    assert "Holm-adjusted over the 4 tested claims" in by["b"]["note"]
    assert by["c"]["verdict"] == CONTRADICTED and by["x"]["p_adj"] is None  # not in family
    assert by["e"]["p_adj"] is None and by["e"]["verdict"] == SUPPORTED
    csv = to_csv(rows)
    assert "p_raw,p_adj" in csv.splitlines()[0]


def test_a_row_about_runs_needs_three_independent_runs() -> None:
    # the CNN alignment on 2 seeds, both in favour, under a share the count rule clears
    # with 2: the standard still keeps it inconclusive
    lax = replace(CLAIMS["mf-cnn"], params={**CLAIMS["mf-cnn"].params, "share": 0.1})
    assert evaluate_claim(lax, fx.cnn(False, seeds=3), "paper")["verdict"] == SUPPORTED
    row = evaluate_claim(lax, fx.cnn(False, seeds=2), "paper")
    assert row["verdict"] == INCONCLUSIVE and row["n"] == 2
    assert "< the 3 every decided row about trained networks needs" in row["note"]
    # the signal rows on one probe series (no seed column) are not decided either
    data = fx.signal(False, seeds=1)
    data["lesam/fig_signal"].rows = data["lesam/fig_signal"].rows.drop(columns="seed")
    for cid in ("ls-signal-sam", "ls-signal-curvature"):
        row = evaluate_claim(CLAIMS[cid], data, "paper")
        assert row["verdict"] == INCONCLUSIVE and row["n"] == 1, cid
    assert evaluate_claim(CLAIMS["ls-signal-sam"], fx.signal(False), "paper")["n"] == 3


def test_count_rule_is_the_exact_binomial_test() -> None:
    # 5/5 against 0.5: the exact one-sided p is 1/32 = 0.031 > 0.025, so inconclusive (the
    # Wilson interval once called it supported); 6/6 decides, 0/6 too the other way
    five = count_rule(5, 0, 0.5)
    assert five.verdict == INCONCLUSIVE and five.p_value == pytest.approx(0.0625)
    assert five.low == pytest.approx(0.025 ** (1 / 5))  # Clopper–Pearson's lower bound
    assert count_rule(6, 0, 0.5).verdict == SUPPORTED
    assert count_rule(0, 6, 0.5).verdict == CONTRADICTED
    nine = count_rule(7, 2, 0.5)
    assert nine.verdict == INCONCLUSIVE and nine.low < 0.5 < nine.high
    assert count_rule(0, 0, 0.5).p_value is None


def test_inconclusive_rows_say_what_would_settle_them() -> None:
    rules = rules_for("paper")
    # a paired row: seeds at the observed effect, read back from its interval
    iv = t_interval([0.5, -0.2, 0.9, 0.1, 0.3], 0.95)
    sd = spread_from_interval(iv.low, iv.high, iv.n, 0.95)
    assert sd == pytest.approx(float(__import__("numpy").std([0.5, -0.2, 0.9, 0.1, 0.3],
                                                                ddof=1)))
    rows = [{"id": "ls-cifar10-sam", "verdict": INCONCLUSIVE, "estimate": iv.estimate,
             "low": iv.low, "high": iv.high, "n": iv.n},
            {"id": "eos-norm-grows", "verdict": INCONCLUSIVE, "estimate": 7 / 9, "n": 9},
            {"id": "mf-cnn", "verdict": INCONCLUSIVE, "n": 1},
            {"id": "mf-l1", "verdict": SUPPORTED}]
    out = {r["id"]: r["to_settle"] for r in annotate_to_settle(rows, list(CLAIMS.values()),
                                                               rules)}
    assert "paired seeds at the observed effect +0.32" in out["ls-cifar10-sam"]
    need = settings_to_settle(7 / 9, 0.5, 0.95, 9)
    assert need is not None and need > 9 and f"about {need} settings" in out["eos-norm-grows"]
    assert "at least 3 independent runs (has 1)" in out["mf-cnn"]
    assert out["mf-l1"] == "" and "--price" in out["ls-cifar10-sam"]


def test_every_unsettled_row_says_how() -> None:
    """A null observed effect falls back on the paper's; a row not run names the runs it needs;
    a deterministic row says that more runs cannot settle it."""
    from sharpness.evidence.stats import NOT_RUN

    rules = rules_for("evidence")
    rows = [{"id": "ls-cifar10-sam", "verdict": INCONCLUSIVE, "estimate": 1e-15,
             "low": -2.27, "high": 2.27, "n": 5},
            {"id": "ls-cifar100", "verdict": NOT_RUN},
            {"id": "mf-linf-init", "verdict": INCONCLUSIVE}]
    out = {r["id"]: r["to_settle"] for r in annotate_to_settle(rows, list(CLAIMS.values()),
                                                               rules)}
    assert "more than 1000 paired seeds" in out["ls-cifar10-sam"]
    assert "paired seeds at the paper's effect 0.71" in out["ls-cifar10-sam"]
    assert "at least 3 independent runs (has 0)" in out["ls-cifar100"]
    assert "more runs cannot settle it" in out["mf-linf-init"]


def test_compare_lists_moves_with_adjusted_p_values(tmp_path: Path) -> None:
    old = tmp_path / "old.csv"  # a snapshot written before the n/p columns existed
    old.write_text("id,verdict,level\nls-robust,inconclusive at this scale,weak\n"
                   "eos-band,inconclusive at this scale,weak\nmf-l1,supported,evidence\n"
                   "ls-cost,supported,evidence\n")
    new = tmp_path / "new.csv"
    new.write_text("id,verdict,level,p_adj,n\nls-robust,contradicted,evidence,0.012,5\n"
                   "eos-band,inconclusive at this scale,weak,,9\nmf-l1,supported,evidence,,\n"
                   "ls-cost,contradicted,evidence,0.001,10\n")
    moved = compare_ledgers(read_ledger_csv(old), read_ledger_csv(new))
    assert [m["id"] for m in moved] == ["ls-robust", "ls-cost"]
    assert [m["reversal"] for m in moved] == [False, True]
    text = compare_text(moved, "old.csv", "new.csv")
    assert "1 reversed direction (supported ↔ contradicted): ls-cost" in text
    assert "| ls-robust | inconclusive at this scale | contradicted | weak | evidence | – | – " \
           "| – | 0.012 |" in text
    # each run's estimate and interval (a count rule's share and Wilson interval) beside it
    old.write_text("id,verdict,level,estimate,low,high\n"
                   "eos-band,inconclusive at this scale,weak,0.667,0.354,0.879\n")
    new.write_text("id,verdict,level,estimate,low,high,p_adj,n\n"
                   "eos-band,contradicted,evidence,0.111,0.0199,0.435,,9\n")
    (m,) = compare_ledgers(read_ledger_csv(old), read_ledger_csv(new))
    assert (m["estimate_a"], m["estimate_b"]) == ("+0.667 [+0.354, +0.879]",
                                                  "+0.111 [+0.0199, +0.435]")


def test_a_figure_on_one_run_is_not_stamped_evidence() -> None:
    from sharpness.claims.ledger import evidence_level

    one = fx.cnn(False, seeds=1)["minorfirst/cnn_synthetic"]
    assert evidence_level("minorfirst/cnn_synthetic", one)[0] == "weak"
    seven = fx.cnn(False, seeds=7)["minorfirst/cnn_synthetic"]
    assert evidence_level("minorfirst/cnn_synthetic", seven)[0] == "evidence"


def test_measures_row_says_which_quantity_to_settle() -> None:
    # every measure lower above η_c in 7/7 settings but one (trace) in 5/7: inconclusive, and
    # what would settle it is read at the trace's share
    data = fx.measures(False)
    df = data["eos/fig_measures"].rows
    bad = (df["setting"].isin(["A", "B"])) & (df["eta"] > df["eta_c"])
    df.loc[bad, "hessian_trace"] = 50.0
    rules = rules_for("paper")
    row = evaluate_claim(CLAIMS["eos-measures"], data, "paper")
    assert row["verdict"] == INCONCLUSIVE and row["estimate"] == pytest.approx(5 / 7)
    (out,) = annotate_to_settle([row], list(CLAIMS.values()), rules)
    assert "settings at the observed share 0.71" in out["to_settle"]


def test_price_names_the_profile_and_its_hours() -> None:
    """The planner prices what would settle a row: the smallest profile with the seeds (or the
    paper profile with them added), GPU-hours from the analytic estimate there."""
    from sharpness.planning.settle import load_configs, price_claim

    configs = load_configs(REPO / "workflow" / "config")
    paper = {"paper": configs["paper"]}
    text = price_claim(CLAIMS["ls-imagenet-r50"], 40, paper)
    assert text.startswith("paper profile with 40 seeds (has ") and "GPU-h for its 80 runs" \
        in text and "analytic" in text
    assert price_claim(CLAIMS["mf-cnn"], 5, configs) == \
        "no priced run in any profile (CPU only)"


@pytest.mark.parametrize("cid", sorted(c.id for c in CLAIMS.values() if c.runs))
def test_every_decided_row_about_runs_has_a_p_value(cid: str) -> None:
    """A row about runs (seeds, settings) decides by a test with a p-value, so Holm sees it; a
    row with no runs is a deterministic computation decided by its registered tolerance."""
    from tests.claims.fixtures import CASES

    build = CASES[cid][0]
    for bad in (False, True):
        row = evaluate_claim(CLAIMS[cid], build(bad), "paper")
        if row["verdict"] in (SUPPORTED, CONTRADICTED):
            p = row["p_raw"]
            assert p is not None and math.isfinite(float(p)) and 0 <= float(p) <= 1, (cid, bad)


def test_a_threshold_over_runs_is_a_t_test_on_the_log_scale() -> None:
    from sharpness.claims.rules import row_pvalue
    from sharpness.evidence.stats import threshold_test

    # medians 30, 40, 50 against 10: log ratios 1.10, 1.39, 1.61 -> t interval above 0;
    # 20, 40, 80 spread too far for three runs (the interval reaches below 0)
    above = threshold_test([30.0, 40.0, 50.0], 10.0, below=False, margin=0.0)
    assert above.verdict == SUPPORTED and above.p_value == pytest.approx(
        t_pvalue([math.log(3), math.log(4), math.log(5)]))
    assert threshold_test([20.0, 40.0, 80.0], 10.0, below=False, margin=0.0).verdict == INCONCLUSIVE
    # one run on the wrong side keeps it open; two runs never decide; NaN is not a run
    assert threshold_test([2.2, 0.96, 1.8], 1.0, below=True, margin=0.0).verdict == INCONCLUSIVE
    assert threshold_test([0.1, 0.2], 1.0, below=True, margin=0.0).verdict == INCONCLUSIVE
    nan = threshold_test([0.1, 0.2, float("nan")], 1.0, below=True, margin=0.0)
    assert nan.verdict == INCONCLUSIVE and nan.interval.n == 2
    below = threshold_test([0.1, 0.2, 0.15], 1.0, below=True, margin=0.0)
    assert below.verdict == SUPPORTED
    assert threshold_test([5.0, 6.0, 7.0], 1.0, below=True, margin=0.0).verdict == CONTRADICTED
    # several tests at once: supported takes the largest p, contradicted the smallest
    # contradicting one (Bonferroni within the row)
    assert row_pvalue([above, below]) == max(above.p_value, below.p_value)
    wrong = threshold_test([5.0, 6.0, 7.0], 1.0, below=True, margin=0.0)
    assert row_pvalue([above, wrong]) == pytest.approx(min(1.0, 2 * wrong.p_value))
