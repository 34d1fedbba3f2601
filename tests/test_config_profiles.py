"""sharpness.config.profiles: the one rule by which the Snakefile and the commands assemble a
profile from its files (a whole profile replaces what came before; other files merge over it)."""

from __future__ import annotations

import pytest

from sharpness.config.profiles import compose, is_whole_profile, read_config_file
from sharpness.errors import ConfigError
from sharpness.mappings import deep_merge

QUICK = {"profile": "quick", "data": {"root": "data"}, "lesam": {"groups": {"toy": {"n": 1}}}}
PAPER = {"profile": "paper", "data": {"root": "/big"}, "lesam": {"base": {"epochs": 200}}}


def test_deep_merge_merges_nested_keys_and_mutates_nothing():
    base = {"a": {"b": 1, "c": [1]}, "d": 2}
    merged = deep_merge(base, {"a": {"b": 3}, "e": 4})
    assert merged == {"a": {"b": 3, "c": [1]}, "d": 2, "e": 4}
    merged["a"]["c"].append(2)
    assert base == {"a": {"b": 1, "c": [1]}, "d": 2}


def test_a_whole_profile_replaces_the_default():
    assert is_whole_profile(PAPER) and not is_whole_profile({"lesam": {}})
    config = compose([PAPER], base=QUICK)
    assert config == PAPER and "groups" not in config["lesam"]  # nothing of quick leaks in


def test_partial_files_merge_over_the_last_profile_then_the_overrides():
    config = compose([PAPER, {"lesam": {"base": {"lr": 0.1}}}], base=QUICK,
                     overrides={"seed_offset": 7})
    assert config["lesam"]["base"] == {"epochs": 200, "lr": 0.1}
    assert config["seed_offset"] == 7
    assert compose([{"lesam": {"x": 1}}], base=QUICK)["lesam"] == {"groups": {"toy": {"n": 1}},
                                                                   "x": 1}


def test_a_missing_or_non_mapping_file_is_named(tmp_path):
    with pytest.raises(ConfigError, match="not found"):
        read_config_file(tmp_path / "nope.yaml")
    (tmp_path / "list.yaml").write_text("- 1\n")
    with pytest.raises(ConfigError, match="not a mapping"):
        read_config_file(tmp_path / "list.yaml")
