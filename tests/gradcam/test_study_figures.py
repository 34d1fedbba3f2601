"""The claim computed from shares, the stand-in label in figure and provenance, a tiny study."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from sharpness.gradcam.figures import (
    claim_sentence,
    draw_figure,
    grid_size,
    make_outputs,
    middle_index,
    paired_difference,
    summary_rows,
)
from sharpness.gradcam.study import compute_maps, run_config, train_group
from sharpness.io import atomic_save_npz
from sharpness.runs.provenance import write_run_provenance

#: runs a tiny Grad-CAM study and draws its figure: second tier
pytestmark = pytest.mark.e2e

STAND_IN = "MNIST digits composited on CIFAR-10 crops (MNIST-M style) for SVHN"


def _params() -> dict:
    return {
        "datasets": {
            "mnist": {"name": "mnist_embedded", "label": "MNIST",
                      "background": {"rule": "threshold", "threshold": 0.2}},
            "svhn": {"name": "mnist_on_cifar", "label": "SVHN stand-in", "stand_in": STAND_IN,
                     "background": {"rule": "digit_mask", "threshold": 0.2}},
        },
        # sorted keys, as the workflow passes them: the figure must still put GD first
        "optimizers": {"sam": {"name": "sam", "label": "l2-SAM", "hparams": {"rho": 0.05}},
                       "sgd": {"name": "sgd", "label": "SGD", "hparams": {}}},
        "alphas": [2.0, 0.5, 1.0],
        "seeds": [0, 1],
        "train": {"model": "cnn", "model_kwargs": {"channels": 2, "depth": 2}, "epochs": 1,
                  "batch_size": 128, "lr": 0.05, "momentum": 0.0, "weight_decay": 0.0,
                  "eval_every": 0, "device": "cpu", "train_size": 256, "test_size": 200},
        "panel": {"per_class": 1, "seed": 0, "show": 1},
        "claim": {"dataset": "mnist", "gd": "sgd", "sam": ["sam"]},
    }


def _fake_maps(folder: Path, sam_shift: float, channels: int = 1, seed: int = 0) -> Path:
    """A maps.npz with controlled shares: SAM = GD + ``sam_shift`` (plus noise)."""
    rng = np.random.default_rng(seed)
    n, h = 6, 8
    gd = rng.uniform(0.3, 0.6, size=(3, 2, n))
    shares = np.stack([gd + sam_shift + rng.normal(0, 0.01, gd.shape), gd])  # (sam, sgd)
    shares[1, 0, 0, 0] = np.nan  # one massless map
    masks = np.zeros((n, h, h), bool)
    masks[:, :, :4] = True
    atomic_save_npz(folder / "maps.npz", images=rng.random((n, channels, h, h)),
                    labels=np.arange(n), indices=np.arange(n), masks=masks,
                    maps=rng.random((2, 3, 2, n, h, h)).astype(np.float32), shares=shares,
                    test_acc=np.full((2, 3, 2), 0.5), alphas=np.array([2.0, 0.5, 1.0]),
                    seeds=np.array([0, 1]), optimizers=np.array(["sam", "sgd"]))
    # as the maps job does: its record holds the file's hash, which the figure job checks
    write_run_provenance(folder, params={"fake_maps": sam_shift}, outputs=["maps.npz"])
    return folder


def test_middle_index_is_the_median_alpha() -> None:
    assert middle_index([2.0, 0.5, 1.0]) == 2
    assert middle_index([0.1, 1.0, 10.0, 100.0]) == 1


@pytest.mark.parametrize(("shift", "verdict"), [(0.1, "exceeds"), (-0.1, "does not exceed")])
def test_claim_is_computed_from_paired_shares(tmp_path: Path, shift: float, verdict: str) -> None:
    from sharpness.gradcam.figures import load_maps

    maps = {"mnist": load_maps(_fake_maps(tmp_path, shift))}
    result = paired_difference(maps["mnist"], "sam", "sgd", middle_index([2.0, 0.5, 1.0]))
    assert result["verdict"] == verdict
    assert result["alpha"] == 1.0
    assert result["n_pairs"] == 12
    assert np.sign(result["diff"]) == np.sign(shift)
    sentence, _ = claim_sentence(_params(), maps)
    assert verdict in sentence and "alpha = 1" in sentence
    assert ("as the paper claims" in sentence) == (verdict == "exceeds")


def test_rows_put_gd_first_and_count_massless(tmp_path: Path) -> None:
    from sharpness.gradcam.figures import load_maps

    maps = {"mnist": load_maps(_fake_maps(tmp_path, 0.1))}
    rows = summary_rows(_params(), maps)
    assert [r["optimizer"] for r in rows[:3]] == ["sgd"] * 3
    assert rows[0]["massless_maps"] == 1 and rows[0]["n_maps"] == 11
    assert rows[0]["chance"] == pytest.approx(0.5)
    assert np.isnan(rows[0]["diff_vs_gd"])  # GD against itself: no entry
    assert [r["diff_vs_gd"] for r in rows[3:]] == pytest.approx([0.1] * 3, abs=0.02)


def test_stand_in_labelled_in_figure_caption_and_provenance(tmp_path: Path) -> None:
    from sharpness.gradcam.figures import load_maps

    a = _fake_maps(tmp_path / "a", 0.1)
    b = _fake_maps(tmp_path / "b", 0.0, channels=3, seed=1)
    params = _params()
    maps = {"mnist": load_maps(a), "svhn": load_maps(b)}
    import matplotlib.pyplot as plt

    fig = plt.figure(figsize=grid_size(params, maps, 1))
    plotted = draw_figure(fig, params, maps, summary_rows(params, maps), 1)
    labels = [ax.get_ylabel() for ax in fig.axes]
    plt.close(fig)
    assert any("SVHN stand-in" in lab for lab in labels)
    assert {p["panel"] for p in plotted} == {"map", "share"}
    out = make_outputs(params, {"mnist": a, "svhn": b}, tmp_path / "fig" / "gradcam.pdf",
                       tmp_path / "fig" / "gradcam_table.md")
    assert (tmp_path / "fig" / "gradcam.png").stat().st_size > 0
    fig_prov = json.loads((tmp_path / "fig" / "gradcam.provenance.json").read_text())
    assert STAND_IN in fig_prov["stand_ins"] and STAND_IN in fig_prov["caption"]
    table = (tmp_path / "fig" / "gradcam_table.md").read_text()
    assert STAND_IN in table and "exceeds" in out["sentence"]
    assert STAND_IN in out["figure"]["stand_ins"]


def test_run_config_merges_alpha_and_stand_in() -> None:
    cfg = run_config(_params(), "svhn", "sam", 0.5, 1)
    assert cfg["dataset"] == "mnist_on_cifar" and cfg["optimizer"] == "sam"
    assert cfg["model_kwargs"] == {"channels": 2, "depth": 2, "alpha": 0.5}
    assert cfg["opt_hparams"] == {"rho": 0.05} and cfg["seed"] == 1
    assert cfg["stand_ins"] == [STAND_IN]


@pytest.mark.slow
def test_tiny_study_on_the_stand_in_end_to_end(tmp_path: Path) -> None:
    """Train 2 optimizers x 3 init scales x 1 seed on 256 stand-in images, explain, tabulate."""
    params = _params()
    params["seeds"] = [0]
    params["datasets"] = {"svhn": params["datasets"]["svhn"]}
    params["claim"]["dataset"] = "svhn"
    runs = tmp_path / "runs"
    for opt in params["optimizers"]:
        summary = train_group(params, "svhn", opt, runs / opt, threads=1)
        assert len(summary["runs"]) == 3
    prov = json.loads((runs / "sam" / "alpha0.5_seed0" / "provenance.json").read_text())
    assert prov["stand_ins"] == [STAND_IN]
    result = compute_maps(params, "svhn", runs, tmp_path / "maps", threads=1)
    assert result["shares"].shape == (2, 3, 1, 10)
    finite = result["shares"][np.isfinite(result["shares"])]
    assert finite.size > 0 and np.all((finite >= 0) & (finite <= 1))
    maps_prov = json.loads((tmp_path / "maps" / "provenance.json").read_text())
    assert maps_prov["stand_ins"] == [STAND_IN]
    out = make_outputs(params, {"svhn": tmp_path / "maps"}, tmp_path / "gradcam.pdf",
                       tmp_path / "gradcam_table.md")
    assert len(out["rows"]) == 6
    # the chain reaches every training run, through the maps' record (the runs in its id)
    from sharpness.runs.audit import audit_report

    lines, problems = audit_report(tmp_path / "gradcam.pdf")
    text = "\n".join(lines)
    assert problems == [] and "no provenance record" not in text, problems
    assert f"run {prov['id']}: {runs / 'sam' / 'alpha0.5_seed0'}" in text
    assert all(e["sha256"] and e["id"] for e in maps_prov["inputs"])
    # each model's training record rides along for the claims ledger's sanity check
    import csv

    from sharpness.evidence.records import parse_train_records

    with (tmp_path / "gradcam_table.csv").open() as handle:
        table = list(csv.DictReader(handle))
    records = [parse_train_records(r["per_seed_train"]) for r in table]
    assert all(r is not None and set(r) == {0} and r[0].classes == 10 for r in records)
    # with the fingerprints of the run's draw, which the ledger proves seeds independent by
    assert all(r[0].proven for r in records)


def test_one_seed_caption_claims_no_interval(tmp_path: Path) -> None:
    """With one seed the captions say so and print no t-interval."""
    from sharpness.gradcam.figures import load_maps

    folder = _fake_maps(tmp_path / "a", 0.1)
    arr = load_maps(folder)
    one = {k: (v[:, :, :1] if k in ("shares", "maps", "test_acc") else v[:1] if k == "seeds"
               else v) for k, v in arr.items()}
    atomic_save_npz(tmp_path / "one" / "maps.npz", **one)
    write_run_provenance(tmp_path / "one", params={"one_seed": True}, outputs=["maps.npz"])
    params = {**_params(), "seeds": [0]}
    out = make_outputs(params, {"mnist": tmp_path / "one"}, tmp_path / "fig" / "gradcam.pdf",
                       tmp_path / "fig" / "gradcam_table.md")
    caption = (tmp_path / "fig" / "gradcam.caption.txt").read_text()
    assert "one seed" in caption and "t-interval" not in caption and "CI [" not in caption
    assert "one seed, so no interval" in out["sentence"]
    two = (tmp_path / "two")
    make_outputs(_params(), {"mnist": folder}, two / "gradcam.pdf", two / "gradcam_table.md")
    assert "t-interval over the 2 seeds" in (two / "gradcam.caption.txt").read_text()


def test_figure_job_does_not_import_torch(tmp_path: Path, imports_torch) -> None:
    """``sharpness gradcam figure`` reads numpy arrays only: no torch import."""
    folder = _fake_maps(tmp_path / "a", 0.1)
    assert not imports_torch(
        "from sharpness.cli import main\n"
        f"main(['gradcam', 'figure', '--params', {json.dumps(json.dumps(_params()))}, "
        f"'--maps', 'mnist={folder}', '--out', '{tmp_path}/f/gradcam.pdf', "
        f"'--table', '{tmp_path}/f/gradcam_table.md'])")
    assert (tmp_path / "f" / "gradcam.csv").exists()
