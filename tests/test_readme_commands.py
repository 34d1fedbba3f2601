"""readme_commands: every shell command in the ```bash blocks of the README and of
``docs/running.md`` (the README's quick start in depth) runs as printed.

Each command runs in the repository root in a form that cannot train or write:

* ``make TARGET`` runs as ``make -n TARGET`` (Make's dry run);
* ``snakemake ...`` runs with ``-n`` added (Snakemake plans the jobs: a wrong target, a
  missing config file or a flag that swallows the target fails here);
* ``sharpness ...`` runs for real (the README only shows read-only forms, e.g. ``--check``);
* anything else must be marked.

A config file a command names (``my.yaml``) is the README's ```yaml block whose first line is
``# my.yaml``: the test writes it to a temporary folder and points the command there, so the
example settings are checked too.

A block whose commands need what a test cannot have (a finished run, a GPU, a whole-profile
timing) is preceded by ``<!-- readme-test: parse-only (REASON) -->``: then a ``sharpness``
command is only parsed by the CLI's own parser, a script is only syntax-checked (``bash -n``,
``py_compile``), ``snakemake`` and ``make`` still dry-run, and any other program must exist.
``<!-- readme-test: skip (REASON) -->`` skips a block (for commands of features that are not
in this tree yet); the test lists every marker's reason, so each stays visible.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.workflow  # runs the README's commands (make and snakemake dry runs)

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
#: the documents whose commands run here: the README and the page its quick start points to
DOCUMENTS = (README, ROOT / "docs" / "running.md")
FENCE = re.compile(r"(?:<!-- readme-test: (?P<mode>parse-only|skip) \((?P<why>[^)]+)\) -->\n)?"
                   r"```bash\n(?P<body>.*?)```", re.DOTALL)
BIN = Path(sys.executable).parent
YAML = re.compile(r"```yaml\n# (?P<name>[\w.-]+\.yaml)\n(?P<body>.*?)```", re.DOTALL)


def readme_commands(text: str) -> list[tuple[int, str, str]]:
    """``(line, command, mode)`` for every command of every ```bash block (continuation
    lines joined, comments dropped); ``mode`` is ``run``, ``parse-only`` or ``skip``."""
    found = []
    for block in FENCE.finditer(text):
        first = text.count("\n", 0, block.start("body")) + 1
        pending, start = "", 0
        for i, line in enumerate(block["body"].splitlines()):
            if not pending:
                start = first + i
            if line.rstrip().endswith("\\"):
                pending += line.rstrip()[:-1] + " "
                continue
            command = shlex.join(shlex.split(pending + line, comments=True))
            pending = ""
            if command:
                found.append((start, command, block["mode"] or "run"))
    return found


COMMANDS = [(doc.relative_to(ROOT).as_posix(), line, command, mode) for doc in DOCUMENTS
            for line, command, mode in readme_commands(doc.read_text())]


def _program(name: str) -> str:
    """A program as the README names it (``.venv/bin/X`` or ``X``), found beside this
    interpreter first (the project's environment), else on PATH."""
    base = name.removeprefix(".venv/bin/")
    here = BIN / base
    return str(here) if here.exists() else (shutil.which(base) or base)


def _split(command: str, files: Path, doc: str = "README.md"
           ) -> tuple[dict[str, str], list[str]]:
    words = shlex.split(command)
    for example in YAML.finditer((ROOT / doc).read_text()):
        path = files / example["name"]
        path.write_text(example["body"])
        words = [str(path) if w == example["name"] else w for w in words]
    env = {}
    while words and re.fullmatch(r"[A-Z_]+=\S*", words[0]):
        key, _, value = words.pop(0).partition("=")
        env[key] = value
    return env, words


def _run(argv: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    full = dict(os.environ, **env, PYTHONPATH=os.pathsep.join(
        [str(ROOT / "src"), *filter(None, [os.environ.get("PYTHONPATH")])]),
        PATH=os.pathsep.join([str(BIN), os.environ.get("PATH", "")]))
    return subprocess.run(argv, cwd=ROOT, env=full, capture_output=True, text=True,
                          timeout=300)


def test_readme_has_commands_and_every_marker_says_why() -> None:
    assert sum(doc == "README.md" for doc, *_ in COMMANDS) >= 8, \
        "the README's bash blocks hold too few commands"
    for doc in DOCUMENTS:
        for block in FENCE.finditer(doc.read_text()):
            if block["mode"]:
                assert len(block["why"].strip()) > 8, block.group(0)[:80]


@pytest.mark.parametrize("doc,line,command,mode", COMMANDS,
                         ids=[f"{doc}:L{line}" for doc, line, _, _ in COMMANDS])
def test_readme_commands(doc: str, line: int, command: str, mode: str, tmp_path: Path) -> None:
    if mode == "skip":
        pytest.skip(f"{doc} line {line} is marked skip")
    env, words = _split(command, tmp_path, doc)
    program = words[0].removeprefix(".venv/bin/")
    if program == "make":
        done = _run(["make", "-n", *words[1:]], env)
    elif program == "snakemake":
        done = _run([_program(program), "-n", *words[1:]], env)
    elif program == "sharpness" and mode == "parse-only":
        from sharpness.cli import build_parser

        try:
            build_parser().parse_args(words[1:])
        except SystemExit as exc:
            pytest.fail(f"{doc} line {line}: `{command}` does not parse (exit {exc.code})")
        return
    elif program == "sharpness":
        done = _run([sys.executable, "-m", "sharpness.cli", *words[1:]], env)
    elif mode == "parse-only" and program == "bash":
        done = _run(["bash", "-n", *words[1:2]], env)
    elif mode == "parse-only" and program in ("python", "python3"):
        done = _run([sys.executable, "-m", "py_compile", words[1]], env)
    elif mode == "parse-only":
        assert shutil.which(_program(program)) or Path(_program(program)).exists(), \
            f"{doc} line {line}: `{program}` is not installed"
        return
    else:
        pytest.fail(f"{doc} line {line}: `{command}`: the test does not know how to run "
                    f"`{program}`; mark its block parse-only or skip with a reason")
    assert done.returncode == 0, (f"{doc} line {line}: `{command}` failed "
                                  f"(exit {done.returncode}):\n{done.stderr[-3000:]}")
