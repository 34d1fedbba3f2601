"""The eos headline claims are decided on the FCN and CNN settings and their `-all` extension
rows on every setting: the predicates read the rows the plan buys, and a claim that counts
settings is called settled only when its settings can decide it."""

from __future__ import annotations

import copy

import pandas as pd
import pytest

from sharpness.claims.eos_common import by_network, network_of
from sharpness.claims.model import ItemData
from sharpness.claims.rules import rules_for
from sharpness.evidence.stats import CONTRADICTED, INCONCLUSIVE, SUPPORTED
from sharpness.planning import claims_plan as cp
from sharpness.planning.units import claim_units, fewest_to_support
from tests.catalog import CLAIMS as ALL_CLAIMS
from tests.claims import fixtures as fx

CLAIMS = {c.id: c for c in ALL_CLAIMS}
DEEP = ("resnet_mse", "resnet_ce", "vit_mse", "vit_ce")
HEADLINE = ("eos-band", "eos-flat-below", "eos-norm-grows", "eos-u-shape", "eos-traj-monotone")


@pytest.fixture(scope="module")
def paper(repo):
    from sharpness.config.profiles import load_profile

    config = load_profile([str(repo / "workflow/config/paper.yaml")], None)
    claims = [CLAIMS[c] for c in HEADLINE] + [CLAIMS[f"{c}-all"] for c in HEADLINE]
    return config, cp.claim_runs(claims, config)


@pytest.mark.parametrize("label, net", [("MNIST-5k FCN MSE", "FCN"), ("CIFAR10-64 CNN CE", "CNN"),
                                        ("CIFAR10-32 ResNet-18/16 MSE", "ResNet"),
                                        ("CIFAR10-5k ViT-small CE", "ViT"), ("A", "")])
def test_network_of_a_setting_label(label, net):
    assert network_of(label) == net


def _relabel(bad_deep: bool) -> dict[str, ItemData]:
    """The phase fixture's 7 settings as FCN networks, plus 7 ResNet settings that hold
    (``bad_deep`` False) or refute the claim (True)."""
    good, bad = fx.phase(False)["eos/fig_phase"].rows, fx.phase(True)["eos/fig_phase"].rows
    deep = (bad if bad_deep else good).copy()
    deep["setting"] = deep["setting"].map(lambda s: f"{s} ResNet-18")
    small = good.copy()
    small["setting"] = small["setting"].map(lambda s: f"{s} FCN")
    return {"eos/fig_phase": ItemData("eos/fig_phase", pd.concat([small, deep]))}


@pytest.mark.parametrize("cid", ["eos-flat-below", "eos-norm-grows"])
def test_headline_reads_the_small_settings_and_the_extension_all(cid):
    """ResNet settings that refute the claim leave the headline supported and make the
    extension row over every setting fail; the filter drops exactly the ResNet rows."""
    data = _relabel(bad_deep=True)
    rules = rules_for("paper")
    head, ext = CLAIMS[cid], CLAIMS[f"{cid}-all"]
    assert head.params["leave_out"] == ["ResNet", "ViT"] and ext.kind == "extension"
    assert head.call(data, rules).verdict == SUPPORTED
    assert ext.call(data, rules).verdict != SUPPORTED
    kept = by_network(data, head.params)["eos/fig_phase"].rows
    assert len(kept) == len(data["eos/fig_phase"].rows) // 2
    assert not kept["setting"].str.contains("ResNet").any()
    assert ext.call(_relabel(bad_deep=False), rules).verdict == SUPPORTED
    assert ext.call(data, rules).verdict in (CONTRADICTED, INCONCLUSIVE)


def test_the_plan_buys_the_small_settings_for_the_headline(paper):
    config, needs = paper
    for cid in HEADLINE:
        runs = {r for p, r in needs[cid].runs}
        every = {r for p, r in needs[f"{cid}-all"].runs}
        assert runs < every, cid
        assert not {r for r in runs if "resnet" in r or "vit" in r}, cid
        assert every - runs == {f"setting/cifar5k_{n}" for n in DEEP}, cid
    assert len(needs["eos-band"].runs) == 11  # ten FCN/CNN settings and CIFAR-10 50k FCN MSE


def test_too_few_settings_is_not_settled(paper):
    """6 of 6 is the fewest that clears a share of 0.5 at 95 %; u-shape counts MSE settings
    only and traj-monotone fig_trajectories' settings: with one fewer each is not settled."""
    config, needs = paper
    assert fewest_to_support(0.5, 0.95) == 6
    u = claim_units({"figure": "fig_test_vs_lr", "loss": "mse"}, CLAIMS["eos-u-shape"].params,
                    config, level=0.95, min_runs=3)
    assert u is not None and u.decidable and len(u.settings) == 6
    fewer = copy.deepcopy(config)
    fewer["eos"]["figures"]["fig_test_vs_lr"].remove("cifar_full_fcn_mse")
    u = claim_units({"figure": "fig_test_vs_lr", "loss": "mse"}, CLAIMS["eos-u-shape"].params,
                    fewer, level=0.95, min_runs=3)
    assert u is not None and not u.decidable and "5 settings counted" in u.why
    d = cp.claim_design(cp.claim_runs([CLAIMS["eos-u-shape"]], fewer)["eos-u-shape"], fewer)
    assert not d.settled and "too few settings" in d.basis
    assert cp.claim_design(needs["eos-u-shape"], config).settled
