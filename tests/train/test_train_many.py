"""`sharpness train-many`: several runs one after the other in one process, each as
`sharpness train` trains it; configs are checked before any training, a failed run is named and
the others still run (exit 1). `lesam.one_job_per_group` builds its --runs."""

from __future__ import annotations

import argparse
import json

import pytest

from sharpness.commands import train as train_cmd
from sharpness.errors import ConfigError
from sharpness.lesam import experiments as lesam_exp

CFG = {"dataset": "mnist_embedded", "model": "cnn", "epochs": 1, "device": "cpu"}


def _args(runs):
    return argparse.Namespace(runs=runs if isinstance(runs, str) else json.dumps(runs),
                              threads=1, progress=False)


def test_each_run_trains_into_its_folder_and_a_failure_does_not_stop_the_rest(
        monkeypatch, capsys):
    seen = []

    def fake(cfg, out, threads, progress):
        seen.append((out, cfg["seed"], threads))
        if cfg["seed"] == 1:
            raise RuntimeError("out of memory")

    monkeypatch.setattr(train_cmd, "train_one", fake)
    runs = {f"r/s{s}": {**CFG, "seed": s} for s in range(3)}
    assert train_cmd.run_many(_args(runs)) == 1
    assert seen == [("r/s0", 0, 1), ("r/s1", 1, 1), ("r/s2", 2, 1)]
    out = capsys.readouterr().out
    assert "run r/s1 failed: RuntimeError: out of memory" in out
    assert "1 of 3 runs failed: r/s1" in out


def test_a_bad_config_stops_before_any_run_and_names_the_run_and_key(monkeypatch):
    monkeypatch.setattr(train_cmd, "train_one", lambda *a: pytest.fail("trained"))
    runs = {"r/good": CFG, "r/bad": {**CFG, "lrr": 0.1}}
    with pytest.raises(ConfigError, match=r"run r/bad: .*lrr"):
        train_cmd.run_many(_args(runs))


@pytest.mark.parametrize("runs", ["{", "[]", "{}"])
def test_runs_must_be_a_json_object(runs):
    with pytest.raises(ConfigError, match="--runs"):
        train_cmd.run_many(_args(runs))


SECTION = {
    "base": {"dataset": "mnist_embedded", "model": "cnn", "epochs": 1, "device": "cpu"},
    "optimizers": {"sgd": {}, "sam": {"rho": 0.05}},
    "groups": {"g1": {"optimizers": ["sgd", "sam"], "seeds": [0, 1]},
               "g2": {"optimizers": ["sgd"], "seeds": [0]}},
    "items": {},
}


def test_one_job_per_group_lists_each_groups_runs_with_their_data_root():
    assert lesam_exp.one_job_groups(SECTION, {"root": "my data"}) == {}
    together = lesam_exp.one_job_groups({**SECTION, "one_job_per_group": True},
                                        {"root": "my data"})
    assert {g: sorted(r) for g, r in together.items()} == {
        "g1": sorted(f"results/lesam/runs/g1-{o}-s{s}" for o in ("sgd", "sam") for s in (0, 1)),
        "g2": ["results/lesam/runs/g2-sgd-s0"]}
    runs = lesam_exp.training_runs(SECTION)
    for group in together.values():
        for out, cfg in group.items():
            assert cfg == {**runs[out.rsplit("/", 1)[1]]["config"], "data_root": "my data"}


def test_a_multi_process_run_cannot_share_a_job():
    section = {**SECTION, "one_job_per_group": True,
               "groups": {"g1": {"optimizers": ["sgd"], "seeds": [0], "overrides": {"gpus": 2}}}}
    with pytest.raises(ConfigError, match="g1-sgd-s0 is launched as 2 processes"):
        lesam_exp.one_job_groups(section, {"root": "data"})
