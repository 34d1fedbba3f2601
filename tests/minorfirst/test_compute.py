"""Catalog checks of the minorfirst figures, on the figures' own computations at reduced size."""

import numpy as np

from sharpness.minorfirst.compute import (
    compute_deep_l,
    compute_l2_limit,
    compute_l2_regimes,
    compute_multi_example,
)

MULTI = {"n": 20, "scales": [0.5, 1.0, 1.5, 2.0, 2.5], "noise": 0.5, "seed": 0}


def test_l2_regimes_three_regimes_and_scale_invariant_boundaries():
    p = {"mu": [1.0, 2.0, 3.0, 4.0, 5.0], "rhos": [0.5, 2.0], "ratio_min": 0.05, "ratio_max": 3.0,
         "n_alpha": 16, "s_max": 8.0, "h": 0.004, "n_time": 50, "refine": 8}
    _, s = compute_l2_regimes(p)
    assert len(s["regimes_found"]) == 2  # one entry per rho
    for regs in s["regimes_found"].values():
        assert set(regs) == {"collapse", "sequential", "major-first"}
    by = {}
    for b in s["boundaries"]:
        by.setdefault((b["from"], b["to"]), []).append(b["alpha_over_rho"])
    assert len(by) == 2
    for vals in by.values():  # computed independently per rho, equal in alpha/rho
        assert max(vals) / min(vals) < 1.05


def test_l2_limit_cosines():
    p = {"mu": [1.0, 2.0, 3.0, 4.0, 5.0], "multi": MULTI, "rho": 0.5, "alphas": [0.3, 1.0],
         "h": 0.01, "steps": 1500, "record_every": 1500}
    _, s = compute_l2_limit(p)
    assert s["min_final_cosine"] > 0.99


def test_multi_example_minor_first_under_l2_sam_only():
    p = {"multi": MULTI, "rho": 0.5, "alphas": [0.25], "h": 0.005, "steps": 2000, "record_every": 10}
    _, s = compute_multi_example(p)
    runs = {r["method"]: r for r in s["runs"]}
    assert runs["l2"]["regime"] == "sequential" and runs["l2"]["sequence"][0] < 4
    assert runs["l2"]["monotone"]
    assert runs["gd"]["sequence"] == [4]


def test_deep_l_blowup_order_matches_jstar():
    p = {"mu": [1.0, 2.0, 3.0, 4.0, 5.0], "rho": 1.0, "depths": [3], "alphas": [0.5], "s_max": 3.0,
         "blowup_mu": [1.0, 2.0, 3.0], "blowup_rho": 0.5, "blowup_depths": [3, 4],
         "blowup_alphas": [[0.9, 0.8, 0.6], [1.5, 0.8, 0.3]], "blowup": 1000.0}
    _, s = compute_deep_l(p)
    assert len(s["blowup"]) == 2 * 2  # two inits x two depths
    for r in s["blowup"]:
        assert r["first_blowup_full_flow"] == r["jstar"]
        assert r["order_flow"] == r["order_closed"]
        fin = np.isfinite(r["s_closed"])
        np.testing.assert_allclose(np.array(r["s_flow"])[fin], np.array(r["s_closed"])[fin], rtol=2e-3)
