"""CONTRIBUTING.md's "A new eos setting" recipe, followed on a copy of the repository as a
person would: one entry under ``eos.settings`` of the quick profile and its name in a figure's
list, written into the YAML as text (comments kept); it is one more job in the plan the
``counts`` block of ``docs/outputs.md`` states, the tests the recipe names pass, and the recipe
touches the files its "Files:" line names. Refreshing that block plans the workflow, hence
the workflow tier."""

from __future__ import annotations

import re

import pytest
import yaml

from tests.recipes.repo_copy import (
    comment_lines,
    copy_repo,
    recipe_files,
    run_named_regenerations,
    run_named_tests,
    touched,
    yaml_append_to_list,
    yaml_block,
    yaml_insert,
)

pytestmark = pytest.mark.workflow

HEADING = "A new eos setting"
NAME = "recipe_new"


def _jobs(readme: str) -> int:
    found = re.search(r"The quick profile is (\d+) Snakemake jobs", readme)
    assert found, "the counts block of docs/outputs.md states no job count"
    return int(found[1])


def test_the_new_eos_setting_recipe_on_a_copy(tmp_path):
    copy = copy_repo(tmp_path, "src", "workflow", "Snakefile", "docs/outputs.md", "data/embedded",
                     ".gitignore", "tests", "pyproject.toml")
    before = _jobs((copy / "docs/outputs.md").read_text())
    quick = copy / "workflow/config/quick.yaml"
    text = quick.read_text()
    eos = yaml.safe_load(text)["eos"]
    figure = next(iter(eos["figures"]))
    model = eos["figures"][figure][0]
    # a person copies the line of a setting the figure draws, renames and relabels it
    lines = text.splitlines()
    start, _ = yaml_block(lines, ("eos", "settings", model))
    line = lines[start].strip().removeprefix(f"{model}:")
    copied = re.sub(r'label: "[^"]*"', 'label: "a new setting"', line, count=1)
    yaml_insert(quick, ("eos", "settings"), f"{NAME}:{copied}  # the recipe's setting")
    yaml_append_to_list(quick, ("eos", "figures", figure), NAME)
    after = quick.read_text()
    assert set(comment_lines(text)) <= set(after.splitlines())  # every comment kept
    assert "# which settings each network figure draws" in after
    config = yaml.safe_load(after)["eos"]
    assert config["settings"][NAME]["label"] == "a new setting"
    assert config["figures"][figure][-1] == NAME
    run_named_regenerations(copy, HEADING)
    assert _jobs((copy / "docs/outputs.md").read_text()) == before + 1  # its eos_setting job
    run_named_tests(copy, HEADING, NAME)
    assert touched(copy) == recipe_files(HEADING, NAME)
