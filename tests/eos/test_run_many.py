"""`sharpness eos run-many`: several settings in one process, each into its own folder as
`eos run` writes it; one that fails is named and the others still run (exit 1)."""

from __future__ import annotations

import argparse
import json

import pytest

from sharpness.commands import eos as eos_cmd
from sharpness.errors import ConfigError
from sharpness.planning.resumed import unsealed
from sharpness.runs.restart import removed_result
from sharpness.runs.seal import damage


def _args(tmp_path, params):
    return argparse.Namespace(params=json.dumps(params), out=str(tmp_path), data_root="data",
                              threads=1)


def test_each_setting_goes_to_its_own_folder_and_a_failure_does_not_stop_the_rest(
        tmp_path, monkeypatch, capsys):
    seen = []

    def fake_run_one(params, out, data_root, threads, config_file=None, seal_result=True):
        assert seal_result is False  # run-many seals them together, at the end
        seen.append((params["x"], out.name, data_root, threads))
        if params["x"] == 2:
            raise RuntimeError("flow blew up")
        out.mkdir(parents=True)
        (out / "sweep.json").write_text("{}")

    monkeypatch.setattr(eos_cmd, "run_one", fake_run_one)
    code = eos_cmd._run_many(_args(tmp_path, {"a": {"x": 1}, "b": {"x": 2}, "c": {"x": 3}}))
    assert code == 1
    assert seen == [(1, "a", "data", 1), (2, "b", "data", 1), (3, "c", "data", 1)]
    out = capsys.readouterr().out
    assert "setting b failed: RuntimeError: flow blew up" in out
    assert "1 of 3 settings failed: b" in out
    assert not removed_result(tmp_path / "a", "sweep.json")  # none sealed: a rerun resumes
    assert unsealed(tmp_path / "a", "sweep.json")


def _writes_its_sweep(params, out, *args, **kwargs):
    out.mkdir(parents=True)
    (out / "sweep.json").write_text("{}")


def test_all_settings_done_exits_zero_and_seals_every_result(tmp_path, monkeypatch):
    monkeypatch.setattr(eos_cmd, "run_one", _writes_its_sweep)
    assert eos_cmd._run_many(_args(tmp_path, {"a": {}, "b": {}})) == 0
    for name in ("a", "b"):
        assert damage(tmp_path / name, "sweep.json") is None  # sealed when the last finished


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
