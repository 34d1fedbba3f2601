"""`sharpness campaign`: a loud refusal without a GPU in paper mode, GPU packing by memory, a
watchdog that stops launching at the budget, and the whole path on the CPU in tiny mode."""

from __future__ import annotations

import json
import os
import subprocess

import pytest
import yaml

from sharpness.planning import campaign as camp


def test_paper_mode_refuses_without_a_gpu(repo, capsys):
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("a GPU is visible here")
    from sharpness.cli import main

    assert main(["campaign", "--gpu-hours", "1", "--out-dir", "unused"]) != 0
    err = capsys.readouterr().err
    assert "no GPU is visible to torch" in err and "refuses to fall back to the CPU" in err


def test_the_paper_profile_asks_for_cuda_not_auto(repo):
    text = (repo / "workflow/config/paper.yaml").read_text()
    assert "device: auto" not in text and text.count("device: cuda") >= 4
    from sharpness.device import DeviceUnavailableError, resolve_device

    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        with pytest.raises(DeviceUnavailableError, match="refusing to train on the CPU"):
            resolve_device("cuda")


def _priced(run, model, *, gpus=1, device="cuda", paper="lesam"):
    from sharpness.cost.plan import Job as Priced

    return Priced(paper, ["x"], run, model, "cifar10", 1.0, {}, 50000, 128, 10, 2.0, 0,
                  gpus=gpus, optimizer="sam", config={"device": device})


def test_each_job_reserves_its_own_shapes_measured_memory(repo, tmp_path):
    """A job's gpu_mem_mb is its own shape's measured peak with slack (times its GPUs), not
    its paper's largest; an unmeasured shape falls back to the rule's value, saying so; a job
    pinned to the CPU reserves nothing; the profile holds the pools only."""
    from sharpness.cost.measure import KEY_FIELDS, job_key
    from sharpness.jobs import Job, Plan

    rules = camp.gpu_rules(repo / "workflow/rules")
    assert {"lesam_train", "lesam_signal", "eos_setting", "gradcam_train"} <= set(rules)
    assert rules["lesam_train"] == "lesam" and "claims" not in rules
    priced = [_priced("small", "resnet18"), _priced("big", "wrn28_10"),
              _priced("wide", "resnet18", gpus=4), _priced("new", "pyramidnet110"),
              _priced("cpu", "resnet18", device="cpu")]

    def entry(job, mb, **extra):
        return dict(zip(KEY_FIELDS, job_key(job, "fp32"), strict=True), gpu_mem_mb=mb,
                    **extra)

    measured = [entry(priced[0], 1000), entry(priced[1], 9000), entry(priced[2], 700),
                entry(priced[0], 50000, packed=8)]  # a packed entry reserves nothing
    plan = Plan([Job("lesam_train", r) for r in ("small", "big", "wide", "new", "cpu")]
                + [Job("lesam_eval", "domain_gen"), Job("lesam_table", "t")])
    mem = camp.job_memory(plan, priced, measured, rules)
    own = int(1000 * camp.MEM_SLACK + camp.CONTEXT_MB)
    assert mem.mb("lesam_train", "small") == own
    assert mem.mb("lesam_train", "big") == int(9000 * camp.MEM_SLACK + camp.CONTEXT_MB)
    # DDP: one copy per GPU, each at its per-device batch (32 of 128)
    assert mem.mb("lesam_train", "wide") == 4 * int(700 * camp.MEM_SLACK + camp.CONTEXT_MB)
    assert mem.rules["lesam_train"] == mem.mb("lesam_train", "big")  # the paper's largest
    assert mem.mb("lesam_train", "new") == mem.rules["lesam_train"]
    assert "shape not measured: pyramidnet110" in mem.fallback["lesam_train/new"]
    assert mem.mb("lesam_train", "cpu") == 0 and "lesam_train/cpu" not in mem.fallback
    assert "trains no run the planner prices" in mem.fallback["lesam_eval/domain_gen"]
    assert "lesam_table/t" not in mem.jobs  # not a GPU rule
    assert mem.rules["eos_setting"] == camp.DEFAULT_JOB_MB  # nothing measured for eos
    body = json.loads(mem.write(tmp_path / "gpu_mem.json").read_text())
    assert body["jobs"]["lesam_train/small"] == own
    overlay = yaml.safe_load(camp.write_memory_overlay(tmp_path / "o.yaml",
                                                       tmp_path / "gpu_mem.json").read_text())
    assert overlay == {"plan": {"gpu_mem_file": str((tmp_path / "gpu_mem.json").resolve())}}
    folder = camp.write_profile(tmp_path / "p", cores="all", gpus=1, gpu_mem_mb=120000,
                                jobs_per_gpu=8)
    body = yaml.safe_load((folder / "config.yaml").read_text())
    assert body["resources"] == ["gpu=8", "gpu_mem_mb=120000"]
    assert "set-resources" not in body  # per rule only: the map gives each job its own
    assert "gpu_mem_mb=0" in body["default-resources"]


def test_the_runs_a_build_job_trains(repo):
    """Each GPU rule's job finds the priced runs it trains (those the memory map reads)."""
    from sharpness.jobs import Job

    runs = ["r1", "glmc/r1", "signal/sam", "setting/a", "setting/abl_w1", "setting/abl_w2",
            "gradcam/mnist/sgd/a1/s0", "gradcam/mnist/sam/a1/s0", "gradcam/svhn/sgd/a1/s0",
            "sam_eos/gd", "sam_eos/sam", "cost/sgd", "cost/sam"]
    assert camp.runs_of(Job("lesam_train", "r1"), runs) == ["r1"]
    assert camp.runs_of(Job("lesam_glmc", "r1"), runs) == ["glmc/r1"]
    assert camp.runs_of(Job("lesam_signal", "sam"), runs) == ["signal/sam"]
    assert camp.runs_of(Job("eos_setting", "a"), runs) == ["setting/a"]
    assert camp.runs_of(Job("eos_ablations", "ablations", {"abl_w1": {}, "abl_w2": {}}),
                        runs) == ["setting/abl_w1", "setting/abl_w2"]
    assert camp.runs_of(Job("gradcam_train", "mnist"), runs) == [
        "gradcam/mnist/sgd/a1/s0", "gradcam/mnist/sam/a1/s0"]
    assert camp.runs_of(Job("bridges_sam_eos_run", "sam_eos"), runs) == ["sam_eos/gd",
                                                                        "sam_eos/sam"]
    assert camp.runs_of(Job("lesam_eval", "cost"), runs) == ["cost/sgd", "cost/sam"]
    assert camp.runs_of(Job("lesam_eval", "robustness"), runs) == []


def test_every_gpu_rule_reads_its_jobs_memory_from_the_map(repo):
    """Each rule that asks for a GPU gives its jobs the map's gpu_mem_mb (job_gpu_mem), so
    the campaign's pool packs them by their own shapes."""
    text = {p.stem: p.read_text() for p in (repo / "workflow/rules").glob("*.smk")}
    for rule in camp.gpu_rules(repo / "workflow/rules"):
        assert any(f'gpu_mem_mb=job_gpu_mem("{rule}"' in t for t in text.values()), rule


def _runner(seconds_each, log):
    def run(stage, allowed):
        log.append((stage.name, allowed))
        clock.t += min(seconds_each, allowed)
        return camp.StageResult(stage.name, 0, min(seconds_each, allowed),
                                stopped=seconds_each > allowed)
    return run


class clock:  # noqa: N801 - a fake monotonic clock
    t = 0.0

    def __call__(self):
        return clock.t


def test_the_watchdog_stops_launching_when_the_budget_is_spent():
    stages = [camp.Stage(f"c{i}", [f"figures/c{i}.csv"]) for i in range(4)]
    log: list = []
    clock.t = 0.0
    # 2 GPUs, 1 GPU-hour: each stage takes 20 minutes of wall time (0.67 GPU-hours)
    out = camp.run_stages(stages, _runner(1200, log), budget_gpu_hours=1.0, gpus=2,
                          clock=clock())
    assert out.bought == ["c0"] and out.stages[1].stopped
    assert out.not_started == ["c2", "c3"] and "budget spent during stage 'c1'" in out.ended
    assert log[1][1] == pytest.approx(600)  # the second stage may run the 10 minutes left
    clock.t = 0.0
    spent = camp.run_stages(stages, _runner(10, []), budget_gpu_hours=1.0, gpus=1,
                            spent_before=1.5, clock=clock())
    assert not spent.stages and spent.not_started == [s.name for s in stages]


def test_the_plan_runs_in_one_call_after_the_cpu_only_claims():
    """The CPU-only claims first (uncharged), then one call for every other target and the
    ledger, which buys the planned claims in the plan's order; the settled claims' figures
    are prioritized."""
    record = {"claims": {"a": {"planned": True, "runs": 2, "items": ["lesam/t1"],
                               "settled": True},
                         "b": {"planned": True, "runs": 0, "items": ["minorfirst/x"]},
                         "c": {"planned": False, "runs": 3, "items": ["lesam/t2"]},
                         "d": {"planned": True, "runs": 4, "items": ["lesam/t1", "lesam/t3"]}},
              "targets": ["figures/lesam/t1.csv", "figures/lesam/t3.csv",
                          "figures/minorfirst/x.csv", "figures/CLAIMS.md"]}
    stages = camp.stages_of(record)
    assert [(s.name, s.targets, s.charged, s.claims) for s in stages] == [
        (camp.CPU_STAGE, ["figures/minorfirst/x.csv"], False, []),
        (camp.PLAN_STAGE, ["figures/lesam/t1.csv", "figures/lesam/t3.csv",
                           "figures/CLAIMS.md"], True, ["a", "d", "ledger"])]
    assert stages[1].prioritize == ["figures/lesam/t1.csv"]
    clock.t = 0.0
    out = camp.run_stages(stages, _runner(10, []), budget_gpu_hours=1.0, gpus=1,
                          clock=clock())
    assert out.bought == [camp.CPU_STAGE, "a", "d", "ledger"]


def _plan_record(pid, hours, claims):
    return {"id": pid, "gpu_hours": hours, "targets": ["figures/CLAIMS.md"],
            "claims": {c: {"planned": True, "runs": 1, "items": [f"p/{c}"]} for c in claims}}


def test_budget_freed_by_packing_is_planned_again():
    """The plan priced 1 GPU-hour and its call took 0.25: the 2.75 left are planned again,
    and the claim the re-plan adds runs in one more call; a re-plan that adds nothing ends
    it, and the re-plans are bounded."""
    calls, adopted = [], []

    def run(stage, seconds):
        calls.append(stage.targets)
        clock.t += 900
        return camp.StageResult(stage.name, 0, 900)

    plans = iter([_plan_record("p2", 1.0, ["a", "b"]), _plan_record("p3", 0.5, ["a", "b"])])

    def replan(spent):
        assert spent == pytest.approx(0.25) if not adopted else spent > 0.25
        return next(plans)

    clock.t = 0.0
    out = camp.run_campaign(_plan_record("p1", 1.0, ["a"]), run, replan,
                            budget_gpu_hours=3.0, gpus=1, clock=clock(),
                            adopt=lambda new, runs: adopted.append((new["id"], runs)))
    assert out.bought == ["a", "ledger", "b"] and out.ended == "completed"
    assert calls == [["figures/p/a.csv", "figures/CLAIMS.md"],
                     ["figures/p/a.csv", "figures/p/b.csv", "figures/CLAIMS.md"]]
    assert adopted == [("p2", True), ("p3", False)]
    steps = out.extra["replans"]
    assert [s.get("new_claims") for s in steps] == [["b"], []]
    assert steps[0]["priced_gpu_hours"] == 1.0 and steps[0]["spent_gpu_hours"] == \
        pytest.approx(0.25)
    assert steps[1]["outcome"] == "the re-plan buys nothing new"
    assert out.spent_gpu_hours == pytest.approx(0.5)
    clock.t = 0.0
    never = camp.run_campaign(_plan_record("p1", 1.0, ["a"]), run, replan,
                              budget_gpu_hours=3.0, gpus=1, clock=clock(), max_replans=0)
    assert never.extra["replans"] == [] and never.bought == ["a", "ledger"]


def test_no_replan_without_freed_budget_nor_one_that_drops_a_claim():
    def run(stage, seconds):
        clock.t += 3600
        return camp.StageResult(stage.name, 0, 3600)

    clock.t = 0.0
    out = camp.run_campaign(_plan_record("p1", 0.5, ["a"]), run,
                            lambda spent: pytest.fail("re-planned"), budget_gpu_hours=3.0,
                            gpus=1, clock=clock())
    assert "packing freed nothing" in out.extra["replans"][0]["outcome"]
    clock.t = 0.0
    adopted = []
    out = camp.run_campaign(_plan_record("p1", 2.0, ["a"]), run,
                            lambda spent: _plan_record("p2", 1.0, ["b"]),
                            budget_gpu_hours=3.0, gpus=1, clock=clock(),
                            adopt=lambda new, runs: adopted.append(runs))
    assert adopted == [False] and out.bought == ["a", "ledger"]
    assert "drops claims already bought (a;" in out.extra["replans"][0]["outcome"]


def test_cpu_only_claims_are_built_first_and_never_charged():
    """An uncharged stage of 5 hours leaves a 1 GPU-hour budget whole for the GPU stages."""
    stages = [camp.Stage(camp.CPU_STAGE, ["figures/minorfirst/x.csv"], charged=False),
              camp.Stage("a", ["figures/a.csv"])]

    def run(stage, seconds):
        clock.t += 5 * 3600 if not stage.charged else 600
        return camp.StageResult(stage.name, 0, 0.0)

    clock.t = 0.0
    out = camp.run_stages(stages, run, budget_gpu_hours=1.0, gpus=1, clock=clock())
    assert out.bought == [camp.CPU_STAGE, "a"] and out.ended == "completed"
    assert out.spent_gpu_hours == pytest.approx(600 / 3600)


@pytest.mark.workflow  # runs snakemake
def test_tiny_campaign_runs_the_whole_path_on_the_cpu(repo, bin_dir, tmp_path):
    """The whole campaign path on the CPU, as on a GPU machine without network: its data
    arrive as one bundle (`sharpness data bundle` here, `sharpness data unbundle` there),
    downloads are off and any attempt would meet a proxy that answers nothing."""
    from tests.pipeline.helpers import copy_workflow

    (tmp_path / "work").mkdir()
    work = copy_workflow(repo, tmp_path / "work")
    env = dict(os.environ, PATH=f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}")
    bundle = tmp_path / "data.tar"
    for argv, cwd in ((["bundle", "--out", str(bundle), "--configfile",
                        "workflow/config/quick.yaml", "--no-download"], repo),
                      (["unbundle", str(bundle), "--root", "data"], work)):
        done = subprocess.run([str(bin_dir / "sharpness"), "data", *argv], cwd=cwd, env=env,
                              capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    (work / "tiny.yaml").write_text("data: {download: false}\n"
                                    "minorfirst:\n  l1_maxmargin: {alphas: [1.0], rhos: [0.1], "
                                    "steps: 400, record_every: 4}\n")
    offline = "http://127.0.0.1:9"  # the discard port: a download attempt fails at once
    env.update(http_proxy=offline, https_proxy=offline, HTTP_PROXY=offline, HTTPS_PROXY=offline)
    proc = subprocess.run([str(bin_dir / "sharpness"), "campaign", "--tiny", "--gpu-hours", "1",
                           "--claims", "mf-l1,ls-cost", "--cores", "2", "--configfile",
                           "workflow/config/quick.yaml", "--configfile", "tiny.yaml"],
                          cwd=work, env=env, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    out = work / "plans/campaign"
    record = json.loads((out / "campaign.json").read_text())
    # the CPU-only claim first (not charged), ls-cost's timed runs (a GPU-priced stage), the
    # ledger
    assert record["ended"] == "completed"
    assert record["bought"] == [camp.CPU_STAGE, "ls-cost", "ledger"]
    assert 0 < record["spent_gpu_hours"] < 1
    assert any("training step" in line for line in record["extra"]["preflight"])
    measured = yaml.safe_load((out / "measured.yaml").read_text())
    assert len(measured) == 1 and measured[0]["device"] == "cpu"
    assert (out / "profile/config.yaml").is_file() and (out / "plan.json").is_file()
    # tiny.yaml changes the profile's settings: the campaign builds its variant, beside the
    # default folders (sharpness.config.variant)
    (build,) = (work / "variants").glob("tiny-*")
    assert not (work / "figures").exists()
    assert (build / "figures/minorfirst/l1_maxmargin.csv").is_file()
    assert (build / "figures/lesam/table_cost.csv").is_file()
    plan = json.loads((out / "plan.json").read_text())
    assert "measured fp32 on cpu" in plan["pricing"]  # the plan priced from the measurement
    assert (build / "figures/CLAIMS.md").is_file()
    assert "**Variant:** variant 'tiny-" in (build / "figures/CLAIMS.md").read_text()


@pytest.mark.parametrize(("text", "seconds"), [("90m", 5400), ("3h", 10800), ("1h30m", 5400),
                                               ("02:00:00", 7200), ("45:00", 2700),
                                               ("3600", 3600), ("1d", 86400)])
def test_a_wall_time_as_an_allocation_states_it(text, seconds):
    assert camp.parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["", "3 hours", "h3", "1h30", "--"])
def test_a_malformed_wall_time_is_refused(text):
    with pytest.raises(ValueError, match="--max-wall"):
        camp.parse_duration(text)


def test_the_campaign_stops_cleanly_before_the_allocations_wall_time():
    """A 1-hour allocation, stages of 20 minutes, a budget of 10 GPU-hours: the third stage
    is cut at the wall limit less its margin (5 minutes), the fourth never starts, and the
    record says the next call continues."""
    stages = [camp.Stage(f"c{i}", [f"figures/c{i}.csv"]) for i in range(4)]
    log: list = []
    clock.t = 0.0
    out = camp.run_stages(stages, _runner(1200, log), budget_gpu_hours=10.0, gpus=1,
                          clock=clock(), max_wall_s=3600)
    assert out.bought == ["c0", "c1"] and out.stages[2].stopped
    assert log[2][1] == pytest.approx(3600 - 300 - 2400)
    assert "wall-time limit" in out.ended and "next call continues" in out.ended
    assert out.not_started == ["c3"]


def test_the_next_call_carries_the_gpu_hours_spent(tmp_path):
    from sharpness.commands.campaign import spent_before

    record = camp.Campaign(10.0, 1, spent_gpu_hours=0.9, ended="wall-time limit of the "
                           "allocation reached during stage 'c2': stopped cleanly")
    path = record.write(tmp_path / "campaign.json")
    assert spent_before(path, 10.0) == pytest.approx(0.9)
    assert spent_before(path, 20.0) == 0.0  # another budget: another campaign
    camp.Campaign(10.0, 1, spent_gpu_hours=0.9, ended="completed").write(path)
    assert spent_before(path, 10.0) == 0.0
    assert spent_before(tmp_path / "none.json", 10.0) == 0.0


def test_a_signal_stops_the_campaign_so_that_the_next_call_continues(tmp_path):
    """A stage stopped by SIGTERM (a scheduler's warning) ends the campaign like the wall
    limit: the rest not started, the record marked to continue, its spend carried."""
    from sharpness.commands.campaign import spent_before

    stages = [camp.Stage(f"c{i}", [f"figures/c{i}.csv"]) for i in range(3)]

    def run(stage, seconds):
        clock.t += 600
        if stage.name == "c1":
            return camp.StageResult(stage.name, -15, 600, stopped=True, signal="SIGTERM")
        return camp.StageResult(stage.name, 0, 600)

    clock.t = 0.0
    out = camp.run_stages(stages, run, budget_gpu_hours=10.0, gpus=1, clock=clock())
    assert out.bought == ["c0"] and out.not_started == ["c2"] and out.continues
    assert "stopped by SIGTERM during stage 'c1'" in out.ended
    path = out.write(tmp_path / "campaign.json")
    assert spent_before(path, 10.0) == pytest.approx(1200 / 3600)


def test_the_cpu_only_stage_is_cut_at_the_wall_limit_too():
    """The uncharged stage holds no GPU but does hold the allocation: it may run only until
    the wall limit less the margin, and being stopped there ends the campaign to continue."""
    stages = [camp.Stage(camp.CPU_STAGE, ["figures/minorfirst/x.csv"], charged=False),
              camp.Stage("a", ["figures/a.csv"])]
    log: list = []
    clock.t = 0.0
    out = camp.run_stages(stages, _runner(7200, log), budget_gpu_hours=1.0, gpus=1,
                          clock=clock(), max_wall_s=3600, margin_s=60)
    assert log == [(camp.CPU_STAGE, pytest.approx(3540))]
    assert out.continues and out.not_started == ["a"] and out.bought == []
    assert f"during stage {camp.CPU_STAGE!r}" in out.ended
    assert out.spent_gpu_hours == pytest.approx(0.0)  # never charged


def test_the_wall_margin_is_the_callers_when_given():
    stages = [camp.Stage("a", ["figures/a.csv"])]
    log: list = []
    clock.t = 0.0
    camp.run_stages(stages, _runner(10, log), budget_gpu_hours=1.0, gpus=1, clock=clock(),
                    max_wall_s=30, margin_s=0)
    assert log == [("a", pytest.approx(30))]
    assert camp.wall_margin(3600) == camp.WALL_MARGIN_S
    assert camp.wall_margin(100 * 3600) == pytest.approx(0.05 * 100 * 3600)
    with pytest.raises(ValueError, match="--wall-margin"):
        camp.parse_duration("5 min", flag="--wall-margin")


def test_a_resumed_campaign_reuses_this_devices_step_times_of_the_same_training_code(tmp_path):
    """The shapes this device measured with this training code are not measured again; its
    stale entries (other training code) are dropped to be measured again; other devices'
    entries are kept but price nothing here."""
    from sharpness.commands.campaign import reusable_entries
    from sharpness.cost import measure as meas
    from sharpness.cost.price import training_code

    def entry(device, code, **extra):
        return {"device": device, "commit": "abc", "code": code, "model": "resnet18",
                "dataset": "cifar10", "width": 1, "batch": 128, "optimizer": "sam",
                "precision": "fp32", "recipe": "configured", "packed": 1,
                "step_seconds": 0.1, **extra}

    here, stale = entry("NVIDIA H200", training_code()), entry("NVIDIA H200", "0" * 16)
    other, packed = entry("NVIDIA A100", training_code()), \
        entry("NVIDIA H200", training_code(), packed=4)
    path = meas.write([here, stale, other, packed], tmp_path / "measured.yaml")
    kept, reused = reusable_entries(path, "NVIDIA H200")
    assert [e["device"] for e in kept] == ["NVIDIA H200", "NVIDIA A100", "NVIDIA H200"]
    assert all(e["code"] == training_code() for e in kept)
    assert list(reused) == [("resnet18", "cifar10", 1.0, 128, "sam", "fp32")]
    assert reusable_entries(tmp_path / "absent.yaml", "cpu") == ([], {})


@pytest.mark.workflow  # runs snakemake -n
def test_snakemake_gives_each_job_the_maps_memory(repo, bin_dir, tmp_path):
    """The GPU rules' gpu_mem_mb is the map's value for the job (plan.gpu_mem_file), the
    rule's value for a job it does not name, and 0 without the key."""
    from sharpness.config.profiles import load_profile
    from sharpness.jobs import build_plan
    from tests.pipeline.helpers import copy_workflow, snakemake

    work = copy_workflow(repo, tmp_path, messages=False)  # jobs printed with their resources
    plan = build_plan(load_profile([str(repo / "workflow/config/quick.yaml")], None))
    mine, other = (plan.job("lesam_train", rid) for rid in plan.ids("lesam_train")[:2])
    camp.MemoryMap({mine.key: 1234}, {"lesam_train": 77}).write(work / "gpu_mem.json")
    record = {"id": "x", "file": "plan.json",
              "targets": ["figures/minorfirst/l1_maxmargin.csv", "figures/CLAIMS.md"]}
    (work / "plan.json").write_text("{}")
    targets = ["--", mine.outputs[0], other.outputs[0]]
    (work / "plain.yaml").write_text(yaml.safe_dump({"plan": record}))
    (work / "plan.yaml").write_text(yaml.safe_dump(
        {"plan": {**record, "gpu_mem_file": str(work / "gpu_mem.json")}}))
    dry = snakemake(bin_dir, work, "-n", "--configfile", "plan.yaml", *targets).stdout
    jobs = [block for block in dry.split("\n\n") if "rule lesam_train:" in block]
    assert len(jobs) == 2, dry[-3000:]
    by_run = {next(r for r in (mine.id, other.id) if f"run={r}" in b): b for b in jobs}
    assert "gpu_mem_mb=1234" in by_run[mine.id] and "gpu_mem_mb=77" in by_run[other.id]
    plain = snakemake(bin_dir, work, "-n", "--configfile", "plain.yaml", *targets).stdout
    assert "gpu_mem_mb=0" in plain and "gpu_mem_mb=1234" not in plain
