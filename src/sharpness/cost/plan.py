"""Planning: the training jobs of a workflow config's plan (:func:`plan_jobs`, from
:func:`sharpness.jobs.build_plan`, the plan the workflow runs), each with its optimizer steps,
examples per step and passes per step. See :mod:`sharpness.cost`."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from sharpness.cost.eos_steps import EXPECTED_BASIS, expected_sweep
from sharpness.eos.jobs import drawn_by, planned_settings
from sharpness.eos.setting import resolve_setting
from sharpness.gradcam.runs import run_config
from sharpness.jobs import Plan, build_plan
from sharpness.lesam import steps as lesam_steps
from sharpness.lesam.jobs import train_runs
from sharpness.optim.spec import optimizer_spec, optimizer_specs

#: per data set: (training examples, channels, side, classes); test examples for evaluation
DATA_SHAPES: dict[str, tuple[int, int, int, int, int]] = {
    "mnist": (60000, 1, 28, 10, 10000),
    "mnist_embedded": (5000, 1, 28, 10, 1000),
    "cifar10": (50000, 3, 32, 10, 10000),
    "cifar10_embedded": (4000, 3, 32, 10, 1000),
    "cifar100": (50000, 3, 32, 100, 10000),
    "svhn": (73257, 3, 32, 10, 26032),
    "mnist_on_cifar": (4000, 3, 32, 10, 1000),
    "imagenet": (1281167, 3, 224, 1000, 50000),
}

#: forward+backward passes of one optimizer step at its defaults, as each optimizer's entry of
#: ``optimizers.yaml`` declares (:func:`sharpness.optim.spec.passes_per_step` adds Eigen-SAM's HVPs)
PASSES: dict[str, float] = {name: s.passes_per_step for name, s in optimizer_specs().items()}
#: passes of one closure call (one loss and its backward) of a training method, times the
#: optimizer's passes per step: GLMC's loss runs the network on two mixed batches (the MixUp
#: and the CutMix mixture, :meth:`sharpness.lesam.glmc.GLMCMethod.closure`), each a full pass
METHOD_PASSES: dict[str, float] = {"glmc": 2.0}
#: a forward+backward pass costs about three forward passes (the usual rule for conv nets)
BACKWARD_FACTOR = 3.0
#: Lanczos iterations of one sharpness measurement (each a Hessian-vector product ~ 2 passes)
LANCZOS_ITERS = 20

#: default sustained throughput of the analytic estimate, TFLOP/s of one GPU (bf16)
DEFAULT_TFLOPS = 40.0
#: fp32 throughput as a fraction of the bf16 one in the analytic estimate
FP32_FRACTION = 0.5
FP32_SOURCE = ("fp32 is priced at half the bf16 throughput, an assumption: an A100's TF32 "
               "tensor-core peak (156 TFLOP/s, used by cuDNN convolutions under PyTorch's "
               "defaults) is half its bf16 peak (312); matmuls (ViT) run in plain fp32 under "
               "those defaults and will be slower than this; pass --tflops-fp32 to use your "
               "own")
TFLOPS_SOURCE = ("an assumption, not a measurement: 40 TFLOP/s is about 1,600 ResNet-50 "
                 "training images/s at 24.6 GFLOP each (8.2 GFLOP forward, counting a "
                 "multiply-add as 2 FLOPs, x3 for the backward pass), a conservative figure "
                 "for one A100/H100-class GPU in bf16 on convolutional nets, which run far "
                 "below the chip's peak; pass --tflops to use your own")


@dataclass
class Job:
    """One training run (or sweep) as the workflow would run it."""

    paper: str
    items: list[str]
    run: str
    model: str
    dataset: str
    width: float
    model_kwargs: dict[str, Any]
    n_train: int
    batch: int  # examples one optimizer step sees (global batch; full set for full-batch)
    steps: int  # optimizer steps
    passes: float  # forward+backward passes per step
    eval_examples: int  # examples evaluated (forward only) over the whole run
    extra_passes: float = 0.0  # full-set passes beyond the steps (flows, Lanczos)
    gpus: int = 1
    precision: str = "fp32"  # as configured: "bf16" (autocast, `bf16: true`) or "fp32"
    notes: list[str] = field(default_factory=list)
    optimizer: str = "sgd"  # the method of its steps (what `sharpness cost measure` times)
    config: dict[str, Any] = field(default_factory=dict, repr=False)  # its train config
    # full-batch runs stop at their loss goal, at the latest at their caps: (steps,
    # extra_passes) at max_steps and the flow's max_evals; None: a run of fixed length
    cap: tuple[int, float] | None = None
    expected: str = ""  # steps/extra_passes are expected below the cap (the basis); "": at it
    plan_job: str = ""  # the plan job (``rule/id``, :mod:`sharpness.jobs`) this prices
    # an eos setting's gradient flow: its part of extra_passes (as priced, at the caps)
    flow_passes: tuple[float, float] = (0.0, 0.0)

    @property
    def until_goal(self) -> bool:
        """A full-batch run from a fixed init that trains until its loss goal."""
        return self.cap is not None

    @property
    def bound(self) -> bool:
        """Priced at its cap, an upper limit (no expected step count)."""
        return self.cap is not None and not self.expected

    def flow_share(self) -> tuple[float, float]:
        """The gradient flow's share of this job's price, as priced and at its caps: its
        passes over all the job's full-set passes (a full-batch job's price is linear in
        them: a step is ``passes`` of them, and it evaluates nothing besides)."""
        cap_steps, cap_extra = self.cap if self.cap is not None else (self.steps,
                                                                       self.extra_passes)

        def share(steps: float, extra: float, flow: float) -> float:
            total = steps * self.passes + extra
            return flow / total if total > 0 else 0.0

        return (share(self.steps, self.extra_passes, self.flow_passes[0]),
                share(cap_steps, cap_extra, self.flow_passes[1]))

    def at_cap(self) -> Job:
        """This job with the steps and passes of its cap (itself when it has none)."""
        if self.cap is None:
            return self
        return replace(self, steps=self.cap[0], extra_passes=self.cap[1], expected="")

    @property
    def shape_key(self) -> tuple[Any, ...]:
        """What a step-time measurement depends on."""
        side, ch, classes = data_shape(self.dataset)[2], data_shape(self.dataset)[1], \
            data_shape(self.dataset)[3]
        return (self.model, self.width, tuple(sorted(self.model_kwargs.items())), ch, side,
                classes, max(1, min(self.batch // self.gpus, 1024)))


#: images per domain and classes of the single-source DG sets (``pacs:<domain>``: train on
#: one domain, test on the others; the counts DomainBed's copies hold)
DOMAIN_SIZES: dict[str, tuple[dict[str, int], int]] = {
    "pacs": ({"art_painting": 2048, "cartoon": 2344, "photo": 1670, "sketch": 3929}, 7),
    "vlcs": ({"Caltech101": 1415, "LabelMe": 2656, "SUN09": 3282, "VOC2007": 3376}, 5),
}


def data_shape(dataset: str) -> tuple[int, int, int, int, int]:
    """(train examples, channels, side, classes, test examples) of a data set."""
    base, _, source = dataset.partition(":")
    if base in DOMAIN_SIZES and source in DOMAIN_SIZES[base][0]:
        sizes, classes = DOMAIN_SIZES[base]
        return sizes[source], 3, 224, classes, sum(sizes.values()) - sizes[source]
    if dataset not in DATA_SHAPES:
        raise KeyError(f"sharpness cost: no size known for data set {dataset!r}; known: "
                       f"{', '.join(sorted(DATA_SHAPES))}")
    return DATA_SHAPES[dataset]


def _steps_per_epoch(n: int, batch: int, drop_last: bool) -> int:
    b = min(batch, n)
    return n // b if drop_last else math.ceil(n / b)


def passes_per_step(optimizer: str, hparams: dict[str, Any] | None = None) -> float:
    """Forward+backward passes of one optimizer step (the planner's price of a step)."""
    return _passes(optimizer, hparams or {})


def _passes(optimizer: str, hparams: dict[str, Any]) -> float:
    # the optimizer's declaration; an optimizer optimizers.yaml does not declare raises KeyError
    return optimizer_spec(optimizer).passes(hparams)


def _train_job(paper: str, items: list[str], run: str, cfg: Mapping[str, Any],
               n_train: int | None = None, plan_job: str = "") -> Job:
    n_full, _, _, _, n_test_full = data_shape(cfg["dataset"])
    n = n_train if n_train is not None else min(cfg.get("train_size") or n_full, n_full)
    n_test = min(cfg.get("test_size") or n_test_full, n_test_full)
    bs = min(cfg.get("batch_size", 128), n)
    epochs = cfg.get("epochs", 1)
    steps = _steps_per_epoch(n, bs, cfg.get("drop_last", False)) * epochs
    evals = cfg.get("eval_every", 1)
    return Job(paper, items, run, cfg["model"], cfg["dataset"], float(cfg.get("width", 1.0)),
               {k: v for k, v in cfg.get("model_kwargs", {}).items() if k != "pretrained"},
               n, bs, steps, _passes(cfg.get("optimizer", "sgd"), cfg.get("opt_hparams", {})),
               (epochs // evals if evals else 1) * n_test, gpus=int(cfg.get("gpus", 1)),
               precision="bf16" if cfg.get("bf16") else "fp32",
               optimizer=str(cfg.get("optimizer", "sgd")), config=dict(cfg), plan_job=plan_job)


def _longtail_size(n_per_class: int, classes: int, factor: float) -> int:
    """Examples of an exponential long-tail profile (Cui et al., 2019): class c keeps
    ``n * factor^(-c / (C - 1))``."""
    return sum(int(n_per_class * factor ** (-c / (classes - 1))) for c in range(classes))


# -- the plan's training jobs, priced ------------------------------------------------------------
#
# The jobs come from the build's plan (:func:`sharpness.jobs.build_plan`, the object the
# Snakefile's rules read): no run list is expanded here. Each priced job names the plan job it
# prices (``plan_job``: ``rule/id``); a plan job that runs several trainings in one process (a
# gradcam data set, the eos ablation variants, the sam_eos optimizers) is priced as one
# :class:`Job` per training, each from the plan job's own config.

# The priced rules: lesam_train, lesam_glmc, lesam_signal, eos_setting, eos_ablations,
# gradcam_train, bridges_sam_eos_run, and the cost table's evaluation job (``lesam_eval`` of
# :data:`COST_ITEM`), which times optimizer steps. Not priced: the evaluations, tables and
# figures, the diagonal-network and toy runs (CPU), and an eos setting no figure job draws.

#: the lesam item whose evaluation job times steps of each optimizer (priced as cost/<opt>)
COST_ITEM = "table_cost"


def _plan(paper: str, section: Mapping[str, Any], plan: Plan | None) -> Plan:
    """``plan``, or the plan of a config holding ``section`` alone (the providers read their
    own section only)."""
    return plan if plan is not None else build_plan({paper: section})


def lesam_jobs(section: dict[str, Any], plan: Plan | None = None) -> list[Job]:
    """The plan's lesam training runs that some item reads (or a run they start from),
    listed under each item that reads them; the cost table's timed steps (``cost/<opt>``,
    from its evaluation job's resolved config); the GLMC runs (at the long-tail profile's
    size) and the signal probes."""

    plan = _plan("lesam", section, plan)
    runs = train_runs(plan)
    by_run: dict[str, list[str]] = {}
    for item in section.get("items", {}):
        groups = lesam_steps.item_groups(section, item)
        wanted = [rid for rid, run in runs.items() if run.group in groups]
        todo = list(wanted)
        while todo:  # the runs they start from (fine-tuning from a pre-trained model)
            for dep in runs[todo.pop()].depends:
                if dep not in wanted:
                    wanted.append(dep)
                    todo.append(dep)
        for rid in wanted:
            by_run.setdefault(rid, []).append(item)
    trained = plan.of_rule("lesam_train")
    jobs = [_train_job("lesam", items, rid, runs[rid].config, plan_job=trained[rid].key)
            for rid, items in by_run.items()]
    what = next(w for w, item in lesam_steps.EVAL_ITEMS.items() if item == COST_ITEM)
    timing = plan.of_rule("lesam_eval").get(what)
    if timing is not None:  # timed steps of each optimizer, measured in one process
        params = timing.config["params"]
        steps = params.get("steps", 20) * params.get("rounds", 1)
        for opt in params.get("optimizers", []):
            job = _train_job("lesam", [COST_ITEM], f"cost/{opt}", {
                **params["config"], "optimizer": opt,
                "opt_hparams": params["optimizer_hparams"][opt]}, plan_job=timing.key)
            job.steps, job.eval_examples = steps, 0
            jobs.append(job)
    for rid, run in plan.of_rule("lesam_glmc").items():
        cfg = run.config["config"]
        n_full, _, _, classes, _ = data_shape(cfg["dataset"])
        n = _longtail_size(n_full // classes, classes, float(cfg["glmc"]["imbalance_factor"]))
        job = _train_job("lesam", ["table_long_tail"], f"glmc/{rid}", cfg, n_train=n,
                         plan_job=run.key)
        job.passes *= METHOD_PASSES["glmc"]
        jobs.append(job)
    for label, run in plan.of_rule("lesam_signal").items():
        jobs.append(_train_job("lesam", ["fig_signal"], f"signal/{label}", run.config["config"],
                               plan_job=run.key))
    return jobs


def _fullbatch_job(paper: str, items: list[str], run: str, setting: dict[str, Any], *,
                   optimizer: str, hparams: dict[str, Any], plan_job: str = "") -> Job:
    """One full-batch sweep's job at its caps, from the eos ``setting`` resolved as its run
    resolves it (:func:`sharpness.eos.setting.resolve_setting`: a key the profile leaves out
    is priced at the run's default)."""
    n_full, _, _, _, _ = data_shape(setting["dataset"])
    n = min(setting["train_size"] or n_full, n_full)
    steps = int(setting["max_steps"])
    every = setting["sharpness_every"] or 0
    lanczos = (steps // every) * LANCZOS_ITERS * 2.0 if every else 0.0
    return Job(paper, items, run, setting["model"], setting["dataset"],
               float(setting["width"]), dict(setting["model_kwargs"]), n, n,
               steps, _passes(optimizer, hparams), 0, extra_passes=lanczos,
               cap=(steps, lanczos), plan_job=plan_job)


def eos_jobs(section: dict[str, Any], plan: Plan | None = None) -> list[Job]:
    """Per eos setting a figure job of the plan draws (the figures that read its sweep are
    its items): the gradient-flow reference and full-batch GD at every learning rate,
    priced at the steps expected from measured counts (:mod:`sharpness.cost.eos_steps`)
    where a count of its data set x model x loss was measured, else at its caps; ``cap``
    holds the caps either way. A setting no figure draws (one the profile drops) is not
    priced."""

    plan = _plan("eos", section, plan)
    settings = planned_settings(plan)
    jobs = []
    for name, items in drawn_by(plan).items():
        key, planned = settings[name]
        s = resolve_setting(dict(planned))
        lrs = len(s["lr_factors"]) + len(s["lrs"])
        job = _fullbatch_job("eos", items, f"setting/{name}", s, optimizer="sgd", hparams={},
                             plan_job=key)
        job.steps *= max(lrs, 1)
        job.extra_passes *= max(lrs, 1)
        flow_cap = float(s["flow"]["max_evals"])  # flow evaluations
        job.extra_passes += flow_cap
        job.cap = (job.steps, job.extra_passes)
        job.flow_passes = (flow_cap, flow_cap)
        job.notes.append(f"{lrs} learning rates + gradient flow")
        expected = expected_sweep(s, job.n_train, LANCZOS_ITERS * 2.0)
        if expected is not None:
            job.steps, job.expected = expected.steps, EXPECTED_BASIS
            job.extra_passes = expected.lanczos_passes + expected.flow_passes
            job.flow_passes = (expected.flow_passes, flow_cap)
            job.notes.append(expected.note)
        jobs.append(job)
    return jobs


def gradcam_jobs(section: dict[str, Any], plan: Plan | None = None) -> list[Job]:
    """minorfirst's Grad-CAM item: each ``gradcam_train`` job of the plan (one data set)
    expanded from its own config file: every optimizer x init scale x seed of it."""
    jobs = []
    for key, train in _plan("gradcam", section, plan).of_rule("gradcam_train").items():
        params = train.config
        for opt_key in params["optimizers"]:
            for alpha in params["alphas"]:
                for seed in params["seeds"]:  # the config the study trains (its train_size too)
                    cfg = run_config(params, key, opt_key, alpha, seed)
                    jobs.append(_train_job("minorfirst", ["gradcam"],
                                           f"gradcam/{key}/{opt_key}/a{alpha}/s{seed}", cfg,
                                           plan_job=train.key))
    return jobs


def bridges_jobs(section: dict[str, Any], plan: Plan | None = None) -> list[Job]:
    """The SAM-at-the-edge-of-stability bridge (the plan's ``bridges_sam_eos_run`` job, from
    its config): GD, SAM, LE-SAM over one learning-rate grid, one priced job each."""
    run = _plan("bridges", section, plan).of_rule("bridges_sam_eos_run").get("sam_eos")
    if run is None or not run.config:
        return []
    from sharpness.bridges.sam_eos import (  # lazy: torch; `sharpness cost` needs none
        ENGINE_NAMES,
        SamEosParams,
    )

    params = SamEosParams.from_dict(run.config)
    optimizers = params.optimizers
    setting = resolve_setting(dict(params.setting))  # as the bridge's run resolves it
    lrs = len(setting["lr_factors"]) + len(setting["lrs"])
    jobs = []
    for opt in optimizers:
        job = _fullbatch_job("bridges", ["sam_eos"], f"sam_eos/{opt['name']}", setting,
                             optimizer=ENGINE_NAMES[opt["name"]], hparams=opt.get("hparams", {}),
                             plan_job=run.key)
        job.steps *= max(lrs, 1)
        job.extra_passes *= max(lrs, 1)
        job.cap = (job.steps, job.extra_passes)  # no measured counts: priced at its caps
        jobs.append(job)
    return jobs


def plan_jobs(config: Mapping[str, Any]) -> list[Job]:
    """Every priced job of a workflow config, paper by paper: the training jobs of its plan
    (:func:`sharpness.jobs.build_plan`, built once per process and config)."""
    plan = build_plan(config)
    jobs: list[Job] = []
    if config.get("lesam"):
        jobs += lesam_jobs(dict(config["lesam"]), plan)
    if config.get("eos"):
        jobs += eos_jobs(dict(config["eos"]), plan)
    if config.get("gradcam"):
        jobs += gradcam_jobs(dict(config["gradcam"]), plan)
    if config.get("bridges"):
        jobs += bridges_jobs(dict(config["bridges"]), plan)
    return jobs


# -- pricing -------------------------------------------------------------------------------------
