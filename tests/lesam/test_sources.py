"""Every optimizer setting of the paper profile carries its source, and the source reaches the
run's provenance, `sharpness audit` and the table captions."""

from __future__ import annotations

import copy
import re
from pathlib import Path

import pytest
import yaml

from sharpness.lesam import experiments as exp
from sharpness.lesam.records import settings_sentence
from sharpness.optim.spec import optimizer_spec

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
        for key in run["sourced"]:  # each hyper-parameter written names its source
            assert SOURCE.match(cfg["sources"][key]), (rid, key)
        # the rest are the optimizer's defaults, resolved with it (sourced in optimizers.yaml)
        spec = optimizer_spec(cfg["optimizer"])
        assert cfg["opt_hparams"] == spec.resolve(
            {k.split(".", 1)[1]: cfg["opt_hparams"][k.split(".", 1)[1]] for k in run["sourced"]})
        assert all(SOURCE.match(spec.sources[k]) for k in cfg["opt_hparams"]
                   if f"opt_hparams.{k}" not in run["sourced"])
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
    # what the official script runs: lesam.py's getattr defaults (options.py has no such flag)
    assert lesam["opt_hparams"]["rho_max"] == 0.3 and lesam["opt_hparams"]["sigma"] == 0.35
    assert lesam["lr_schedule"] == "cosine_epoch"
    # the README command's rho_max, a labelled variant sourced to the README
    readme = runs["cifar100_resnet18-lesam_readme_rmax999-s0"]["config"]
    assert readme["opt_hparams"]["rho_max"] == 999.0
    assert "README.md" in readme["sources"]["opt_hparams.rho_max"]


def test_recipes_with_their_official_sources(paper):
    """Cutout fires with ESAM's probability, the PACS/VLCS ResNet keeps BatchNorm frozen as
    DomainBed's, GLMC steps the per-epoch cosine of its Trainer.py (no warm-up on CIFAR)."""
    section = paper["lesam"]
    runs = exp.training_runs(section)
    base = runs["cifar10_resnet18-sam-s0"]["config"]
    assert base["augment"]["cutout_p"] == 0.5 and base["augment"]["cutout"] == 16
    assert "utils/cutout.py" in base["sources"]["augment"]
    dg = [r["config"] for rid, r in runs.items() if rid.startswith("domain_")]
    assert dg and all(c["freeze_bn"] is True for c in dg)
    assert all("DomainBed domainbed/networks.py" in c["sources"]["freeze_bn"] for c in dg)
    assert not any(r["config"].get("freeze_bn") for rid, r in runs.items()
                   if not rid.startswith("domain_"))
    glmc = list(exp.glmc_runs(section).values())
    assert glmc and all(r["config"]["lr_schedule"] == "cosine_epoch" for r in glmc)
    assert all("GLMC-2023/Trainer.py" in r["config"]["sources"]["lr_schedule"] for r in glmc)
    # every ablation variant is read by ls-ablation or named as a grid no claim reads
    from sharpness.claims.ledger import all_claims

    read = set(next(c for c in all_claims() if c.id == "ls-ablation").params["variants"])
    labels = {r["label"] for r in runs.values() if r["group"] == "ablation"}
    assert labels - read == {lab for lab in labels if lab.startswith("sigma_")}


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
    text = settings_sentence((r["label"], r["config"])
                             for r in exp.training_runs(paper["lesam"]).values()
                             if r["group"] == "cifar10_resnet18")
    assert "Settings and sources:" in text
    assert "rho=0.05 [official: SamsungLabs/ASAM README.md" in text
    assert "rho_max=999.0 [official: smithgun2005/LE-SAM-ICML2026 README.md" in text
    assert "rho=1.5e-05 [choice:" in text
    from sharpness.runs.audit import audit_lines
    from sharpness.runs.provenance import write_run_provenance

    cfg = exp.training_runs(paper["lesam"])["cifar10_resnet18-esam-s0"]["config"]
    write_run_provenance(tmp_path, params=cfg, seed=0)
    (tmp_path / "final.json").write_text("{}")
    lines = "\n".join(audit_lines(tmp_path / "final.json"))
    assert "source:   opt_hparams.swp: official: dydjw9/Efficient_SAM utils/Esam.py" in lines
