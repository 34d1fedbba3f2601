"""Promises of docs/security.md that no other test performed: checkpoints holding other
pickled objects are refused, git runs with the safe options everywhere, and the rules' ``PATH``
prefix names the environment's folder as one quoted shell word."""

from __future__ import annotations

import ast
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO

SRC = REPO / "src" / "sharpness"


class _Planted:
    """An object a pickle would rebuild by calling code: creates a marker when unpickled."""

    def __init__(self, marker: str) -> None:
        self.marker = marker

    def __reduce__(self):
        return (Path(self.marker).touch, ())


def test_a_checkpoint_holding_another_pickled_object_is_refused_and_nothing_runs(
        tmp_path) -> None:
    import torch

    from sharpness.train.checkpoint import UnsafeCheckpointError, safe_load

    marker = tmp_path / "ran"
    path = tmp_path / "last.pt"
    torch.save({"step": 3, "extra": _Planted(str(marker))}, path)
    with pytest.raises(UnsafeCheckpointError, match="pickled objects other than tensors"):
        safe_load(path)
    assert not marker.exists()
    torch.save({"step": 3, "w": torch.zeros(2)}, path)
    assert safe_load(path)["step"] == 3


def _git_calls() -> list[tuple[str, int, str]]:
    """Every list literal in the package whose first word is ``"git"``: (file, line, text)."""
    found = []
    for path in sorted(SRC.rglob("*.py")):
        tree = ast.parse(path.read_text(), filename=str(path))
        for node in ast.walk(tree):
            if (isinstance(node, ast.List) and node.elts
                    and isinstance(node.elts[0], ast.Constant) and node.elts[0].value == "git"):
                found.append((str(path.relative_to(REPO)), node.lineno, ast.unparse(node)))
    return found


def test_git_runs_with_the_safe_options_everywhere() -> None:
    """Each git command line of the package carries ``SAFE_GIT_OPTIONS`` (fsmonitor off, no
    hooks), so no repository's configuration starts a program."""
    calls = _git_calls()
    assert len(calls) >= 4, calls  # the checkout, the environment, registrations, timings
    unsafe = [c for c in calls if "SAFE_GIT_OPTIONS" not in c[2]]
    assert not unsafe, unsafe


def test_the_reader_of_git_calls_finds_an_unsafe_one(tmp_path, monkeypatch) -> None:
    module = tmp_path / "sharpness" / "x.py"
    module.parent.mkdir()
    module.write_text('import subprocess\nsubprocess.run(["git", "status"])\n')
    monkeypatch.setattr(sys.modules[__name__], "SRC", module.parent)
    monkeypatch.setattr(sys.modules[__name__], "REPO", tmp_path)
    assert [c[2] for c in _git_calls()] == ["['git', 'status']"]


def test_the_path_prefix_is_one_quoted_word_whatever_the_folder_holds(tmp_path) -> None:
    """The rules' prefix (``workflow/rules/common.smk``) built for a folder holding a space, a
    quote, `;` and braces: the shell reads it back as that folder, and runs nothing else."""
    text = (REPO / "workflow" / "rules" / "common.smk").read_text()
    line = next(x for x in text.splitlines() if "_bin = shlex.quote(" in x)
    expr = line.split("=", 1)[1].strip()
    folder = str(tmp_path / "we'ird {env}; touch pwned")
    value = eval(expr, {"shlex": shlex, "os": os,  # the prefix's own expression
                        "sys": type("S", (), {"executable": folder + "/python"})})
    # a variant adds `export SHARPNESS_VARIANT=variant.json; ` (two constants, no user text)
    assert re.search(r'shell\.prefix\(f\'export PATH=\{_bin\}:"\$PATH"; \{_variant_env\}\'\)',
                     text)
    assert 'f"export {VARIANT_ENV}={VARIANT_RECORD}; "' in text
    prefix = f'export PATH={value}:"$PATH"; '.format()  # Snakemake formats the prefix
    out = subprocess.run(["bash", "-c", prefix + 'printf %s "${PATH%%:*}"'], cwd=tmp_path,
                         capture_output=True, text=True, check=True).stdout
    assert out == folder
    assert not (tmp_path / "pwned").exists()


def test_every_test_docs_security_names_exists() -> None:
    """docs/security.md names the test of each promise: every name it gives is a test function
    or a test module of the suite (a renamed or deleted test is caught here)."""
    text = (REPO / "docs" / "security.md").read_text()
    names = set(re.findall(r"\b(test_\w+)\b", text)) - {"test_32x32"}  # an SVHN file name
    files = sorted((REPO / "tests").rglob("test_*.py"))
    modules, texts = {p.stem for p in files}, [p.read_text() for p in files]
    found = {n for n in names if n in modules or any(f"def {n}(" in t for t in texts)}
    assert len(names) > 100 and names == found, sorted(names - found)
