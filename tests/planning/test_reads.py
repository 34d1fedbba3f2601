"""A claim buys what its predicate reads: for every claim, the lesam runs the planner prices are
the runs its selectors in ``reads.yaml`` name, the selectors name runs the profiles have, and
where a predicate registers or fixes the labels it reads, the selectors follow it."""

from __future__ import annotations

import pytest

from sharpness.claims.lesam import BEST_GROUPS
from sharpness.lesam.experiments import training_runs
from sharpness.planning import claims_plan as cp
from sharpness.planning.reads import reads, run_labels, selector_group, selector_labels
from tests.catalog import CLAIMS as ALL_CLAIMS

CLAIMS = [c for c in ALL_CLAIMS if c.kind != "check"]


@pytest.fixture(scope="module")
def paper(repo):
    from sharpness.config.profiles import load_profile

    config = load_profile([str(repo / "workflow/config/paper.yaml")], None)
    return config, run_labels(config), cp.claim_runs(CLAIMS, config)


def _priced(needs, labels, cid):
    return {labels[r] for p, r in needs[cid].runs if p == "lesam" and r in labels}


def _selected(claim, labels):
    """The (group, label) pairs of the profile that the claim's selectors name."""
    out = set()
    for sel in reads()[claim.id]["runs"]:
        named = selector_labels(sel, claim.params)
        out |= {(g, lab) for g, lab in labels.values()
                if selector_group(g) == sel["group"] and (named is None or lab in named)
                and lab not in sel.get("exclude", ())}
    return out


@pytest.mark.parametrize("claim", CLAIMS, ids=[c.id for c in CLAIMS])
def test_priced_runs_are_the_runs_the_selectors_name(paper, claim):
    config, labels, needs = paper
    priced = _priced(needs, labels, claim.id)
    if not priced:
        return  # no labelled lesam run: CPU-only, eos, gradcam or timing claims
    assert "runs" in reads().get(claim.id, {}), \
        f"{claim.id} prices lesam runs but reads.yaml names none: it would buy whole items"
    selected = _selected(claim, labels)
    assert selected, f"{claim.id}: its selectors name no run of the paper profile"
    # the runs fine-tuned from are bought too (they are needed to make the read runs)
    deps = {labels[d] for rid, r in training_runs(config["lesam"]).items()
            if (r["group"], r["label"]) in selected for d in r["depends"]}
    assert priced - deps == selected


@pytest.mark.parametrize("cid", sorted(reads()))
def test_no_selector_names_a_run_the_profile_lacks(paper, cid):
    _, labels, _ = paper
    groups = {}
    for g, lab in labels.values():
        groups.setdefault(selector_group(g), set()).add(lab)
    for sel in reads()[cid].get("runs") or []:
        assert sel["group"] in groups, f"{cid}: no group {sel['group']!r} in the profile"
        missing = set(sel.get("labels", ())) - groups[sel["group"]]
        assert not missing, f"{cid}: labels {sorted(missing)} not in group {sel['group']}"


def test_ablation_buys_its_registered_variants_not_the_sigma_grid(paper):
    config, labels, needs = paper
    claim = next(c for c in CLAIMS if c.id == "ls-ablation")
    in_profile = {lab for g, lab in labels.values() if g == "ablation"}
    bought = {lab for g, lab in _priced(needs, labels, "ls-ablation") if g == "ablation"}
    assert bought == in_profile & {str(v) for v in claim.params["variants"]}
    assert not {lab for lab in bought if lab.startswith("sigma_")}
    spec = config["lesam"]["items"]["fig_ablation"]  # the default LE-SAM it compares against
    assert (spec["reference_group"], spec["reference_label"]) in \
        _priced(needs, labels, "ls-ablation")


def test_longtail_buys_glmc_sam_and_lesam_per_factor_not_glmc_sgd(paper):
    _, labels, needs = paper
    bought = _priced(needs, labels, "ls-longtail")
    factors = {g for g, _ in labels.values() if g.startswith("glmc:")}
    assert len(factors) >= 2 and bought == {(f, lab) for f in factors for lab in ("sam", "lesam")}


def test_best_variant_buys_every_rival_the_predicate_compares(paper):
    # best_variant compares LE-SAM with every label of BEST_GROUPS but SGD and LE-SAM variants
    _, labels, needs = paper
    rivals = {(g, lab) for g, lab in labels.values() if g in BEST_GROUPS
              and (lab == "lesam" or (lab != "sgd" and not lab.startswith("lesam")))}
    assert _priced(needs, labels, "ls-cifar10-best") == rivals
