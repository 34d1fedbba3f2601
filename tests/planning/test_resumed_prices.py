"""A resumed campaign (``run_prices(..., finished_free=True)``) prices an eos setting, a
Grad-CAM group and the SAM-at-the-edge-of-stability bridge by what the workflow will still do
with the folders a real (tiny) run left (:mod:`sharpness.planning.resumed`): a finished one at
0, a cut one at the share of its steps or runs left, one made with other settings in full."""

from __future__ import annotations

import copy
import shutil
from pathlib import Path

import pytest

from sharpness.jobs import build_plan
from sharpness.jobs.files import read_job_object
from sharpness.planning.prices import run_prices
from tests.killing import Killed, kill_at

pytestmark = pytest.mark.usefixtures("one_thread")

#: one tiny setting, one learning rate, 60 steps at most with a checkpoint every 20 (a
#: second or two on the CPU, its flow included)
SETTING = {
    "label": "small", "dataset": "mnist_embedded", "train_size": 32, "test_size": 50,
    "model": "fcn", "model_kwargs": {"hidden": 8, "activation": "tanh", "alpha": 0.3},
    "loss": "mse", "loss_goal": 0.1, "max_steps": 60, "sharpness_every": 20,
    "log_every": 5, "checkpoint_every": 20, "device": "cpu", "lr_factors": [0.5],
    "measures": {"trace_samples": 2, "ascent_steps": 1, "avg_samples": 2},
    "flow": {"max_evals": 5000},  # priced: the flow's part of the setting's price
}
EOS = ("eos", "setting/small")


def _eos_config(**change):
    return {"eos": {"settings": {"small": {**SETTING, **change}},
                    "figures": {"fig_phase": ["small"]}}}


def _prices(config, results, keys, free=True):
    return run_prices(config, method="analytic", results=results, only=frozenset(keys),
                      finished_free=free)


def _job_file(config, build: Path, rule: str, jid: str):
    """The job's settings and ``{path, sha256}`` as the job reads them from the file the plan
    writes (what the workflow's job records)."""
    plan = build_plan(config)
    plan.write(build)
    return read_job_object(str(build / plan.job(rule, jid).config_file))


def _flow_share(config):
    """The gradient flow's share of the eos setting's price, as priced and at its caps."""
    from sharpness.cost.plan import plan_jobs

    (job,) = (j for j in plan_jobs(config) if (j.paper, j.run) == EOS)
    return job.flow_share()


@pytest.mark.e2e  # runs a whole eos setting (its GD runs and flow)
def test_eos_setting_finished_cut_or_changed(repo, tmp_path):
    from sharpness.commands.eos import run_one
    from sharpness.eos.setting import resolve_setting
    from sharpness.eos.sweep import engine_config, learning_rates, run_flow
    from sharpness.eos.sweep import run_name as lr_name
    from sharpness.train import train

    config, data = _eos_config(), str(repo / "data")
    full = _prices(config, tmp_path / "none", [EOS], free=False)
    # finished: run as `eos run --config-file` runs it
    done = tmp_path / "done"
    params, source = _job_file(config, done, "eos_setting", "small")
    folder = done / "results/eos/settings/small"
    run_one(params, folder, data, 1, config_file=source)
    free = _prices(config, done / "results", [EOS])
    assert free.hours[EOS] == 0.0 and free.caps[EOS] == 0.0
    assert free.source[EOS] == "finished on this machine: 0 now"
    assert _prices(config, done / "results", [EOS], free=False).hours[EOS] == full.hours[EOS]
    # the plan's job file now differs (Snakemake reruns the job, which starts over)
    other = _eos_config(max_steps=80)
    again = _prices(other, done / "results", [EOS])
    assert again.hours[EOS] == _prices(other, tmp_path / "none", [EOS]).hours[EOS] > 0
    # sweep.json removed after it finished (a forced rerun): the setting starts over
    (folder / "sweep.json").unlink()
    assert _prices(config, done / "results", [EOS]).hours[EOS] == full.hours[EOS]

    # cut at step 45 of the run: its metrics reach step 44, its checkpoint is step 40's
    cut = tmp_path / "cut/results/eos/settings/small"
    s = resolve_setting(dict(SETTING))
    flow = run_flow(s, cut / "flow", data)
    (point,) = learning_rates(s, flow["eta_c"])
    with pytest.raises(Killed):
        train(engine_config(s, point["lr"], data), cut / "runs" / lr_name(point["lr"]),
              hooks=kill_at(45))
    left = _prices(config, tmp_path / "cut/results", [EOS])
    steps = SETTING["max_steps"]  # one learning rate: the grid's steps at the caps
    flow = _flow_share(config)
    assert all(0 < f < 1 for f in flow)  # the flow's part of the price, as priced and at caps
    for kind, f in zip(("hours", "caps"), flow, strict=True):  # the flow is not paid again,
        assert getattr(left, kind)[EOS] == pytest.approx(  # and of the runs the steps left
            getattr(full, kind)[EOS] * (1 - f) * (steps - 40) / steps, rel=1e-9, abs=0)
    assert f"cut here after its gradient flow, at step 40 of {steps}: the steps left" in \
        left.source[EOS]
    # the same folder under other GD settings: its run starts over, its flow is reused
    changed = _prices(other, tmp_path / "cut/results", [EOS])
    other_full = _prices(other, tmp_path / "none", [EOS], free=False)
    assert changed.hours[EOS] == pytest.approx(
        other_full.hours[EOS] * (1 - _flow_share(other)[0]), rel=1e-9, abs=0)
    assert f"at step 0 of {80}" in changed.source[EOS]
    # other flow settings: the flow is computed again too, priced in full
    new_flow = _eos_config(loss_goal=0.12)
    assert _prices(new_flow, tmp_path / "cut/results", [EOS]).hours[EOS] == _prices(
        new_flow, tmp_path / "none", [EOS]).hours[EOS]

    # finished in a job cut before its end (`eos run-many` seals its settings together when
    # the last has finished): its sweep.json is there unsealed, and every run is reused
    unsealed = tmp_path / "unsealed"
    params, source = _job_file(config, unsealed, "eos_setting", "small")
    run_one(params, unsealed / "results/eos/settings/small", data, 1, config_file=source,
            seal_result=False)
    resumed = _prices(config, unsealed / "results", [EOS])
    assert resumed.hours[EOS] == 0.0 and resumed.caps[EOS] == 0.0
    assert "every run finished on this machine before its job was cut" in resumed.source[EOS]


#: one data set, one optimizer, two seeds: 64 images, batch 32 (two steps an epoch), three
#: epochs with a checkpoint after each
GRADCAM = {
    "datasets": {"mnist": {"name": "mnist_embedded", "label": "MNIST",
                           "background": {"rule": "threshold", "threshold": 0.2}}},
    "optimizers": {"sgd": {"name": "sgd", "label": "SGD", "hparams": {}}},
    "alphas": [1.0], "seeds": [0, 1],
    "train": {"model": "cnn", "model_kwargs": {"channels": 2, "depth": 2}, "epochs": 3,
              "batch_size": 32, "lr": 0.05, "momentum": 0.0, "weight_decay": 0.0,
              "eval_every": 0, "checkpoint_every": 1, "device": "cpu", "train_size": 64,
              "test_size": 64},
    "panel": {"per_class": 1, "seed": 0, "show": 1},
}
RUN0, RUN1 = (("minorfirst", f"gradcam/mnist/sgd/a1.0/s{seed}") for seed in (0, 1))


def _gradcam_config(repo, lr=0.05):
    section = copy.deepcopy(GRADCAM)
    section["train"].update(lr=lr, data_root=str(repo / "data"))
    return {"gradcam": section}


def test_gradcam_group_finished_partly_finished_or_changed(repo, tmp_path, monkeypatch):
    from sharpness.gradcam.study import run_config, run_name, train_group, write_group
    from sharpness.train import train

    config, keys = _gradcam_config(repo), [RUN0, RUN1]
    full = _prices(config, tmp_path / "none", keys, free=False)
    assert full.hours[RUN0] > 0 and full.hours[RUN0] == full.hours[RUN1]
    # finished: as `gradcam train --config-file` trains and then writes the group
    done = tmp_path / "done"
    params, source = _job_file(config, done, "gradcam_train", "mnist")
    group = done / "results/minorfirst/gradcam/runs/mnist/sgd"
    summary = train_group(params, "mnist", "sgd", group, threads=1, write=False)
    write_group(params, group, summary, config_file=source)
    free = _prices(config, done / "results", keys)
    assert free.hours == {RUN0: 0.0, RUN1: 0.0}
    assert free.source[RUN0] == "finished on this machine (2 of 2 runs of the group " \
        "finished here): 0 now"
    # the plan's job file now differs: the job runs again, deletes runs.json, starts over
    other = _gradcam_config(repo, lr=0.04)
    assert _prices(other, done / "results", keys).hours == \
        _prices(other, tmp_path / "none", keys).hours

    # cut: seed 0 finished, seed 1 cut at step 5 (epoch 3; the metrics reach epoch 2, whose
    # checkpoint is taken as missing: one epoch kept), no runs.json written
    part = tmp_path / "part/results/minorfirst/gradcam/runs/mnist/sgd"
    train(run_config(params, "mnist", "sgd", 1.0, 0), part / run_name(1.0, 0))
    with pytest.raises(Killed):
        train(run_config(params, "mnist", "sgd", 1.0, 1), part / run_name(1.0, 1),
              hooks=kill_at(5))
    from sharpness.planning import resumed

    reads = []  # a pricing pass reads each run's record once, not once a run of its group
    monkeypatch.setattr(resumed, "finished_record",
                        lambda *a, _f=resumed.finished_record: reads.append(a[0]) or _f(*a))
    left = _prices(config, tmp_path / "part/results", keys)
    assert sorted(reads) == sorted({*reads}) and len(reads) == 2, reads
    monkeypatch.undo()
    assert left.hours[RUN0] == 0.0
    assert left.source[RUN0] == "finished on this machine (1 of 2 runs of the group " \
        "finished here): 0 now"
    assert left.hours[RUN1] == pytest.approx(full.hours[RUN1] * 2 / 3, rel=1e-9, abs=0)
    assert "cut here at epoch 1 of 3: the epochs left (1 of 2 runs of the group finished " \
        "here)" in left.source[RUN1]
    # other settings: neither run is reused
    changed = _prices(other, tmp_path / "part/results", keys)
    assert changed.hours == _prices(other, tmp_path / "none", keys).hours
    assert not any("finished here" in changed.source[k] for k in keys)


def _bridges_config(repo, max_steps=40):
    """The quick profile's bridges with a tiny SAM-at-the-edge-of-stability sweep: one
    learning rate, GD and SAM, a few dozen full-batch steps."""
    from sharpness.config.profiles import load_profile

    section = copy.deepcopy(load_profile([str(repo / "workflow/config/quick.yaml")],
                                         None)["bridges"])
    section["sam_eos"]["setting"].update(train_size=32, test_size=50, max_steps=max_steps,
                                         log_every=10, checkpoint_every=20, lr_factors=[0.5])
    section["sam_eos"]["optimizers"] = section["sam_eos"]["optimizers"][:2]
    section["sam_eos"]["data_root"] = str(repo / "data")
    return {"bridges": section}


@pytest.mark.e2e  # runs a whole (tiny) bridge sweep
def test_a_finished_or_cut_bridge_pays_what_is_left_and_a_changed_one_in_full(repo, tmp_path):
    """The bridge's job declares its sweep.json alone: a sweep cut before it wrote it resumes,
    so each optimizer pays for the steps its runs did not keep; a finished sweep removed (a
    forced rerun) starts over, in full."""
    from sharpness.bridges.sam_eos import SamEosParams, run_sweep
    from sharpness.runs.seal import unseal

    config = _bridges_config(repo)
    keys = [("bridges", "sam_eos/gd"), ("bridges", "sam_eos/sam")]
    full = _prices(config, tmp_path / "none", keys, free=False)
    assert all(full.hours[k] > 0 for k in keys)
    done = tmp_path / "done"
    params, source = _job_file(config, done, "bridges_sam_eos_run", "sam_eos")
    run_sweep(SamEosParams.from_dict(params), done / "results/bridges/sam_eos", threads=1,
              config_file=source)
    free = _prices(config, done / "results", keys)
    assert {free.hours[k] for k in keys} == {0.0}
    assert free.source[keys[0]] == "finished on this machine: 0 now"
    # the plan's job file now differs: the job runs again, in full
    other = _bridges_config(repo, max_steps=50)
    assert _prices(other, done / "results", keys).hours == \
        _prices(other, tmp_path / "none", keys).hours
    # its finished sweep.json removed (a forced rerun): the sweep starts over, in full
    folder = done / "results/bridges/sam_eos"
    (folder / "sweep.json").unlink()
    assert _prices(config, done / "results", keys).hours == full.hours
    # cut before it wrote its sweep.json (never sealed): every run is reused
    unseal(folder, "sweep.json")
    cut = _prices(config, done / "results", keys)
    assert {cut.hours[k] for k in keys} == {0.0}
    assert cut.source[keys[1]].endswith("every run finished on this machine before its job "
                                        "was cut: 0 now")
    # SAM's runs gone: SAM pays in full, GD's runs are still reused
    shutil.rmtree(folder / "sam")
    part = _prices(config, done / "results", keys)
    assert part.hours[keys[0]] == 0.0 and part.hours[keys[1]] == full.hours[keys[1]]
