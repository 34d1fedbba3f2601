"""An optimizer's hyper-parameters are resolved by its spec once on any path: by the plan for a
workflow job (whose file holds the resolved values, which ``sharpness train --config-file``
takes as written when the plan's signature beside it holds), by the config's validation for
a run given by hand (a file no plan vouches for among them), by the optimizer for a caller
that passes its own keywords."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path

import pytest

from sharpness.cli import main
from sharpness.config.profiles import DEFAULT_PROFILE, load_profile
from sharpness.jobs import Plan
from sharpness.jobs.files import SIGNATURE_MAX_BYTES, signature_path, write_files
from sharpness.lesam import experiments as exp
from sharpness.lesam.jobs import jobs as lesam_jobs
from sharpness.optim.spec import OptimizerSpec, optimizer_spec
from sharpness.runs.signing import own_public_key
from tests.conftest import REPO

pytestmark = pytest.mark.usefixtures("one_thread")

TINY = {"dataset": "mnist_embedded", "model": "cnn", "model_kwargs": {"channels": 4},
        "train_size": 64, "test_size": 32, "epochs": 1, "batch_size": 32, "lr": 0.05,
        "device": "cpu", "optimizer": "sam", "opt_hparams": {"rho": 0.1}}


@pytest.fixture
def resolves(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The optimizers whose spec resolves hyper-parameters, one entry a call."""
    calls: list[str] = []
    resolve = OptimizerSpec.resolve

    def counted(self: OptimizerSpec, hparams=None):  # noqa: ANN001, ANN202
        calls.append(self.name)
        return resolve(self, hparams)
    monkeypatch.setattr(OptimizerSpec, "resolve", counted)
    return calls


def test_the_plan_resolves_each_entry_once_and_its_job_files_hold_the_result(resolves):
    """Building the quick profile's job files resolves each optimizer entry of a study once
    (not once a run, nor again for the files), and every training file holds every
    hyper-parameter of its optimizer, as its spec resolves what the profile wrote."""
    section = copy.deepcopy(load_profile([], REPO / DEFAULT_PROFILE)["lesam"])
    for spec in section["groups"].values():  # two seeds a run: runs outnumber entries
        spec["seeds"] = [0, 1]
    exp.expand.cache_clear()
    files = Plan(lesam_jobs({"lesam": section})).files()
    runs = exp.training_runs(section)
    entries = sum(len(spec["optimizers"]) for spec in section["groups"].values())
    if section.get("glmc"):
        entries += len(exp.glmc_factors(section["glmc"])) * len(section["glmc"]["optimizers"])
    if section.get("signal"):
        entries += len(section["signal"]["optimizers"])
    assert len(resolves) == entries < len(runs)  # once an entry, not once a run
    before = len(resolves)
    Plan(lesam_jobs({"lesam": section})).files()
    assert len(resolves) == before  # the expansion is cached: nothing resolved again
    for rid, run in runs.items():
        written = section["optimizers"].get(run["label"], {})
        held = files[exp.output(exp.TRAIN_CONFIG, run=rid)]["opt_hparams"]
        spec = optimizer_spec(run["optimizer"])
        assert set(held) == set(spec.defaults), rid
        assert all(held[k] == v for k, v in written.items() if k != "source"), rid


def _planned(folder: Path, content: dict) -> Path:
    """A job file as a plan writes it: ``folder/job.json`` with the plan's signature beside."""
    write_files({"job.json": content}, folder)
    return folder / "job.json"


def test_a_job_file_is_not_resolved_again_and_runs_as_the_same_config_by_hand(
        tmp_path, resolves, capsys):
    """``sharpness train --config-file`` of a file its plan signed, with resolved
    hyper-parameters, asks the spec nothing; the same run given by hand (``--config``, the
    profile's few keys) resolves once, and both are one run: the same config id and the same
    numbers."""
    hand = tmp_path / "hand.json"
    hand.write_text(json.dumps(TINY))
    planned = _planned(tmp_path, {**TINY, "opt_hparams": optimizer_spec("sam").resolve(
        TINY["opt_hparams"])})
    resolves.clear()
    assert main(["train", "--config-file", str(planned), "--out", str(tmp_path / "a"),
                 "--no-progress"]) == 0
    assert resolves == []
    assert main(["train", "--config", str(hand), "--out", str(tmp_path / "b"),
                 "--no-progress"]) == 0
    assert resolves == ["sam"]
    finals = [json.loads((tmp_path / run / "final.json").read_text()) for run in "ab"]
    assert finals[0] == finals[1] and finals[0]["steps"] == 2
    record = json.loads((tmp_path / "a" / "provenance.json").read_text())
    assert record["config_file"]["path"] == str(planned)
    assert record["config_file"]["signed_by"] == own_public_key()
    assert record["params"]["opt_hparams"]["bn_second_pass"] == "freeze"
    capsys.readouterr()


def test_a_signed_job_file_must_hold_resolved_hyper_parameters(tmp_path, capsys):
    """A signed job file whose hyper-parameters are not every one of its optimizer's is
    refused naming what is missing; ``--set`` may not change what its plan resolved."""
    path = _planned(tmp_path, TINY)
    assert main(["train", "--config-file", str(path), "--out", str(tmp_path / "run")]) == 2
    assert re.search(r"'opt_hparams': not resolved .*missing: bn_second_pass",
                     capsys.readouterr().err)
    assert main(["train", "--config-file", str(path), "--out", str(tmp_path / "run"),
                 "--set", 'opt_hparams={"rho": 0.2}']) == 2
    assert "--set opt_hparams: a signed --config-file's optimizer" in capsys.readouterr().err
    assert not (tmp_path / "run" / "final.json").exists()


@pytest.mark.parametrize("how", ["by hand", "changed after the plan signed it",
                                 "signed by a key not trusted here",
                                 "a signature file past its size bound"])
def test_a_job_file_no_plan_vouches_for_is_checked_in_full(tmp_path, resolves, capsys,
                                                             monkeypatch, how):
    """Values that no check saw never reach the optimizer: a job file without a signature of
    its plan that holds (written by hand, edited after the plan wrote it, or signed with
    another key) has its hyper-parameters resolved by the spec like ``--config``: a negative
    ``rho`` is refused naming the key, and nothing is trained."""
    bad = {**TINY, "opt_hparams": {"rho": -1.0, "bn_second_pass": "freeze"}}
    if how == "by hand":
        path = tmp_path / "job.json"
        path.write_text(json.dumps(bad))
    elif how == "changed after the plan signed it":
        path = _planned(tmp_path, {**bad, "opt_hparams": {**bad["opt_hparams"], "rho": 0.1}})
        path.write_text(path.read_text().replace('"rho": 0.1', '"rho": -1.0'))
    elif how == "signed by a key not trusted here":
        path = _planned(tmp_path, bad)
        monkeypatch.setenv("SHARPNESS_SIGNING_KEY", str(tmp_path / "other_key"))
        monkeypatch.setenv("SHARPNESS_TRUSTED_DIR", str(tmp_path / "trusting_nobody"))
    else:  # a valid signature padded past the bound is not read (nor is a huge file)
        path = _planned(tmp_path, bad)
        signature = signature_path(path)
        signature.write_text(signature.read_text() + " " * SIGNATURE_MAX_BYTES)
    resolves.clear()
    assert main(["train", "--config-file", str(path), "--out", str(tmp_path / "run"),
                 "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert "'opt_hparams': optimizer 'sam': rho must be in [0, inf), got -1.0" in err
    assert ("not the file its plan signed" in err) == (how != "by hand")
    assert resolves == ["sam"]
    assert not (tmp_path / "run" / "final.json").exists()
    path.write_text(json.dumps(TINY))  # by hand, the profile's few keys: resolved, and run
    assert main(["train", "--config-file", str(path), "--out", str(tmp_path / "run"),
                 "--set", 'opt_hparams={"rho": 0.2}', "--no-progress"]) == 0
    record = json.loads((tmp_path / "run" / "provenance.json").read_text())
    assert record["params"]["opt_hparams"] == {"rho": 0.2, "bn_second_pass": "freeze"}
    assert "signed_by" not in record["config_file"]


def test_the_optimizer_resolves_only_what_a_caller_passes_as_keywords(resolves):
    """Keywords are resolved by the optimizer (once); ``resolved`` ones are taken as they
    are; both at once are refused."""
    torch = pytest.importorskip("torch")
    from sharpness.optim import build_optimizer

    model = torch.nn.Linear(3, 2)
    assert build_optimizer("sam", model, rho=0.2).hparams["rho"] == 0.2
    assert resolves == ["sam"]
    settings = optimizer_spec("sam").resolve({"rho": 0.3})
    resolves.clear()
    assert build_optimizer("sam", model, resolved=settings).hparams == settings
    assert resolves == []
    with pytest.raises(ValueError, match="both resolved and as keywords .rho."):
        build_optimizer("sam", model, resolved=settings, rho=0.1)
