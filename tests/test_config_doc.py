"""The configuration reference is written from the schema, and every key is described."""

from __future__ import annotations

import copy

from sharpness.cli import main
from sharpness.config.check import load_schema
from sharpness.config.doc import properties, render, undescribed
from tests.conftest import REPO

SCHEMA_PATH = REPO / "workflow/config/config.schema.yaml"
SCHEMA = load_schema(SCHEMA_PATH)


def test_every_key_has_a_description():
    """A key added without a description fails here, named (fill in `description:`)."""
    keys = [path for path, _ in properties(SCHEMA)]
    assert len(keys) > 300
    assert undescribed(SCHEMA) == [], "keys without a description in config.schema.yaml"


def test_committed_reference_equals_the_generated_one():
    committed = (REPO / "workflow/config/README.md").read_text()
    assert committed == render(SCHEMA), "run `sharpness config doc` and commit the result"


def test_reference_lists_every_key_with_its_default():
    text = render(SCHEMA)
    assert "| `data.download` | boolean | `true` |" in text
    assert "| `lr` | number, >= 0 | `0.1` |" in text  # training settings, once
    assert ("| `lesam.groups.<name>.seeds` | list of (integer, >= 0, <= 2147483647), at most 1000 items, "
            "required |") in text
    assert "| `lesam.groups.<name>.init_from` | list of [name](#names-and-bounds) |" in text
    assert "(requires mu, multi, alphas, rhos, h, steps, record_every)" in text


def test_undescribed_names_the_key():
    schema = copy.deepcopy(SCHEMA)
    del schema["$defs"]["train"]["properties"]["lr"]["description"]
    schema["properties"]["eos"]["properties"]["toy"]["properties"]["new_key"] = {"type": "number"}
    assert undescribed(schema) == ["$defs.train.lr", "eos.toy.new_key"]


def test_command_checks_and_writes(tmp_path, capsys):
    out = tmp_path / "README.md"
    assert main(["config", "doc", "--schema", str(SCHEMA_PATH), "--out", str(out), "--check"]) == 1
    assert main(["config", "doc", "--schema", str(SCHEMA_PATH), "--out", str(out)]) == 0
    assert out.read_text() == render(SCHEMA)
    assert main(["config", "doc", "--schema", str(SCHEMA_PATH), "--out", str(out), "--check"]) == 0
    bad = tmp_path / "schema.yaml"
    bad.write_text("properties:\n  x: {type: number}\n")
    assert main(["config", "doc", "--schema", str(bad), "--out", str(out)]) == 2
    assert "without a description: x" in capsys.readouterr().err
