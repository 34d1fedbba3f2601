"""The plan's overlay builds exactly the runs the plan priced: no whole table for a claim that
reads two of its optimizers, and each optimizer at the seeds its claims were designed for."""

from __future__ import annotations

import pytest

from sharpness.claims.ledger import all_claims
from sharpness.lesam.experiments import training_runs
from sharpness.lesam.steps import item_groups
from sharpness.mappings import deep_merge  # as snakemake --configfile merges
from sharpness.planning import claims_plan as cp
from sharpness.planning import output as plan_output


@pytest.fixture(scope="module")
def config(repo):
    from sharpness.config.profiles import load_profile

    return load_profile([str(repo / "workflow/config/paper.yaml")], None)


def test_overlay_runs_equal_the_planned_runs(config):
    # a paper-scale pilot's spread that asks ls-robust (SAM and LE-SAM, +2.47 points) for more
    # seeds than ls-flatness (SGD too, no reported effect: the profile's 3 seeds)
    row = {"id": "ls-robust", "value": "+1.0 [-1.0, +3.0] (95% CI, n=5 seeds) points",
           "estimate": 1.0, "low": -1.0, "high": 3.0}
    claims = [c for c in all_claims() if c.id in ("ls-robust", "ls-flatness", "ls-ablation")]
    designed = cp.designed_needs(claims, config, ledger={"ls-robust": row},
                                 ledger_profile="paper")
    n = designed[1]["ls-robust"].seeds
    assert n is not None and n > 3
    prices = {r: 1.0 for need in designed[0].values() for r in need.runs}
    plan = cp.make_plan(claims, config, 1e6, prices, dict.fromkeys(prices, "test"),
                        pricing="test", designed=designed)
    assert all(ln.planned for ln in plan.lines)
    record = plan.record(["paper.yaml"])
    assert record["claims"]["ls-robust"]["reads"] == {
        "lesam:cifar10_resnet18/lesam": n, "lesam:cifar10_resnet18/sam": n}
    overlay = plan_output.overlay(record, "plan.json")
    merged = deep_merge(config["lesam"], overlay["lesam"])
    items = {t.removeprefix("figures/lesam/").removesuffix(".csv") for t in plan.targets
             if t.startswith("figures/lesam/")}
    read = {g for item in items for g in item_groups(merged, item)}
    built = {rid for rid, r in training_runs(merged).items() if r["group"] in read}
    priced = {rid for paper, rid in plan.runs if paper == "lesam" and "/" not in rid}
    assert built == priced
    # SAM and LE-SAM at ls-robust's seeds, SGD at ls-flatness's 3; no other optimizer
    labels = {(r["label"], r["seed"]) for rid, r in training_runs(merged).items()
              if r["group"] == "cifar10_resnet18"}
    assert {lab for lab, _ in labels} == {"sgd", "sam", "lesam"}
    assert sum(1 for lab, _ in labels if lab == "sam") == n
    assert sum(1 for lab, _ in labels if lab == "sgd") == 3
    # fig_ablation's reference group keeps only the LE-SAM runs it reads
    assert {r["label"] for r in training_runs(merged).values()
            if r["group"] == "cifar100_resnet18"} == {"lesam"}


def test_deterministic_runs_settle_only_with_the_standards_independent_runs(config):
    """Full-batch runs from a fixed init are deterministic, yet a claim on fewer settings than
    the ledger's ``min_runs`` is not settled."""
    from dataclasses import replace

    from sharpness.claims.rules import rules_for

    claim = next(c for c in all_claims() if c.id == "eos-measures")
    needs = cp.claim_runs([claim], config)["eos-measures"]
    assert needs.replicates == "deterministic"
    need = rules_for("paper").min_runs
    assert cp.claim_design(needs, config).settled is (len(needs.runs) >= need)
    few = replace(needs, runs=frozenset(sorted(needs.runs)[:need - 1]))
    design = cp.claim_design(few, config)
    assert not design.settled and design.power == 0 and "independent runs" in design.basis


def test_a_selector_reads_every_optimizer_but_those_it_excludes(config):
    from sharpness.planning.power import reads_run

    assert reads_run("ls-cifar10-best", "cifar10_wrn", "esam")
    assert not reads_run("ls-cifar10-best", "cifar10_wrn", "sgd")
    assert not reads_run("ls-cifar10-best", "cifar10_wrn", "lesam_readme_rmax999")
    assert not reads_run("ls-cifar10-best", "ablation", "no_decay")
    assert reads_run("ls-domain", "domain_vlcs_SUN09", "lesam")
    assert not reads_run("ls-domain", "domain_vlcs_SUN09", "sgd")
    assert reads_run("mf-l1", "anything", "any")  # a claim reads.yaml does not restrict
