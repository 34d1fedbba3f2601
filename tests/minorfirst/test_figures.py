"""Every minorfirst figure renders from a small computed fixture and writes the CSV whose
numbers its caption quotes: each test re-derives the caption's numbers from the CSV alone.

The fixtures are the figures' own computations (:mod:`sharpness.minorfirst.compute`,
:mod:`sharpness.minorfirst.cnn`) at a few seconds' size, so a figure is tested on the arrays
and summaries its pipeline job would give it.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pandas as pd
import pytest

from sharpness.minorfirst import compute
from sharpness.minorfirst.plots import PLOTS

#: draws every figure of its paper from its computation once (a module fixture): second tier
pytestmark = pytest.mark.e2e

MULTI = {"n": 10, "scales": [0.5, 1.0, 2.0], "noise": 0.5, "seed": 4}
MULTI5 = {"n": 12, "scales": [0.5, 1.0, 1.5, 2.0, 2.5], "noise": 0.5, "seed": 0}
PARAMS: dict[str, dict[str, Any]] = {
    "l1_maxmargin": {"mu": [1.0, 2.0], "multi": MULTI, "alphas": [0.1, 1.0], "rhos": [0.1, 0.5],
                     "h": 0.1, "steps": 400, "record_every": 40},
    "linf_depth": {"mu": [1.0, 2.0], "rho": 0.5, "depths": [2, 3],
                   "alphas": [[0.3, 0.8], [0.9, 0.6]], "s_max": 1.0, "blowup_fraction": 0.8,
                   "h_traj": 0.002, "markers": 10, "grid_min": 0.05, "grid_max": 1.0,
                   "grid_n": 4, "h_phase": 0.02, "s_phase": 12.0},
    "l2_sequential": {"rho": 1.0, "h": 0.01, "markers": 10,
                      "cases": [{"mu": [1.0, 2.0], "alpha": 0.7, "s_max": 3.0},
                                {"mu": [1.0, 2.0, 3.0, 4.0, 5.0], "alpha": 0.45,
                                 "s_max": 6.0}]},
    "l2_regimes": {"mu": [1.0, 2.0, 3.0, 4.0, 5.0], "rhos": [0.5, 2.0], "ratio_min": 0.05,
                   "ratio_max": 3.0, "n_alpha": 10, "s_max": 8.0, "h": 0.01, "n_time": 20,
                   "refine": 4},
    "l2_limit": {"mu": [1.0, 2.0, 3.0], "multi": MULTI, "rho": 0.5, "alphas": [0.3, 1.0],
                 "h": 0.02, "steps": 500, "record_every": 50},
    "deep_l": {"mu": [1.0, 2.0, 3.0], "rho": 1.0, "depths": [3], "alphas": [0.5],
               "s_max": 3.0, "blowup_mu": [1.0, 2.0, 3.0], "blowup_rho": 0.5,
               "blowup_depths": [3], "blowup_alphas": [[0.9, 0.8, 0.6], [1.5, 0.8, 0.3]],
               "blowup": 1000.0},
    "multi_example": {"multi": MULTI5, "rho": 0.5, "alphas": [0.1, 1.0], "h": 0.01,
                      "steps": 300, "record_every": 10},
    "flow_vs_discrete": {"mu": [1.0, 2.0], "rho": 0.1, "alpha_l1": 0.3, "alpha_l2": 0.5,
                         "T": 1.0, "etas": [0.04, 0.02, 0.01], "n_check": 10},
    "cnn_synthetic": {"n": 16, "d": 8, "patches": 2, "width": 2, "power": 2,
                      "mu_strong": 2.0, "mu_weak": 1.0, "p_strong": 0.5, "noise": 0.3,
                      "alphas": [0.1, 0.5, 1.5], "lr": 0.5, "steps": 30, "record_every": 5,
                      "gain": 0.05, "seed": 0,
                      "optimizers": {"sgd": {}, "sam": {"rho": 0.3}}},
}


def _compute(fig: str) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    if fig == "cnn_synthetic":
        from sharpness.minorfirst.cnn import compute_cnn_synthetic

        return compute_cnn_synthetic(PARAMS[fig])
    return compute.COMPUTE[fig](PARAMS[fig])


@pytest.fixture(scope="module")
def drawn(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[pd.DataFrame, str]]:
    """Every figure drawn once: ``{id: (CSV as a frame, caption)}``."""
    out_dir = tmp_path_factory.mktemp("figures") / "minorfirst"
    out: dict[str, tuple[pd.DataFrame, str]] = {}
    for fig, plot in PLOTS.items():
        arrays, summary = _compute(fig)
        plot(arrays, summary, PARAMS[fig], str(out_dir / f"{fig}.pdf"), inputs=[])
        for suffix in (".pdf", ".png", ".csv", ".caption.txt", ".provenance.json"):
            assert (out_dir / f"{fig}{suffix}").stat().st_size > 0, f"{fig}{suffix}"
        out[fig] = (pd.read_csv(out_dir / f"{fig}.csv"),
                    (out_dir / f"{fig}.caption.txt").read_text())
    return out


def test_the_table_names_every_catalog_figure():
    assert set(PLOTS) == {*compute.COMPUTE, "cnn_synthetic"}


def _quoted(caption: str, pattern: str) -> str:
    found = re.search(pattern, caption)
    assert found, f"caption lacks {pattern!r}: {caption[:300]}"
    return found.group(1)


def _min_final_cosine(df: pd.DataFrame, keys: list[str]) -> float:
    last = df.groupby(keys, dropna=False, sort=False)["one_minus_cos"].last()
    return float((1 - last).min())


def test_l1_maxmargin_csv_gives_the_quoted_smallest_final_cosine(drawn):
    df, cap = drawn["l1_maxmargin"]
    assert set(df["method"]) == {"gd", "l2", "linf"} and set(df["data"]) == {"single", "multi"}
    quoted = _quoted(cap, r"Smallest final cosine over all curves: ([0-9.]+)")
    assert f"{_min_final_cosine(df, ['data', 'method', 'alpha', 'rho']):.6f}" == quoted


def test_l2_limit_csv_gives_the_quoted_smallest_final_cosine(drawn):
    df, cap = drawn["l2_limit"]
    assert set(df["method"]) == {"gd", "l2"}
    quoted = _quoted(cap, r"Smallest final cosine: ([0-9.]+)")
    assert f"{_min_final_cosine(df, ['data', 'method', 'alpha']):.5f}" == quoted


def test_linf_depth_csv_gives_the_quoted_error_and_agreement(drawn):
    df, cap = drawn["linf_depth"]
    quoted = _quoted(cap, r"closed form vs discrete: ([0-9.e+-]+) \(check")
    assert f"{df['rel_err_discrete'].max():.2e}" == quoted
    phase = df[df["source"] == "phase"]
    assert len(phase) == 2 * 4 * 4  # two depths, a 4 x 4 grid
    for L, part in phase.groupby("L"):
        agree = int((part["simulated"] == part["rule"]).sum())
        assert f"L={L}: {agree}/{len(part)} agree" in cap


def test_linf_depth_csv_has_gds_limit_at_every_depth_and_grid_point(drawn):
    """GD from every phase-grid init, read from its own run: e2 at L = 2 (w_j = alpha_j e^{mu_j s}
    grows fastest along the major coordinate); at L = 3 the balanced GD flow w_j' = mu_j w_j^2
    blows up first along argmax_j mu_j alpha_j (the j* rule at rho = 0), so large alpha_1 with
    small alpha_2 ends at the minor e1."""
    df, cap = drawn["linf_depth"]
    mu = np.array(PARAMS["linf_depth"]["mu"])
    phase, gd = (df[df["source"] == src] for src in ("phase", "gd_phase"))
    key = ["L", "alpha_1", "alpha_2"]
    assert len(gd) == len(phase) == 2 * 4 * 4
    assert sorted(map(tuple, gd[key].to_numpy())) == sorted(map(tuple, phase[key].to_numpy()))
    for row in gd.itertuples():
        want = "e2" if row.L == 2 else f"e{int(np.argmax(mu * [row.alpha_1, row.alpha_2])) + 1}"
        assert row.simulated == want, row
    assert set(gd[gd["L"] == 2]["simulated"]) == {"e2"}
    assert set(gd[gd["L"] == 3]["simulated"]) == {"e1", "e2"}  # this grid has both sides
    for L, part in gd.groupby("L"):
        counts = part["simulated"].value_counts().sort_index()
        text = (f"{counts.index[0]} at {counts.iloc[0]}/{len(part)}" if len(counts) == 1 else
                ", ".join(f"{k} at {n}" for k, n in counts.items()) + f" of {len(part)}")
        assert f"L={L}: {text}" in cap


def test_linf_init_sensitive_decides_on_the_computed_rows(drawn):
    """With the figure's GD rows the claim's GD half is tested: no longer inconclusive."""
    from sharpness.claims.ledger import all_claims, evaluate_claim
    from sharpness.claims.model import ItemData
    from sharpness.evidence.stats import INCONCLUSIVE

    df, _ = drawn["linf_depth"]
    claim = next(c for c in all_claims() if c.id == "mf-linf-init")
    data = {"minorfirst/linf_depth": ItemData("minorfirst/linf_depth", df, PARAMS["linf_depth"])}
    row = evaluate_claim(claim, data, "paper")
    assert row["verdict"] != INCONCLUSIVE, row
    assert "GD: not recorded" not in row["value"]
    # GD is read where the papers state its limit: at L = 2 and from the uniform init α·1
    gd = df[df["source"] == "gd_phase"]
    gd = gd[(gd["L"] == 2) | np.isclose(gd["alpha_1"], gd["alpha_2"])]
    stated = row["value"].split("GD (L = 2 and the uniform init α·1): ")[1]
    for L, part in gd.groupby("L"):
        assert f"L={L}: {', '.join(sorted(set(part['simulated'])))}" in stated
    # the same rows without GD's: the predicate cannot decide (the claim's note says why)
    bare = {"minorfirst/linf_depth": ItemData("minorfirst/linf_depth",
                                              df[df["source"] != "gd_phase"], {})}
    assert evaluate_claim(claim, bare, "paper")["verdict"] == INCONCLUSIVE


def _sequence(part: pd.DataFrame) -> list[int]:
    """Dominant coordinates (1-based) in order, ties dropped, from tidy share rows."""
    wide = part.pivot_table(index="s", columns="coord", values="share", sort=True)
    top2 = np.sort(wide.to_numpy(), axis=1)[:, -2:]
    dom = np.where(top2[:, 1] - top2[:, 0] > 1e-6, wide.to_numpy().argmax(1) + 1, -1)
    seq: list[int] = []
    for j in dom.tolist():
        if j > 0 and (not seq or seq[-1] != j):
            seq.append(j)
    return seq


def test_l2_sequential_csv_gives_the_quoted_dominant_sequences(drawn):
    df, cap = drawn["l2_sequential"]
    assert np.allclose(df.groupby(["case", "method", "s"])["share"].sum(), 1.0)
    for (case, method), part in df.groupby(["case", "method"]):
        assert f"case {case} {method}: {_sequence(part)}" in cap
    # the catalog check, read from the CSV: l2-SAM visits >= 3 coordinates upwards for d = 5
    seq = _sequence(df[(df["case"] == 1) & (df["method"] == "l2")])
    assert len(seq) >= 3 and seq == sorted(seq)


def test_l2_regimes_csv_brackets_every_quoted_boundary(drawn):
    df, cap = drawn["l2_regimes"]
    regimes = df[df["panel"] == "regime"]
    quoted = re.findall(r"rho=(\d+(?:\.\d+)?): ([a-z-]+)->([a-z-]+) at alpha/rho=(\d+\.\d+)", cap)
    assert quoted
    for rho, before, after, at in quoted:
        part = regimes[np.isclose(regimes["rho"], float(rho))].sort_values("alpha_over_rho")
        below = part[part["alpha_over_rho"] < float(at)]["regime"].iloc[-1]
        above = part[part["alpha_over_rho"] > float(at)]["regime"].iloc[0]
        assert (below, above) == (before, after)
    heat = df[df["panel"] == "heatmap"]
    assert heat["dominant"].between(0, 5).all()


def test_deep_l_csv_gives_the_quoted_jstar_verdict(drawn):
    df, cap = drawn["deep_l"]
    blow = df[df["panel"] == "blowup"]
    ok = True
    for _, part in blow.groupby(["L", "alpha"]):
        flow = part["s_flow"].astype(float).to_numpy()
        closed = part["s_closed"].astype(float).to_numpy()
        fin = np.isfinite(closed)
        ok &= int(part["coord"].to_numpy()[np.nanargmin(flow)]) == int(part["jstar"].iloc[0])
        ok &= list(np.argsort(flow[fin])) == list(np.argsort(closed[fin]))
    assert f"in every case: {ok}." in cap
    shares = df[df["panel"] == "L3"]
    assert np.allclose(shares.groupby("s")["share"].sum(), 1.0)


def test_multi_example_csv_holds_every_run_quoted(drawn):
    df, cap = drawn["multi_example"]
    p = PARAMS["multi_example"]
    assert {(m, a) for m, a in zip(df["method"], df["alpha"], strict=True)} == \
        {(m, a) for m in ("gd", "l2", "linf") for a in p["alphas"]}
    assert np.allclose(df.groupby(["method", "alpha", "s"])["share"].sum(), 1.0)
    assert f"init scales {p['alphas']}" in cap


def test_flow_vs_discrete_csv_gives_the_quoted_slopes(drawn):
    df, cap = drawn["flow_vs_discrete"]
    for (L, method), part in df.groupby(["L", "method"]):
        slope = np.polyfit(np.log(part["eta"]), np.log(part["error"]), 1)[0]
        assert f"L={L} {method}: {slope:.3f}" in cap
        assert 0.85 < slope < 1.15  # first order (catalog: slope about 1)


def test_cnn_synthetic_csv_gives_the_quoted_first_feature_and_loss(drawn):
    df, cap = drawn["cnn_synthetic"]
    gain = PARAMS["cnn_synthetic"]["gain"]
    for (opt, alpha), part in df.groupby(["optimizer", "alpha"]):
        when = {}
        for feat in ("strong", "weak"):
            a = part[part["quantity"] == f"align_{feat}"]
            hit = a[a["value"] - a["value"].iloc[0] >= gain]
            when[feat] = int(hit["step"].iloc[0]) if len(hit) else None
        s, w = when["strong"], when["weak"]
        first = ("neither" if s is None and w is None else
                 "strong" if w is None or (s is not None and s < w) else
                 "weak" if s is None or w < s else "tie")
        loss = part[part["quantity"] == "loss"]["value"].iloc[-1]
        assert f"{opt} alpha={alpha:g}: {first}, final loss {loss:.3g}" in cap


def test_figure_commands_do_not_import_torch(tmp_path, imports_torch):
    """A theory figure job (``sharpness minorfirst plot``) must not pay torch's import."""
    assert not imports_torch(
        "from sharpness.minorfirst.compute import compute_flow_vs_discrete\n"
        "from sharpness.minorfirst.plots import PLOTS\n"
        f"p = {PARAMS['flow_vs_discrete']!r}\n"
        "a, s = compute_flow_vs_discrete(p)\n"
        f"PLOTS['flow_vs_discrete'](a, s, p, {str(tmp_path / 'f.pdf')!r}, inputs=[])")
    assert (tmp_path / "f.csv").exists()
