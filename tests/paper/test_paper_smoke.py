"""The paper profile executed end to end on a CPU (`make test-paper`, marker `paper`).

`snakemake --configfile workflow/config/paper.yaml tests/paper/smoke.yaml` on synthetic files
in each data set's official on-disk format (tests/paper/formats.py: CIFAR-10/100 pickles, SVHN
`.mat`, MNIST IDX, ImageNet class folders of JPEGs). The override keeps the paper profile's
DAG, models and recipes and caps every training at 2 optimizer steps, one seed, and every
evaluation, attack, Hessian measure and flow at a handful of examples. Checksum checks are off
for these files only (SHARPNESS_UNVERIFIED_DATA), and every run's provenance says so.

What cannot run here, in one line each (also printed by the test):
"""

from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path

import pytest
import torch

from sharpness import escape
from sharpness.config.profiles import load_profile
from sharpness.lesam.experiments import training_runs
from sharpness.plots.methods import method_text
from tests.paper import formats
from tests.pipeline.helpers import copy_workflow, job_stats, paper_with_imagenet, snakemake

pytestmark = pytest.mark.paper

ROOT = Path(__file__).resolve().parents[2]
CANNOT_RUN = [
    "ViT-B/16 ImageNet weights: torchvision's file cannot be fetched offline, so the transfer "
    "rows build ViT-B/16 at full size and step it from a random initialisation",
    "DistributedDataParallel over 4 GPUs (ImageNet): run as 1 process here; the DDP launch is "
    "tested with gloo in tests/train",
    "PACS/VLCS: one source domain of each (photo, VOC2007) with SAM and LE-SAM, from a random "
    "ResNet-50 (torchvision's ImageNet weights cannot be fetched offline)",
]
FULL_WIDTH = {  # run id -> model the paper profile names, built at width 1
    "cifar10_resnet18-sgd-s0": "resnet18", "cifar10_wrn-sam-s0": "wrn28_10",
    "cifar100_pyramid-lesam-s0": "pyramidnet110", "imagenet_resnet50-sam-s0": "resnet50",
    "imagenet_resnet101-lesam-s0": "resnet101", "domain_pacs_photo-sam-s0": "resnet50",
    "transfer_cifar10-sam-s0": "vit_b_16",
}


def write_data(root: Path) -> None:
    """Synthetic files in each paper data set's official format, sized for the override."""
    formats.write_cifar(root, 10, per_batch=40, test=60)
    formats.write_cifar(root, 100, per_batch=100, test=60)
    formats.write_svhn(root, train=200, test=60)
    formats.write_mnist(root, train=200, test=60)
    formats.write_imagenet(root, classes=3, train=2, val=2)
    formats.write_domains(root, "pacs")
    formats.write_domains(root, "vlcs")


def assert_every_configured_row_shown(work: Path, build: Path) -> None:
    """Each accuracy table of the build in ``build`` holds one row per (group, label) the
    merged config of ``work`` runs, no more, and its Markdown names each row as the config
    labels it (the caption's sources name the same labels)."""
    config = load_profile([work / "workflow/config/paper.yaml", work / "smoke.yaml"], None)
    runs = training_runs(config["lesam"])
    for item in ("table_cifar", "table_imagenet", "table_transfer"):
        groups = [row["group"] for row in config["lesam"]["items"][item]["rows"]]
        expected = {(r["group"], r["label"]) for r in runs.values() if r["group"] in groups}
        stem = build / "figures" / "lesam" / item
        shown = {(row["group"], row["label"]) for row in _csv_rows(stem.with_suffix(".csv"))
                 if row.get("group")}
        assert shown == expected, (item, sorted(expected ^ shown))
        markdown = stem.with_suffix(".md").read_text()
        for _, label in expected:
            assert f"| {escape.markdown(method_text(label))} |" in markdown, (item, label)
    items = config["lesam"]["items"]
    robust = items["table_robustness"]
    want = {(opt, f"PGD-{norm.upper()}", float(radius)) for opt in robust["optimizers"]
            for norm, radii in robust["radii"].items() for radius in radii}
    got = {(row["label"], row["attack"], float(row["radius"]))
           for row in _csv_rows(build / "figures/lesam/table_robustness.csv")}
    assert got == want, sorted(want ^ got)
    cost = {row["raw_optimizer"] for row in _csv_rows(build / "figures/lesam/table_cost.csv")}
    assert cost == set(items["table_cost"]["optimizers"]), cost


def _csv_rows(path: Path) -> list[dict[str, str]]:
    with path.open(newline="") as handle:
        return list(csv.DictReader(handle))


def test_paper_profile_runs_end_to_end(tmp_path, bin_dir, monkeypatch):
    for line in CANNOT_RUN:
        print(f"cannot run here: {line}")
    work = tmp_path / "work"
    work.mkdir()
    copy_workflow(ROOT, work)
    shutil.copy(ROOT / "tests" / "paper" / "smoke.yaml", work / "smoke.yaml")
    write_data(work / "data")
    # the synthetic files of tests/paper/formats.py: checksums off for this folder only
    monkeypatch.setenv("SHARPNESS_UNVERIFIED_DATA", str(work / "data"))
    # every rule of the paper profile's own DAG (its real settings) is among the rules the
    # smoke run executes: a cut that drops a rule fails here, not in a user's first GPU run
    plan = tmp_path / "plan"  # planned apart from `work`: its data folder stays the smoke's
    plan.mkdir()
    copy_workflow(ROOT, plan)
    paper = job_stats(snakemake(bin_dir, plan, "-n", "--configfile", "workflow/config/paper.yaml",
                                paper_with_imagenet(plan, ROOT), timeout=600).stdout)
    run = snakemake(bin_dir, work, "--cores", "2", "--configfile", "workflow/config/paper.yaml",
                    "smoke.yaml", timeout=3600)
    executed = job_stats(run.stdout + run.stderr)
    # smoke.yaml changes the paper profile's settings: the build is its variant, named there,
    # beside the default folders, which it never writes (sharpness.config.variant)
    build = work / "variants" / "paper-smoke"
    assert not (work / "figures").exists() and not (work / "results").exists()
    assert json.loads((build / "variant.json").read_text())["profile"] == "paper"
    assert paper and set(paper) <= set(executed), sorted(set(paper) - set(executed))
    # every figure and table of the three papers and the bridges, and the claims ledger
    figures = sorted(p.relative_to(build / "figures").as_posix()
                     for p in (build / "figures").rglob("*") if p.suffix in (".pdf", ".md"))
    for item in ("minorfirst/l1_maxmargin.pdf", "minorfirst/gradcam.pdf",
                 "lesam/table_cifar.md", "lesam/table_imagenet.md", "lesam/table_transfer.md",
                 "lesam/table_domain_gen.md", "lesam/table_robustness.md",
                 "lesam/table_long_tail.md", "lesam/table_cost.md", "lesam/fig_flatness.pdf",
                 "lesam/fig_dynamics.pdf", "lesam/fig_signal.pdf", "lesam/fig_ablation.pdf",
                 "eos/fig_phase.pdf", "eos/fig_ablations.pdf", "bridges/sam_eos.pdf",
                 "CLAIMS.md"):
        assert item in figures, item
    runs = build / "results" / "lesam" / "runs"
    for rid, model in FULL_WIDTH.items():
        final = json.loads((runs / rid / "final.json").read_text())
        assert final["status"] == "ok" and final["steps"] == 2, (rid, final)
        blob = torch.load(runs / rid / "model.pt", map_location="cpu", weights_only=True)
        assert blob["build"]["model"] == model and blob["build"]["width"] == 1.0, rid
        prov = json.loads((runs / rid / "provenance.json").read_text())
        assert "UNVERIFIED" in prov["data"][0]["note"], rid
        assert prov["params"]["sources"], rid  # every setting's source travels with the run
    # ViT-B/16 on CIFAR fine-tunes at 224 x 224 (14 x 14 patches), resized inside the model
    assert blob["build"]["image_size"] == 32 and blob["build"]["model_kwargs"]["resize_to"] == 224
    domains = (build / "figures" / "lesam" / "table_domain_gen.md").read_text()
    assert "PACS" in domains and "VLCS" in domains and "from photo" in domains
    evals = json.loads((build / "results/lesam/eval/domain_gen.json").read_text())
    assert {(r["dataset"], r["source"]) for r in evals} == {("pacs", "photo"),
                                                            ("vlcs", "VOC2007")}
    assert all(r["target"] != r["source"] for r in evals)
    imagenet = json.loads((runs / "imagenet_resnet50-sam-s0" / "provenance.json").read_text())
    assert imagenet["data"][0]["name"] == "imagenet"
    assert_every_configured_row_shown(work, build)
    table = (build / "figures" / "lesam" / "table_cifar.md").read_text()
    assert "| lesam_readme_rmax999 |" in table  # the README command's rho_max, a labelled row
    # the full-width models' files take gigabytes: keep the figures, drop the weights
    for weights in (build / "results").rglob("*.pt"):
        weights.unlink()
