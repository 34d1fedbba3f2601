"""Every optimizer setting of the paper profile carries its source, and the source reaches the
run's provenance, `sharpness audit` and the table captions."""

from __future__ import annotations

import copy
import re
from pathlib import Path

import pytest
import yaml

from sharpness.lesam import experiments as exp
from sharpness.lesam.tables import sources_sentence

ROOT = Path(__file__).resolve().parents[2]
SOURCE = re.compile(r"^(official|paper|choice): .+")


@pytest.fixture(scope="module")
def paper() -> dict:
    return yaml.safe_load((ROOT / "workflow/config/paper.yaml").read_text())


def test_every_paper_setting_has_a_source(paper):
    section = paper["lesam"]
    assert exp.missing_sources(section) == []
    runs = exp.training_runs(section)
    for rid, run in runs.items():
        cfg = run["config"]
        for name in cfg["opt_hparams"]:
            assert SOURCE.match(cfg["sources"][f"opt_hparams.{name}"]), (rid, name)
        assert "source" not in cfg and "source" not in cfg["opt_hparams"]
    # the official recipe values, each with the official file named
    c100 = runs["cifar100_resnet18-fsam-s0"]["config"]
    assert c100["opt_hparams"]["rho"] == 0.2 and c100["opt_hparams"]["lmbda"] == 0.6
    assert c100["sources"]["opt_hparams.rho"].startswith("official: nblt/F-SAM run.sh")
    esam = runs["cifar10_resnet18-esam-s0"]["config"]
    assert (esam["opt_hparams"]["beta"], esam["opt_hparams"]["swp"]) == (0.6, "tensor")
    wrn = runs["cifar10_wrn-esam-s0"]["config"]["opt_hparams"]
    assert (wrn["rho"], wrn["beta"]) == (0.1, 0.5)
    lesam = runs["cifar100_resnet18-lesam-s0"]["config"]
    assert lesam["opt_hparams"]["rho_max"] == 999.0 and lesam["lr_schedule"] == "cosine_epoch"
    # the paper's own rho_max is unknown: both candidates run, labelled
    assert runs["cifar100_resnet18-lesam_rmax0.3-s0"]["config"]["opt_hparams"]["rho_max"] == 0.3


def test_a_missing_or_malformed_source_is_named(paper):
    section = copy.deepcopy(paper["lesam"])
    del section["optimizers"]["esam"]["source"]["beta"]
    section["optimizers"]["sam"]["source"]["rho"] = "from a blog"
    problems = exp.missing_sources(section)
    assert any("esam: opt_hparams.beta has no source" in p for p in problems)
    assert any("sam: opt_hparams.rho source 'from a blog'" in p for p in problems)


def test_schema_requires_sources_in_the_paper_profile(paper):
    from snakemake.utils import validate

    schema = str(ROOT / "workflow/config/config.schema.yaml")
    validate(copy.deepcopy(paper), schema)
    broken = copy.deepcopy(paper)
    del broken["lesam"]["optimizers"]["asam"]["source"]
    with pytest.raises(Exception, match="source"):
        validate(broken, schema)
    bad = copy.deepcopy(paper)
    bad["lesam"]["optimizers"]["asam"]["source"]["rho"] = "because"
    with pytest.raises(Exception, match="does not match"):
        validate(bad, schema)


def test_quick_profile_runs_carry_no_sources():
    quick = yaml.safe_load((ROOT / "workflow/config/quick.yaml").read_text())
    assert all("sources" not in r["config"] for r in exp.training_runs(quick["lesam"]).values())


def test_caption_and_audit_show_sources(paper, tmp_path):
    text = sources_sentence(paper["lesam"], ["cifar10_resnet18"])
    assert "Settings and sources:" in text
    assert "rho=0.05 [official: SamsungLabs/ASAM README.md" in text
    assert "rho_max=999.0 [official: smithgun2005/LE-SAM-ICML2026 README.md" in text
    assert "rho=1.5e-05 [choice:" in text
    from sharpness.audit import audit_lines
    from sharpness.provenance import write_run_provenance

    cfg = exp.training_runs(paper["lesam"])["cifar10_resnet18-esam-s0"]["config"]
    write_run_provenance(tmp_path, params=cfg, seed=0)
    (tmp_path / "final.json").write_text("{}")
    lines = "\n".join(audit_lines(tmp_path / "final.json"))
    assert "source:   opt_hparams.swp: official: dydjw9/Efficient_SAM utils/Esam.py" in lines
