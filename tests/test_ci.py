"""CI runs every test tier but `slow`, the paper tier included, and the workflow and paper
tiers in a checkout where the README's first command (`make`) has built."""

from __future__ import annotations

import re

from tests.conftest import REPO


def _steps() -> list[str]:
    """The commands of `.ci/run`, in order, comments and shell set-up left out."""
    lines = (REPO / ".ci" / "run").read_text().splitlines()
    return [line.strip() for line in lines
            if line.strip() and not line.lstrip().startswith(("#", "set ", "cd "))]


def test_ci_runs_every_tier_but_slow_after_a_build() -> None:
    steps = _steps()
    targets = [m[1] if (m := re.fullmatch(r"make(?: ([a-z-]+))?(?: CORES=\d+)?", s)) else s
               for s in steps]
    for tier in ("test", "test-workflow", "test-paper", "lint"):
        assert tier in targets, (tier, steps)
    build = targets.index(None)  # plain `make`: the quick profile, the README's first command
    assert targets.index("test") < build < targets.index("test-workflow")
    assert build < targets.index("test-paper")
    assert "test-slow" not in targets


def test_the_makefile_tiers_select_by_marker() -> None:
    makefile = (REPO / "Makefile").read_text()
    assert re.search(r"^test-paper:.*\n\t.*pytest -m paper", makefile, re.M)
    assert re.search(r'^test:.*\n\t.*pytest -m "not slow and not paper and not workflow and '
                     r'not e2e" -q -n auto', makefile, re.M)
    # the second tier: the end-to-end tests on every core, then the workflow's one at a time
    assert re.search(r'^test-workflow:.*\n\t.*pytest -m "e2e and not workflow and not slow and '
                     r'not paper" -q -n auto\n\t.*pytest -m "workflow and not slow and not paper"',
                     makefile, re.M)


def test_the_benchmark_times_the_calls_the_makefile_makes() -> None:
    """`benchmarks/time_test_suite.sh` times each pytest call of the two tiers with the
    Makefile's own marker expressions, so its numbers are the tiers' (a test would miss a tier
    that the Makefile changed and the script did not)."""
    makefile = (REPO / "Makefile").read_text()
    script = (REPO / "benchmarks" / "time_test_suite.sh").read_text()
    made = re.findall(r'^\t\$\(PY\) -m pytest -m "([^"]+)" -q( -n auto)?$', makefile, re.M)
    calls = {mark: bool(auto) for mark, auto in made if "slow" in mark and mark != "slow"}
    timed = re.search(r"^MARKS=\(((?:.|\n)*?)\)$", script, re.M)
    args = re.search(r"^ARGS=\(([^)]*)\)$", script, re.M)
    assert timed and args
    marks = re.findall(r'"([^"]+)"', timed.group(1))
    parallel = [a == "-n auto" for a in re.findall(r'"([^"]*)"', args.group(1))]
    assert dict(zip(marks, parallel, strict=True)) == calls
