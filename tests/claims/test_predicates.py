"""Every predicate of the ledger on a fixture where its claim holds and one where it fails."""

from __future__ import annotations

import pytest

from sharpness.claims.ledger import all_claims, evaluate_claim
from sharpness.claims.stats import NOT_RUN
from tests.claims.fixtures import CASES

CLAIMS = {c.id: c for c in all_claims()}


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
    assert "paper profile" in row["note"] and "GPU-h" in row["note"]


def test_near_chance_comparison_is_smoke() -> None:
    from tests.claims.fixtures import acc_rows, item

    rows = acc_rows(True, level=12.0, group="cifar10_resnet18")
    row = evaluate_claim(CLAIMS["ls-cifar10-sam"],
                         {"lesam/table_cifar": item("lesam/table_cifar", rows)}, "quick")
    assert row["level"] == "smoke" and "twice chance" in row["note"]


def test_one_seed_is_inconclusive() -> None:
    from tests.claims.fixtures import item

    rows = [{"label": "lesam", "group": "g", "per_seed": "0:70"},
            {"label": "sam", "group": "g", "per_seed": "0:60"}]
    row = evaluate_claim(CLAIMS["ls-imagenet-r50"],
                         {"lesam/table_imagenet": item("lesam/table_imagenet", rows)}, "quick")
    assert row["verdict"] == "inconclusive at this scale" and "one seed" in row["note"]


def test_svhn_claim_reads_the_paper_profiles_row_label() -> None:
    """The paper profile labels its row "SVHN", the quick profile "SVHN stand-in"; the paper
    smoke run's ledger failed when the claim looked for the quick label only."""
    from tests.claims.fixtures import gradcam, item

    rows = gradcam(1)["minorfirst/gradcam_table"].rows.replace({"SVHN stand-in": "SVHN"})
    row = evaluate_claim(CLAIMS["mf-gradcam-svhn"],
                         {"minorfirst/gradcam_table": item("minorfirst/gradcam_table", rows)},
                         "paper")
    assert row["verdict"] == "supported", row["value"]
