"""The conftest's skip of modules that `-m` drops whole: read from source, exact for `-m`."""

from __future__ import annotations

import pytest

from tests.module_marks import dropped_by, module_marks

FAST = "not slow and not paper and not workflow and not e2e"


def _dropped(source: str, markexpr: str) -> bool:
    return dropped_by(module_marks(source), markexpr)


def test_module_marks_are_read_without_running_the_module():
    source = ("import pytest\nraise SystemExit('never run')\n"
              "pytestmark = [pytest.mark.workflow, pytest.mark.usefixtures('x')]\n")
    assert module_marks(source) == {"workflow"}
    assert module_marks("pytestmark = pytest.mark.usefixtures('one_thread')\n") == frozenset()
    assert module_marks("def f():\n    pytestmark = pytest.mark.slow\n") == frozenset()


@pytest.mark.parametrize(("marks", "markexpr", "dropped"), [
    ("pytest.mark.workflow", FAST, True),
    ("pytest.mark.e2e", FAST, True),
    ("pytest.mark.e2e", "e2e and not workflow and not slow and not paper", False),
    # a module marked e2e may hold a test also marked workflow: that one is dropped, not all
    ("pytest.mark.e2e", "workflow and not slow and not paper", False),
    ("pytest.mark.workflow", "e2e and not workflow", True),
    ("pytest.mark.slow", "not paper", False),
    ("pytest.mark.usefixtures('one_thread')", FAST, False),
])
def test_a_module_is_dropped_only_when_no_test_in_it_can_be_selected(marks, markexpr, dropped):
    assert _dropped(f"import pytest\npytestmark = {marks}\n", markexpr) is dropped

