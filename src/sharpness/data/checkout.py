"""Asking the project's own checkout, and only it, whether a file is committed.

Data preparation never deletes or replaces a committed file. Whether a file is committed is
asked of the checkout the ``sharpness`` package lies in, never of a repository found by
walking up from a data folder: a data folder or mirror comes from elsewhere and may hold a
``.git`` whose configuration starts a program (``core.fsmonitor``, hooks) as soon as git runs
there. So git runs with the checkout as its working directory, with ``--git-dir`` and
``--work-tree`` naming it explicitly, fsmonitor and hooks off and no ``GIT_*`` variable of the
caller; a path outside the checkout is not asked about at all (it is not committed).
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from sharpness.runs.environment import SAFE_GIT_OPTIONS

#: the checkout holding this package (``src/sharpness/data/`` -> the repository root)
CHECKOUT = Path(__file__).resolve().parents[3]


def git_dir(checkout: Path) -> Path | None:
    """The git directory of ``checkout``: ``.git`` itself, or the folder a worktree's ``.git``
    file points to; ``None`` when it is no git checkout."""
    dot = checkout / ".git"
    if dot.is_dir():
        return dot
    if dot.is_file():
        text = dot.read_text(errors="replace").strip()
        if text.startswith("gitdir:"):
            target = Path(text.removeprefix("gitdir:").strip())
            return target if target.is_absolute() else (checkout / target).resolve()
    return None


def git_command(checkout: Path, *args: str) -> list[str] | None:
    """The git command line that runs ``args`` on ``checkout`` alone (``None``: not a
    checkout)."""
    gitdir = git_dir(checkout)
    if gitdir is None:
        return None
    return ["git", f"--git-dir={gitdir}", f"--work-tree={checkout}", *SAFE_GIT_OPTIONS, *args]


def clean_env() -> dict[str, str]:
    """The environment without ``GIT_*`` variables (which could name another repository or
    configuration)."""
    return {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}


def tracked_by_git(path: str | os.PathLike[str], checkout: Path = CHECKOUT) -> bool:
    """Whether ``path`` is a file the project's checkout tracks (a committed file: never
    deleted by data preparation). A path outside ``checkout`` is not tracked; without git, a
    file under the checkout's ``data/embedded/`` counts as tracked."""
    checkout = checkout.resolve()
    path = Path(path).absolute()
    resolved = path.parent.resolve() / path.name
    if not resolved.is_relative_to(checkout):
        return False
    rel = resolved.relative_to(checkout).as_posix()
    command = git_command(checkout, "ls-files", "--error-unmatch", "--", rel)
    try:
        proc = (subprocess.run(command, cwd=checkout, env=clean_env(), capture_output=True,
                               text=True, timeout=30, check=False)
                if command is not None else None)
    except (OSError, subprocess.SubprocessError):
        proc = None
    if proc is not None:
        return proc.returncode == 0
    return resolved.is_relative_to(checkout / "data" / "embedded")
