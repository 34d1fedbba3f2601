"""Hostile input to a parser is the command's own one-line error, never a traceback.

A YAML mapping 400 levels deep, a JSON record nested 200,000 deep and an integer of more than
4,300 digits each ended in a Python traceback (``RecursionError``, ``ValueError``): nothing
ran, but the user could not tell an attack from a bug. The crate's metadata is covered in
``test_crates.py``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from sharpness.cli import main
from sharpness.config import plain
from sharpness.io import read_json


def _yaml_cases(folder: Path) -> dict[str, tuple[Path, str]]:
    cases = {
        "400-levels": ("".join("  " * i + "k:\n" for i in range(400)) + "  " * 400 + "v: 1\n",
                       "nested deeper than 64 levels"),
        "flow-100000-deep": ("a: " + "[" * 100_000 + "]" * 100_000 + "\n",
                             "nested deeper than 64 levels"),
        "5000-digit-integer": ("seed_offset: " + "1" * 5000 + "\n",
                               "Exceeds the limit (4300 digits)"),
        "nested-5000-digits": ("minorfirst: {x: " + "9" * 5000 + "}\n",
                               "Exceeds the limit (4300 digits)"),
    }
    out = {}
    for name, (text, says) in cases.items():
        path = folder / f"{name}.yaml"
        path.write_text(text)
        out[name] = (path, says)
    big = folder / "big.yaml"
    with big.open("wb") as handle:
        handle.truncate(plain.MAX_BYTES + 1)  # sparse: costs nothing to make
    out["over-16-MiB"] = (big, "more than the 16,777,216 a config may have")
    return out


def test_a_hostile_config_is_refused_in_one_line(tmp_path, capsys) -> None:
    for name, (path, says) in _yaml_cases(tmp_path).items():
        capsys.readouterr()
        assert main(["config", "check", str(path)]) == 2, name
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and says in err, (name, err)
        assert f"config file '{path}'" in err


def test_a_config_at_the_depth_limit_still_reads() -> None:
    text = "".join("  " * i + "k:\n" for i in range(plain.MAX_DEPTH - 2)) + \
        "  " * (plain.MAX_DEPTH - 2) + "v: 1\n"
    data = plain.load_plain(text, "deep.yaml")
    for _ in range(plain.MAX_DEPTH - 2):
        data = data["k"]
    assert data == {"v": 1}


@pytest.mark.parametrize(("text", "says"), [
    ("[" * 200_000 + "]" * 200_000, r"not a readable provenance record \(.*nested too deeply"),
    ('{"id": ' + "1" * 5000 + "}", r"not a readable provenance record \(.*4300 digits"),
    ("[1, 2]", "a provenance record is a JSON object, this is a list"),
], ids=["200000-deep", "5000-digit-integer", "a-list"])
def test_audit_of_a_hostile_record_is_one_line(tmp_path, capsys, text, says) -> None:
    import re

    (tmp_path / "a.csv").write_text("x,y\n")
    (tmp_path / "a.provenance.json").write_text(text)
    capsys.readouterr()
    assert main(["audit", str(tmp_path / "a.csv")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and re.search(says, err), err


def test_read_json_turns_recursion_into_a_value_error(tmp_path) -> None:
    """Every reader that handles an unreadable file (``except ValueError``) handles a file
    nested past the parser's recursion too."""
    path = tmp_path / "deep.json"
    path.write_text("[" * 200_000 + "]" * 200_000)
    with pytest.raises(ValueError, match="nested too deeply"):
        read_json(path)
