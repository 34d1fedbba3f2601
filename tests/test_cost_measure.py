"""`sharpness cost measure`: the engine's real step timed on this device, written with its
device, commit and date, and priced from by the planner without a change of code."""

from __future__ import annotations

import pytest
import yaml

from sharpness import cost
from sharpness.cost import measure as meas
from sharpness.cost.price import measured_throughputs

TINY = {"dataset": "mnist_embedded", "model": "fcn", "model_kwargs": {"hidden": 8, "depth": 1},
        "batch_size": 16, "epochs": 1, "device": "cpu", "optimizer": "sam",
        "opt_hparams": {"rho": 0.05}}


def _job(tmp_path):
    return cost.Job("lesam", ["table_x"], "tiny-sam-s0", "fcn", "mnist_embedded", 1.0,
                    dict(TINY["model_kwargs"]), 1000, 16, 100, 2.0, 0, optimizer="sam",
                    config={**TINY, "data_root": "data"})


@pytest.mark.slow  # a real (tiny) training run through the engine: several seconds
def test_measure_times_the_engine_step_and_the_planner_prices_from_it(tmp_path, repo):
    job = _job(tmp_path)
    entries = meas.measure([job, job], device="cpu", warmup=1, steps=2,
                           data_root=str(repo / "data"))
    assert len(entries) == 1  # one shape, measured once
    e = entries[0]
    assert (e["device"], e["optimizer"], e["passes"], e["batch"]) == ("cpu", "sam", 2.0, 16)
    assert e["step_seconds"] > 0 and e["commit"] and e["date"]
    path = meas.write(entries, tmp_path / "measured.yaml", note="a test")
    assert yaml.safe_load(path.read_text())[0]["model"] == "fcn"
    priced = cost.price([job], method="analytic", measured=str(path))[0]
    assert priced.basis.startswith("measured fp32 on cpu at ")
    want = job.steps * job.passes * e["step_seconds"] / e["passes"] / 3600
    assert abs(priced.gpu_hours - want) < 1e-12
    # the default source (the GPU's) does not hold this CPU entry: the estimate stays
    assert cost.price([job], method="analytic")[0].basis.startswith("analytic")


def test_the_committed_cpu_example_is_marked_and_readable(repo):
    path = repo / "src/sharpness/cost/measured.cpu-example.yaml"
    assert path.read_text().startswith("# CPU EXAMPLE, NOT A GPU PRICE")
    entries = measured_throughputs(str(path))
    assert entries and {e["device"] for e in entries} == {"cpu"}
    assert all(e["step_seconds"] > 0 for e in entries)
    assert not [e for e in measured_throughputs() if e.get("device") == "cpu"]
