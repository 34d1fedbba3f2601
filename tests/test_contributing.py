"""CONTRIBUTING.md is true of the tree: its one layout section names every package and module
of ``src/sharpness/`` and every file of ``workflow/config/``, and the files, functions and
config keys its recipes name exist, and every recipe has its "Files:" line and a test that
follows it on a copy of the repository (``tests/recipes/``; ``pytest -k recipe`` selects them)."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
TEXT = (ROOT / "CONTRIBUTING.md").read_text(encoding="utf-8")
PACKAGE = ROOT / "src" / "sharpness"


def _section(heading: str) -> str:
    """The text of the ``## heading`` section of CONTRIBUTING.md."""
    start = TEXT.index(f"\n## {heading}\n")
    end = TEXT.find("\n## ", start + 1)
    return TEXT[start:end if end != -1 else None]


def _layout_block() -> str:
    block = re.search(r"```\n(.*?)```", _section("Layout and ownership"), flags=re.DOTALL)
    assert block, "the layout section has no tree block"
    return block.group(1)


def test_one_layout_section() -> None:
    headings = re.findall(r"^## (.*)$", TEXT, flags=re.MULTILINE)
    assert [h for h in headings if h.lower().startswith("layout")] == ["Layout and ownership"]


def test_layout_names_every_package_and_module() -> None:
    block = _layout_block()
    missing = []
    for path in sorted(PACKAGE.iterdir()):
        if path.is_dir() and (path / "__init__.py").is_file():
            missing += [] if f"{path.name}/" in block else [f"{path.name}/"]
            missing += [f"{path.name}/{sub.name}/" for sub in sorted(path.iterdir())
                        if (sub / "__init__.py").is_file() and f"{sub.name}/" not in block]
        elif path.suffix == ".py" and path.name != "__init__.py" and path.name not in block:
            missing.append(path.name)
    assert not missing, f"CONTRIBUTING.md's layout does not name: {', '.join(missing)}"


def test_layout_names_every_config_file() -> None:
    block = _layout_block()
    files = [p.name for p in sorted((ROOT / "workflow" / "config").iterdir()) if p.is_file()]
    assert files and not [f for f in files if f not in block], files


RECIPES = _section("Recipes: extending the pipeline")


def _tokens() -> list[str]:
    return re.findall(r"`([^`\n]+)`", RECIPES)


def test_recipe_paths_exist() -> None:
    paths = [t for t in _tokens() if re.match(r"(src|tests|workflow|docs)/", t)]
    assert len(paths) >= 10, paths
    for token in paths:
        path = token.split(" ")[0]
        if "<" in path:  # a placeholder: its folder must exist
            path = path[:path.index("<")].rsplit("/", 1)[0]
        assert (ROOT / path).exists(), token


def test_recipe_python_names_exist() -> None:
    names = [t for t in _tokens() if re.fullmatch(r"sharpness(\.\w+)+", t)]
    assert len(names) >= 8, names
    for name in names:
        parts = name.split(".")
        for cut in range(len(parts), 0, -1):
            try:
                obj = importlib.import_module(".".join(parts[:cut]))
            except ModuleNotFoundError:
                continue
            for attr in parts[cut:]:
                obj = getattr(obj, attr)
            break
        else:
            pytest.fail(f"{name} does not import")


def test_recipe_functions_and_keys_exist() -> None:
    from sharpness.claims import eos, lesam, minorfirst
    from sharpness.data import loaders, registry

    for module in (eos, lesam, minorfirst):
        assert module.PREDICATES
    assert "\ndef _add(spec: DatasetSpec)" in Path(registry.__file__).read_text() and registry.DATASETS
    assert "_add" in RECIPES and "DATASETS" in RECIPES and "DATA_SHAPES" in RECIPES
    for name in ("load_torchvision", "load_mnist"):
        assert name in RECIPES and callable(getattr(loaders, name))
    schema = yaml.safe_load((ROOT / "workflow/config/config.schema.yaml").read_text())
    assert {"optimizer", "eos_setting"} <= set(schema["$defs"])
    quick = yaml.safe_load((ROOT / "workflow/config/quick.yaml").read_text())
    assert quick["lesam"]["optimizers"] and {"settings", "figures", "defaults"} <= set(quick["eos"])
    fixtures = (ROOT / "tests/claims/fixtures.py").read_text()
    assert "def test_every_predicate_has_a_fixture_pair" in (
        ROOT / "tests/claims/test_predicates.py").read_text() and fixtures


def test_the_eos_setting_recipe_on_a_copy_of_the_config() -> None:
    """One entry under eos.settings, listed under eos.figures, is a setting the workflow
    expands (with eos.defaults merged under it)."""
    from sharpness.eos.config import expand_settings

    eos = yaml.safe_load((ROOT / "workflow/config/quick.yaml").read_text())["eos"]
    base = dict(next(iter(eos["settings"].values())))
    eos["settings"]["recipe_new"] = {**base, "label": "a new setting"}
    figure = next(iter(eos["figures"]))
    eos["figures"][figure] = [*eos["figures"][figure], "recipe_new"]
    settings = expand_settings(eos)
    assert settings["recipe_new"]["label"] == "a new setting"
    for key, value in (eos.get("defaults") or {}).items():
        if key not in base:
            assert settings["recipe_new"][key] == value, key


def test_every_recipe_lists_its_files_and_has_a_recipe_test() -> None:
    """Every recipe has its "Files:" line; every one but the claim's (which
    ``tests/claims/test_recipe.py`` follows) has a test in ``tests/recipes/`` that names it,
    runs the tests its last step names and compares the files it touched."""
    from tests.recipes.repo_copy import RECIPE_TESTS

    headings = re.findall(r"^### (A new [a-z ]+?) \(", RECIPES, flags=re.MULTILINE)
    assert len(headings) >= 5, headings
    assert set(RECIPE_TESTS) == set(headings) - {"A new claim"}, headings
    tests = {p.name: p.read_text() for p in (ROOT / "tests" / "recipes").glob("test_recipe_*.py")}
    for heading in headings:
        section = RECIPES[RECIPES.index(f"### {heading}"):]
        section = section[:section.find("\n### ", 1) if "\n### " in section[1:] else None]
        assert "\nFiles: `" in section, f"{heading}: no 'Files:' line"
        if heading in RECIPE_TESTS:
            follows = [name for name, text in tests.items() if f'"{heading}"' in text
                       and "run_named_tests(" in text and "recipe_files(" in text]
            assert follows, f"{heading}: no test follows it"
