"""The paper profile lists the full paper-scale lesam DAG (GPU training jobs), and a missing
ImageNet folder stops the workflow while it plans the jobs, naming the config key."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest
import yaml

from sharpness.cli import main
from sharpness.data.folders import DOMAINS
from sharpness.lesam.experiments import glmc_runs, training_runs
from sharpness.lesam.jobs import FIGURES, TABLES
from tests.pipeline.helpers import copy_workflow, paper_with_imagenet, snakemake

pytestmark = pytest.mark.workflow  # plans the paper profile's workflow

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
#: the paper profile's lesam section, which the counts below are read from
PAPER = yaml.safe_load((ROOT / "workflow/config/paper.yaml").read_text())["lesam"]


@pytest.fixture(scope="module")
def workdir(tmp_path_factory) -> Path:
    work = copy_workflow(ROOT, tmp_path_factory.mktemp("dag"), messages=False)
    for base, domains in DOMAINS.items():  # the PACS/VLCS layout (empty): planning checks it
        for domain in domains:
            (work / "data" / base / domain).mkdir(parents=True, exist_ok=True)
    return work


def _with_imagenet(workdir: Path) -> str:
    return paper_with_imagenet(workdir, ROOT)


@pytest.fixture(scope="module")
def dry_run(workdir) -> str:
    """The paper profile's lesam DAG, planned once for every test here: commands printed, a
    global ``gpu=4`` so the ImageNet DDP jobs keep their four GPUs (the default profile's
    ``gpu=1`` would scale them down; single-GPU jobs still say ``gpu=1``)."""
    proc = snakemake(BIN, workdir, "-n", "-p", "lesam_all", "--configfile",
                     "workflow/config/paper.yaml", _with_imagenet(workdir), "--resources",
                     "gpu=4", timeout=600)
    return proc.stdout + proc.stderr


def test_missing_imagenet_stops_at_planning_with_the_key(workdir):
    proc = snakemake(BIN, workdir, "-n", "lesam_all", "--configfile",
                     "workflow/config/paper.yaml", timeout=600, check=False)
    text = proc.stdout + proc.stderr
    assert proc.returncode != 0
    assert "data.imagenet" in text and "train/<wnid>/*.JPEG" in text
    # a target that needs no ImageNet plans fine
    ok = snakemake(BIN, workdir, "-n", "figures/lesam/table_cifar.md", "--configfile",
                   "workflow/config/paper.yaml", timeout=600)
    assert "lesam_train" in ok.stdout


def test_missing_pacs_stops_at_planning_with_the_folder(tmp_path):
    work = copy_workflow(ROOT, tmp_path)
    proc = snakemake(BIN, work, "-n", "figures/lesam/table_domain_gen.md", "--configfile",
                     "workflow/config/paper.yaml", timeout=600, check=False)
    text = proc.stdout + proc.stderr
    assert proc.returncode != 0
    assert "pacs runs need" in text and "<domain>/<class>/*.jpg" in text


def _count(text: str, rule: str) -> int:
    match = re.search(rf"^{rule}\s+(\d+)$", text, flags=re.M)
    return int(match.group(1)) if match else 0


def test_paper_dag_lists_every_run(dry_run, workdir):
    """Snakemake plans every run, glmc run, table and figure the paper config asks for
    (counted from the config: its run list and its items)."""
    items = PAPER["items"]
    assert _count(dry_run, "lesam_train") == len(training_runs(PAPER))
    assert _count(dry_run, "lesam_glmc") == len(glmc_runs(PAPER)) > 0
    assert _count(dry_run, "lesam_table") == len([i for i in items if i in TABLES]) > 0
    assert _count(dry_run, "lesam_figure") == len([i for i in items if i in FIGURES]) > 0
    assert _count(dry_run, "lesam_check_imagenet") == 1
    # settings travel in each job's JSON file, not as ad-hoc flags (sources quote official
    # flags inside the JSON)
    assert not re.search(r"(^|\s)--epochs[\s=]", dry_run)
    files = sorted((workdir / "results/lesam/configs").glob("*.json"))
    assert len(files) == _count(dry_run, "lesam_train")
    assert any(json.loads(f.read_text()).get("epochs") == 200 for f in files)


def test_training_jobs_ask_for_a_gpu(dry_run):
    blocks = dry_run.split("\nrule ")
    train = [b for b in blocks if b.startswith("lesam_train:")]
    imagenet = [b for b in train if "imagenet_" in b]
    assert len(imagenet) == len([r for r in training_runs(PAPER).values()
                                 if r["group"].startswith("imagenet")]) > 0
    assert all("gpu=1" in b and "torchrun" not in b for b in train if b not in imagenet)


def test_ddp_imagenet_jobs_ask_for_their_gpus_and_run_under_torchrun(dry_run, workdir):
    """`gpus: 4` -> resources gpu=4 (with a global gpu=4 on the command line; the default
    profile's gpu=1 would scale it down) and a torchrun launch of 4 processes, reading
    data.imagenet."""
    block = [b for b in dry_run.split("\nrule ")
             if b.startswith("lesam_train:") and "imagenet_resnet50-sam-s0/" in b]
    assert len(block) == 1 and "gpu=4" in block[0]
    assert "mem_mb=48000" in block[0]  # 4 processes x (4,000 + 8 loader workers x 1,000)
    assert "torchrun --standalone --nproc-per-node 4 --no-python sharpness train" in block[0]
    config = "results/lesam/configs/imagenet_resnet50-sam-s0.json"
    assert f"--config-file {config} " in block[0]  # the file the plan wrote for the run
    assert json.loads((workdir / config).read_text())["gpus"] == 4
    assert f"--data-root {workdir / 'inet'}" in block[0]  # the key the check reads


def test_missing_imagenet_path_names_the_key(tmp_path, capsys):
    assert main(["lesam", "check-imagenet", "--path", "", "--out",
                 str(tmp_path / "x.json")]) == 2
    assert "data.imagenet" in capsys.readouterr().err
    (tmp_path / "inet" / "train").mkdir(parents=True)
    assert main(["lesam", "check-imagenet", "--path", str(tmp_path / "inet"), "--out",
                 str(tmp_path / "x.json")]) == 2
    assert "val" in capsys.readouterr().err
    (tmp_path / "inet" / "val").mkdir()
    assert main(["lesam", "check-imagenet", "--path", str(tmp_path / "inet"), "--out",
                 str(tmp_path / "x.json")]) == 0
