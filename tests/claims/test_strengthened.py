"""Each predicate tests its whole claim: on a fixture that a weaker predicate, testing only
part of the claim, would pass, it fails (or cannot decide) for the part such a predicate
skips."""

from __future__ import annotations

import math

import pandas as pd

from sharpness.claims.ledger import all_claims, evaluate_claim
from sharpness.evidence.stats import CONTRADICTED, INCONCLUSIVE, SUPPORTED
from tests.catalog import CLAIMS as ALL_CLAIMS
from tests.claims import fixtures as fx

CLAIMS = {c.id: c for c in ALL_CLAIMS}


def run(cid: str, data: dict) -> dict:
    return evaluate_claim(CLAIMS[cid], data, "paper")


def without(data: dict, item: str, column: str, value: object) -> dict:
    """``data`` with the rows of ``item`` whose ``column`` equals ``value`` left out."""
    df = data[item].rows
    data[item].rows = df[df[column] != value]
    return data


def test_late_gain_tests_that_sams_gain_arrives_late() -> None:
    # SAM never gains over SGD; every LE-SAM comparison still holds
    row = run("ls-late-gain", fx.dynamics(False, sam_gain=-0.04))
    assert row["verdict"] == CONTRADICTED and "[late SAM − SGD]" in row["value"]
    assert run("ls-late-gain", fx.dynamics(False))["verdict"] == SUPPORTED


def test_dynamics_reads_throughout_not_an_average() -> None:
    # LE-SAM trails SAM over the first third, leads by more later: the average is positive
    row = run("ls-dynamics", fx.dynamics(False, epochs=6, early_lead=-0.05, late_lead=0.20))
    assert row["verdict"] == CONTRADICTED and "epochs 1–2" in row["value"], row["value"]


def test_linf_init_tests_gds_half() -> None:
    assert run("mf-linf-init", fx.linf(False, gd_limit="e1"))["verdict"] == CONTRADICTED
    row = run("mf-linf-init", without(fx.linf(False), "minorfirst/linf_depth", "source",
                                      "gd_phase"))
    assert row["verdict"] == INCONCLUSIVE and "GD's half of the claim is untested" in row["note"]


def test_deep_l2_tests_the_order() -> None:
    data = fx.deep(False)
    df = data["minorfirst/deep_l"].rows
    keep = df[df["panel"] != "L3"].to_dict("records")
    data["minorfirst/deep_l"] = fx.item("minorfirst/deep_l",
                                        keep + fx.shares([1, 3, 2], 3, panel="L3"))
    assert run("mf-deep-l2", data)["verdict"] == CONTRADICTED  # minor first, then moves down


def test_flat_below_tests_the_norm_too() -> None:
    rows = fx.sweep_rows(False)
    for r in rows:
        if r["eta"] < r["eta_c"]:
            r["l2"] = 5.0 * (1 + 10 * r["eta"])  # sharpness flat, the norm not
    row = run("eos-flat-below", {"eos/fig_phase": fx.item("eos/fig_phase", rows)})
    assert row["verdict"] == CONTRADICTED and "l2 0.23" in row["value"], row["value"]


def test_norm_grows_along_eta_not_end_points() -> None:
    rows = fx.sweep_rows(False)
    for r in rows:
        if abs(r["eta"] - 0.2) < 1e-9:
            r["l2"] = 4.0  # rises end to end (6.5 → 8) but falls in between
    row = run("eos-norm-grows", {"eos/fig_phase": fx.item("eos/fig_phase", rows)})
    assert row["verdict"] == CONTRADICTED and "(falls between η)" in row["value"]


def test_ablation_reads_or_names_every_variant() -> None:
    data = fx.ablation(False, labels=("rho_max_0.03", "no_decay", "sigma_0.02"))
    row = run("ls-ablation", data)
    assert "default − rho_max_0.03" in row["value"]
    assert "variants not read (not a safeguard of the claim): sigma_0.02" in row["note"]


def test_ablations_require_the_loss_factor() -> None:
    row = run("eos-ablations", without(fx.ablations(False), "eos/fig_ablations", "factor",
                                       "loss"))
    assert row["verdict"] == INCONCLUSIVE and "required factors not varied (no value read on both sides of η_c): loss" in row["note"]


def test_neither_minimiser_needs_the_best_eta_strictly_inside() -> None:
    data = fx.toy(False)
    df = data["eos/fig_diagonal"].rows
    sweep = (df["panel"] == "sweep") & (df["status"] != "diverged")
    last = df[sweep]["eta"].astype(float).idxmax()
    df.loc[last, "risk_dense"] = 0.01  # the lowest risk at the largest stable η
    row = run("eos-neither-minimiser", data)
    assert row["verdict"] == CONTRADICTED and "at an end of the stable range" in row["value"]


def test_band_is_decided_by_cross_entropy_too() -> None:
    rows = fx.sweep_rows(False)
    for r in rows:
        r["loss"] = "ce" if r["setting"] in ("D", "E") else "mse"
        if r["loss"] == "ce" and r["eta"] > 0.1:
            r["eta_s_over_2"] = 0.6
    data = {"eos/fig_phase": fx.item("eos/fig_phase", rows),
            **fx.traj_rows(False, settings=("A", "B", "C"))}
    row = run("eos-band", data)
    # the cross-entropy settings miss at their final point and have no trajectory: the rule's
    # second half is not met, so they do not decide, and neither does the row
    assert row["verdict"] == INCONCLUSIVE and "CE inconclusive" in row["note"], row["note"]


def test_glmc_runs_are_checked_on_train_accuracy_not_the_rebalanced_loss() -> None:
    # every GLMC run: train loss above ln 10 (the re-balanced head on the long-tailed set)
    # and train accuracy well above chance
    data = fx.long_tail(False)
    df = data["lesam/table_long_tail"].rows
    df["per_seed_train"] = " ".join(f"{k}:{math.log(10) + 0.5:.4f}/0.8000/10{fx.proof(k)}"
                                    for k in range(3))
    row = run("ls-longtail", data)
    assert row["verdict"] == SUPPORTED and "excluded" not in row["note"], row["note"]


def test_glmc_chance_is_the_head_class_share() -> None:
    # a network that predicts the head class alone: train accuracy = the head's share (about
    # 0.40 here, far above 1/C + 0.1 = 0.2) does not count as trained
    from sharpness.claims.lesam import majority_share

    data = fx.long_tail(False)
    df = data["lesam/table_long_tail"].rows
    head = majority_share(df["train counts (head→tail)"].iloc[0])
    assert head is not None and 0.3 < head < 0.5
    df["per_seed_train"] = " ".join(f"{k}:0.5000/{head + 0.01:.4f}/10{fx.proof(k)}"
                                    for k in range(3))
    row = run("ls-longtail", data)
    assert row["verdict"] == INCONCLUSIVE and "train acc" in row["note"], row["note"]


def test_signal_rows_read_only_probe_runs_that_trained() -> None:
    # three probe runs that sat at chance: no run can bear on the mechanism
    data = fx.signal(False, record={"final_train_loss": 2.30, "final_train_acc": 0.1,
                                    "num_classes": 10})
    for cid in ("ls-signal-sam", "ls-signal-curvature", "ls-signal-curvature-eval"):
        row = run(cid, data)
        assert row["verdict"] == INCONCLUSIVE and row["n"] == 0, cid
        assert "runs left out (not trained, not distinct, or not proven): seed 0 (" in row["note"], row["note"]


def test_ls_lanczos_needs_its_registered_draws():
    """One evaluated run with a single draw is too few to decide the Lanczos check."""
    from sharpness.claims.ledger import evaluate_claim
    from sharpness.claims.rules import rules_for
    from tests.claims import fixtures as fx

    claim = next(c for c in all_claims() if c.id == "ls-lanczos")
    data = fx.lanczos(False)
    frame = data["lesam/fig_flatness"].rows
    keep = frame[frame["seed"] == 0].drop_duplicates("seed").copy()
    keep["lanczos_draws"] = 1
    data["lesam/fig_flatness"] = fx.item("lesam/fig_flatness", keep.to_dict("records"))
    row = evaluate_claim(claim, data, "evidence", rules_for("evidence"))
    assert row["verdict"].startswith("inconclusive") and row["n"] == 1


def test_linf_init_reads_gd_where_the_papers_state_it() -> None:
    # GD ends at e1 from an unbalanced init at L = 3: outside the papers' statement (L = 2 and
    # the uniform init), so the claim row holds and the extension row reports the finding
    data = fx.linf(False)
    extra = fx.linf_gd(False)["minorfirst/linf_depth"].rows
    df = data["minorfirst/linf_depth"].rows
    df = data["minorfirst/linf_depth"].rows = pd.concat([df, extra], ignore_index=True)
    assert run("mf-linf-init", data)["verdict"] == SUPPORTED
    ext = run("mf-linf-gd-limit", data)
    assert ext["verdict"] == SUPPORTED and ext["kind"] == "extension"
    assert "L=3: e1 at 3 of 9 inits" in ext["value"], ext["value"]
    uniform = df.index[(df["source"] == "gd_phase")][:1]
    df.loc[uniform, ["alpha_1", "simulated"]] = [0.2, "e1"]  # GD at α·1, L = 2: e1
    assert run("mf-linf-init", data)["verdict"] == CONTRADICTED


def test_gd_limit_is_the_jstar_rule_at_rho_zero_at_every_depth() -> None:
    """mf-linf-gd-limit, re-registered after data: first "argmax μ_j α_j at every depth", which
    a quick build contradicted at L = 2 (GD ends on e2 from every init, as w_j = α_j e^(μ_j s)
    says). The rule argmax μ_j α_j^(L−2) gives both depths."""
    data = fx.linf_gd(False)
    df = data["minorfirst/linf_depth"].rows
    at_two = df.assign(L=2, simulated="e2")  # every init, e1-favoured by α1 > 2·α2 or not
    data["minorfirst/linf_depth"].rows = pd.concat([df, at_two], ignore_index=True)
    row = run("mf-linf-gd-limit", data)
    assert row["verdict"] == SUPPORTED and "18/18 grid points" in row["value"], row["value"]
    assert "L=2: e1 at 0 of 9 inits" in row["value"]
    wrong = data["minorfirst/linf_depth"].rows
    wrong.loc[wrong.index[-1], "simulated"] = "e1"  # GD at L = 2 ending on the minor feature
    assert run("mf-linf-gd-limit", data)["verdict"] == CONTRADICTED


def test_robust_reads_every_radius() -> None:
    # LE-SAM ahead at the largest radius only: a smaller radius where it trails decides too
    data = fx.robustness(False)
    df = data["lesam/table_robustness"].rows
    rows = [dict(r) for _, r in df[df["radius"] == 0.25].iterrows()]
    for r in rows:
        r["radius"] = 0.1
        if r["label"] == "lesam":
            r["per_seed"] = fx.seeds([30.0, 31.0, 29.5])
    data["lesam/table_robustness"].rows = pd.concat([df, pd.DataFrame(rows)])
    row = run("ls-robust", data)
    assert row["verdict"] == CONTRADICTED and "r=0.1" in row["value"]


def test_late_gain_tests_that_sams_gain_is_only_late() -> None:
    # SAM gains as much early as late: "only late" fails, so the row is not supported
    row = run("ls-late-gain", fx.dynamics(False, late_sam=False))
    assert row["verdict"] != SUPPORTED and "only late" in row["value"], row["value"]


def test_curvature_eval_needs_the_train_mode_residual() -> None:
    # eval mode fits, but so does train mode: nothing for BatchNorm to explain
    row = run("ls-signal-curvature-eval", fx.signal(False))
    assert row["verdict"] == INCONCLUSIVE
    assert run("ls-signal-curvature-eval", fx.signal_eval(False))["verdict"] == SUPPORTED
