"""Statistics as strong as the claims (issue 48, point 4): a smallest effect of interest per
test over runs, Holm families over every tested row, checks on trained networks that state
n and their sanity exclusions, and a smoke profile whose rows about runs are all smoke."""

from __future__ import annotations

from sharpness.claims.ledger import adjust_multiplicity, evaluate_claim
from sharpness.claims.rules import rules_for
from sharpness.evidence.stats import CONTRADICTED, INCONCLUSIVE, SUPPORTED, threshold_test
from tests.catalog import CLAIMS as ALL_CLAIMS
from tests.claims import fixtures as fx
from tests.claims.fixtures_common import item, seeds, trained

CLAIMS = {c.id: c for c in ALL_CLAIMS}


def test_a_tight_cluster_just_past_the_bound_is_no_verdict() -> None:
    cluster = [10.5, 10.6, 10.7]
    assert threshold_test(cluster, 10.0, below=False, margin=0.0).verdict == SUPPORTED
    assert threshold_test(cluster, 10.0, below=False, margin=0.5).verdict == INCONCLUSIVE
    assert threshold_test([30.0, 40.0, 50.0], 10.0, below=False, margin=0.5).verdict == SUPPORTED
    assert threshold_test([5.0, 6.0, 7.0], 10.0, below=False, margin=0.5).verdict == CONTRADICTED
    for cid in ("ls-signal-sam", "ls-signal-curvature", "ls-signal-curvature-eval", "eos-band"):
        assert float(CLAIMS[cid].params["sesoi"]) > 0, cid  # registered with the claim


def test_holm_counts_the_rows_that_came_out_inconclusive() -> None:
    decided = {"id": "a", "paper": "p", "kind": "claim", "verdict": SUPPORTED, "p_raw": 0.03,
               "n": 5, "note": ""}
    alone = [dict(decided)]
    adjust_multiplicity(alone, 0.05)
    assert alone[0]["verdict"] == SUPPORTED and alone[0]["p_adj"] == 0.03
    tested = {"id": "b", "paper": "p", "kind": "claim", "verdict": INCONCLUSIVE, "p_raw": None,
              "n": 2, "note": ""}
    untested = {**tested, "id": "c", "n": None}
    family = [dict(decided), dict(tested), dict(untested)]
    adjust_multiplicity(family, 0.05)
    assert family[0]["p_adj"] == 0.06 and family[0]["verdict"] == INCONCLUSIVE
    assert family[1].get("p_adj") is None and family[2].get("p_adj") is None


def test_above_chance_states_n_and_its_sanity_exclusions() -> None:
    claim = CLAIMS["ls-above-chance"]
    good = evaluate_claim(claim, fx.cifar(False), "evidence", rules_for("evidence"))
    assert good["verdict"] == SUPPORTED and good["n"] >= 3 and "direction: above" in good["value"]
    assert good["p_raw"] is not None
    # runs that did not train: excluded and named, and the row no verdict
    rows = [{"group": "g", "label": lab, "optimizer": lab, "model": "m", "mean": 50.0,
             "per_seed": seeds([50, 51, 52]),
             "per_seed_train": trained(3, bad=(0, 1, 2))} for lab in ("sgd", "sam")]
    failed = {"lesam/table_cifar": item("lesam/table_cifar", rows)}
    row = evaluate_claim(claim, failed, "evidence", rules_for("evidence"))
    assert row["verdict"] == INCONCLUSIVE and row["level"] == "smoke" and row["n"] == 0
    assert "excluded by the sanity rule: sgd (g) seed 0 (train loss" in row["note"]
    # a tight cluster just above chance (10.3–10.5 %): above it, not by the registered 1 point
    rows = [{"group": "g", "label": lab, "optimizer": lab, "model": "m", "mean": 10.4,
             "per_seed": seeds([10.3, 10.4, 10.5]), "per_seed_train": trained(3)}
            for lab in ("sgd", "sam")]
    near = {"lesam/table_cifar": item("lesam/table_cifar", rows)}
    row = evaluate_claim(claim, near, "evidence", rules_for("evidence"))
    assert row["verdict"] == INCONCLUSIVE and "smallest effect of interest 1" in row["note"]


def test_a_smoke_profile_row_about_runs_is_smoke_whatever_its_verdict() -> None:
    claim = CLAIMS["ls-signal-sam"]
    undecided = evaluate_claim(claim, fx.signal(False, seeds=2), "quick", rules_for("quick"))
    assert undecided["verdict"] == INCONCLUSIVE and undecided["level"] == "smoke"
    same = evaluate_claim(claim, fx.signal(False, seeds=2), "evidence", rules_for("evidence"))
    assert same["verdict"] == INCONCLUSIVE and same["level"] == "weak"


def _domain(lesam: list[float], sam: list[float]) -> dict:
    rows = [{"label": "lesam", "per_seed": seeds(lesam), "per_seed_train": trained(len(lesam))},
            {"label": "sam", "per_seed": seeds(sam), "per_seed_train": trained(len(sam))}]
    return {"lesam/table_domain_gen": item("lesam/table_domain_gen", rows)}


def test_a_paired_tight_cluster_just_past_zero_is_no_verdict() -> None:
    """Paired differences +0.02, +0.03, +0.04 points (a tight cluster just past 0) against
    ls-domain's registered smallest effect of interest 0.1 points: no verdict; +1.0, +1.1,
    +1.2 are; −1.0, −1.1, −1.2 still contradict (against 0)."""
    claim = CLAIMS["ls-domain"]
    assert claim.params["rules"]["sesoi"] == 0.1  # registered with the claim
    tight = evaluate_claim(claim, _domain([30.02, 30.03, 30.04], [30, 30, 30]), "paper")
    assert tight["verdict"] == INCONCLUSIVE, tight["value"]
    assert "smallest effect of interest +0.1" in tight["note"]
    clear = evaluate_claim(claim, _domain([31, 31.1, 31.2], [30, 30, 30]), "paper")
    assert clear["verdict"] == SUPPORTED and clear["p_raw"] is not None
    worse = evaluate_claim(claim, _domain([29, 28.9, 28.8], [30, 30, 30]), "paper")
    assert worse["verdict"] == CONTRADICTED


def test_every_paired_row_registers_its_smallest_effect() -> None:
    """A paired row that registers no smallest effect of interest decides nothing; every
    trained-network row of claims.yaml registers one (or 0 with its reason)."""
    import dataclasses

    import pytest

    from sharpness.claims.rules import Arm, paired_verdict
    from sharpness.errors import SharpnessError
    from sharpness.evidence.records import TrainRecord
    from tests.claims.fixtures_common import draw

    recs = {s: TrainRecord(0.5, 0.85, 10, draw(s, "init"), draw(s, "order")) for s in range(3)}
    out = paired_verdict(Arm("a", {0: 35.0, 1: 36.0, 2: 35.5}, recs),
                         Arm("b", {0: 30.0, 1: 30.2, 2: 30.1}, recs), "acc", rules_for("paper"))
    assert out.verdict == INCONCLUSIVE and "no smallest effect of interest registered" in out.note
    for c in CLAIMS.values():
        if c.trained and c.id != "ls-sota-numbers":  # an equivalence to a reported number
            reg = c.params.get("rules") or {}
            assert reg.get("sesoi") is not None, c.id
            assert reg["sesoi"] > 0 or reg.get("sesoi_reason"), c.id
    with pytest.raises(SharpnessError, match="sesoi 0 needs its reason"):
        dataclasses.replace(rules_for("paper"), sesoi=0.0)


def test_init_moves_eta_c_states_its_n_and_interval() -> None:
    """eos-init-eta_c: one flow per α (no draw column) is n = 1 and no verdict; draws whose
    relative changes flip sign (−0.29, −0.23, +0.17: the three looks of issue 48) give an
    interval across the band and no verdict; draws that agree decide, with n and interval."""
    from sharpness.claims.rules import rules_for as rules

    claim = CLAIMS["eos-init-eta_c"]
    one = fx.init_draws(False, draws=1)
    one["eos/fig_ablations"].rows = one["eos/fig_ablations"].rows.drop(columns=["seed"])
    row = evaluate_claim(claim, one, "evidence", rules("evidence"))
    assert row["verdict"] == INCONCLUSIVE and row["n"] == 1, row["value"]
    assert "n = 1 draw(s), no interval" in row["value"] and "init draw(s) per α" in row["note"]
    flips = fx.init_draws(False)
    frame = flips["eos/fig_ablations"].rows
    for seed, change in enumerate((-0.29, -0.23, 0.17)):
        frame.loc[(frame["seed"] == seed) & (frame["value"] == 0.4), "eta_c"] = 0.1 * (1 + change)
    row = evaluate_claim(claim, flips, "evidence", rules("evidence"))
    assert row["verdict"] == INCONCLUSIVE and row["n"] == 3, row["value"]
    good = evaluate_claim(claim, fx.init_draws(False), "evidence", rules("evidence"))
    assert good["verdict"] == SUPPORTED and "t interval over n = 3 draws" in good["value"]
