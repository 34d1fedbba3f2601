"""`sharpness eos run-many`: several settings in one process, each into its own folder as
`eos run` writes it; one that fails is named and the others still run (exit 1)."""

from __future__ import annotations

import argparse
import json

import pytest

from sharpness.commands import eos as eos_cmd
from sharpness.errors import ConfigError


def _args(tmp_path, params):
    return argparse.Namespace(params=json.dumps(params), out=str(tmp_path), data_root="data",
                              threads=1)


def test_each_setting_goes_to_its_own_folder_and_a_failure_does_not_stop_the_rest(
        tmp_path, monkeypatch, capsys):
    seen = []

    def fake_run_one(params, out, data_root, threads, config_file=None):
        seen.append((params["x"], out.name, data_root, threads))
        if params["x"] == 2:
            raise RuntimeError("flow blew up")

    monkeypatch.setattr(eos_cmd, "run_one", fake_run_one)
    code = eos_cmd._run_many(_args(tmp_path, {"a": {"x": 1}, "b": {"x": 2}, "c": {"x": 3}}))
    assert code == 1
    assert seen == [(1, "a", "data", 1), (2, "b", "data", 1), (3, "c", "data", 1)]
    out = capsys.readouterr().out
    assert "setting b failed: RuntimeError: flow blew up" in out
    assert "1 of 3 settings failed: b" in out


def test_all_settings_done_exits_zero(tmp_path, monkeypatch):
    monkeypatch.setattr(eos_cmd, "run_one", lambda *a, **kw: None)
    assert eos_cmd._run_many(_args(tmp_path, {"a": {}, "b": {}})) == 0


@pytest.mark.parametrize("params", [[], {}, "x"])
def test_params_must_name_the_settings(tmp_path, params):
    with pytest.raises(ConfigError, match="setting name -> setting"):
        eos_cmd._run_many(_args(tmp_path, params))


def test_a_bad_setting_stops_with_its_config_error(tmp_path, monkeypatch):
    def bad(*a, **kw):
        raise ConfigError("eos setting key 'lrr' is not known")

    monkeypatch.setattr(eos_cmd, "run_one", bad)
    with pytest.raises(ConfigError, match="lrr"):
        eos_cmd._run_many(_args(tmp_path, {"a": {}}))
