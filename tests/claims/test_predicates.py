"""Every predicate of the ledger on a fixture where its claim holds and one where it fails."""

from __future__ import annotations

import pytest

from sharpness.claims.ledger import evaluate_claim
from sharpness.evidence.stats import NOT_RUN
from tests.catalog import CLAIMS as ALL_CLAIMS
from tests.claims.fixtures import CASES

CLAIMS = {c.id: c for c in ALL_CLAIMS}


def test_every_predicate_has_a_fixture_pair() -> None:
    tested = {cid for cid, c in CLAIMS.items() if c.test is not None}
    assert tested == set(CASES), f"missing fixtures: {tested - set(CASES)}"


@pytest.mark.parametrize("cid", sorted(CASES))
@pytest.mark.parametrize("bad", [False, True], ids=["holds", "fails"])
def test_predicate_verdict(cid: str, bad: bool) -> None:
    build, good_verdict, bad_verdict = CASES[cid]
    claim = CLAIMS[cid]
    row = evaluate_claim(claim, build(bad), profile="paper")
    assert row["verdict"] == (bad_verdict if bad else good_verdict), row["value"]
    assert row["value"] and row["level"] in ("evidence", "weak", "smoke")


def test_missing_item_is_not_run_with_the_target() -> None:
    row = evaluate_claim(CLAIMS["eos-band"], {}, profile="quick")
    assert row["verdict"] == NOT_RUN and "figures/eos/fig_phase.csv" in row["note"]


def test_paper_only_claim_names_profile_and_cost() -> None:
    row = evaluate_claim(CLAIMS["ls-cifar100"], {}, profile="quick")
    assert row["verdict"] == NOT_RUN
    assert "paper profile" in row["note"] and "sharpness plan --claims" in row["note"]


def test_quick_profile_trained_rows_are_smoke_and_never_decide() -> None:
    """The quick profile is the smoke test: a trained-network row whose interval excludes 0
    is still `inconclusive`, level `smoke`, and says why."""
    from tests.claims.fixtures import acc_rows, item

    rows = acc_rows(True, group="cifar10_resnet18")
    data = {"lesam/table_cifar": item("lesam/table_cifar", rows)}
    paper = evaluate_claim(CLAIMS["ls-cifar10-sam"], data, "paper")
    quick = evaluate_claim(CLAIMS["ls-cifar10-sam"], data, "quick")
    assert paper["verdict"] == "supported" and paper["level"] == "evidence"
    assert quick["verdict"] == "inconclusive at this scale" and quick["level"] == "smoke"
    assert "never decide" in quick["note"]


def test_one_seed_is_inconclusive() -> None:
    from tests.claims.fixtures import item, trained

    rows = [{"label": "lesam", "group": "g", "per_seed": "0:70", "per_seed_train": trained(1)},
            {"label": "sam", "group": "g", "per_seed": "0:60", "per_seed_train": trained(1)}]
    row = evaluate_claim(CLAIMS["ls-imagenet-r50"],
                         {"lesam/table_imagenet": item("lesam/table_imagenet", rows)}, "paper")
    assert row["verdict"] == "inconclusive at this scale"
    assert "1 paired seed(s) < the 3 this profile requires" in row["note"]


def test_svhn_claim_reads_the_paper_profiles_row_label() -> None:
    """The paper profile labels its row "SVHN", the quick profile "SVHN stand-in"; the paper
    smoke run's ledger failed when the claim looked for the quick label only."""
    from tests.claims.fixtures import gradcam, item

    rows = gradcam(1)["minorfirst/gradcam_table"].rows.replace({"SVHN stand-in": "SVHN"})
    row = evaluate_claim(CLAIMS["mf-gradcam-svhn"],
                         {"minorfirst/gradcam_table": item("minorfirst/gradcam_table", rows)},
                         "paper")
    assert row["verdict"] == "supported", row["value"]


def test_comparison_quotes_means_over_the_seeds_it_pairs():
    """A row with two seeds against one with one: the difference pairs seed 0 only, so the
    quoted means are seed 0's (not 25.5 vs 22.3 beside a paired difference of 0), and the note
    says so."""
    import pandas as pd

    from sharpness.claims.lesam import compare
    from sharpness.claims.rules import rules_for
    from tests.claims.fixtures import trained

    rules = rules_for("paper")
    a = pd.Series({"label": "lesam", "per_seed": "0:22.3 1:28.7", "per_seed_train": trained(2)})
    b = pd.Series({"label": "no_rho_max", "per_seed": "0:22.3", "per_seed_train": trained(1)})
    result = compare(a, b, "default vs no_rho_max", rules)
    assert "lesam 22.30 vs no_rho_max 22.30" in result.value
    assert "paired on the 1 seed(s) both arms ran (2 vs 1)" in result.note
    same = compare(a, pd.Series({"label": "x", "per_seed": "0:20.0 1:25.0",
                                 "per_seed_train": trained(2)}), "x", rules)
    assert "lesam 25.50 vs x 22.50" in same.value and "paired on" not in same.note
