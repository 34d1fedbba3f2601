"""CONTRIBUTING.md's "A new data set" recipe, followed on a copy of the package: a registry
entry, its loader, its size for the planner, its test and its row in ``docs/data.md``, each
edited as text; the tests the recipe's last step names (read from its text) pass in the copy,
the set loads by name and is priced, and the recipe touched the files its "Files:" line
names. It runs pytest and Python in the copy (tens of seconds):
workflow tier."""

from __future__ import annotations

import sys

import pytest

from tests.recipes.repo_copy import copy_repo, recipe_files, run, run_named_tests, touched

pytestmark = pytest.mark.workflow

NAME = "recipe_toy"
LOADER = f'''

def load_recipe_toy(name: str = "{NAME}", root: str | os.PathLike[str] = "data", *,
                    mirror: str | os.PathLike[str] | None = None,
                    download: bool = True) -> ArrayDataset:
    """A toy set of the recipe test: 12 train and 4 test 1x4x4 images, two classes."""
    x = np.arange(16 * 16, dtype=np.uint8).reshape(16, 4, 4)
    y = np.arange(16) % 2
    return ArrayDataset(name=name, x_train=to_nchw(x[:12]), y_train=labels(y[:12]),
                        x_test=to_nchw(x[12:]), y_test=labels(y[12:]), num_classes=2,
                        info={{"name": name}})
'''
ENTRY = f'''
_add(DatasetSpec(
    name="{NAME}", title="a toy of the recipe test", source="built in code",
    loader=_LOADERS + "load_recipe_toy", needs_preparing=False, licence="none",
    citation="none"))
'''
TEST = f'''

def test_the_recipe_toy_loads_by_name():
    ds = load_dataset("{NAME}")
    assert (len(ds.x_train), len(ds.x_test), ds.num_classes) == (12, 4, 2)
'''
ROW = (f"| `{NAME}` | built in code: 12 train and 4 test images of 4x4 pixels, two classes "
       "| none |\n")


def test_the_new_data_set_recipe_on_a_copy(tmp_path):
    copy = copy_repo(tmp_path, "src", "tests", "docs/data.md", "data/embedded", "pyproject.toml")
    package = copy / "src/sharpness"
    (package / "data/registry.py").write_text((package / "data/registry.py").read_text() + ENTRY)
    (package / "data/loaders.py").write_text((package / "data/loaders.py").read_text() + LOADER)
    plan = package / "cost/plan.py"
    anchor = '    "mnist": (60000, 1, 28, 10, 10000),\n'
    assert anchor in plan.read_text()
    plan.write_text(plan.read_text().replace(anchor, anchor + f'    "{NAME}": (12, 1, 4, 2, 4),\n'))
    test = copy / "tests/data/test_registry_loaders.py"
    test.write_text(test.read_text() + TEST)
    doc = copy / "docs/data.md"
    anchor = "| `mnist_on_cifar` |"
    lines = doc.read_text().splitlines(keepends=True)
    at = next(i for i, line in enumerate(lines) if line.startswith(anchor))
    doc.write_text("".join([*lines[:at + 1], ROW, *lines[at + 1:]]))
    # what the recipe's last step says to run
    run_named_tests(copy, "A new data set", NAME)
    shape = run(copy, sys.executable, "-c", "from sharpness.cost.plan import data_shape; "
                f"print(data_shape({NAME!r}))")
    assert shape.strip() == "(12, 1, 4, 2, 4)"
    assert touched(copy) == recipe_files("A new data set", NAME)
