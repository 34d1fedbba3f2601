"""``cnn_synthetic``: the patch CNN, its data, the first-aligned rule, and the catalog check.

The catalog check (l2-SAM at the middle init aligns with the weak feature first, GD with the
strong one) is run on the quick profile's own setting, restricted to the middle init and to
GD and l2-SAM so that it stays fast; the full three-init figure run is a slow test.
"""

from __future__ import annotations

import argparse
import csv
import json
from pathlib import Path

import numpy as np
import pytest
import torch
import yaml

from sharpness.minorfirst.cnn import (
    PatchCNN,
    compute_cnn_synthetic,
    first_aligned,
    make_patch_data,
    train_patch_cnn,
)

QUICK = Path(__file__).resolve().parents[2] / "workflow" / "config" / "quick.yaml"


def _quick() -> dict:
    return yaml.safe_load(QUICK.read_text())["minorfirst"]["cnn_synthetic"]


def test_data_one_feature_patch_per_example_and_noise_orthogonal():
    data = make_patch_data(n=40, d=12, patches=3, mu_strong=2.0, mu_weak=0.5, p_strong=0.5, noise=0.4, seed=3)
    feat = data.x[:, :, :4]  # feature coordinates
    assert torch.count_nonzero(feat.abs().sum(-1), dim=1).eq(1).all()  # exactly one feature patch
    amp = feat.abs().amax(dim=(1, 2))
    assert torch.allclose(amp, torch.where(data.strong, 2.0, 0.5))
    for i in range(40):  # the feature is the example's class's own direction
        c = 0 if data.y[i] > 0 else 1
        k = 0 if data.strong[i] else 1
        assert feat[i].abs().sum(0).argmax().item() == 2 * c + k
    assert data.strong.any() and (~data.strong).any()
    assert torch.allclose(data.features.reshape(4, -1) @ data.features.reshape(4, -1).T, torch.eye(4))


def test_shared_features_carry_the_label_sign():
    data = make_patch_data(n=30, d=8, patches=2, mu_strong=2.0, mu_weak=0.5, p_strong=0.5, noise=0.2,
                           seed=1, shared_features=True)
    feat = data.x[:, :, :4].sum(1)  # the feature patch's first four coordinates
    assert torch.all(feat[:, 2:] == 0)
    expected = torch.stack([torch.where(data.strong, 2.0, 0.0), torch.where(data.strong, 0.0, 0.5)], -1)
    torch.testing.assert_close(feat[:, :2], data.y[:, None] * expected)
    torch.testing.assert_close(data.features[1], -data.features[0])  # class -1 filters learn -v


def test_conv_forward_matches_the_patch_sum_definition():
    torch.manual_seed(0)
    model = PatchCNN(d=10, width=3, power=2, alpha=1.0, seed=1)
    x = torch.randn(7, 5, 10)
    direct = (torch.relu(torch.einsum("npd,jd->npj", x, model.weight)) ** 2).sum(1) @ model.second
    torch.testing.assert_close(model(x), direct)
    assert model.second[:3].eq(1 / 3).all() and model.second[3:].eq(-1 / 3).all()


def test_alignment_is_best_own_class_filter_averaged_over_classes():
    model = PatchCNN(d=6, width=2, power=2, alpha=1.0, seed=0)
    with torch.no_grad():
        model.weight.zero_()
        model.weight[0, 0], model.weight[1, 0] = 0.3, 0.7   # class +1 filters on its strong feature
        model.weight[1, 1] = 0.2                             # class +1 weak
        model.weight[2, 2], model.weight[3, 3] = 0.5, 0.6   # class -1 strong, weak
        model.weight[0, 2] = 9.0  # a class +1 filter on the class -1 feature does not count
    features = make_patch_data(4, 6, 1, 1.0, 1.0, 0.5, 0.0).features
    torch.testing.assert_close(model.alignment(features), torch.tensor([(0.7 + 0.5) / 2, (0.2 + 0.6) / 2]))


@pytest.mark.parametrize(
    ("strong", "weak", "first"),
    [([0, 0.1, 0.5, 1], [0, 0.3, 0.3, 0.3], "weak"), ([0, 0.3, 1, 1], [0, 0, 0.1, 0.5], "strong"),
     ([0, 0.3, 1, 1], [0, 0.3, 0.1, 0.5], "tie"), ([0, 0.1, 0.1, 0.1], [0, 0, 0, 0.1], "neither")],
)
def test_first_aligned_rule(strong, weak, first):
    steps = np.array([0, 10, 20, 30])
    out = first_aligned(steps, np.stack([strong, weak], -1).astype(float) + 0.05, gain=0.25)
    assert out["first"] == first


def test_catalog_check_at_the_quick_middle_init():
    """l2-SAM at the configured middle init aligns with the weak feature first, GD with the strong."""
    p = _quick()
    mid = p["alphas"][len(p["alphas"]) // 2]
    p = {**p, "alphas": [mid], "optimizers": {k: p["optimizers"][k] for k in ("sgd", "sam")}}
    arrays, s = compute_cnn_synthetic(p)
    assert s["middle_alpha"] == mid
    assert s["middle_first"] == {"sgd": "strong", "sam": "weak"}
    assert s["catalog_check_holds"]
    # the ordering is read off the recorded trajectories: at the step the first feature reached
    # the gain, the other had not
    for opt, first, other in (("sgd", 0, 1), ("sam", 1, 0)):
        steps, align = arrays[f"{opt}_steps"], arrays[f"{opt}_align"][0]
        gained = align - align[0]
        t = int(np.argmax(gained[:, first] >= p["gain"]))
        assert gained[t, first] >= p["gain"] > gained[t, other]
        assert steps[t] == next(r for r in s["runs"] if r["optimizer"] == opt)[
            "step_" + ("strong" if first == 0 else "weak")]
    for r in s["runs"]:  # both runs fit the training data
        assert r["status"] == "ok" and r["final_loss"] < 0.1


def test_sam_from_a_tiny_init_does_not_learn_while_gd_does():
    """Regime 1 of the diagonal theory in the CNN: l2-SAM's normalised perturbation stalls every filter."""
    data = make_patch_data(32, 16, 3, 2.0, 1.0, 0.5, 0.3, seed=1)
    kw = {"alpha": 0.05, "width": 2, "power": 2, "lr": 0.5, "steps": 60, "record_every": 60}
    gd = train_patch_cnn(data, "sgd", {}, **kw)
    sam = train_patch_cnn(data, "sam", {"rho": 0.3}, **kw)
    assert gd.loss[-1] < 0.6 < sam.loss[-1]
    assert np.all(sam.align[-1] < sam.align[0] + 0.01)


@pytest.mark.e2e  # runs the CLI and draws the figure
def test_cli_run_and_plot_write_the_figure(tmp_path):
    from sharpness.commands.minorfirst import _plot, _run

    p = {**_quick(), "alphas": [0.5], "steps": 10, "record_every": 5,
         "optimizers": {"sgd": {}, "sam": {"rho": 0.3}}}
    run = tmp_path / "run"
    assert _run(argparse.Namespace(figure="cnn_synthetic", config_file=None, params=json.dumps(p), out=str(run), threads=1)) == 0
    assert (run / "data.npz").exists() and json.loads((run / "summary.json").read_text())["runs"]
    out = tmp_path / "fig" / "cnn_synthetic.pdf"
    assert _plot(argparse.Namespace(figure="cnn_synthetic", run=str(run), out=str(out))) == 0
    for ext in (".pdf", ".png", ".csv"):
        assert out.with_suffix(ext).exists()
    rows = list(csv.DictReader(out.with_suffix(".csv").open()))
    assert len(rows) == 2 * 1 * 3 * 3  # optimizers x inits x (strong, weak, loss) x recorded steps
    assert {r["quantity"] for r in rows} == {"align_strong", "align_weak", "loss"}


@pytest.mark.slow
def test_quick_figure_three_inits_three_behaviours():
    """The whole quick setting: l2-SAM stalls (small), weak first (middle), strong first (large)."""
    p = _quick()
    _, s = compute_cnn_synthetic(p)
    by = {(r["optimizer"], r["alpha"]): r["first"] for r in s["runs"]}
    a = p["alphas"]
    assert [by[("sam", x)] for x in a] == ["neither", "weak", "strong"]
    assert all(by[("sgd", x)] == "strong" for x in a)


@pytest.mark.e2e  # trains, draws and reads the ledger
def test_more_seeds_are_trained_at_the_middle_init_and_read_by_the_ledger(tmp_path):
    """``seeds``: each further data/init draw trains every optimizer at the middle init; its
    alignments go into the CSV with their seed (not drawn), so the claims ledger counts one
    independent run per seed."""
    import pandas as pd

    from sharpness.claims.ledger import all_claims, evaluate_claim
    from sharpness.claims.model import ItemData
    from sharpness.commands.minorfirst import _plot, _run

    p = {**_quick(), "alphas": [0.2, 0.5, 1.5], "steps": 10, "record_every": 5, "seeds": [0, 3],
         "optimizers": {"sgd": {}, "sam": {"rho": 0.3}}}
    run = tmp_path / "run"
    assert _run(argparse.Namespace(figure="cnn_synthetic", config_file=None, params=json.dumps(p), out=str(run),
                                   threads=1)) == 0
    summary = json.loads((run / "summary.json").read_text())
    assert summary["seeds"] == [0, 3] and {r["seed"] for r in summary["replicates"]} == {3}
    out = tmp_path / "fig" / "cnn_synthetic.pdf"
    assert _plot(argparse.Namespace(figure="cnn_synthetic", run=str(run), out=str(out))) == 0
    df = pd.read_csv(out.with_suffix(".csv"))
    assert set(df["seed"]) == {0, 3} and set(df[df["seed"] == 3]["alpha"]) == {0.5}
    # every row names its run's record (run id, draw fingerprints): one run per seed,
    # optimizer and init scale, and the two seeds' draws differ in initial weights and data
    runs = df.groupby(["seed", "optimizer", "alpha"])[["run_id", "init_sha256",
                                                      "order_sha256"]].nunique()
    assert (runs == 1).all().all()
    mid = df[(df["alpha"] == 0.5) & (df["optimizer"] == "sam")]
    for col in ("run_id", "init_sha256", "order_sha256"):
        assert mid.groupby("seed")[col].first().nunique() == 2, col
    claim = next(c for c in all_claims() if c.id == "mf-cnn")
    item = ItemData("minorfirst/cnn_synthetic", df, {"gain": p["gain"]})
    row = evaluate_claim(claim, {"minorfirst/cnn_synthetic": item}, "paper")
    assert row["n"] == 2 and "seed 3:" in row["value"]
