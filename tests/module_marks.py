"""Which test modules a `-m` expression drops whole, read from their source, not by importing.

pytest applies `-m` after it has imported every test module, so each worker of `make test`
would import the second tier's modules (Snakemake, subprocess helpers, ...) only to drop
every test in them: about 2.5 s of each worker's start on the 2-core machine. A module whose
top-level ``pytestmark`` carries marks that no test in it can escape (``-m "not workflow"``
and ``pytestmark = pytest.mark.workflow``) is left unimported instead (``tests/conftest.py``,
``pytest_ignore_collect``). The module is read as text and parsed, never executed.
"""

from __future__ import annotations

import ast
import itertools
import re
from collections.abc import Callable, Iterable
from pathlib import Path

#: more marker names in `-m` than this and the module is imported as usual (2**N evaluations)
MAX_MARKERS = 12


def module_marks(source: str) -> frozenset[str]:
    """The marker names of a module's top-level ``pytestmark`` (``pytest.mark.X``, or a list
    or tuple of them); ``usefixtures`` and anything that is not a plain mark are left out."""
    if "pytestmark" not in source:
        return frozenset()
    marks: set[str] = set()
    for node in ast.parse(source).body:
        if not (isinstance(node, ast.Assign)
                and any(isinstance(t, ast.Name) and t.id == "pytestmark" for t in node.targets)):
            continue
        values = node.value.elts if isinstance(node.value, (ast.List, ast.Tuple)) else [node.value]
        for value in values:
            if (isinstance(value, ast.Attribute) and isinstance(value.value, ast.Attribute)
                    and value.value.attr == "mark" and value.attr != "usefixtures"):
                marks.add(value.attr)
    return frozenset(marks)


def expression_names(markexpr: str) -> frozenset[str]:
    """The marker names a `-m` expression mentions (its words but ``and``, ``or``, ``not``):
    a name it does not mention cannot change its value."""
    return frozenset(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", markexpr)) - {"and", "or", "not"}


def dropped_whole(marks: frozenset[str], mentioned: Iterable[str],
                  selects: Callable[[frozenset[str]], bool]) -> bool:
    """True when ``selects`` (the `-m` expression, given a test's marker names) is false for
    every test that carries ``marks``, whatever other ``mentioned`` markers it adds."""
    if not marks:
        return False
    others = sorted(set(mentioned) - marks)
    if len(others) > MAX_MARKERS:
        return False
    return not any(selects(marks | frozenset(extra))
                   for k in range(len(others) + 1)
                   for extra in itertools.combinations(others, k))


def dropped_by(marks: frozenset[str], markexpr: str) -> bool:
    """True when the `-m` expression ``markexpr`` selects no test that carries ``marks``,
    judged by pytest's own parser of `-m` (a private module of pytest: any surprise there
    answers False, and the module is collected as usual)."""
    if not marks or not markexpr:
        return False
    try:
        from _pytest.mark.expression import Expression

        expression = Expression.compile(markexpr)
        return dropped_whole(marks, expression_names(markexpr), lambda names: expression.evaluate(
            lambda name, /, **_kwargs: name in names))
    except Exception:  # noqa: BLE001 - another pytest's parser or matcher: collect as usual
        return False


def read_marks(path: Path) -> frozenset[str]:
    """:func:`module_marks` of the file at ``path`` (none when it cannot be read or parsed)."""
    try:
        return module_marks(path.read_text(encoding="utf-8"))
    except (OSError, SyntaxError, UnicodeDecodeError, ValueError):
        return frozenset()
