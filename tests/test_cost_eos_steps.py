"""Expected steps of full-batch eos runs (sharpness.cost.eos_steps) and their prices beside
the step caps (sharpness.cost.price)."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from sharpness.cost import eos_jobs, hours_text, price, table, total_row
from sharpness.cost import eos_steps as es
from sharpness.cost.price import training_code

ENTRY = {"dataset": "mnist", "model": "fcn", "loss": "mse", "train_size": 100, "P": 100,
         "flow_gradients": 300}


def test_fits_recover_a_hand_power_law():
    assert es.power_slope([1, 2, 4], [3, 6, 12]) == pytest.approx(1.0)
    assert es.power_slope([64, 256], [10, 20]) == pytest.approx(0.5)
    # steps = P / f**a: 100 / 4**0.5 = 50, and 100 / 16**0.5 = 25
    assert es.origin_slope([[4.0, 50, 100], [16.0, 25, 100]]) == pytest.approx(0.5)


def test_expected_sweep_by_hand():
    model = es.StepModel((ENTRY,), size_exponent=0.5, eos_exponent=0.5, goal_reached_up_to=4)
    setting = {"dataset": "mnist_embedded", "model": "fcn", "loss": "mse", "max_steps": 150,
               "lr_factors": [0.5, 4.0, 8.0], "lrs": [0.1], "sharpness_every": 50,
               "flow": {"max_evals": 10_000}}
    # P at 400 examples: 100 * (400 / 100) ** 0.5 = 200 steps at eta_c
    assert model.steps_at_eta_c(ENTRY, 400) == pytest.approx(200)
    got = es.expected_sweep(setting, 400, lanczos_per_check=40, model=model)
    # 0.5 eta_c: 200 / 0.5 = 400 -> the cap 150; 4 eta_c: 200 / 4 ** 0.5 = 100; the absolute
    # rate 0.1 has no factor, and 8 eta_c is beyond the factors that reached their goal: caps
    assert got.steps == 150 + 100 + 150 + 150
    assert got.lanczos_passes == (3 + 2 + 3 + 3) * 40   # a check every 50 steps
    assert got.flow_passes == pytest.approx(300 / 100 * 200)  # 3 gradients per step of P
    assert "P = 200" in got.note
    assert es.expected_sweep({**setting, "loss": "ce"}, 400, 40, model) is None  # unmeasured
    capped = es.StepModel(({**ENTRY, "flow_gradients": None},), 0.5, 0.5, 4)
    assert es.expected_sweep(setting, 400, 40, capped).flow_passes == 10_000


def test_committed_counts_give_the_documented_exponents():
    model = es.default_model()
    assert model.size_exponent == pytest.approx(0.29, abs=0.005)
    assert model.eos_exponent == pytest.approx(0.77, abs=0.005)
    assert model.goal_reached_up_to == 4
    # below eta_c GD follows the flow: mnist_fcn_mse's measured P = 511 at 0.85 eta_c
    assert model.run_steps(511, 0.85, 10**6) == math.ceil(511 / 0.85)


def test_below_eta_c_gd_took_the_flow_s_steps():
    """Every measured run below eta_c reached its goal within 3 % of P / f steps."""
    from importlib import resources

    import yaml

    data = yaml.safe_load(resources.files("sharpness.cost").joinpath(es.STEPS_FILE).read_text())
    model = es.default_model()
    for factor, steps, p in data["below_eta_c"]:
        assert model.run_steps(p, factor, 10**6) == pytest.approx(steps, rel=0.03)


def test_a_broken_counts_file_names_itself():
    with pytest.raises(ValueError, match="eos_steps.yaml.*data_size.*goal_reached_up_to"):
        es.model_from({"settings": []})


def _eos_section(**setting):
    base = {"dataset": "mnist_embedded", "train_size": 128, "model": "fcn", "loss": "mse",
            "max_steps": 10_000, "sharpness_every": 100, "lr_factors": [0.5, 2.0],
            "flow": {"max_evals": 50_000}, "model_kwargs": {"hidden": 8, "depth": 1}}
    return {"settings": {"s": {**base, **setting}}, "figures": {"fig_phase": ["s"]}}


def test_an_eos_run_is_priced_at_expected_steps_with_its_cap_beside(tmp_path):
    job, = eos_jobs(_eos_section())
    assert job.cap == (20_000, 50_000 + 200 * 40) and job.expected and not job.bound
    assert job.steps < job.cap[0]
    # one second per full-batch pass of its 128 examples (no torch): hours = passes / 3600
    measured = tmp_path / "measured.yaml"
    measured.write_text(f"- {{device: test, commit: x, code: '{training_code()}', model: fcn, "
                        "dataset: mnist_embedded, batch: 128, precision: fp32, "
                        "step_seconds: 1.0}\n")
    p, = price([job], method="analytic", measured=str(measured))
    assert p.gpu_hours == pytest.approx((job.steps + job.extra_passes) / 3600)
    assert p.cap_hours == pytest.approx((20_000 + 58_000) / 3600)
    assert "at expected steps" in p.basis
    rows, total = table([p])
    assert total == total_row([p]) and total.cap_steps == 20_000 and total.steps == job.steps
    assert rows[0].gpu_hours == p.gpu_hours and rows[0].cap_hours == p.cap_hours
    unmeasured, = eos_jobs(_eos_section(dataset="svhn"))  # no count of svhn: at its caps
    assert unmeasured.bound and (unmeasured.steps, unmeasured.extra_passes) == unmeasured.cap


def test_hours_text_states_the_basis():
    assert hours_text(2.0, cap=30.0) == "2.0 (≤ 30.0 at the step cap)"
    assert hours_text(30.0, bound=True, cap=30.0) == "≤ 30.0"
    assert hours_text(5.0) == "5.0" and hours_text(0.0, bound=True) == "0"


def test_a_key_a_setting_leaves_out_is_priced_at_the_value_its_run_uses():
    """``max_steps``, ``sharpness_every`` and the flow's ``max_evals`` left to the code: the
    sweep runs them at the setting's defaults, and so is it priced."""
    from sharpness.cost import LANCZOS_ITERS
    from sharpness.eos.setting import resolve_setting

    section = _eos_section(dataset="svhn")  # no measured count: priced at its caps
    for key in ("max_steps", "sharpness_every", "flow"):
        del section["settings"]["s"][key]
    run = resolve_setting(section["settings"]["s"])  # what run_setting runs
    job, = eos_jobs(section)
    steps = run["max_steps"] * len(run["lr_factors"])
    checks = steps // run["sharpness_every"]
    assert job.cap == (steps, checks * LANCZOS_ITERS * 2.0 + run["flow"]["max_evals"])
    assert job.flow_passes == (run["flow"]["max_evals"],) * 2


def test_the_sam_bridge_is_priced_at_the_setting_its_run_resolves():
    """The bridge runs its ``setting`` as given over the eos defaults, not over the
    dataclass's default setting: a key left out is priced at the eos default."""
    from sharpness.bridges.sam_eos import SamEosParams
    from sharpness.config.profiles import load_profile
    from sharpness.cost import bridges_jobs
    from sharpness.eos.setting import resolve_setting

    quick = Path(__file__).resolve().parents[1] / "workflow/config/quick.yaml"
    section = load_profile([str(quick)], None)["bridges"]
    setting = {"dataset": "mnist_embedded", "train_size": 64, "model": "fcn",
               "lr_factors": [0.5, 2.0]}
    section["sam_eos"].update(setting=setting, optimizers=[{"name": "gd", "hparams": {}}])
    run = resolve_setting(setting)
    assert run["width"] != SamEosParams().setting["width"]  # the two readings differ here
    job, = bridges_jobs(section)
    assert (job.width, job.steps) == (run["width"], run["max_steps"] * 2)
