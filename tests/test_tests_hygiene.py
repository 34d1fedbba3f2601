"""The suite asserts things that could fail, once: no assertion compares a value with itself,
and the suite repeats itself in at most :data:`MOST_REPEATS` places.

``assert len(MODELS) == len(list(MODELS))`` or ``assert f(x) == f(x)`` passes whatever the code
does (a determinism check compares runs that could differ: another seed, another process).
The scan reads every test module's ``assert`` statements (AST, no import) and refuses a
comparison whose two sides are the same expression once ``list(...)``/``tuple(...)`` wrappers
are dropped, and an assertion of a true constant. Repetition is counted by the ``duplicates``
tool where it is installed (pairs of places sharing six or more lines of the same shape): a
helper or fixture written twice belongs in a ``conftest.py`` or a helper module."""

from __future__ import annotations

import ast
import re
import shutil
import subprocess
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent
#: pairs of repeated places ``duplicates`` may list in tests/
MOST_REPEATS = 4
#: comparisons true whenever both sides are the same expression
REFLEXIVE = (ast.Eq, ast.Is, ast.LtE, ast.GtE)


class _Unwrap(ast.NodeTransformer):
    """``list(x)`` and ``tuple(x)`` as ``x``: same length, same items."""

    def visit_Call(self, node: ast.Call) -> ast.AST:
        self.generic_visit(node)
        if isinstance(node.func, ast.Name) and node.func.id in ("list", "tuple") \
                and len(node.args) == 1 and not node.keywords:
            return node.args[0]
        return node


def _shape(node: ast.expr) -> str:
    copy = ast.parse(ast.unparse(node), mode="eval")
    return ast.dump(_Unwrap().visit(copy))


def tautologies(source: str) -> list[tuple[int, str]]:
    """``(line, assertion)`` of every assertion of ``source`` that cannot fail."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Assert):
            continue
        test = node.test
        if isinstance(test, ast.Constant) and test.value:
            found.append((node.lineno, ast.unparse(test)))
        if isinstance(test, ast.Compare):
            sides = [test.left, *test.comparators]
            if any(isinstance(op, REFLEXIVE) and _shape(a) == _shape(b)
                   for op, a, b in zip(test.ops, sides[:-1], sides[1:], strict=True)):
                found.append((node.lineno, ast.unparse(test)))
    return found


def test_no_assertion_compares_a_value_with_itself() -> None:
    found = [f"{path.relative_to(TESTS.parent)}:{line}: assert {text}"
             for path in sorted(TESTS.rglob("*.py"))
             for line, text in tautologies(path.read_text(encoding="utf-8"))]
    assert not found, "assertions that cannot fail:\n" + "\n".join(found)


def test_the_scan_sees_what_it_forbids() -> None:
    assert tautologies("assert len(MODELS) == len(list(MODELS))")
    assert tautologies("assert method_color('sam') == method_color('sam')")
    assert tautologies("assert 0 < x <= x") and tautologies("assert True")
    assert not tautologies("assert f(x, seed=3) == f(x, seed=4)")
    assert not tautologies("assert a == b and len(a) == 3\nassert x != x")


@pytest.mark.e2e  # runs the duplicates tool over the whole suite
@pytest.mark.skipif(shutil.which("duplicates") is None, reason="the duplicates tool is not on PATH")
def test_the_suite_repeats_itself_in_few_places() -> None:
    done = subprocess.run(["duplicates", "--repo", str(TESTS), "--most", "50"],
                          capture_output=True, text=True, timeout=60, check=False)
    first = done.stdout.splitlines()[0] if done.stdout else done.stderr
    count = re.match(r"(\d+) pairs? of places|no duplicates", first)
    assert count, f"duplicates answered: {first!r}"
    assert int(count.group(1) or 0) <= MOST_REPEATS, done.stdout
