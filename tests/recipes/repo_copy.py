"""A copy of (part of) the repository in a temporary folder, as a git checkout, on which a
test follows a CONTRIBUTING.md recipe as a person would (files edited as text, comments kept),
runs the commands and tests the recipe names, and then asks which files the recipe touched.

What a recipe test runs is read from the recipe's own text: ``named_tests`` (the ``pytest``
commands of its last step) and ``named_regenerations`` (its ``sharpness config doc`` and
``sharpness readme refresh ...`` commands), so a change of the recipe changes what its test
runs."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
GUIDE = (ROOT / "CONTRIBUTING.md").read_text(encoding="utf-8")
#: the recipes with a test here that runs the tests their last step names
RECIPE_TESTS = ("A new optimizer", "A new eos setting", "A new data set", "A new figure")


def copy_repo(dest: Path, *parts: str) -> Path:
    """The tracked files under ``parts`` (as they are in the working tree) copied to ``dest``
    and committed there, so ``touched`` names what a recipe changes afterwards."""
    listed = subprocess.run(["git", "ls-files", "-z", "--", *parts], cwd=ROOT, check=True,
                            capture_output=True).stdout.decode().split("\0")
    for name in filter(None, listed):
        if (ROOT / name).is_file():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, dest / name)
    commit_all(dest)
    return dest


def commit_all(where: Path) -> None:
    """``where`` made a git checkout (when it is not one) with everything in it committed."""
    if not (where / ".git").exists():
        git(where, "init", "-q")
    git(where, "add", "-A")
    git(where, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "copy")


def git(where: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=where, check=True, capture_output=True,
                          text=True).stdout


def touched(copy: Path) -> set[str]:
    """Files changed, added or removed since the copy was made (untracked ones included)."""
    return {line[3:] for line in git(copy, "status", "--porcelain", "-uall").splitlines()}


def run(copy: Path, *command: str) -> str:
    """``command`` run in the copy with the copy's package (and its tests) first on the path;
    a failure shows its output."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join((str(copy / "src"), str(copy))))
    done = subprocess.run(list(command), cwd=copy, env=env, capture_output=True, text=True)
    assert done.returncode == 0, f"{' '.join(command)}:\n{done.stdout[-3000:]}{done.stderr[-3000:]}"
    return done.stdout


def sharpness(copy: Path, *args: str) -> str:
    """``sharpness ARGS`` in the copy, its own code."""
    return run(copy, sys.executable, "-m", "sharpness.cli", *args)


# --- the recipe's text ---------------------------------------------------------------------

def recipe_text(heading: str) -> str:
    """The text of the recipe ``### heading`` of CONTRIBUTING.md (to the next heading)."""
    start = GUIDE.index(f"\n### {heading}")
    ends = [e for e in (GUIDE.find("\n### ", start + 1), GUIDE.find("\n## ", start + 1))
            if e != -1]
    return GUIDE[start:min(ends, default=len(GUIDE))]


def recipe_files(heading: str, name: str) -> set[str]:
    """The files the recipe ``### heading`` of CONTRIBUTING.md lists in its "Files:" line,
    with ``<name>`` filled in."""
    files = re.search(r"^Files: (.*?)\.$", recipe_text(heading), flags=re.MULTILINE | re.DOTALL)
    assert files, f"the recipe {heading!r} has no 'Files:' line"
    return {t.replace("<name>", name) for t in re.findall(r"`([^`]+)`", files.group(1))}


def last_step(heading: str) -> str:
    """The recipe's last numbered step (``N. ...`` to the end of the list), or the whole
    recipe when it has no numbered steps."""
    text = recipe_text(heading)
    starts = [m.start() for m in re.finditer(r"^\d+\. ", text, flags=re.MULTILINE)]
    if not starts:
        return text
    step = text[starts[-1]:]
    stop = re.search(r"\n\n(?! )", step)  # the list ends at a paragraph that is not indented
    return step[:stop.start()] if stop else step


def _commands(text: str, pattern: str, name: str) -> list[list[str]]:
    spans = re.findall(r"`([^`]+)`", text)
    return [shlex.split(" ".join(span.replace("<name>", name).split()))
            for span in spans if re.match(pattern, " ".join(span.split()))]


def named_tests(heading: str, name: str) -> list[list[str]]:
    """Every ``pytest ...`` command of the recipe's last step (``<name>`` filled in), as
    argument lists without the leading ``pytest``."""
    commands = _commands(last_step(heading), r"pytest ", name)
    assert commands, f"the last step of the recipe {heading!r} names no pytest command"
    return [command[1:] for command in commands]


def named_regenerations(heading: str) -> list[list[str]]:
    """Every ``sharpness config doc`` and ``sharpness readme refresh ...`` command the recipe
    names, in order, as argument lists without the leading ``sharpness``."""
    found = _commands(recipe_text(heading), r"sharpness (config doc|readme refresh)( |$)", "")
    return [c[1:] for i, c in enumerate(found) if c not in found[:i]]  # each once, in order


def run_named_tests(copy: Path, heading: str, name: str) -> list[str]:
    """The pytest commands the recipe's last step names, run in the copy (its own package
    and tests); a failing one, or one that ran no test, fails the caller with its output.
    Returns each run's summary line."""
    summaries = []
    for args in named_tests(heading, name):
        summary = run(copy, sys.executable, "-m", "pytest", "-p", "no:cacheprovider",
                      *args).strip().splitlines()[-1]
        assert re.search(r"\b\d+ passed", summary) and not re.search(
            r"\b\d+ (failed|errors?)\b", summary), f"pytest {' '.join(args)}: {summary}"
        summaries.append(summary)
    return summaries


def run_named_regenerations(copy: Path, heading: str) -> None:
    """The ``sharpness config doc`` / ``readme refresh`` commands the recipe names, run in
    the copy."""
    for args in named_regenerations(heading):
        sharpness(copy, *args)


# --- editing files as a person does ---------------------------------------------------------

def comment_lines(text: str) -> list[str]:
    """The lines of a YAML or Python text that hold a comment (what an edit must keep)."""
    return [line for line in text.splitlines() if "#" in line]


def replace_once(path: Path, old: str, new: str) -> None:
    """``old`` (found exactly once) replaced by ``new`` in the text of ``path``."""
    text = path.read_text()
    assert text.count(old) == 1, f"{path.name}: {old!r} occurs {text.count(old)} times"
    path.write_text(text.replace(old, new, 1))


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


def _code(line: str) -> str:
    """A YAML line without its comment (a `` #`` outside quotes)."""
    quote = None
    for i, ch in enumerate(line):
        if quote:
            quote = None if ch == quote else quote
        elif ch in "\"'":
            quote = ch
        elif ch == "#" and (i == 0 or line[i - 1] == " "):
            return line[:i].rstrip()
    return line.rstrip()


def yaml_block(lines: list[str], keys: tuple[str, ...]) -> tuple[int, int]:
    """The index of the line of the nested key ``keys`` in a YAML text's lines, and the end
    (exclusive) of its block: the last line indented deeper than the key, before the next
    line (comment or not) at the key's indentation or less."""
    start, end, child = -1, len(lines), 0
    for key in keys:
        for i in range(start + 1, end):
            code = _code(lines[i])
            if code.strip() and _indent(code) == child and code.strip().startswith(f"{key}:"):
                start = i
                break
        else:
            raise AssertionError(f"no key {'.'.join(keys)} in the YAML text")
        depth, end = child, next((i for i in range(start + 1, end) if lines[i].strip()
                                  and _indent(lines[i]) <= child), end)
        while end > start + 1 and not lines[end - 1].strip():
            end -= 1
        child = next((_indent(line) for line in lines[start + 1:end] if _code(line).strip()),
                     depth + 2)
    return start, end


def yaml_insert(path: Path, keys: tuple[str, ...], text: str) -> None:
    """``text`` (YAML lines, written flush left) added at the end of the block of ``keys``,
    indented as that block's entries are: a new entry of a mapping."""
    lines = path.read_text().splitlines(keepends=True)
    start, end = yaml_block(lines, keys)
    entries = [line for line in lines[start + 1:end] if _code(line).strip()]
    assert entries, f"{path.name}: {'.'.join(keys)} has no block of entries to add to"
    pad = " " * _indent(entries[0])
    new = textwrap.indent(textwrap.dedent(text).strip("\n") + "\n", pad)
    path.write_text("".join([*lines[:end], new, *lines[end:]]))


def yaml_append_to_list(path: Path, keys: tuple[str, ...], item: str) -> None:
    """``item`` appended to the flow list (``[a, b, ...]``, on one line or several) that is
    the value of ``keys``: on its own line aligned with the list's first item when the list
    spans lines, else before the closing bracket."""
    lines = path.read_text().splitlines(keepends=True)
    start, end = yaml_block(lines, keys)
    opening = lines[start].index("[")
    depth = 0
    for i in range(start, max(end, start + 1)):
        code = _code(lines[i])
        for j, ch in enumerate(code):
            if i == start and j < opening:
                continue
            depth += {"[": 1, "]": -1}.get(ch, 0)
            if depth == 0:
                break
        if depth == 0:
            break
    else:
        raise AssertionError(f"{path.name}: {'.'.join(keys)} is not a flow list")
    line = lines[i]
    comment = line[len(_code(line)):].rstrip("\n")
    before, after = _code(line)[:j], _code(line)[j:]
    if i == start:
        lines[i] = f"{before}, {item}{after}{comment}\n"
    else:
        lines[i] = f"{before},{comment}\n{' ' * (opening + 1)}{item}{after}\n"
    path.write_text("".join(lines))
