"""CONTRIBUTING's "A new claim" recipe, performed on a copy of the package and its claims
tests in a temporary folder, then checked the way the recipe says (`pytest -k recipe`)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

ROW = """
- id: mf-recipe-demo
  paper: minorfirst
  source: the CONTRIBUTING recipe's example
  claim: At depth L=1 every method's final direction is the max-margin one
  predicate: final 1 − cos < `tol` for every curve
  items:
  - minorfirst/l1_maxmargin
  test: recipe_demo
  params: {tol: 0.001}
  kind: extension
"""

PREDICATE = '''

def recipe_demo(d: D, params: Params) -> Result:
    """The recipe's example: every curve's final 1 − cos below the registered ``tol``."""
    df = d["minorfirst/l1_maxmargin"].rows
    last = df.sort_values("s").groupby("method").tail(1)
    worst = float(last["one_minus_cos"].max())
    return Result(threshold(worst, float(params["tol"])), f"largest final 1 − cos {worst:.3g}")


PREDICATES["recipe_demo"] = recipe_demo
'''

FIXTURE = '''

def recipe_demo(bad: bool) -> dict[str, ItemData]:
    """The recipe's example fixture: converged curves, one far off when ``bad``."""
    return l1(bad)
'''

CASE = '''
from tests.claims.fixtures_minorfirst import recipe_demo  # noqa: E402

CASES["mf-recipe-demo"] = (recipe_demo, SUPPORTED, CONTRADICTED)
'''


def _files_the_recipe_names() -> list[str]:
    text = (ROOT / "CONTRIBUTING.md").read_text()
    section = text[text.index("### A new claim"):]
    section = section[:section.index("\n### ", 5)]
    return re.findall(r"`((?:src|tests|docs)/[^`]+)`", section)


@pytest.mark.slow
def test_new_claim_recipe_on_a_copy(tmp_path: Path) -> None:
    named = _files_the_recipe_names()
    for path in ("src/sharpness/claims/claims.yaml", "tests/claims/fixtures.py",
                 "tests/claims/test_predicates.py", "docs/registration/quick.json"):
        assert path in named, f"the recipe does not name {path}"
    src, tests = tmp_path / "src" / "sharpness", tmp_path / "tests"
    shutil.copytree(ROOT / "src" / "sharpness", src,
                    ignore=shutil.ignore_patterns("__pycache__"))
    tests.mkdir()
    for name in ("__init__.py", "conftest.py"):
        shutil.copy(ROOT / "tests" / name, tests / name)
    shutil.copytree(ROOT / "tests" / "claims", tests / "claims",
                    ignore=shutil.ignore_patterns("__pycache__"))
    # steps 1-4: the row, the predicate in its paper's module, the fixture, its CASES entry
    with (src / "claims" / "claims.yaml").open("a") as handle:
        handle.write(ROW)
    with (src / "claims" / "minorfirst.py").open("a") as handle:
        handle.write(PREDICATE)
    with (tests / "claims" / "fixtures_minorfirst.py").open("a") as handle:
        handle.write(FIXTURE)
    with (tests / "claims" / "fixtures.py").open("a") as handle:
        handle.write(CASE)
    env = {**os.environ, "PYTHONPATH": f"{tmp_path / 'src'}{os.pathsep}{tmp_path}"}
    # step 5: register again (here into the copy)
    out = tmp_path / "docs" / "registration" / "quick.json"
    done = subprocess.run([sys.executable, "-c", "import sys; from sharpness.cli import main; sys.exit(main())",
                           "claims", "register", "--profile",
                           "quick", "--config", str(ROOT / "workflow/config/quick.yaml"),
                           "--out", str(out)], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "mf-recipe-demo" in json.loads(out.read_text())["claims"]
    # what the recipe says to run: the predicate on its fixture pair
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           "tests/claims/test_predicates.py", "-k", "mf-recipe-demo"],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert "2 passed" in done.stdout, done.stdout[-2000:]
