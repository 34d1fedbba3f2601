"""After a full build (`make`, which CI runs before this tier), every command the closing
screen suggests runs successfully from the checkout: the report of the whole build, the audit
of a figure against the build's crate alone, and the audit on disk. The screen is read back
from logs/end_screen.txt, where the workflow keeps the last one (sharpness.crate.screen.show);
the one-figure case is tests/pipeline/test_end_to_end.py, a variant's
tests/pipeline/test_variant_build.py."""

from __future__ import annotations

import pytest

from sharpness.crate.screen import SAVED
from tests.conftest import user_environment
from tests.pipeline.helpers import run_commands, screen_commands

pytestmark = pytest.mark.workflow  # runs the workflow's report on the whole build


def test_every_command_the_full_builds_end_screen_suggests_runs(repo, bin_dir):
    saved = repo / SAVED
    if not (repo / "figures/CLAIMS.md").is_file() or not saved.is_file():
        pytest.skip(f"no full build in {repo}: run `make` first (CI does, before this tier)")
    screen = saved.read_text()
    assert "The build is done." in screen and "ledger:   figures/CLAIMS.md" in screen
    commands = screen_commands(screen)
    assert commands and commands[0].startswith("snakemake ") and "--report" in commands[0]
    if "crate:    results/build.crate.zip" in screen:  # the build made its crate
        assert any(c.startswith("sharpness audit --crate results/build.crate.zip figures/")
                   for c in commands), commands
    # the build is the user's (`make`): its records are signed with the user's key
    run_commands(commands, repo, bin_dir, env=user_environment())
    assert (repo / "report.html").stat().st_size > 0
