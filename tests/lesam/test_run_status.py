"""GLMC and signal runs report status as the training engine does, and resume.

A NaN loss ends a run as diverged (never ``ok``, never trained on silently), a killed run
resumes from its checkpoint instead of from scratch, and a device that is not there is an
error, never a silent fall-back to the CPU.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from sharpness.device import DeviceUnavailableError, resolve_device
from sharpness.io import read_json, read_jsonl
from sharpness.lesam import glmc as glmc_module
from sharpness.lesam.glmc import run_glmc
from sharpness.lesam.report import mean_std
from sharpness.lesam.signal import run_signal
from sharpness.runs.provenance import write_artifact_provenance
from sharpness.train import load_trained_model
from tests.killing import Killed

pytestmark = pytest.mark.usefixtures("one_thread")  # tiny models: one thread

DATA = str(Path(__file__).resolve().parents[2] / "data")
BASE = {"dataset": "mnist_embedded", "data_root": DATA, "model": "cnn",
        "model_kwargs": {"channels": 4}, "train_size": 128, "test_size": 60, "epochs": 2,
        "batch_size": 64, "lr": 0.05, "device": "cpu", "checkpoint_every": 1}
GLMC = {**BASE, "glmc": {"imbalance_factor": 4, "proj_dim": 8}}


def test_glmc_divergence_is_recorded_with_its_step(tmp_path):
    final = run_glmc({**GLMC, "diverge_loss": 1e-6}, tmp_path)
    assert final["status"] == "diverged" and final["diverged_step"] == 0
    prov = read_json(tmp_path / "provenance.json")
    assert prov["status"] == "diverged" and prov["diverged_step"] == 0


def test_signal_divergence_is_recorded_with_its_step(tmp_path):
    run_signal({**BASE, "optimizer": "sam", "opt_hparams": {"rho": 0.05},
                "diverge_loss": 1e-6}, tmp_path, probe_every=1)
    final = read_json(tmp_path / "final.json")
    assert final["status"] == "diverged" and final["diverged_step"] == 0
    assert read_json(tmp_path / "provenance.json")["status"] == "diverged"


@pytest.mark.e2e  # trains a whole run twice, cut and clean
def test_glmc_resumes_after_a_kill_and_matches_a_clean_run(tmp_path, monkeypatch):
    """GLMC runs on the engine's loop: killed in epoch 2, it resumes from epoch 1's
    checkpoint (with its NumPy generator for MixUp/CutMix) and ends as an unkilled run."""
    ref = run_glmc(GLMC, tmp_path / "ref")
    steps_per_epoch = ref["steps"] // 2
    box = glmc_module.cutmix_box
    calls = [0]

    def dying(*args, **kwargs):
        calls[0] += 1
        if calls[0] == steps_per_epoch + 1:  # the first step of epoch 2
            raise Killed("simulated kill")
        return box(*args, **kwargs)

    monkeypatch.setattr(glmc_module, "cutmix_box", dying)
    with pytest.raises(Killed):
        run_glmc(GLMC, tmp_path / "run")
    assert read_json(tmp_path / "run/provenance.json")["status"] == "failed"
    assert (tmp_path / "run/checkpoint.pt").exists()
    monkeypatch.setattr(glmc_module, "cutmix_box", box)
    final = run_glmc(GLMC, tmp_path / "run")
    assert read_json(tmp_path / "run/provenance.json")["resumed_from_step"] == steps_per_epoch
    assert final["final_test_acc"] == ref["final_test_acc"]
    assert str(final["per_class_acc"]) == str(ref["per_class_acc"])  # nan: class not in test
    assert read_jsonl(tmp_path / "run/metrics.jsonl") == read_jsonl(tmp_path / "ref/metrics.jsonl")
    assert [r["alpha"] for r in read_jsonl(tmp_path / "ref/metrics.jsonl")] == [1.0, 0.75]
    assert not (tmp_path / "run/checkpoint.pt").exists()
    with pytest.raises(ValueError, match="GLMCMethod.wrap_net"):  # not a plain network
        load_trained_model(tmp_path / "ref")
    # a finished run of the same key is reused; other GLMC settings are another run
    again = run_glmc(GLMC, tmp_path / "run")
    assert again["config_id"] == final["config_id"] and again["steps"] == final["steps"]
    assert read_json(tmp_path / "run/provenance.json")["resumed_from_step"] == steps_per_epoch
    other = run_glmc({**GLMC, "glmc": {"imbalance_factor": 2, "proj_dim": 8}}, tmp_path / "run")
    assert other["train_counts"] != final["train_counts"]


def test_a_missing_requested_device_is_an_error_naming_it():
    if not torch.cuda.is_available():
        with pytest.raises(DeviceUnavailableError, match="'cuda'"):
            resolve_device("cuda")
        with pytest.raises(DeviceUnavailableError, match="'cuda'"):
            run_glmc({**GLMC, "device": "cuda"}, "/nonexistent/never-written")
    with pytest.raises(DeviceUnavailableError, match="cuda:99"):
        resolve_device("cuda:99")
    assert resolve_device("auto").type in ("cpu", "cuda")


def test_means_carry_the_seed_count_and_what_was_left_out():
    assert mean_std([0.9, 0.92, 0.94])[2] == "92.00 ± 2.00 (n=3)"
    assert mean_std([0.9], diverged=2)[2] == "90.00 (n=1; 2 diverged)"
    assert mean_std([], failed=1)[2] == "n/a (n=0; 1 failed)"


@pytest.mark.e2e  # trains a whole run twice, cut and clean
def test_signal_resumes_after_a_kill_and_matches_a_clean_run(tmp_path, monkeypatch):
    """The signal study runs on the engine's loop: a kill in epoch 2 resumes from
    epoch 1's checkpoint and ends with the rows of an uninterrupted run."""
    from sharpness.lesam import signal as signal_module

    cfg = {**BASE, "optimizer": "sam", "opt_hparams": {"rho": 0.05}}
    ref = run_signal(cfg, tmp_path / "ref", probe_every=1)
    after = signal_module.SignalProbe.after

    def dying(self, step, state):
        if step.epoch == 1:
            raise Killed("simulated kill")
        return after(self, step, state)

    monkeypatch.setattr(signal_module.SignalProbe, "after", dying)
    with pytest.raises(Killed):
        run_signal(cfg, tmp_path / "run", probe_every=1)
    assert read_json(tmp_path / "run/provenance.json")["status"] == "failed"
    assert (tmp_path / "run/checkpoint.pt").exists()
    monkeypatch.setattr(signal_module.SignalProbe, "after", after)
    rows = run_signal(cfg, tmp_path / "run", probe_every=1)
    assert read_json(tmp_path / "run/provenance.json")["resumed_from_step"] == 2
    assert len(ref) == 4 and rows == ref
    assert read_jsonl(tmp_path / "run/signal.jsonl") == ref
    assert not (tmp_path / "run/checkpoint.pt").exists()
    # a finished run of the same key is reused; another probe interval is another run
    assert run_signal(cfg, tmp_path / "run", probe_every=1) == ref
    assert len(run_signal(cfg, tmp_path / "run", probe_every=3)) == 2


def test_glmc_shows_the_engines_progress(tmp_path, capsys):
    """The engine's progress serves GLMC too (no train accuracy: its closure is GLMC's); with
    stderr not a terminal it is a line per epoch (sharpness.runs.progress)."""
    run_glmc({**GLMC, "epochs": 1}, tmp_path, progress=True)
    err = capsys.readouterr().err
    assert "epoch 1/1 (100%)" in err and "train_acc -" in err and "left ~" in err


def test_blow_up_runs_are_left_out_of_the_evaluation_tables_and_named(tmp_path):
    """A diverged run's evaluation rows carry its status: the robustness and domain tables
    average the runs that ended ok and say how many diverged (never an average over all)."""
    import json as _json

    from sharpness.lesam.records import Given
    from sharpness.lesam.tables import build_table_domain_gen, build_table_robustness

    spec = {"title": "T", "data_used": "x", "group": "main", "steps": 2}
    EVAL_DIR = "results/lesam/eval"
    (tmp_path / EVAL_DIR).mkdir(parents=True)
    rob = [{"run": f"main-sgd-s{s}", "optimizer": "sgd", "seed": s, "norm": "l2",
            "radius": 0.5, "accuracy": acc, "n_test": 10, "status": st}
           for s, acc, st in ((0, 0.8, "ok"), (1, 0.1, "diverged"))]
    dom = [{"run": f"main-sgd-s{s}", "optimizer": "sgd", "seed": s, "angle": a,
            "accuracy": acc, "n_test": 10, "status": st}
           for s, acc, st in ((0, 0.8, "ok"), (1, 0.1, "diverged")) for a in (0.0, 30.0)]
    (tmp_path / EVAL_DIR / "robustness.json").write_text(_json.dumps(rob))
    (tmp_path / EVAL_DIR / "domain_gen.json").write_text(_json.dumps(dom))
    for name in ("robustness.json", "domain_gen.json"):  # as `lesam eval` records them
        write_artifact_provenance(tmp_path / EVAL_DIR / name, kind="evaluation")
    text = build_table_robustness(Given("table_robustness", spec, [],
                                         tmp_path / EVAL_DIR / "robustness.json"),
                                   tmp_path / "r.md")
    md = (tmp_path / "r.md").read_text()
    assert "80.00 (n=1; 1 diverged)" in md, (text, md)
    build_table_domain_gen(Given("table_domain_gen", {**spec, "angles": [0, 30], "train_angle": 0},
                                 [], tmp_path / EVAL_DIR / "domain_gen.json"), tmp_path / "d.md")
    assert "80.00 (n=1; 1 diverged)" in (tmp_path / "d.md").read_text()
