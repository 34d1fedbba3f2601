"""table_domain_gen on PACS/VLCS (the paper profile): single-source runs on class folders,
each tested on every other domain, with DomainBed's augmentation."""

from __future__ import annotations

import json
from pathlib import Path

import torch
from torchvision import transforms as T

from sharpness.data.folders import domain_transforms
from sharpness.lesam.evaluate import domain_rows
from sharpness.lesam.experiments import RUNS_DIR, training_runs
from sharpness.lesam.records import Given, read_run
from sharpness.lesam.steps import item_groups
from sharpness.lesam.tables import build_table_domain_gen
from sharpness.runs.provenance import write_artifact_provenance
from sharpness.train import train
from tests.paper import formats

torch.set_num_threads(1)


def test_training_transform_is_domainbeds():
    steps = domain_transforms(True).transforms
    crop, jitter, grey = steps[0], steps[1], steps[2]
    assert isinstance(crop, T.RandomResizedCrop) and crop.size == (224, 224)
    assert crop.scale == (0.7, 1.0)
    assert isinstance(jitter, T.ColorJitter)
    assert (jitter.brightness, jitter.contrast, jitter.saturation) == ((0.7, 1.3),) * 3
    assert jitter.hue == (-0.3, 0.3)
    assert isinstance(grey, T.RandomGrayscale) and grey.p == 0.1
    evaluation = domain_transforms(False).transforms
    assert isinstance(evaluation[0], T.Resize) and evaluation[0].size == (224, 224)


def test_single_source_runs_are_tested_on_every_other_domain(tmp_path):
    formats.write_domains(tmp_path / "data", "pacs", classes=2, per_class=2)
    base = {"model": "cnn", "model_kwargs": {"channels": 2, "depth": 1}, "epochs": 1,
            "batch_size": 4, "lr": 0.01, "device": "cpu", "checkpoint_every": 0,
            "augment": {"crop": 0, "flip": True, "cutout": 0},
            "data_root": str(tmp_path / "data")}
    section = {
        "base": base, "optimizers": {"sam": {"rho": 0.05}},
        "groups": {f"domain_pacs_{d}": {"overrides": {"dataset": f"pacs:{d}"},
                                        "optimizers": ["sam"], "seeds": [0]}
                   for d in ("photo", "sketch")},
        "items": {"table_domain_gen": {"title": "DG", "data_used": "synthetic PACS",
                                       "groups": ["domain_pacs_photo", "domain_pacs_sketch"]}},
    }
    assert item_groups(section, "table_domain_gen") == ["domain_pacs_photo",
                                                        "domain_pacs_sketch"]
    dirs = []
    for rid, run in training_runs(section).items():
        train(run["config"], tmp_path / RUNS_DIR / rid)
        dirs.append(tmp_path / RUNS_DIR / rid)
    rows = domain_rows(dirs)
    assert len(rows) == 2 * 3  # 2 runs x 3 unseen domains
    for r in rows:
        assert r["target"] != r["source"] and r["n_test"] == 4 and 0 <= r["accuracy"] <= 1
        assert r["precision"] == "fp32"
    assert {r["target"] for r in rows if r["source"] == "photo"} == {
        "art_painting", "cartoon", "sketch"}
    out = tmp_path / "results/lesam/eval/domain_gen.json"
    out.parent.mkdir(parents=True)
    out.write_text(json.dumps(rows))
    write_artifact_provenance(out, kind="evaluation")  # as `lesam eval` records it
    table = tmp_path / "table_domain_gen.md"
    given = Given(item="table_domain_gen", spec=section["items"]["table_domain_gen"],
                  runs=[read_run(d, what="test") for d in dirs], evaluation=out)
    build_table_domain_gen(given, table)
    text = table.read_text()
    assert "from photo" in text and "from sketch" in text and "mean over sources" in text
    assert "precision fp32" in text
    csv = Path(table.with_suffix(".csv")).read_text()
    assert "PACS" in csv and "per_seed" in csv
