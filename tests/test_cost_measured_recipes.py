"""Step times measured in two recipes and packed on a GPU (benchmarks/gpu_check.sh writes
them): the file round-trips, prices read the configured recipe of a run alone, with the
device, the commit and the PyTorch version beside them, and the planner prefers them to the
analytic estimate and says so."""

from __future__ import annotations

from pathlib import Path

import pytest

from sharpness.cost import measure as meas
from sharpness.cost import plan_jobs
from sharpness.cost.price import (
    measured_note,
    measured_throughputs,
    price,
    recorded_step,
    training_code,
    training_manifest,
    unusable,
)

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def paper():
    from sharpness.config.profiles import load_profile

    return load_profile([str(REPO / "workflow/config/paper.yaml")], None)


def _job(config, run):
    return next(j for j in plan_jobs(config) if (j.paper, j.run) == ("lesam", run))


def _entry(job, seconds, **extra):
    return {"device": "NVIDIA H200", "commit": "abc1234", "code": training_code(),
            "date": "2026-12-04", "torch": "2.9.1+cu128", "model": job.model, "dataset": job.dataset,
            "width": float(job.width), "batch": job.shape_key[-1], "optimizer": job.optimizer,
            "precision": job.precision, "model_kwargs": {}, "passes": 2.0,
            "recipe": "configured", "packed": 1, "step_seconds": seconds, "warmup": 3,
            "steps": 10, **extra}


def _run_of(config, group="cifar100_resnet18", label="sam"):
    from sharpness.lesam.experiments import training_runs

    return next(rid for rid, r in training_runs(config["lesam"]).items()
                if r["group"] == group and r["label"] == label)


def test_prices_read_the_configured_recipe_of_a_run_alone(paper, tmp_path):
    job = _job(paper, _run_of(paper))
    entries = [_entry(job, 0.9, packed=4), _entry(job, 0.1, recipe="fast", precision="bf16"),
               _entry(job, 0.2)]
    path = meas.write(entries, tmp_path / "measured.yaml", note="test")
    assert [e["step_seconds"] for e in measured_throughputs(str(path))] == [0.9, 0.1, 0.2]
    seconds, basis = recorded_step(job, job.precision, str(path))
    assert seconds == pytest.approx(0.2 / 2.0)  # per pass, the solo configured entry
    assert basis == "measured fp32 on NVIDIA H200 at abc1234, torch 2.9.1+cu128"
    # bf16: the fast recipe prices it when no configured bf16 was measured, and says so
    seconds, basis = recorded_step(job, "bf16", str(path))
    assert seconds == pytest.approx(0.05) and "bf16 fast on NVIDIA H200" in basis
    # a packed measurement alone never prices a run
    only_packed = meas.write([_entry(job, 0.9, packed=2)], tmp_path / "p.yaml")
    assert recorded_step(job, job.precision, str(only_packed)) is None


def test_the_planner_prefers_measured_step_times_and_says_so(paper, tmp_path, capsys,
                                                            in_workflow_copy):
    job = _job(paper, _run_of(paper))
    path = meas.write([_entry(job, 0.05)], tmp_path / "measured.yaml")
    measured_price, = price([job], method="analytic", measured=str(path))
    analytic, = price([job], method="analytic",
                      measured=str(meas.write([], tmp_path / "none.yaml")))
    assert measured_price.basis.startswith("measured fp32 on NVIDIA H200")
    assert analytic.basis.startswith("analytic")
    assert measured_price.gpu_hours != pytest.approx(analytic.gpu_hours)
    out = _plan_cifar100(path, tmp_path, capsys)
    assert "runs priced from step times measured on a GPU" in out
    assert "preferred to the analytic estimate" in out
    assert "measured fp32 on NVIDIA H200 at abc1234, torch 2.9.1+cu128" in out


def test_measure_rejects_an_unknown_recipe_or_pack():
    from sharpness.errors import ConfigError

    with pytest.raises(ConfigError, match="recipes"):
        meas.measure([], device="cpu", recipes=("turbo",))
    with pytest.raises(ConfigError, match="packs"):
        meas.measure([], device="cpu", packs=(0,))


def test_step_times_of_other_training_code_or_another_gpu_fall_back_to_analytic(paper,
                                                                              tmp_path,
                                                                              capsys,
                                                                              in_workflow_copy):
    """A step time prices a run only while the training code is the one measured, and on a
    GPU only that GPU's: otherwise the run is priced analytically and the plan says why."""
    job = _job(paper, _run_of(paper))
    stale = _entry(job, 0.05, code="0" * 16)
    legacy = {k: v for k, v in _entry(job, 0.05).items() if k != "code"}
    assert unusable(stale) == "with other training code"
    assert unusable(legacy) == "without a training-code fingerprint"
    assert unusable(_entry(job, 0.05)) is None  # planning on a machine without a GPU
    assert unusable(_entry(job, 0.05), "NVIDIA A100") == "on NVIDIA H200, not on this NVIDIA A100"
    path = meas.write([stale, legacy], tmp_path / "measured.yaml")
    assert recorded_step(job, job.precision, str(path)) is None
    priced, = price([job], method="analytic", measured=str(path))
    assert priced.basis.startswith("analytic")
    note = measured_note(str(path))
    assert note.startswith(f"2 step times of {path} not used") and training_code() in note
    assert "1 measured with other training code" in note
    out = _plan_cifar100(path, tmp_path, capsys)
    assert "not used (1 measured with other training code; 1 measured without a " \
        "training-code fingerprint" in out
    assert "priced analytically" in out


def test_the_training_code_is_what_a_step_runs_not_the_bookkeeping():
    files = training_manifest()
    assert {"sharpness/train/loop.py", "sharpness/train/engine.py", "sharpness/optim/sam.py",
            "sharpness/optim/base.py", "sharpness/models/resnets.py",
            "sharpness/data/loaders.py"} <= set(files)
    assert not [f for f in files if f.startswith(("sharpness/runs/", "sharpness/io.py"))]
    assert len(training_code()) == 16 and int(training_code(), 16) >= 0


def _plan_cifar100(measured: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> str:
    """`sharpness plan` of ls-cifar100 at 100 GPU-hours priced with ``measured``, run in this
    process from a copy of the checkout (tests/planning/test_plan.py runs the command itself);
    it must succeed. Returns what it printed."""
    from sharpness.cli import main

    capsys.readouterr()
    code = main(["plan", "--gpu-hours", "100", "--configfile",
                 str(REPO / "workflow/config/paper.yaml"), "--claims", "ls-cifar100", "--method",
                 "analytic", "--measured", str(measured), "--out", str(tmp_path / "plan.yaml")])
    out, err = capsys.readouterr()
    assert code == 0, err[-2000:]
    return out
