"""CONTRIBUTING.md's "A new figure" recipe (an eos network figure), followed on a copy of the
repository as a person would (YAML and Python edited as text, comments kept): the module, its
registration, its config key and entry, its caption and its test; the tests the recipe's
last step names pass in the copy, the plan has its job (the ``counts`` block of
``docs/outputs.md``: one job and one figure more), and the recipe touched the files its
"Files:" line names. Refreshing that block plans the workflow: workflow tier."""

from __future__ import annotations

import re
import textwrap

import pytest
import yaml

from tests.recipes.repo_copy import (
    comment_lines,
    copy_repo,
    recipe_files,
    replace_once,
    run_named_regenerations,
    run_named_tests,
    touched,
    yaml_insert,
)

pytestmark = pytest.mark.workflow

HEADING = "A new figure"
NAME = "recipe"
FIG = f"fig_{NAME}"
MODULE = f'''
"""``{FIG}``: the final sharpness of each setting against eta (a toy of the recipe test)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from sharpness.eos.figures.common import eta_panel, load_sweeps, sweep_figure, tidy_rows


def {FIG}(sweep_paths: Sequence[str | os.PathLike[str]], out: str | os.PathLike[str]) -> None:
    """One panel per setting: the final sharpness against eta."""
    sweeps = load_sweeps(sweep_paths)
    rows: list[dict[str, Any]] = []
    with sweep_figure(out, sweeps, 1, max(1, len(sweeps))) as f:
        for ax, sw in zip(f.axes[0], sweeps, strict=False):
            eta_panel(ax, sw, "sharpness", "C0", None, legend=False)
            rows += tidy_rows(sw, ["sharpness"], "{FIG}")
        f.add_rows(rows)
        f.save("Final sharpness against eta.", inputs=list(sweep_paths),
               params={{"figure": "{FIG}"}}, tight=True)
'''
TEST = f'''
"""``{FIG}`` draws every row of its sweeps into its CSV."""

import csv
from pathlib import Path

from sharpness.eos.figures import FIGURES


def test_{FIG}_draws_its_rows(sweep_path: Path, tmp_path: Path) -> None:
    FIGURES["{FIG}"]([sweep_path], tmp_path / "{FIG}.pdf")
    with open(tmp_path / "{FIG}.csv") as handle:
        assert list(csv.DictReader(handle))
    assert (tmp_path / "{FIG}.png").stat().st_size > 1000
'''


def _counts(readme: str) -> tuple[int, int]:
    found = re.search(r"The quick profile is (\d+) Snakemake jobs .*? makes \d+ report items, "
                      r"(\d+) figures", readme)
    assert found, "the counts block of docs/outputs.md states no job or figure count"
    return int(found[1]), int(found[2])


def test_the_new_figure_recipe_on_a_copy(tmp_path):
    copy = copy_repo(tmp_path, "src", "workflow", "Snakefile", "docs/outputs.md", "data/embedded",
                     ".gitignore", "tests", "pyproject.toml")
    jobs, figures = _counts((copy / "docs/outputs.md").read_text())
    eos = copy / "src/sharpness/eos"
    # 1. the module, registered, and its id on the command line
    (eos / f"figures/{NAME}.py").write_text(textwrap.dedent(MODULE).lstrip())
    replace_once(eos / "figures/__init__.py", "from sharpness.eos.figures.phase import fig_phase\n",
                 f"from sharpness.eos.figures.phase import fig_phase\n"
                 f"from sharpness.eos.figures.{NAME} import {FIG}\n")
    replace_once(eos / "figures/__init__.py", '"fig_ablations": fig_ablations}',
                 f'"fig_ablations": fig_ablations, "{FIG}": {FIG}}}')
    replace_once(copy / "src/sharpness/commands/eos.py", '"fig_ablations")',
                 f'"fig_ablations", "{FIG}")')
    # 2. its config key in the schema and its settings in the quick profile, as text
    schema = copy / "workflow/config/config.schema.yaml"
    yaml_insert(schema, ("properties", "eos", "properties", "figures", "properties"),
                f'{FIG}: {{type: array, items: {{$ref: "#/$defs/name"}}, '
                f'description: "settings of the recipe figure"}}')
    quick = copy / "workflow/config/quick.yaml"
    before = quick.read_text()
    first = yaml.safe_load(before)["eos"]["figures"]["fig_measures"][0]
    yaml_insert(quick, ("eos", "figures"), f"{FIG}: [{first}]   # the recipe's figure")
    assert set(comment_lines(before)) <= set(quick.read_text().splitlines())
    assert yaml.safe_load(quick.read_text())["eos"]["figures"][FIG] == [first]
    # 3. its caption; 4. its test
    (copy / f"workflow/report/eos/{FIG}.rst").write_text(
        f"eos ``{FIG}``: the final sharpness against the learning rate. Numbers: ``{FIG}.csv``.\n")
    (copy / f"tests/eos/test_{FIG}.py").write_text(textwrap.dedent(TEST).lstrip())
    # 5. what the recipe says to run
    run_named_regenerations(copy, HEADING)
    assert _counts((copy / "docs/outputs.md").read_text()) == (jobs + 1, figures + 1)
    run_named_tests(copy, HEADING, NAME)
    assert touched(copy) == recipe_files(HEADING, NAME)
