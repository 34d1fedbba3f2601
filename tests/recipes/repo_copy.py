"""A copy of (part of) the repository in a temporary folder, as a git checkout, on which a
test follows a CONTRIBUTING.md recipe and then asks which files the recipe touched."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
GUIDE = (ROOT / "CONTRIBUTING.md").read_text(encoding="utf-8")


def copy_repo(dest: Path, *parts: str) -> Path:
    """The tracked files under ``parts`` (as they are in the working tree) copied to ``dest``
    and committed there, so ``touched`` names what a recipe changes afterwards."""
    listed = subprocess.run(["git", "ls-files", "-z", "--", *parts], cwd=ROOT, check=True,
                            capture_output=True).stdout.decode().split("\0")
    for name in filter(None, listed):
        if (ROOT / name).is_file():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, dest / name)
    git(dest, "init", "-q")
    git(dest, "add", "-A")
    git(dest, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "copy")
    return dest


def git(where: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=where, check=True, capture_output=True,
                          text=True).stdout


def touched(copy: Path) -> set[str]:
    """Files changed, added or removed since the copy was made (untracked ones included)."""
    return {line[3:] for line in git(copy, "status", "--porcelain", "-uall").splitlines()}


def run(copy: Path, *command: str) -> str:
    """``command`` run in the copy with the copy's package first on the path; a failure
    shows its output."""
    env = dict(os.environ, PYTHONPATH=str(copy / "src"))
    done = subprocess.run(list(command), cwd=copy, env=env, capture_output=True, text=True)
    assert done.returncode == 0, f"{' '.join(command)}:\n{done.stdout[-3000:]}{done.stderr[-3000:]}"
    return done.stdout


def sharpness(copy: Path, *args: str) -> str:
    """``sharpness ARGS`` in the copy, its own code."""
    return run(copy, sys.executable, "-m", "sharpness.cli", *args)


def recipe_files(heading: str, name: str) -> set[str]:
    """The files the recipe ``### heading`` of CONTRIBUTING.md lists in its "Files:" line,
    with ``<name>`` filled in."""
    start = GUIDE.index(f"\n### {heading}")
    end = GUIDE.find("\n### ", start + 1)
    section = GUIDE[start:end if end != -1 else None]
    files = re.search(r"^Files: (.*?)\.$", section, flags=re.MULTILINE | re.DOTALL)
    assert files, f"the recipe {heading!r} has no 'Files:' line"
    return {t.replace("<name>", name) for t in re.findall(r"`([^`]+)`", files.group(1))}
