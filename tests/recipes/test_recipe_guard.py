"""A recipe test fails when a test its recipe's last step names fails: in a folder holding
only a planted test at each path the step names (one of them failing), running the recipe's
named tests, as every recipe test does, fails and names the planted failure. One pytest
process per recipe (two or three seconds each): the workflow tier, with the recipe tests it
guards."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.recipes.repo_copy import RECIPE_TESTS, commit_all, named_tests, run_named_tests

pytestmark = pytest.mark.workflow

PASSING = "def test_planted_passes():\n    assert True\n"
FAILING = "def test_planted_fails():\n    assert False, 'planted'\n"


def _paths(args: list[str]) -> list[str]:
    """The test paths of a pytest argument list (not options, nor an option's value)."""
    out, skip = [], False
    for arg in args:
        if skip or arg.startswith("-"):
            skip = arg in ("-k", "-m") and not skip
            continue
        out.append(arg)
    return out


@pytest.mark.parametrize("heading", sorted(RECIPE_TESTS))
def test_a_failing_named_test_fails_the_recipe_run(heading: str, tmp_path: Path) -> None:
    paths = [p for args in named_tests(heading, "planted") for p in _paths(args)]
    assert paths, f"{heading}: its last step names no test path"
    for i, path in enumerate(paths):
        where = tmp_path / path if path.endswith(".py") else tmp_path / path / f"test_planted{i}.py"
        where.parent.mkdir(parents=True, exist_ok=True)
        where.write_text(FAILING if i == len(paths) - 1 else PASSING)
    commit_all(tmp_path)
    with pytest.raises(AssertionError) as failed:
        run_named_tests(tmp_path, heading, "planted")
    assert "test_planted_fails" in str(failed.value) and "1 failed" in str(failed.value)
    if len(paths) > 1:  # the other named paths were run, and passed
        assert f"{len(paths) - 1} passed" in str(failed.value)
