"""The paper-scale lesam predicates beyond their fixture pair (tests/claims/fixtures.py
CASES): a group not run keeps a gain open, ResNet-101 reads its own group, and the reported
numbers are compared within the tolerance registered in claims.yaml."""

from __future__ import annotations

import pytest

from sharpness.claims.ledger import evaluate_claim
from sharpness.evidence.stats import CONTRADICTED, INCONCLUSIVE, SUPPORTED
from tests.catalog import CLAIMS as ALL_CLAIMS
from tests.claims.fixtures import acc_rows, cifar_groups, item, sota

CLAIMS = {c.id: c for c in ALL_CLAIMS}


def _verdict(cid: str, data: dict) -> dict:
    return evaluate_claim(CLAIMS[cid], data, profile="paper")


SPLIT = {"ls-cifar100": "cifar100_resnet18", "ls-cifar100-wrn": "cifar100_wrn",
         "ls-cifar100-pyramid": "cifar100_pyramid", "ls-pyramidnet": "cifar10_pyramid"}


@pytest.mark.parametrize("cid", sorted(SPLIT))
def test_each_split_gain_reads_its_own_network_only(cid):
    """ls-cifar100 and ls-pyramidnet are split by network and data set: each row is decided
    by its own group, whatever the others show, and its group not run keeps it open."""
    own = SPLIT[cid]
    others = tuple(g for g in SPLIT.values() if g != own)
    row = _verdict(cid, cifar_groups(others, bad=False))
    assert row["verdict"] == INCONCLUSIVE and own in row["note"]
    assert _verdict(cid, cifar_groups((own,), bad=False))["verdict"] == SUPPORTED
    assert _verdict(cid, cifar_groups((own,), bad=True))["verdict"] == CONTRADICTED
    # another network refuting the gain does not move this row
    assert _verdict(cid, cifar_groups((own, others[0]), bad=True))["verdict"] == SUPPORTED


def test_imagenet_r101_reads_its_own_group():
    def table(r50_better: bool) -> dict:
        rows = acc_rows(r50_better, group="imagenet_resnet50") + \
            acc_rows(not r50_better, group="imagenet_resnet101")
        return {"lesam/table_imagenet": item("lesam/table_imagenet", rows)}
    assert _verdict("ls-imagenet-r101", table(False))["verdict"] == SUPPORTED
    assert _verdict("ls-imagenet-r101", table(True))["verdict"] == CONTRADICTED


def test_sota_numbers_within_the_registered_tolerance():
    assert CLAIMS["ls-sota-numbers"].params == {"tolerance_points": 0.5}
    held = _verdict("ls-sota-numbers", sota(False))
    assert held["verdict"] == SUPPORTED and "cifar10_wrn" in held["value"]  # the best network
    assert _verdict("ls-sota-numbers", sota(False, n=1))["verdict"] == INCONCLUSIVE
    wider = CLAIMS["ls-sota-numbers"].test(sota(True), rules=__import__(
        "sharpness.claims.rules", fromlist=["rules_for"]).rules_for("paper"),
        params={"tolerance_points": 3.0})
    assert wider.verdict == SUPPORTED  # 2.5 points off: inside a 3-point tolerance only
