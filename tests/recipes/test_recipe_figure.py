"""CONTRIBUTING.md's "A new figure" recipe (an eos network figure), followed on a copy of the
repository: the module, its registration, its config key and entry, its rule's name, its
caption and its test; the figure's test passes in the copy, the plan has its job (the
``counts`` block of ``docs/outputs.md``: one job and one figure more), and the recipe touched the files its "Files:"
line names. Refreshing that block plans the workflow: workflow tier."""

from __future__ import annotations

import re
import sys
import textwrap
from pathlib import Path

import pytest
import yaml

from tests.recipes.repo_copy import copy_repo, recipe_files, run, sharpness, touched

pytestmark = pytest.mark.workflow

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


def _replace(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text, (path, old)
    path.write_text(text.replace(old, new, 1))


def _counts(readme: str) -> tuple[int, int]:
    found = re.search(r"The quick profile is (\d+) Snakemake jobs .*? makes \d+ report items, "
                      r"(\d+) figures", readme)
    assert found, "the counts block of docs/outputs.md states no job or figure count"
    return int(found[1]), int(found[2])


def test_the_new_figure_recipe_on_a_copy(tmp_path):
    copy = copy_repo(tmp_path, "src", "workflow", "Snakefile", "docs/outputs.md", "data/embedded",
                     ".gitignore", "tests/__init__.py", "tests/conftest.py", "tests/eos")
    jobs, figures = _counts((copy / "docs/outputs.md").read_text())
    eos = copy / "src/sharpness/eos"
    (eos / f"figures/{NAME}.py").write_text(textwrap.dedent(MODULE).lstrip())
    _replace(eos / "figures/__init__.py", "from sharpness.eos.figures.phase import fig_phase\n",
             f"from sharpness.eos.figures.phase import fig_phase\n"
             f"from sharpness.eos.figures.{NAME} import {FIG}\n")
    _replace(eos / "figures/__init__.py", '"fig_ablations": fig_ablations}',
             f'"fig_ablations": fig_ablations, "{FIG}": {FIG}}}')
    _replace(copy / "src/sharpness/commands/eos.py", '"fig_ablations")',
             f'"fig_ablations", "{FIG}")')
    _replace(copy / "workflow/config/config.schema.yaml", "          fig_measures: {",
             f'          {FIG}: {{type: array, items: {{$ref: "#/$defs/name"}}, '
             f'description: "settings of the recipe figure"}}\n          fig_measures: {{')
    _replace(copy / "workflow/rules/eos.smk", '"fig_measures", "fig_ablations"]',
             f'"fig_measures", "fig_ablations", "{FIG}"]')
    (copy / f"workflow/report/eos/{FIG}.rst").write_text(
        f"eos ``{FIG}``: the final sharpness against the learning rate. Numbers: ``{FIG}.csv``.\n")
    quick = copy / "workflow/config/quick.yaml"
    config = yaml.safe_load(quick.read_text())
    config["eos"]["figures"][FIG] = config["eos"]["figures"]["fig_measures"][:1]
    quick.write_text(yaml.safe_dump(config, sort_keys=False))
    (copy / f"tests/eos/test_{FIG}.py").write_text(textwrap.dedent(TEST).lstrip())
    # what the recipe says to run
    sharpness(copy, "config", "doc")
    sharpness(copy, "readme", "refresh", "--only", "counts")
    run(copy, sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
        f"tests/eos/test_{FIG}.py")
    assert _counts((copy / "docs/outputs.md").read_text()) == (jobs + 1, figures + 1)
    assert touched(copy) == recipe_files("A new figure", NAME)
