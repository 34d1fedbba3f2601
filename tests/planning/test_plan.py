"""The plan on the paper profile's real claims -> runs mapping, its files, and the ledger."""

from __future__ import annotations

import json
import subprocess

import pytest
import yaml

from sharpness.claims.ledger import all_claims
from sharpness.cost.eos_steps import default_model
from sharpness.eos.config import expand_settings
from sharpness.errors import SharpnessError
from sharpness.evidence.stats import INCONCLUSIVE, SUPPORTED
from sharpness.planning import claims_plan as cp
from sharpness.planning import output as plan_output
from sharpness.planning.ledger import annotate, load_plan
from sharpness.planning.power import Design
from sharpness.planning.prices import recorded_hours
from tests.pipeline.helpers import copy_workflow, snakemake


@pytest.fixture(scope="module")
def paper(repo):
    from sharpness.config.profiles import load_profile

    config = load_profile([str(repo / "workflow/config/paper.yaml")], None)
    return config, cp.claim_runs(all_claims(), config)


def test_claims_map_to_the_runs_their_predicates_read(paper):
    config, needs = paper
    # the CIFAR-10 ResNet-18 group serves four lesam tables/figures; each claim buys only the
    # optimizers its predicate compares (reads.yaml), 3 seeds each
    assert len(needs["ls-robust"].runs) == 6 and len(needs["ls-flatness"].runs) == 9
    assert needs["ls-robust"].runs == needs["ls-dynamics"].runs == needs["ls-cifar10-sam"].runs
    assert needs["ls-robust"].runs < needs["ls-flatness"].runs
    assert len(needs["ls-cifar10-best"].runs) > 100  # every variant of the six groups
    # PACS and VLCS: one group per source domain, 4 + 4
    domain = needs["ls-domain"].seed_paths
    assert len(domain) == 8 and all(p[:2] == ("lesam", "groups") and p[3] == "seeds"
                                    and p[2].startswith(("domain_pacs_", "domain_vlcs_"))
                                    for p in domain)
    assert needs["mf-gradcam-mnist-l2"].seed_paths == (("gradcam", "seeds"),)
    assert not needs["mf-l1"].runs and not needs["eos-band"].seed_paths
    # priced at max_steps (an upper limit) where no step count of the setting was measured
    settings = expand_settings(config["eos"])
    unmeasured = {("eos", f"setting/{name}") for name, s in settings.items()
                  if default_model().measured(s) is None}
    assert needs["eos-band"].bound == needs["eos-band"].runs & unmeasured
    assert needs["ls-signal-sam"].replicates == "seeds"  # lesam.signal's seed list
    assert needs["ls-signal-sam"].seed_paths == (("lesam", "signal", "seeds"),)
    assert needs["eos-band"].replicates == "deterministic"


def test_a_claim_whose_runs_the_plan_holds_comes_free(paper):
    """ls-cifar10-sam reads the SAM and LE-SAM runs ls-robust buys: once ls-robust is in the
    plan it adds nothing (no table-level surcharge)."""
    config, needs = paper
    chosen = [c for c in all_claims() if c.id in ("ls-robust", "ls-cifar10-sam")]
    prices = {r: 1.0 for n in needs.values() for r in n.runs}
    designed = ({c.id: needs[c.id] for c in chosen},
                {c.id: Design(None, 0.9, True, "test") for c in chosen}, config)
    plan = cp.make_plan(chosen, config, 6, prices, dict.fromkeys(prices, "test"),
                        pricing="test", designed=designed)
    lines = {ln.claim: ln for ln in plan.lines}
    assert lines["ls-robust"].planned and lines["ls-cifar10-sam"].planned
    assert sorted(ln.added_hours for ln in plan.lines) == [0.0, 6.0] and plan.hours == 6.0


@pytest.mark.e2e  # designs every claim of the paper profile
def test_small_budget_settles_only_at_power(paper):
    config, needs = paper
    # every run priced 1 GPU-hour, budget 9, no ledger: the CPU-only claims are free; a seeded
    # claim has a known power only through a cited paper-scale spread (planning/spreads.yaml);
    # the signal claims, whose recipe has none, are planned at the standard's 3 seeds and
    # never counted as settled without a power
    claims = [c for c in all_claims() if c.kind != "check"]
    designed = cp.designed_needs(claims, config)
    prices = {r: 1.0 for n in designed[0].values() for r in n.runs}
    sources = dict.fromkeys(prices, "estimate")
    plan = cp.make_plan(all_claims(), config, 9, prices, sources, pricing="test",
                        designed=designed)
    settled = {ln.claim for ln in plan.lines if ln.planned and ln.settled}
    free = {cid for cid, n in needs.items() if not n.runs}
    checks = {c.id for c in all_claims() if c.kind == "check"}
    assert checks and not {ln.claim for ln in plan.lines} & checks
    lines = {ln.claim: ln for ln in plan.lines}
    assert settled >= free - checks
    for cid in settled - free:  # settled by runs: at the power asked, from a known basis
        assert lines[cid].power >= 0.8 and "power unknown" not in lines[cid].basis, cid
    signal = lines["ls-signal-sam"]
    assert not signal.settled and signal.power == 0 and "power unknown" in signal.basis
    seeds = signal.seeds["lesam.signal.seeds"]
    assert signal.seeds == {"lesam.signal.seeds": [0, 1, 2]}
    assert signal.runs == len(config["lesam"]["signal"]["optimizers"]) * len(seeds)
    # eos-measures' settings all have measured step counts; eos-band-all's ViT MSE does not:
    # its runs priced at their caps (here all at 1.0) mark its price an upper limit
    assert not lines["eos-measures"].bound and lines["eos-band-all"].bound
    assert "| eos-band-all | 15 | – | – | ≤ 15.0 (estimate) |" in plan_output.render(plan)
    assert plan.hours <= 9


def test_single_stochastic_runs_say_what_the_standard_would_cost(paper):
    """One minibatch run per arm is not settled, and the row prices the standard's runs."""
    from dataclasses import replace

    config, needs = paper
    claim = next(c for c in all_claims() if c.id == "ls-cost")
    single = replace(needs["ls-cost"], replicates="single")
    design = cp.claim_design(single, config)
    assert not design.settled and "stochastic" in design.basis
    prices = dict.fromkeys(single.runs, 0.5)
    plan = cp.make_plan([claim], config, 100, prices, dict.fromkeys(prices, "test"),
                        pricing="test", designed=({"ls-cost": single}, {"ls-cost": design},
                                                  config))
    n = len(single.runs)
    assert f"3 independent runs of each would cost {3 * 0.5 * n:,.1f} GPU-hours" in \
        plan.lines[0].basis


def test_seeds_reach_the_claim_level_power_at_a_paper_scale_pilot(paper):
    config, needs = paper
    # a paper-scale pilot's paired interval: +1.0 [0.0, 2.0] over 5 seeds
    row = {"id": "ls-imagenet-r101", "value": "+1.0 [+0.0, +2.0] (95% CI, n=5 seeds) points",
           "estimate": 1.0, "low": 0.0, "high": 2.0}
    pilot = {"ledger": {"ls-imagenet-r101": row}, "ledger_profile": "paper"}
    d = cp.claim_design(needs["ls-imagenet-r101"], config, **pilot)
    assert d.settled and d.power >= 0.8 and "pilot at paper scale" in d.spread
    assert "+0.77 over SAM" in d.effect and "paper 002" in d.effect
    assert cp.claim_design(needs["ls-imagenet-r101"], config, power=0.95, **pilot).seeds > d.seeds
    # the same interval from the evidence profile is not carried to paper scale
    cpu = cp.claim_design(needs["ls-imagenet-r101"], config, ledger={"ls-imagenet-r101": row},
                          ledger_profile="evidence")
    assert not cpu.settled and cpu.seeds is None and "sequential" in cpu.basis
    assert "not carried" in cpu.spread
    designed, designs, union = cp.designed_needs(
        [c for c in all_claims() if c.id == "ls-imagenet-r101"], config, **pilot)
    runs = designed["ls-imagenet-r101"].runs
    assert len(runs) == 2 * d.seeds  # SAM and LE-SAM, each at the designed seeds
    assert len(cp.get_path(union, ("lesam", "groups", "imagenet_resnet101", "seeds"))) == d.seeds


def test_plan_files_and_ledger_provenance(paper, tmp_path):
    config, needs = paper
    prices = {r: 0.5 for n in needs.values() for r in n.runs}
    chosen = [c for c in all_claims() if c.id in ("ls-domain", "ls-cost", "mf-l1")]
    domain_hours = 0.5 * len(needs["ls-domain"].runs)
    plan = cp.make_plan(chosen, config, 10 + domain_hours, prices,
                        dict.fromkeys(prices, "estimate"), pricing="test")
    assert all(ln.planned for ln in plan.lines) and plan.hours == 4.0 + domain_hours
    record = plan.record(["workflow/config/paper.yaml"])
    out, rec = plan_output.write_plan(record, tmp_path / "plan.yaml")
    overlay = yaml.safe_load(out.read_text())
    assert overlay["plan"] == {"id": record["id"], "file": str(rec),
                               "targets": record["targets"]}
    for path in needs["ls-domain"].seed_paths:
        assert cp.get_path(overlay, path) == [0, 1, 2]
    assert "profile" not in overlay  # merged over the profile, never replacing it
    loaded = load_plan(rec)
    rows = [{"id": "ls-domain", "verdict": SUPPORTED, "provenance": "lesam/x=abc",
             "note": "", "level": "evidence"},
            {"id": "eos-band", "verdict": SUPPORTED, "provenance": "", "note": ""}]
    loaded["sequential"] = {"ls-domain": {
        "design": {"rule": "test rule"},
        "looks": [{"seeds": 10, "t": 2.5, "boundary": 3.2, "decision": "stop: maximum"}]}}
    out_rows = annotate(rows, loaded)
    assert out_rows[0]["provenance"] == f"lesam/x=abc;plan={record['id']}"
    assert out_rows[0]["gpu_hours"] == domain_hours
    assert f"GPU-hours {domain_hours:.1f} (estimate), plan {record['id']} (" in \
        out_rows[0]["note"]
    assert out_rows[0]["verdict"] == INCONCLUSIVE  # the boundary was not crossed
    assert out_rows[1] == rows[1]  # not in the plan: untouched
    record["budget_gpu_hours"] = 7  # edited by hand: the id no longer matches
    rec.write_text(json.dumps(record))
    with pytest.raises(SharpnessError, match="does not match its id"):
        load_plan(rec)


def test_cli_plan_for_chosen_claims(tmp_path, capsys, in_workflow_copy):
    from sharpness.cli import main

    out = tmp_path / "p.yaml"
    assert main(["plan", "--gpu-hours", "1", "--configfile", "workflow/config/paper.yaml",
                 "--claims", "ls-cost,mf-l1", "--out", str(out), "--method", "analytic"]) == 0
    printed = capsys.readouterr().out
    assert "| ls-cost | 8 |" in printed and "ESTIMATE" in printed
    assert f"--configfile workflow/config/paper.yaml {out}" in printed
    record = json.loads(out.with_suffix(".json").read_text())
    assert set(record["claims"]) == {"ls-cost", "mf-l1"}
    assert main(["plan", "--gpu-hours", "1", "--claims", "nope"]) == 2
    assert "unknown claim id(s) ['nope']" in capsys.readouterr().err


def test_an_overlay_named_like_its_record_is_refused_before_planning(tmp_path, capsys):
    """``--out p.json`` would have the record overwrite the overlay (the record is written
    beside it as ``p.json``): refused in one line, before any planning, writing nothing."""
    from sharpness.cli import main

    out = tmp_path / "p.json"
    assert main(["plan", "--gpu-hours", "1", "--configfile", "nope.yaml", "--out",
                 str(out)]) == 2
    err = capsys.readouterr().err
    assert f"--out {out}: the plan's record is written beside the overlay" in err
    assert "nope.yaml" not in err and not out.exists()


@pytest.mark.e2e  # builds a ledger through the CLI from the looks it wrote
def test_cli_sequential_writes_its_looks_and_the_ledger_reads_them(tmp_path, capsys,
                                                                   monkeypatch,
                                                                   in_workflow_copy):
    """The driver behind `sharpness plan --sequential`, with simulated arms in place of
    Snakemake: a null comparison runs to --max-seeds, and `claims build --plan` then keeps
    the row inconclusive even where the plain 95 % interval would decide."""
    import numpy as np

    from sharpness.cli import main
    from sharpness.evidence.stats import decide, t_interval
    from sharpness.planning import driver

    diffs = np.random.default_rng(4).standard_normal(5)
    seen = []

    def fake_runner(configfiles, overlay_path, seed_paths, targets, **kw):
        def run(n):
            overlay = driver.seed_overlay(seed_paths, n)
            seen.append(cp.get_path(overlay, tuple(next(iter(seed_paths)).split("."))))
        return run

    def fake_reader(claim_id, figures, profile):
        def read():
            iv = t_interval(diffs[: len(seen[-1])])
            return {"id": claim_id, "value": iv.text(), "verdict": decide(iv),
                    "estimate": iv.estimate, "low": iv.low, "high": iv.high}
        return read

    monkeypatch.setattr(driver, "snakemake_runner", fake_runner)
    monkeypatch.setattr(driver, "ledger_reader", fake_reader)
    out = tmp_path / "seq.yaml"
    assert main(["plan", "--gpu-hours", "50", "--configfile", "workflow/config/paper.yaml",
                 "--sequential", "ls-domain", "--max-seeds", "5", "--out", str(out),
                 "--method", "analytic"]) == 0
    assert seen == [[0, 1, 2], [0, 1, 2, 3], [0, 1, 2, 3, 4]]
    printed = capsys.readouterr().out
    assert "Pocock-type" in printed and "stop: maximum" in printed
    record = load_plan(out.with_suffix(".json"))
    assert record["seeds"] and all(v == [0, 1, 2, 3, 4] for v in record["seeds"].values())
    assert record["sequential"]["ls-domain"]["verdict"] == INCONCLUSIVE
    overlay = yaml.safe_load(out.read_text())
    assert all(cp.get_path(overlay, tuple(k.split("."))) == [0, 1, 2, 3, 4]
               for k in record["seeds"])
    row = {"id": "ls-domain", "verdict": SUPPORTED, "provenance": "", "note": ""}
    assert annotate([row], record)[0]["verdict"] == INCONCLUSIVE


@pytest.mark.workflow  # plans the workflow
def test_quick_profile_runs_only_the_plan(tmp_path, repo, bin_dir):
    """`plan:` in the config limits `all` to its targets; an unknown target is refused."""
    work = copy_workflow(repo, tmp_path)
    record = {"id": "0123", "file": "plan.json",
              "targets": ["figures/minorfirst/l1_maxmargin.csv", "figures/CLAIMS.md"]}
    (work / "plan.json").write_text("{}")
    (work / "plan.yaml").write_text(yaml.safe_dump({"plan": record}))
    proc = snakemake(bin_dir, work, "-n", "--quiet", "rules", "--configfile", "plan.yaml")
    assert "minorfirst_diagonal_run" in proc.stdout and "claims" in proc.stdout
    assert "lesam_train" not in proc.stdout and "eos_setting" not in proc.stdout
    record["targets"] = ["figures/lesam/nothing.csv"]
    (work / "plan.yaml").write_text(yaml.safe_dump({"plan": record}))
    proc = snakemake(bin_dir, work, "-n", "--configfile", "plan.yaml", check=False)
    assert proc.returncode != 0 and "plan.targets" in proc.stdout + proc.stderr


@pytest.mark.slow
def test_paper_plan_for_100_gpu_hours_is_a_valid_dry_run(tmp_path, repo, bin_dir):
    """The check: the printed plan, and `snakemake -n` accepts its config (no
    data.imagenet needed: 100 GPU-hours buy no ImageNet run)."""
    from sharpness.data.folders import DOMAINS

    work = copy_workflow(repo, tmp_path)
    for base, domains in DOMAINS.items():  # the PACS/VLCS layout (empty) a plan may need
        for domain in domains:
            (work / "data" / base / domain).mkdir(parents=True, exist_ok=True)
    proc = subprocess.run(
        [str(bin_dir / "sharpness"), "plan", "--gpu-hours", "100", "--configfile",
         "workflow/config/paper.yaml", "--out", "plans/plan.yaml", "--method", "analytic"],
        cwd=work, capture_output=True, text=True, check=True)
    assert "Left out" in proc.stdout and "ls-imagenet-r50" in proc.stdout
    dry = snakemake(bin_dir, work, "-n", "--quiet", "rules", "--configfile",
                    "workflow/config/paper.yaml", "plans/plan.yaml")
    assert "lesam_train" in dry.stdout and "claims" in dry.stdout
    record = json.loads((work / "plans/plan.json").read_text())
    assert record["gpu_hours"] <= 100
    assert not any("imagenet" in t for t in record["targets"])


def test_a_record_naming_only_the_given_hyper_parameters_matches_the_resolved_plan(
        paper, tmp_path):
    """The plan's run configs hold their hyper-parameters resolved; a record that names only
    those its config gave is the same run (the spec resolves the rest), one with another
    value is not."""
    from sharpness.lesam.experiments import training_runs
    from sharpness.train.config import validate_config

    config, _ = paper
    runs = training_runs(config["lesam"])
    rid = next(r for r in runs if r.endswith("-sam-s0"))
    job = type("J", (), {"paper": "lesam", "run": rid, "gpus": 1})()
    folder = tmp_path / "lesam" / "runs" / rid
    folder.mkdir(parents=True)
    params = json.loads(json.dumps(validate_config(dict(runs[rid]["config"])), default=str))
    given = {"rho": params["opt_hparams"]["rho"]}
    assert set(params["opt_hparams"]) > set(given)
    for hparams, hours in ((given, 0.5), ({"rho": given["rho"] * 2}, None)):
        record = {"status": "ok", "device_used": "cuda:0", "wall_s": 1800.0,
                  "params": {**params, "opt_hparams": hparams}}
        (folder / "provenance.json").write_text(json.dumps(record))
        assert recorded_hours(job, runs[rid]["config"], tmp_path) == hours


def test_recorded_time_only_from_a_matching_cuda_run(paper, tmp_path):
    from sharpness.lesam.experiments import training_runs

    config, needs = paper
    runs = training_runs(config["lesam"])
    rid = next(r for r in runs if r.startswith("domain_pacs_") and r.endswith("-sgd-s0"))
    job = type("J", (), {"paper": "lesam", "run": rid, "gpus": 1})()
    folder = tmp_path / "lesam" / "runs" / rid
    folder.mkdir(parents=True)
    from sharpness.train.config import validate_config

    # the record holds the engine's validated config (defaults filled in), not the plan's
    planned = json.loads(json.dumps(validate_config(dict(runs[rid]["config"])), default=str))
    assert planned != json.loads(json.dumps(runs[rid]["config"], default=str))
    record = {"status": "ok", "device_used": "cuda:0", "wall_s": 1800.0, "params": planned}
    (folder / "provenance.json").write_text(json.dumps(record))
    assert recorded_hours(job, runs[rid]["config"], tmp_path) == 0.5
    # a campaign resumed in a later allocation prices the finished run at 0, and says so
    from sharpness.planning.prices import run_prices

    key = ("lesam", rid)
    # without its final.json (deleted as incomplete by the next call) it trains again
    again = run_prices(config, method="analytic", results=tmp_path, only=frozenset({key}),
                       finished_free=True)
    assert again.hours[key] == 0.5 and "paid earlier" not in again.source[key]
    (folder / "final.json").write_text("{}")
    free = run_prices(config, method="analytic", results=tmp_path, only=frozenset({key}),
                      finished_free=True)
    assert free.hours[key] == 0.0 and "paid earlier" in free.source[key]
    paid = run_prices(config, method="analytic", results=tmp_path, only=frozenset({key}))
    assert paid.hours[key] == 0.5 and paid.source[key] == "recorded on this machine"
    for change in ({"device_used": "cpu"}, {"status": "diverged"},
                   {"params": {**planned, "epochs": 2}}):
        (folder / "provenance.json").write_text(json.dumps({**record, **change}))
        assert recorded_hours(job, runs[rid]["config"], tmp_path) is None
        # finished on the CPU or diverged: never a price, but free to a resumed campaign
        # (the workflow reuses it); finished with other settings: trained again, not free
        free = run_prices(config, method="analytic", results=tmp_path, only=frozenset({key}),
                          finished_free=True)
        assert (free.hours[key] == 0.0) == ("params" not in change), change


def test_a_run_cut_here_is_priced_at_the_epochs_left_after_its_checkpoint(paper, tmp_path):
    """A resumed campaign (--finished-free) prices a run cut mid-way at the share of its
    epochs after its last checkpoint (one interval short when the last row is a checkpoint
    epoch: the cut may have come before that checkpoint); without a checkpoint, with a final
    record or with other settings, in full."""
    from sharpness.lesam.experiments import training_runs
    from sharpness.planning import prices as pr
    from sharpness.planning import resumed
    from sharpness.train import layout
    from sharpness.train.config import validate_config

    assert (resumed.CHECKPOINT, resumed.METRICS, resumed.FINAL, resumed.CONFIG) == \
        (layout.CHECKPOINT, layout.METRICS, layout.FINAL, layout.CONFIG)
    config, _ = paper
    runs = training_runs(config["lesam"])
    rid = next(r for r in runs if r.startswith("domain_pacs_") and r.endswith("-sgd-s0"))
    job = type("J", (), {"paper": "lesam", "run": rid, "gpus": 1})()
    cfg = validate_config(dict(runs[rid]["config"]))
    epochs, every = int(cfg["epochs"]), int(cfg["checkpoint_every"])
    assert 2 * every + 1 < epochs
    folder = tmp_path / "lesam" / "runs" / rid
    folder.mkdir(parents=True)
    (folder / "config.json").write_text(json.dumps(cfg, default=str))
    rows = [{"kind": "epoch", "epoch": e} for e in range(1, 2 * every + 2)]
    (folder / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    key = ("lesam", rid)

    def priced(free=True):
        return pr.run_prices(config, method="analytic", results=tmp_path,
                             only=frozenset({key}), finished_free=free)

    full = priced(False).hours[key]
    assert pr.epochs_done(job, runs[rid]["config"], tmp_path) == 0  # no checkpoint yet
    (folder / "checkpoint.pt").write_bytes(b"x")
    assert pr.epochs_done(job, runs[rid]["config"], tmp_path) == 2 * every
    cut = priced()
    assert cut.hours[key] == pytest.approx(full * (epochs - 2 * every) / epochs)
    assert f"cut here at epoch {2 * every} of {epochs}" in cut.source[key]
    assert priced(False).hours[key] == pytest.approx(full)  # not a resumed campaign
    (folder / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows[:-1]))
    assert pr.epochs_done(job, runs[rid]["config"], tmp_path) == every  # the last may lack one
    (folder / "config.json").write_text(json.dumps({**cfg, "seed": 99}, default=str))
    assert pr.epochs_done(job, runs[rid]["config"], tmp_path) == 0  # other settings
    (folder / "config.json").write_text(json.dumps(cfg, default=str))
    (folder / "final.json").write_text("{}")
    assert pr.epochs_done(job, runs[rid]["config"], tmp_path) == 0  # finished, not cut
