"""CONTRIBUTING.md's "A new eos setting" recipe, followed on a copy of the repository: one entry
under ``eos.settings`` of the quick profile, listed under a figure, is one more job in the plan
the ``counts`` block of ``docs/outputs.md`` states, and the recipe touches the files its "Files:" line names.
Refreshing that block plans the workflow, hence the workflow tier."""

from __future__ import annotations

import re

import pytest
import yaml

from tests.recipes.repo_copy import copy_repo, recipe_files, sharpness, touched

pytestmark = pytest.mark.workflow


def _jobs(readme: str) -> int:
    found = re.search(r"The quick profile is (\d+) Snakemake jobs", readme)
    assert found, "the counts block of docs/outputs.md states no job count"
    return int(found[1])


def test_the_new_eos_setting_recipe_on_a_copy(tmp_path):
    copy = copy_repo(tmp_path, "src", "workflow", "Snakefile", "docs/outputs.md", "data/embedded",
                     ".gitignore")
    before = _jobs((copy / "docs/outputs.md").read_text())
    quick = copy / "workflow/config/quick.yaml"
    config = yaml.safe_load(quick.read_text())
    eos = config["eos"]
    first = next(iter(eos["figures"]))
    model = eos["settings"][eos["figures"][first][0]]
    eos["settings"]["recipe_new"] = {**model, "label": "a new setting"}
    eos["figures"][first].append("recipe_new")
    quick.write_text(yaml.safe_dump(config, sort_keys=False))
    sharpness(copy, "readme", "refresh", "--only", "counts")
    assert _jobs((copy / "docs/outputs.md").read_text()) == before + 1  # its eos_setting job
    assert touched(copy) == recipe_files("A new eos setting", "recipe_new")
