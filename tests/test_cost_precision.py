"""`sharpness cost` prices both precisions: fp32 (as the official codes train, the paper
profile's setting) and bf16 autocast (the speed option)."""

from __future__ import annotations

from pathlib import Path

import pytest

from sharpness import cost
from sharpness.cli import main
from sharpness.config.profiles import load_profile

PAPER = str(Path(__file__).resolve().parents[1] / "workflow/config/paper.yaml")


@pytest.fixture(scope="module")
def imagenet_jobs() -> list[cost.Job]:
    jobs = cost.plan_jobs(load_profile([PAPER], None))
    return [j for j in jobs if "table_imagenet" in j.items]


def test_paper_runs_are_fp32_and_each_precision_has_its_throughput(imagenet_jobs):
    assert {j.precision for j in imagenet_jobs} == {"fp32"}
    as_configured = cost.price(imagenet_jobs, method="analytic", tflops=40.0)
    bf16 = cost.price(imagenet_jobs, method="analytic", tflops=40.0, precision="bf16")
    fp32 = cost.price(imagenet_jobs, method="analytic", tflops=40.0, tflops_fp32=10.0,
                      precision="fp32")
    for a, b, c in zip(as_configured, bf16, fp32, strict=True):
        assert a.gpu_hours == pytest.approx(2 * b.gpu_hours)  # fp32 at half the bf16 rate
        assert c.gpu_hours == pytest.approx(4 * b.gpu_hours)
    with pytest.raises(ValueError, match="precision"):
        cost.price(imagenet_jobs, method="analytic", precision="fp16")


def test_a_bf16_run_is_priced_as_bf16():
    cfg = {"model": "fcn", "dataset": "mnist", "epochs": 1, "batch_size": 100, "bf16": True}
    from sharpness.cost.plan import _train_job

    assert _train_job("lesam", ["i"], "r", cfg).precision == "bf16"
    assert _train_job("lesam", ["i"], "r", {**cfg, "bf16": False}).precision == "fp32"


def test_cli_prints_a_column_per_precision(capsys):
    assert main(["cost", "--configfile", PAPER, "--base", "none", "--item",
                 "table_imagenet"]) == 0
    text = capsys.readouterr().out
    assert "| GPU-hours fp32 | GPU-hours bf16 |" in text
    assert "20 TFLOP/s in fp32" in text and "train in fp32" in text
    row = next(line for line in text.splitlines() if line.startswith("| lesam"))
    fp32, bf16 = (float(c.replace(",", "")) for c in row.split("|")[-3:-1])
    assert fp32 == pytest.approx(2 * bf16, rel=0.01)
