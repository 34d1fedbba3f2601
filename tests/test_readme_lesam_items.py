"""The items table of docs/api_lesam.md is written from the config: a cell counts the runs the
item reads and follows a config edit (the block itself is compared with the doc by
tests/test_readme_blocks.py)."""

from __future__ import annotations

import copy

from sharpness.config.profiles import DEFAULT_PROFILE, read_config_file
from sharpness.lesam.experiments import training_runs
from sharpness.lesam.steps import item_groups
from sharpness.readme.lesam_items import cell
from tests.conftest import REPO


def test_a_cell_counts_the_runs_and_follows_the_config() -> None:
    section = read_config_file(REPO / DEFAULT_PROFILE)["lesam"]
    groups = item_groups(section, "table_cifar")
    runs = [r for r in training_runs(section).values() if r["group"] in groups]
    assert cell(section, "table_cifar").startswith(f"{len(runs)} runs of ")
    edited = copy.deepcopy(section)
    edited["groups"][groups[0]]["seeds"] = [0, 7]
    text = cell(edited, "table_cifar")
    added = [r for r in training_runs(edited).values() if r["seed"] == 7]
    assert added and text.startswith(f"{len(runs) + len(added)} runs of ") and "7" in text
    assert cell(section, "no_such_item") == "not in this profile"
