"""A damaged cached file is recomputed, never used and never a dead end.

Each kind (a checkpoint, a finished run's final.json and model.pt, a flow's flow.json, a
sweep's sweep.json) is truncated as a full disk or a copy cut short would leave it; the next
call logs which file and why, recomputes, and ends with the numbers of a clean run. On
b81c16d each of these stopped with a traceback until the file was deleted by hand.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest
import torch

from sharpness.io import read_json
from sharpness.runs.seal import DamagedFile, damage, load_checked, seal
from sharpness.train import train
from tests.killing import Killed, kill_at

pytestmark = [pytest.mark.usefixtures("one_thread"),  # tiny models: one thread
              pytest.mark.e2e]  # builds whole figures, damages and rebuilds them: second tier

REPO = Path(__file__).resolve().parents[1]
DATA = str(REPO / "data")
FULL = {
    "dataset": "mnist_embedded", "data_root": DATA, "train_size": 64, "test_size": 32,
    "model": "fcn", "model_kwargs": {"hidden": 16, "depth": 2}, "optimizer": "sgd",
    "momentum": 0.0, "weight_decay": 0.0, "lr": 0.05, "mode": "fullbatch", "loss": "mse",
    "max_steps": 20, "checkpoint_every": 4, "eval_every": 10, "seed": 1,
}
SETTING = {
    "label": "tiny", "dataset": "mnist_embedded", "train_size": 32, "test_size": 50,
    "model": "fcn", "model_kwargs": {"hidden": 8, "activation": "tanh", "alpha": 0.3},
    "loss_goal": 0.3, "max_steps": 40, "sharpness_every": 20, "lr_factors": [0.5, 2.0],
    "measures": {"trace_samples": 2, "ascent_steps": 1, "avg_samples": 2}, "device": "cpu",
}


def _truncate(path: Path) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


@pytest.fixture(scope="module")
def clean(tmp_path_factory) -> Path:
    torch.set_num_threads(1)
    run = tmp_path_factory.mktemp("clean")
    train(FULL, run)
    return run


def _same_run(run: Path, ref: Path) -> None:
    assert read_json(run / "final.json") == read_json(ref / "final.json")
    assert (run / "metrics.jsonl").read_bytes() == (ref / "metrics.jsonl").read_bytes()
    a = torch.load(run / "model.pt", weights_only=True)["state_dict"]
    b = torch.load(ref / "model.pt", weights_only=True)["state_dict"]
    assert all(torch.equal(a[k], b[k]) for k in b)


def test_seal_records_and_checks_the_hash(tmp_path):
    (tmp_path / "a.json").write_text('{"x": 1}')
    assert "no hash" in damage(tmp_path, "a.json")
    assert damage(tmp_path, "a.json", require=False) is None  # a reader of a hand-made file
    seal(tmp_path, "a.json")
    assert damage(tmp_path, "a.json") is None
    (tmp_path / "a.json").write_text('{"x": 2}')
    assert "differs from the recorded" in damage(tmp_path, "a.json")
    with pytest.raises(DamagedFile, match=r"a\.json is not used: .*differs.*\. Do this"):
        load_checked(tmp_path / "a.json", read_json, what="test", hint="Do this")
    (tmp_path / "b.json").write_text("{")
    with pytest.raises(DamagedFile, match=r"cannot be read \(JSONDecodeError"):
        load_checked(tmp_path / "b.json", read_json, what="test", require=False)


def test_truncated_checkpoint_starts_the_run_over(tmp_path, clean, caplog):
    run = tmp_path / "run"
    with pytest.raises(Killed):
        train(FULL, run, hooks=kill_at(10))
    _truncate(run / "checkpoint.pt")
    with caplog.at_level(logging.WARNING, logger="sharpness.runs.seal"):
        train(FULL, run)
    assert "checkpoint: " in caplog.text and "checkpoint.pt is not used" in caplog.text
    assert read_json(run / "provenance.json")["resumed_from_step"] is None
    _same_run(run, clean)
    # the finished run's record holds the hashes of what it keeps, not of the checkpoint
    assert sorted(read_json(run / "cache_key.json")["files"]) == [
        "config.json", "final.json", "metrics.jsonl", "model.pt"]


def test_checkpoint_changed_after_it_was_written_is_not_resumed(tmp_path, clean, caplog):
    run = tmp_path / "run"
    with pytest.raises(Killed):
        train(FULL, run, hooks=kill_at(10))
    # a loadable checkpoint that is not the one recorded (another run's, or edited)
    state = torch.load(run / "checkpoint.pt", weights_only=True)
    state["model"] = {k: v + 1 for k, v in state["model"].items()}
    torch.save(state, run / "checkpoint.pt")
    with caplog.at_level(logging.WARNING, logger="sharpness.runs.seal"):
        train(FULL, run)
    assert "differs from the recorded" in caplog.text
    _same_run(run, clean)


@pytest.mark.parametrize("name", ["final.json", "model.pt"])
def test_truncated_final_files_recompute_the_run(tmp_path, clean, caplog, name):
    run = tmp_path / "run"
    train(FULL, run)
    _truncate(run / name)
    with caplog.at_level(logging.WARNING, logger="sharpness.runs.seal"):
        train(FULL, run)
    assert f"training run: {run / name} is not used" in caplog.text
    _same_run(run, clean)
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="sharpness.runs.seal"):
        train(FULL, run)  # now intact: reused without a word
    assert caplog.text == ""


@pytest.fixture(scope="module")
def setting_run(tmp_path_factory) -> tuple[Path, dict]:
    from sharpness.eos.sweep import run_setting

    torch.set_num_threads(1)
    out = tmp_path_factory.mktemp("eos")
    return out, run_setting(SETTING, out, data_root=DATA, threads=1)


@pytest.mark.parametrize("name", ["flow.json", "flow.npz"])
def test_truncated_flow_is_recomputed(tmp_path, setting_run, caplog, name):
    import shutil

    from sharpness.eos.setting import resolve_setting
    from sharpness.eos.sweep import run_flow

    out, summary = setting_run
    flow = tmp_path / "flow"
    shutil.copytree(out / "flow", flow)
    _truncate(flow / name)
    with caplog.at_level(logging.WARNING, logger="sharpness.runs.seal"):
        again = run_flow(resolve_setting(SETTING), flow, DATA)
    assert f"gradient flow: {flow / name} is not used" in caplog.text
    assert {k: v for k, v in again.items() if k != "wall_s"} == \
        {k: v for k, v in summary["flow"].items() if k != "wall_s"}
    assert damage(flow, "flow.json") is None and damage(flow, "flow.npz") is None


def test_truncated_sweep_stops_the_figure_clearly_and_a_rerun_recomputes(
        tmp_path, setting_run, capsys):
    import shutil

    from sharpness.cli import main

    src, summary = setting_run
    out = tmp_path / "setting"
    shutil.copytree(src, out)
    _truncate(out / "sweep.json")
    fig = tmp_path / "fig_phase.pdf"
    code = main(["eos", "figure", "--id", "fig_phase", "--inputs", str(out / "sweep.json"),
                 "--out", str(fig)])
    err = capsys.readouterr().err
    assert code == 2 and not fig.exists()
    assert f"{out / 'sweep.json'} is not used" in err and "--forcerun" in err
    # the job that writes it, run again, recomputes the sweep (its runs are reused)
    assert main(["eos", "run", "--params", json.dumps(SETTING), "--out", str(out),
                 "--data-root", DATA, "--threads", "1"]) == 0
    rows = read_json(out / "sweep.json")["rows"]

    def numbers(r: dict) -> dict:
        return {k: v for k, v in r.items() if k != "run"}

    assert [numbers(r) for r in rows] == [numbers(r) for r in summary["rows"]]
    assert main(["eos", "figure", "--id", "fig_phase", "--inputs", str(out / "sweep.json"),
                 "--out", str(fig)]) == 0


def test_a_table_reading_a_damaged_final_names_it(tmp_path, clean):
    import shutil

    from sharpness.lesam.report import read_final

    run = tmp_path / "run"
    shutil.copytree(clean, run)
    assert {k: v for k, v in read_final(run).items() if not k.startswith("best_")} == \
        read_json(clean / "final.json")
    _truncate(run / "final.json")
    with pytest.raises(DamagedFile, match=r"final\.json is not used: .*--forcerun"):
        read_final(run)
