"""Cases on which a naive reading of a claim's data gives a wrong verdict.

Each test builds the case as a small CSV-shaped fixture, says in its docstring what a naive
reading makes of it and why that is wrong, and asserts the verdict the predicate gives.
"""

from __future__ import annotations

import pytest

from sharpness.claims.ledger import counts, evaluate_claim
from sharpness.claims.rules import rules_for
from sharpness.evidence.stats import CONTRADICTED, INCONCLUSIVE, SUPPORTED
from tests.catalog import CLAIMS as ALL_CLAIMS
from tests.claims import fixtures as fx

CLAIMS = {c.id: c for c in ALL_CLAIMS}


def run(cid: str, data: dict, profile: str = "paper", **rules: object) -> dict:
    return evaluate_claim(CLAIMS[cid], data, profile,
                          rules_for(profile, **rules) if rules else None)


def test_two_seed_gradcam_verdict_is_not_decided() -> None:
    """mf-gradcam-mnist-linf: two per-seed means agreeing to 4e-5 (−0.00745, −0.00741) give a
    tiny df=1 interval, which a naive reading calls `contradicted`. Two seeds are fewer than
    three, so `inconclusive`, with the number of seeds a power estimate says would settle it."""
    data = fx.gradcam(-1, n=2, sam_means=[0.40 - 0.00745, 0.40 - 0.00741])
    row = run("mf-gradcam-mnist-linf", data)
    assert row["verdict"] == INCONCLUSIVE
    assert "2 paired seed(s) < the 3" in row["note"] and "paired seeds would settle" in row["note"]


def test_collapsed_sam_seed_is_excluded_from_both_arms() -> None:
    """mf-gradcam-svhn: one of the SAM models sat at chance (a near-uniform map reads as
    "background"), so all seeds together read `supported`. That seed fails the sanity check, is
    dropped from both arms and named; what is left is below the seed minimum."""
    data = fx.gradcam(1, n=3, bad_train=(2,))
    row = run("mf-gradcam-svhn", data)
    assert row["verdict"] == INCONCLUSIVE
    assert "seed 2 (l2-SAM train loss 2.303 ≥ 0.9·ln 10" in row["note"]


def test_collapsed_domain_seed_at_ln10_does_not_enter_as_a_zero() -> None:
    """ls-domain: seed 3 of SAM and LE-SAM at 12.6 % with train loss ln 10 entered the paired
    test as a genuine 0.00 difference would widen the interval (`inconclusive`). The seed is
    excluded from both arms and named; the three trained seeds decide."""
    import math

    bad = f"{math.log(10):.4f}/0.1000/10"
    rows = [{"label": "lesam", "per_seed": "0:30 1:31 2:30.5 3:12.6",
             "per_seed_train": fx.trained(3) + f" 3:{bad}{fx.proof(3)}"},
            {"label": "sam", "per_seed": "0:26 1:27.2 2:26.8 3:12.6",
             "per_seed_train": fx.trained(3) + f" 3:{bad}{fx.proof(3)}"}]
    row = run("ls-domain", {"lesam/table_domain_gen": fx.item("lesam/table_domain_gen", rows)},
              max_excluded=0.3)
    assert row["verdict"] == SUPPORTED, row["value"]
    assert "seed 3 (lesam train loss 2.303" in row["note"]
    assert "sam train loss 2.303" in row["note"]  # both arms' failures named
    assert "lesam: train loss 0.500, train acc 85.0 %" in row["value"]  # training level


def test_too_many_exclusions_make_the_row_inconclusive() -> None:
    """Two of four seeds collapsed: what is left is a selection, not a sample."""
    rows = [{"label": "lesam", "per_seed": "0:30 1:31 2:30.5 3:30.1 4:31",
             "per_seed_train": fx.trained(5, bad=(3, 4))},
            {"label": "sam", "per_seed": "0:26 1:27 2:26.8 3:26 4:27",
             "per_seed_train": fx.trained(5)}]
    row = run("ls-domain", {"lesam/table_domain_gen": fx.item("lesam/table_domain_gen", rows)})
    assert row["verdict"] == INCONCLUSIVE and "2/5 seeds excluded" in row["note"]


def test_evidence_profile_needs_four_seeds() -> None:
    """The evidence profile's minimum is 4 paired seeds of the 5 it runs (rules.yaml), so one
    seed the sanity check drops does not undo a row; 3 decide in `paper`."""
    data = fx.table("table_transfer", False)
    assert run("ls-transfer", data, "paper")["verdict"] == SUPPORTED
    row = run("ls-transfer", data, "evidence")
    assert row["verdict"] == INCONCLUSIVE and "< the 4 this profile requires" in row["note"]
    assert rules_for("evidence").min_seeds == 4 and rules_for("quick").smoke
    assert run("ls-transfer", data, "paper", min_seeds=4)["verdict"] == INCONCLUSIVE


def test_eos_band_by_loss_and_trajectory() -> None:
    """eos-band: MSE settings with one largest-η miss and cross-entropy settings whose sharpness
    falls late. The maximum over runs at one final snapshot puts them all "outside"
    (`contradicted`); the predicate reads medians at the final point and along the
    trajectories, MSE deciding and cross-entropy reported apart."""
    rows = fx.sweep_rows(False)
    for r in rows:
        if r["setting"] == "A" and r["eta"] == 0.3:
            r["eta_s_over_2"] = 0.8  # one largest-η MSE miss
        if r["setting"] not in "ABC" and r["eta"] > 0.1:
            r["eta_s_over_2"] = 0.6  # cross-entropy: sharpness falls late
        r["loss"] = "mse" if r["setting"] in "ABC" else "ce"
    data = {"eos/fig_phase": fx.item("eos/fig_phase", rows), **fx.traj_rows(False)}
    row = run("eos-band", data)
    assert "MSE: final |ηS/2 − 1|, median per setting" in row["value"]
    assert "CE: final |ηS/2 − 1|, median per setting" in row["value"]
    # the paper's cross-entropy caveat is about the U-shape: cross-entropy decides here too
    assert row["verdict"] != SUPPORTED and "CE inconclusive" in row["note"], row["note"]
    for r in rows:
        if r["setting"] not in "ABC" and r["eta"] > 0.1:
            r["eta_s_over_2"] = 0.98
    data["eos/fig_phase"] = fx.item("eos/fig_phase", rows)
    held = run("eos-band", data)
    assert held["verdict"] == SUPPORTED and 0 <= float(held["p_raw"]) < 0.05, held["value"]


def test_eos_measures_against_the_runs_below_eta_c() -> None:
    """eos-measures: every measure falls from the first to the last η above η_c, but stays 1.5-3×
    above its value below η_c. First against last η above η_c reads `supported`; the predicate
    compares above with below η_c (every measure and the ℓ1, ℓ2 and nuclear norms):
    `contradicted`."""
    row = run("eos-measures", fx.measures(True))
    assert row["verdict"] == CONTRADICTED
    assert "l1 higher" in row["value"] and "nuclear higher" in row["value"]
    assert "hessian_trace:" in row["note"]


def test_eos_ablations_count_a_run_once_and_name_dropped_values() -> None:
    """eos-ablations: width=64 and SP are the same runs (SP's rows name width=64's run
    records); depth=3's run below η_c hit max_steps. Counted naively, SP is a second success
    and depth=3 drops silently ("11/11"). The paper's factors and this project's extensions
    are separate rows; SP is named as a repeat of width=64 and depth=3 as dropped with its
    cause."""
    rows = (fx.ablation_rows("width", 16, 0.1) + fx.ablation_rows("width", 64, 0.1, l2_shift=1)
            + fx.ablation_rows("depth", 3, 0.1, below_reason="max_steps", l2_shift=2)
            + fx.ablation_rows("parametrization", "SP", 0.1, l2_shift=1, runs="width=64"))
    data = {"eos/fig_ablations": fx.item("eos/fig_ablations", rows)}
    paper, ext = run("eos-ablations", data), run("eos-ablations-ext", data)
    assert "2/2 distinct" in paper["value"], paper["value"]
    assert "depth=3 (no converged run below η_c: ok/max_steps)" in paper["note"]
    assert "parametrization=SP (same runs as width=64)" in ext["note"]
    assert ext["verdict"] == INCONCLUSIVE and ext["kind"] == "extension"


def test_norm_grows_needs_an_effect() -> None:
    """eos-norm-grows: a +0.004 % change, which a sign test counts as growth (`supported` in
    3/3). The change is reported per setting and +0.004 % is not growth."""
    rows = fx.sweep_rows(False)
    for r in rows:
        if r["setting"] == "C" and r["eta"] > 0.1:
            r["l2"] = 5.0 * (1 + 4e-5 * r["eta"] / 0.3)
    row = run("eos-norm-grows", {"eos/fig_phase": fx.item("eos/fig_phase", rows)})
    assert row["verdict"] != SUPPORTED and "C l2 +0.00 %" in row["value"]


def test_traj_monotone_at_the_figures_own_tolerance() -> None:
    """eos-traj-monotone: a 0.37 % dip after entering EoS. A tolerance of 1 % chosen after
    seeing the dip makes it `supported`; at the figure's own registered 0.1 % every run with
    the dip counts against the claim, and a 0.05 % dip does not."""
    row = run("eos-traj-monotone", fx.trajectories(False, drop=0.0037))
    assert row["verdict"] == CONTRADICTED and "largest drop 0.37 %" in row["value"]
    assert run("eos-traj-monotone", fx.trajectories(False, drop=0.0005))["verdict"] == SUPPORTED


def test_ablation_refuses_a_variant_equal_to_the_default() -> None:
    """ls-ablation: `no_rho_max` (ρ_max 999 never clips) is a bit-identical rerun of the
    default: compared as a variant it is a difference of 0. It is refused and named; the
    paper profile's labels are read too."""
    data = fx.ablation(False, labels=("no_rho_max", "rho_max_0.3", "no_decay", "no_warmup"),
                       same_as_default=("no_rho_max",))
    row = run("ls-ablation", data)
    assert "refused, records equal the default's (not a distinct run): no_rho_max" in row["note"]
    assert "default − no_decay" in row["value"] and row["kind"] == "extension"


def test_dynamics_over_the_whole_run() -> None:
    """ls-dynamics: in epoch 1 LE-SAM's σ is 0, so it is SGD, below SAM there. Epoch 1 alone
    reads `contradicted`; the whole run reads `supported`."""
    row = run("ls-dynamics", fx.dynamics(False, first_epoch_sgd=True))
    assert row["verdict"] == SUPPORTED and "epochs 1–2" in row["value"]


def test_sigma_zero_probes_are_not_a_perfect_fit() -> None:
    """ls-signal-curvature: probes with σ = 0 have every term 0, a perfect 0 if counted: with
    most probes at σ = 0 the median ratio is 0, `supported`. They are left out and the
    perturbing probes decide: `contradicted`."""
    rows = []
    for seed, step in ((k, st) for k in range(3) for st in range(12)):
        sigma = 0.0 if step < 8 else 0.05
        curv = 0.0 if sigma == 0 else 0.002 + 1e-5 * seed  # three distinct runs
        rows.append({**fx.RUN_TRAINED, **fx.recorded(seed, "lesam"), "seed": seed,
                     "optimizer": "lesam", "step": step, "sigma": sigma,
                     "g_dot_eps": sigma, "curvature": curv,
                     "rise": sigma + curv + (0.01 if sigma else 0.0), "clipped": False})
    row = run("ls-signal-curvature", {"lesam/fig_signal": fx.item("lesam/fig_signal", rows)})
    assert row["verdict"] == CONTRADICTED and "24 probe(s) with σ = 0" in row["note"]


def test_curvature_eval_checks_sam_too() -> None:
    """ls-signal-curvature-eval: SAM's eval-mode residual ratio is 1.4. LE-SAM's alone reads
    `supported`; with SAM's: `contradicted`."""
    data = fx.signal(False)
    df = data["lesam/fig_signal"].rows
    sam = df["optimizer"] == "sam"
    df.loc[sam, "rise_eval"] = df.loc[sam, "g_dot_eps_eval"] + 2.4 * df.loc[sam, "curvature_eval"]
    row = run("ls-signal-curvature-eval", data)
    assert row["verdict"] == CONTRADICTED and "; sam: eval mode" in row["value"]


def test_cost_on_a_loaded_machine_is_inconclusive_not_a_flip() -> None:
    """ls-cost: one timing, one optimizer after another, read 1.49 on a loaded machine: the
    single ratio against 1.5–2.5 reads `contradicted`. Over interleaved rounds the interval
    straddles 1.5, so `inconclusive`."""
    row = run("ls-cost", fx.cost(False, sam_rounds=[2.1, 1.2, 1.49]))
    assert row["verdict"] == INCONCLUSIVE and "interleaved rounds" in row["value"]


def test_best_variant_covers_every_network_and_data_set() -> None:
    """ls-cifar10-best: the paper says LE-SAM is best with all three networks on both CIFAR
    data sets. CIFAR-10/ResNet-18 alone reads `supported`; the groups not run are named and
    the row is not supported."""
    row = run("ls-cifar10-best", fx.cifar(False))
    assert row["verdict"] == INCONCLUSIVE and "cifar100_pyramid" in row["note"]


def test_checks_are_counted_apart_from_the_papers_claims() -> None:
    """Rows that check the pipeline (kind `check`) are tallied under "<paper> (checks)"."""
    expected = {"ls-signal-lesam", "mf-l2-symmetry", "ls-above-chance", "ls-lt-profile",
                "ls-pgd-monotone", "eos-init-eta_c"}
    assert expected <= {c.id for c in CLAIMS.values() if c.kind == "check"}
    # as the papers state them: the U-shape is paper 003's claim (an unfavourable result
    # counts), the BatchNorm cause of the residual is this project's hypothesis
    assert CLAIMS["eos-u-shape"].kind == "claim"
    assert CLAIMS["ls-signal-curvature-eval"].kind == "extension"
    rows = [{"paper": "lesam", "verdict": SUPPORTED, "kind": "check"},
            {"paper": "lesam", "verdict": SUPPORTED, "kind": "claim"}]
    tally = counts(rows)
    assert tally["lesam"][SUPPORTED] == 1 and tally["lesam (checks)"][SUPPORTED] == 1


@pytest.mark.parametrize("cid", ["ls-sota-numbers"])
def test_sota_numbers_are_not_attributed_to_the_summary(cid: str) -> None:
    """97.63 / 85.91 / 79.31 / 58.65 / 63.67 are not in the paper 002 summary: they come from
    an aggregator's copy of the tables, and 79.31 has no backbone."""
    from sharpness.evidence.reported import entries

    for e in entries():
        if e.get("value") in (97.63, 85.91, 79.31, 58.65, 63.67):
            assert "aggregator" in e["source"] and "not in the paper 002 summary" in e["source"]
    assert [e["key"] for e in entries() if e.get("value") == 79.31] == ["any"]
    assert "aggregator" in CLAIMS[cid].source
