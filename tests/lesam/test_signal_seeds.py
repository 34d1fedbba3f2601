"""fig_signal's probe runs over several seeds: the first keyed by its optimizer label (the run
the figure draws), the others by ``<label>-s<seed>``, every one with its seed."""

from __future__ import annotations

import pytest

from sharpness.lesam.experiments import signal_runs

SECTION = {"base": {"dataset": "mnist_embedded", "model": "cnn", "epochs": 1, "lr": 0.05},
           "optimizers": {"sam": {"rho": 0.05}, "lesam": {"sigma": 0.05}},
           "signal": {"optimizers": ["sam", "lesam"], "probe_every": 2}}


def test_one_seed_keeps_the_label_as_run_key() -> None:
    runs = signal_runs(SECTION)
    assert list(runs) == ["sam", "lesam"]
    assert {r["seed"] for r in runs.values()} == {0}
    assert runs["sam"]["config"]["seed"] == 0 and runs["sam"]["label"] == "sam"


def test_more_seeds_are_more_runs_with_their_seed() -> None:
    runs = signal_runs({**SECTION, "signal": {**SECTION["signal"], "seeds": [4, 5, 6]}})
    assert list(runs) == ["sam", "sam-s5", "sam-s6", "lesam", "lesam-s5", "lesam-s6"]
    assert runs["lesam-s6"]["config"]["seed"] == 6 and runs["lesam-s6"]["label"] == "lesam"
    assert runs["sam"]["config"]["seed"] == 4


@pytest.mark.e2e  # trains every seed and builds the figure
def test_fig_signal_csv_holds_every_seed(tmp_path) -> None:
    """Each seed's probe run goes into fig_signal.csv with its seed (the figure draws the
    first), so the claims ledger counts one independent run per seed."""
    import json

    import pandas as pd
    import torch

    from sharpness.claims.lesam_signal import runs_of
    from sharpness.cli import main
    from sharpness.lesam.steps import build_runs

    torch.set_num_threads(1)
    tiny = {"dataset": "mnist_embedded", "model": "cnn", "model_kwargs": {"channels": 4},
            "train_size": 128, "test_size": 60, "epochs": 1, "batch_size": 64, "lr": 0.05,
            "device": "cpu", "checkpoint_every": 0, "eval_every": 1}
    section = {"base": tiny, "optimizers": {"sam": {"rho": 0.05}},
               "signal": {"optimizers": ["sam"], "probe_every": 1, "seeds": [0, 1]},
               "items": {"fig_signal": {"title": "S", "data_used": "MNIST 128 (test)"}}}
    params = json.dumps(section)
    for key in signal_runs(section):
        assert main(["lesam", "signal", "--run", key, "--params", params, "--out",
                     str(tmp_path / "results/lesam/signal" / key)]) == 0
    out = tmp_path / "figures" / "fig_signal.pdf"
    runs = [str(tmp_path / f) for f in build_runs(section, "fig_signal")]
    assert main(["lesam", "build", "fig_signal", "--params",
                 json.dumps(section["items"]["fig_signal"]), "--runs", *runs,
                 "--out", str(out)]) == 0
    df = pd.read_csv(out.with_suffix(".csv"))
    assert sorted(set(df["seed"])) == [0, 1] and len(runs_of(df)) == 2
    # each run's training record rides along, for the ledger's sanity check
    assert df["final_train_loss"].notna().all() and set(df["num_classes"]) == {10}
    # each row names its run's record and draw: one per (seed, optimizer), distinct per seed
    from sharpness.claims.independence import distinct_frames

    runs = df.groupby(["seed", "optimizer"])[["run_id", "init_sha256", "order_sha256"]]
    assert (runs.nunique() == 1).all().all() and df["run_id"].notna().all()
    kept, found = distinct_frames(runs_of(df), arms=("optimizer",))
    assert len(kept) == 2 and found.decides, found.note()
    assert "the CSV holds seeds 0, 1" in out.with_suffix(".caption.txt").read_text()
