"""CONTRIBUTING.md's "A new optimizer" recipe, followed on a copy of the repository with a toy
optimizer (half of SAM's step) as a person would: every step it names (the config files
edited as text, their comments kept), the regenerations and the tests it says to run (read
from the recipe's text), and the files it touched equal the recipe's "Files:" line. The
refresh of the paper profile's priced blocks plans the workflow, hence the workflow tier."""

from __future__ import annotations

import re
import shutil
import sys
import textwrap
from pathlib import Path

import pytest

from tests.recipes.repo_copy import (
    ROOT,
    comment_lines,
    copy_repo,
    recipe_files,
    replace_once,
    run,
    run_named_regenerations,
    run_named_tests,
    touched,
    yaml_append_to_list,
    yaml_insert,
)

pytestmark = pytest.mark.workflow

NAME = "halfsam"
ENTRY = f"""
{NAME}:
  label: half-SAM
  reference: a toy of the recipe test (half of SAM's step)
  hparams:
    rho: {{default: 0.1, source: "choice: twice SAM's radius, halved by the rule"}}
    bn_second_pass: {{default: freeze, source: "choice: as SAM (davda54/sam)"}}
  tiny_hparams: {{rho: 0.04}}
"""
#: the module is the recipe's template, src/sharpness/optim/sam.py, with its own docstring,
#: class and rule (half of SAM's step)
TEMPLATE_EDITS = (
    ('class SAM(SharpnessOptimizer, optimizer="sam"):',
     f'class HalfSAM(SharpnessOptimizer, optimizer="{NAME}"):'),
    ('    """l2-SAM (Foret et al., 2021): ``eps = rho g / ||g||_2``."""',
     '    """Half of SAM\'s perturbation: ``eps = rho g / (2 ||g||_2)``."""'),
    ('scale = self.hparams["rho"] /', 'scale = 0.5 * self.hparams["rho"] /'),
)


def _module_from_template(template: str) -> str:
    body = template[template.index("\nfrom __future__"):]
    for old, new in TEMPLATE_EDITS:
        assert old in body, f"the template sam.py no longer has {old!r}"
        body = body.replace(old, new)
    return '"""Half-SAM: SAM\'s perturbation halved, a toy of the recipe test."""\n' + body


TEST = '''
"""Half-SAM moves by rho / 2 along the normalized gradient, then steps from theta."""

import torch

from sharpness.optim import BatchClosure, build_optimizer


def test_halfsam_moves_half_the_radius():
    torch.manual_seed(0)
    model = torch.nn.Linear(4, 3).double()
    x, y = torch.randn(8, 4, dtype=torch.float64), torch.randint(0, 3, (8,))
    opt = build_optimizer("halfsam", model, lr=0.1, weight_decay=0.0, rho=0.2)
    opt.step(BatchClosure(model, x, y))
    assert abs(opt.diagnostics["radius"] - 0.1) < 1e-9
'''


def _quick_jobs(repo: Path) -> int:
    """The quick profile's job count, as the `counts` block of docs/outputs.md states it."""
    found = re.search(r"quick profile is (\d+) Snakemake jobs",
                      (repo / "docs/outputs.md").read_text())
    assert found, f"{repo}/docs/outputs.md states no quick job count"
    return int(found.group(1))


def test_the_new_optimizer_recipe_on_a_copy(tmp_path):
    heading = "A new optimizer"
    copy = copy_repo(tmp_path, "src", "tests", ":(exclude)tests/recipes", "workflow", "Snakefile",
                     "docs", "README.md", "benchmarks/measured", "data/embedded", ".gitignore",
                     "pyproject.toml")  # not this test: its toy's text is the toy's test
    configs = {p: (copy / p).read_text() for p in ("workflow/config/quick.yaml",
                                                   "workflow/config/paper.yaml")}
    # 1. the entry (its colour pinned: the one it takes unpinned)
    catalog = copy / "src/sharpness/optim/optimizers.yaml"
    catalog.write_text(catalog.read_text() + ENTRY)
    colour = run(copy, sys.executable, "-c", "from sharpness.plots.methods import method; "
                 f"print(method({NAME!r}).colour)").strip()
    catalog.write_text(catalog.read_text().rstrip("\n") + f'\n  colour: "{colour}"\n')
    # 2. the module, from its template
    template = (copy / "src/sharpness/optim/sam.py").read_text()
    (copy / f"src/sharpness/optim/{NAME}.py").write_text(_module_from_template(template))
    # 3. its test
    (copy / f"tests/optim/test_{NAME}.py").write_text(textwrap.dedent(TEST).lstrip())
    # 4. the config entries, edited as text: quick (run in the CIFAR-10 group) and paper
    # (every value sourced)
    quick, paper = (copy / p for p in configs)
    yaml_insert(quick, ("lesam", "optimizers"), f"{NAME}: {{rho: 0.1}}  # the recipe's toy")
    yaml_append_to_list(quick, ("lesam", "groups", "cifar10_resnet18", "optimizers"),
                        f"{{label: {NAME}, optimizer: {NAME}, seeds: [0]}}")
    yaml_insert(paper, ("lesam", "optimizers"), f"""
        {NAME}:
          rho: 0.1
          bn_second_pass: freeze
          source:
            rho: "choice: the toy's default"
            bn_second_pass: "choice: as SAM"
        """)
    yaml_append_to_list(paper, ("lesam", "groups", "cifar10_resnet18", "optimizers"), NAME)
    for path, before in configs.items():  # a person's edit keeps every comment
        after = (copy / path).read_text()
        assert set(comment_lines(before)) <= set(after.splitlines()), path
    assert "# the recipe's toy" in quick.read_text()
    # 5. regenerate what the recipe names; the hand-written row of the update rules
    run_named_regenerations(copy, heading)
    assert _quick_jobs(copy) == _quick_jobs(ROOT) + 1  # its one quick run
    rules = copy / "docs/api_optim_curvature.md"
    row = "| `sam` | `eps = rho g/‖g‖₂` | davda54/sam |\n"
    replace_once(rules, row, row + f"| `{NAME}` | `eps = rho g/(2‖g‖₂)` | none (a toy) |\n")
    # 6. the tests the recipe's last step names
    run_named_tests(copy, heading, NAME)
    assert touched(copy) == recipe_files(heading, NAME)
    if shutil.which("duplicates"):  # the repository's duplicate finder, where it is installed
        assert run(copy, "duplicates", "--change").startswith("no duplicates")
