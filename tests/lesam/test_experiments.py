"""The config expands into the runs the items need; every run config is valid."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from sharpness.lesam.experiments import RUNS_DIR, glmc_runs, signal_runs, training_runs
from sharpness.lesam.steps import EVAL_ITEMS, eval_runs, step_section
from sharpness.optim.spec import optimizer_specs
from sharpness.train import validate_config

ROOT = Path(__file__).resolve().parents[2]


def _entries(spec: dict) -> int:
    """The runs a group (or the glmc/signal section) of the config asks for, counted from the
    config itself: each optimizer entry at its own seeds (an entry's ``seeds`` over the
    group's), times the imbalance factors where the section has them."""
    count = sum(len(e["seeds"]) if isinstance(e, dict) and "seeds" in e else len(spec["seeds"])
                for e in spec["optimizers"])
    return count * len(spec.get("imbalance_factors", [None]))


@pytest.fixture(params=["quick", "paper"])
def section(request):
    return yaml.safe_load((ROOT / f"workflow/config/{request.param}.yaml").read_text())["lesam"]


def test_every_run_config_is_valid(section):
    runs = training_runs(section)
    assert runs
    for rid, run in runs.items():
        assert rid == f"{run['group']}-{run['label']}-s{run['seed']}"
        validate_config(run["config"])
    for run in [*glmc_runs(section).values(), *signal_runs(section).values()]:
        validate_config({k: v for k, v in run["config"].items() if k != "glmc"})


def test_items_reference_existing_groups(section):
    groups = {r["group"] for r in training_runs(section).values()}
    for item, spec in section["items"].items():
        for row in spec.get("rows", []):
            assert row["group"] in groups, item
        for key in ("group", "reference_group"):
            if key in spec:
                assert spec[key] in groups, item


def test_quick_profile_shape():
    section = yaml.safe_load((ROOT / "workflow/config/quick.yaml").read_text())["lesam"]
    runs = training_runs(section)
    cifar = {r["optimizer"] for r in runs.values() if r["group"] == "cifar10_resnet18"}
    assert cifar == set(optimizer_specs())  # the quick profile runs every optimizer
    assert {r["seed"] for r in runs.values() if r["group"] == "cifar10_resnet18"} == {0}
    ft = runs["transfer_finetune-lesam-s0"]
    assert ft["depends"] == ["transfer_pretrain-sgd-s0"]
    assert ft["config"]["init_from"].endswith("transfer_pretrain-sgd-s0/model.pt")
    assert all(r["config"].get("stand_ins") for r in runs.values()
               if r["group"] in ("imagenet_resnet50", "transfer_finetune", "domain_mnist"))
    assert set(glmc_runs(section)) == {f"lt100-{o}-s0" for o in ("sgd", "sam", "lesam")}


def test_evidence_profile_pairs_five_seeds_and_keeps_per_entry_seeds():
    section = yaml.safe_load((ROOT / "workflow/config/evidence.yaml").read_text())["lesam"]
    runs = training_runs(section)

    def seeds(group: str, optimizer: str) -> set[int]:
        return {r["seed"] for r in runs.values()
                if r["group"] == group and r["optimizer"] == optimizer}

    for optimizer in ("sgd", "sam", "lesam"):
        assert seeds("cifar10_resnet18", optimizer) == set(range(5))
        assert seeds("domain_mnist", optimizer) == set(range(5))
    # per-entry seeds override the group's
    assert seeds("cifar10_resnet18", "asam") == {0}
    assert len(glmc_runs(section)) == _entries(section["glmc"])


def test_paper_profile_scale():
    section = yaml.safe_load((ROOT / "workflow/config/paper.yaml").read_text())["lesam"]
    runs = training_runs(section)
    cifar = [r for r in runs.values() if r["group"].startswith("cifar")]
    assert {r["config"]["dataset"] for r in cifar} == {"cifar10", "cifar100"}
    assert all(r["config"]["epochs"] == 200 and r["config"]["batch_size"] == 128
               and r["seed"] in (0, 1, 2) for r in cifar)
    assert len(cifar) == sum(_entries(spec) for group, spec in section["groups"].items()
                             if group.startswith("cifar"))
    assert {row["group"] for row in section["items"]["table_cifar"]["rows"]} <= {
        r["group"] for r in cifar}  # every row of the table has its runs
    assert {r["config"]["model"] for r in runs.values() if r["group"].startswith("imagenet")} \
        == {"resnet50", "resnet101"}
    assert all(r["config"]["model_kwargs"].get("pretrained") for r in runs.values()
               if r["group"].startswith("transfer"))
    assert {r["imbalance_factor"] for r in glmc_runs(section).values()} == {100, 50}


def test_step_sections_give_the_same_runs_and_inputs(section):
    assert glmc_runs(step_section(section, "glmc")) == glmc_runs(section)
    assert signal_runs(step_section(section, "signal")) == signal_runs(section)
    # an evaluation, table or figure job reads its runs' records, not the run list
    for item in section["items"]:
        assert step_section(section, "build", item) == section["items"][item]
    for what, item in EVAL_ITEMS.items():
        sub = step_section(section, "eval", item)
        assert {k: sub[k] for k in section["items"][item]} == section["items"][item]
        assert set(sub) - set(section["items"][item]) == (
            {"config", "optimizer_hparams"} if what == "cost" else set())
        assert set(eval_runs(section, what)) <= {f"{RUNS_DIR}/{rid}/final.json"
                                                 for rid in training_runs(section)}
    cost = step_section(section, "eval", EVAL_ITEMS["cost"])
    assert set(cost["optimizer_hparams"]) == set(section["items"]["table_cost"]["optimizers"])


def test_step_sections_leave_out_what_a_step_does_not_read(section):
    """What makes a robustness setting change rerun only the robustness steps."""
    changed = {**section, "items": {**section["items"], "table_robustness": {
        **section["items"]["table_robustness"], "steps": 99}}}
    for step in ("glmc", "signal"):
        assert step_section(changed, step) == step_section(section, step)
    assert step_section(changed, "eval", "fig_flatness") == \
        step_section(section, "eval", "fig_flatness")
    assert step_section(changed, "build", "table_cifar") == \
        step_section(section, "build", "table_cifar")
    assert step_section(changed, "eval", "table_robustness") != \
        step_section(section, "eval", "table_robustness")
    with pytest.raises(ValueError, match="no 'nope'"):
        step_section(section, "build", "nope")
    with pytest.raises(ValueError, match="unknown lesam step"):
        step_section(section, "train")
