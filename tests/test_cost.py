"""`sharpness cost`: the expansion of a profile into runs and steps, FLOP counts, pricing."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import yaml

from sharpness import cost
from sharpness.cli import main
from sharpness.config.profiles import load_profile

REPO = Path(__file__).resolve().parents[1]
PAPER = str(REPO / "workflow/config/paper.yaml")


@pytest.fixture(scope="module")
def paper_jobs() -> list[cost.Job]:
    return cost.plan_jobs(load_profile([PAPER], None))


def _table_runs(lesam: dict, item: str) -> int:
    """The training runs the rows of table ``item`` ask for, counted from the config: each
    row's group, its optimizer entries times its seeds."""
    groups = [lesam["groups"][row["group"]] for row in lesam["items"][item]["rows"]]
    return sum(len(g["optimizers"]) * len(g["seeds"]) for g in groups)


def test_paper_profile_expands_to_its_runs_and_steps(paper_jobs):
    lesam = yaml.safe_load(Path(PAPER).read_text())["lesam"]
    imagenet = [j for j in paper_jobs if "table_imagenet" in j.items]
    assert len(imagenet) == _table_runs(lesam, "table_imagenet") > 0
    assert all(j.gpus == 4 and j.batch == 256 for j in imagenet)
    assert all(j.steps == 90 * math.ceil(1281167 / 256) for j in imagenet)
    cifar = [j for j in paper_jobs if "table_cifar" in j.items]
    assert len(cifar) == _table_runs(lesam, "table_cifar") > 0
    epochs, batch = lesam["base"]["epochs"], lesam["base"]["batch_size"]
    resnet = [j for j in cifar if j.run.startswith("cifar10_resnet18-")]
    assert resnet and all(j.steps == epochs * math.ceil(50000 / batch) for j in resnet)
    passes = {j.run.split("-")[1]: j.passes for j in cifar if j.run.startswith("cifar10_res")}
    assert passes["sgd"] == 1 and passes["sam"] == passes["lesam"] == 2
    assert passes["eigensam"] > 2
    # runs read by several items (table_cifar, table_robustness, fig_flatness, fig_dynamics)
    shared = [j for j in paper_jobs if j.run == "cifar10_resnet18-sam-s0"][0]
    assert {"table_cifar", "table_robustness", "fig_flatness"} <= set(shared.items)


def test_forward_flops_of_a_linear_net_match_the_hand_count():
    job = cost.Job("x", ["i"], "r", "fcn", "mnist", 1.0, {"hidden": 32, "depth": 2}, 100,
                   10, 1, 1.0, 0)
    assert cost.forward_flops(job) == 2 * (784 * 32 + 32 * 32 + 32 * 10)


def test_analytic_price_follows_flops_and_throughput(paper_jobs):
    jobs = [j for j in paper_jobs if "table_imagenet" in j.items]
    a = cost.price(jobs, method="analytic", tflops=40.0)
    b = cost.price(jobs, method="analytic", tflops=80.0)
    assert all(x.gpu_hours == pytest.approx(2 * y.gpu_hours) for x, y in zip(a, b, strict=True))
    sgd = [p for p in a if p.job.run == "imagenet_resnet50-sgd-s0"][0]
    sam = [p for p in a if p.job.run == "imagenet_resnet50-sam-s0"][0]
    assert sam.gpu_hours / sgd.gpu_hours == pytest.approx(2.0, rel=0.01)
    # ResNet-50 at 224 px: about 4.1 G multiply-adds forward = 8.2 GFLOP
    assert cost.forward_flops(sgd.job) / 1e9 == pytest.approx(8.2, rel=0.05)
    rows, total = cost.table(a)
    assert total.runs == 18 and total.gpu_hours == pytest.approx(sum(p.gpu_hours for p in a))


def test_total_counts_shared_runs_once(paper_jobs):
    priced = cost.price([j for j in paper_jobs if j.paper == "lesam"
                         and j.model == "resnet18" and j.dataset == "cifar10"],
                        method="analytic")
    rows, total = cost.table(priced)
    assert sum(r.runs for r in rows) > total.runs


def test_profile_loading_follows_the_snakefile(tmp_path):
    """A whole profile replaces the default config; a partial file merges over what it
    follows."""
    quick = str(REPO / "workflow/config/quick.yaml")
    assert load_profile([PAPER], quick) == load_profile([PAPER], None)
    over = tmp_path / "over.yaml"
    over.write_text("lesam:\n  base:\n    epochs: 7\n")
    merged = load_profile([PAPER, str(over)], quick)
    assert merged["lesam"]["base"]["epochs"] == 7 and merged["profile"] == "paper"
    assert load_profile([str(over)], quick)["profile"] != "paper"  # over the quick profile


def test_cli_prints_the_estimate_and_one_item(capsys, tmp_path):
    out = tmp_path / "cost.md"
    assert main(["cost", "--configfile", PAPER, "--base", "none", "--item", "table_imagenet",
                 "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert "ESTIMATE" in text and "40 TFLOP/s" in text
    body = [line for line in text.splitlines() if line.startswith("| lesam")]
    assert len(body) == 1 and "table_imagenet" in body[0]
    hours = float(body[0].split("|")[-2].replace(",", ""))
    assert hours > 10
    assert out.read_text().strip() == text.strip()
    assert main(["cost", "--configfile", PAPER, "--base", "none", "--item", "nope"]) == 2
    assert "not an item" in capsys.readouterr().err


def test_measured_price_on_this_device(tmp_path, capsys):
    cfg = {"profile": "tiny", "lesam": {
        "base": {"dataset": "mnist", "model": "fcn", "model_kwargs": {"hidden": 16, "depth": 1},
                 "epochs": 1, "batch_size": 6000, "device": "cpu"},
        "optimizers": {"sgd": {}, "sam": {"rho": 0.05}},
        "groups": {"g": {"optimizers": ["sgd", "sam"], "seeds": [0]}},
        "items": {"table_cifar": {"rows": [{"group": "g"}]}}}}
    path = tmp_path / "tiny.yaml"
    path.write_text(yaml.safe_dump(cfg))
    assert main(["cost", "--configfile", str(path), "--base", "none", "--method",
                 "measured"]) == 0
    text = capsys.readouterr().out
    assert "measured on the CPU" in text
    row = [line for line in text.splitlines() if "table_cifar" in line][0]
    assert row.split("|")[3].strip() == "2" and row.split("|")[4].strip() == "20"
    assert float(row.split("|")[5]) > 0
    jobs = cost.plan_jobs(cfg)
    import torch

    priced = {p.job.run: p.gpu_hours for p in cost.price(jobs, method="measured",
                                                         device=torch.device("cpu"))}
    # two passes a step for SAM, one for SGD, plus the same test-set evaluation (forward only)
    evals = 10000 / 3
    assert priced["g-sam-s0"] / priced["g-sgd-s0"] == pytest.approx(
        (2 * 60000 + evals) / (60000 + evals))


def test_a_gradcam_run_is_priced_at_the_size_the_study_trains():
    """The quick profile trains each Grad-CAM run on a data set entry's ``train_size`` (1,000
    of the embedded 5,000 images): its price counts those examples and the steps they make,
    read from the config the study trains with (``sharpness.gradcam.runs.run_config``)."""
    from sharpness.gradcam.runs import run_config

    config = load_profile([str(REPO / "workflow/config/quick.yaml")], None)
    section = config["gradcam"]
    jobs = [j for j in cost.plan_jobs(config) if "gradcam" in j.items]
    assert jobs
    for key, ds in section["datasets"].items():
        mine = [j for j in jobs if j.run.startswith(f"gradcam/{key}/")]
        cfg = run_config(section, key, next(iter(section["optimizers"])),
                         section["alphas"][0], section["seeds"][0])
        assert ds.get("train_size") and cfg["train_size"] == ds["train_size"]
        assert {j.n_train for j in mine} == {ds["train_size"]}, key
        assert {j.steps for j in mine} == {
            math.ceil(ds["train_size"] / cfg["batch_size"]) * cfg["epochs"]}, key
