"""The Makefile passes every file name to the shell as one quoted word.

``make CONFIG='x;touch y;z.yaml'`` must not run ``touch`` in the very recipe line meant to check
the config before anything runs (as ``$(CONFIG)`` unquoted in the shell would). The attacks here run
real ``make`` against a stand-in environment whose ``sharpness`` records its arguments and
refuses, as ``sharpness config check`` refuses a bad file.
"""

from __future__ import annotations

import os
import shlex
import subprocess
from pathlib import Path

from tests.conftest import REPO

STUB = """#!/bin/sh
printf '%s\\n' "$@" > "$(dirname "$0")/../{name}.args"
exit {code}
"""


def _stub_venv(folder: Path) -> Path:
    """A venv whose ``sharpness`` refuses (exit 2) and ``snakemake`` would succeed; both
    record their arguments, one a line, beside ``bin/``."""
    venv = folder / "venv"
    (venv / "bin").mkdir(parents=True)
    for name, code in (("python", 0), ("sharpness", 2), ("snakemake", 0)):
        path = venv / "bin" / name
        path.write_text(STUB.format(name=name, code=code))
        path.chmod(0o755)
    (venv / ".installed").touch()  # newer than the requirements: make installs nothing
    return venv


def _attack(folder: Path) -> tuple[str, list[Path]]:
    """A config name carrying a shell command, make's own ``$(shell ...)`` and a quote."""
    markers = [folder / "shell-ran", folder / "make-ran"]
    return (f"x;touch {markers[0]};$(shell touch {markers[1]}) it's.yaml", markers)


def test_a_config_name_holding_shell_words_reaches_the_check_as_one_word(tmp_path) -> None:
    """`make CONFIG='x;touch FILE;...'`: the check receives the name as one argument and
    refuses it, Snakemake never starts, and no command hidden in the name runs."""
    venv = _stub_venv(tmp_path)
    name, markers = _attack(tmp_path)
    env = {k: v for k, v in os.environ.items() if not k.startswith("MAKE")}
    proc = subprocess.run(["make", "-C", str(REPO), "run", f"CONFIG={name}", f"VENV={venv}"],
                          capture_output=True, text=True, env=env)
    assert proc.returncode != 0, proc.stdout + proc.stderr
    assert (venv / "sharpness.args").read_text().splitlines() == ["config", "check", name]
    assert not (venv / "snakemake.args").exists()
    assert [m for m in markers if m.exists()] == []


def test_make_n_with_a_hostile_config_prints_quoted_words_and_runs_nothing(tmp_path) -> None:
    """`make -n` with the same name prints each recipe line with the name as one shell word
    (read back by a shell's rules) and runs nothing, make's own functions included."""
    venv = _stub_venv(tmp_path)
    name, markers = _attack(tmp_path)
    proc = subprocess.run(["make", "-n", "-C", str(REPO), "run", "gpu-campaign",
                           f"CONFIG={name}", f"GPU_HOURS={name}", f"MAX_WALL={name}",
                           f"VENV={venv}"],
                          capture_output=True, text=True, check=True)
    lines = [shlex.split(line) for line in proc.stdout.splitlines()
             if str(venv) in line]
    assert [venv / "bin/sharpness", "config", "check", name] in [
        [Path(words[0]), *words[1:]] for words in lines]
    assert [str(venv / "bin/snakemake"), "--cores", "all", "--configfile", name] in lines
    assert [str(venv / "bin/sharpness"), "campaign", "--gpu-hours", name, "--cores",
            "all", "--max-wall", name] in lines
    assert [m for m in markers if m.exists()] == []
    assert not list(venv.glob("*.args"))
