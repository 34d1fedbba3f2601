"""Planning: a workflow config expanded into the training jobs it will run (:func:`plan_jobs`),
each with its optimizer steps, examples per step and passes per step. See :mod:`sharpness.cost`."""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any

from sharpness.cost.eos_steps import EXPECTED_BASIS, expected_sweep
from sharpness.eos.config import ablation_settings, expand_settings
from sharpness.lesam import experiments as exp
from sharpness.lesam import steps as lesam_steps
from sharpness.mappings import deep_merge  # the same recursive merge the rules use
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

    @property
    def until_goal(self) -> bool:
        """A full-batch run from a fixed init that trains until its loss goal."""
        return self.cap is not None

    @property
    def bound(self) -> bool:
        """Priced at its cap, an upper limit (no expected step count)."""
        return self.cap is not None and not self.expected

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


def _train_job(paper: str, items: list[str], run: str, cfg: dict[str, Any],
               n_train: int | None = None) -> Job:
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
               optimizer=str(cfg.get("optimizer", "sgd")), config=dict(cfg))


def _longtail_size(n_per_class: int, classes: int, factor: float) -> int:
    """Examples of an exponential long-tail profile (Cui et al., 2019): class c keeps
    ``n * factor^(-c / (C - 1))``."""
    return sum(int(n_per_class * factor ** (-c / (classes - 1))) for c in range(classes))


# -- expansion of each paper's section ----------------------------------------------------------

def lesam_jobs(section: dict[str, Any]) -> list[Job]:
    """Training runs of every lesam item (shared runs listed under each item that reads them)."""

    runs = exp.training_runs(section)
    by_run: dict[str, list[str]] = {}
    extra: list[Job] = []
    for item, spec in section.get("items", {}).items():
        groups = lesam_steps.item_groups(section, item)
        wanted = [rid for rid, r in runs.items() if r["group"] in groups]
        todo = list(wanted)
        while todo:  # the runs they start from (fine-tuning from a pre-trained model)
            for dep in runs[todo.pop()]["depends"]:
                if dep not in wanted:
                    wanted.append(dep)
                    todo.append(dep)
        for rid in wanted:
            by_run.setdefault(rid, []).append(item)
        if item == "table_cost":  # timed steps of each optimizer, measured in one process
            steps = spec.get("steps", 20) * spec.get("rounds", 1)
            for opt in spec.get("optimizers", []):
                hp = section.get("optimizers", {}).get(opt, {})
                job = _train_job("lesam", [item], f"cost/{opt}", {
                    **section["base"], "optimizer": opt, "opt_hparams": hp})
                job.steps, job.eval_examples = steps, 0
                extra.append(job)
    jobs = [_train_job("lesam", items, rid, runs[rid]["config"])
            for rid, items in by_run.items()] + extra
    for rid, r in exp.glmc_runs(section).items():
        cfg = r["config"]
        n_full, _, _, classes, _ = data_shape(cfg["dataset"])
        n = _longtail_size(n_full // classes, classes, float(r["imbalance_factor"]))
        job = _train_job("lesam", ["table_long_tail"], f"glmc/{rid}", cfg, n_train=n)
        job.passes *= METHOD_PASSES["glmc"]
        jobs.append(job)
    for label, r in exp.signal_runs(section).items():
        jobs.append(_train_job("lesam", ["fig_signal"], f"signal/{label}", r["config"]))
    return jobs



def _fullbatch_job(paper: str, items: list[str], run: str, setting: dict[str, Any], *,
                   optimizer: str, hparams: dict[str, Any]) -> Job:
    n_full, _, _, _, _ = data_shape(setting["dataset"])
    n = min(setting.get("train_size") or n_full, n_full)
    steps = int(setting.get("max_steps", 1000))
    every = setting.get("sharpness_every") or 0
    lanczos = (steps // every) * LANCZOS_ITERS * 2.0 if every else 0.0
    return Job(paper, items, run, setting["model"], setting["dataset"],
               float(setting.get("width", 1.0)), dict(setting.get("model_kwargs", {})), n, n,
               steps, _passes(optimizer, hparams), 0, extra_passes=lanczos,
               cap=(steps, lanczos))


def eos_jobs(section: dict[str, Any]) -> list[Job]:
    """Per eos setting: the gradient-flow reference and full-batch GD at every learning rate,
    priced at the steps expected from measured counts (:mod:`sharpness.cost.eos_steps`)
    where a count of its data set x model x loss was measured, else at its caps; ``cap``
    holds the caps either way."""

    settings = expand_settings(section)
    users: dict[str, list[str]] = {}
    for fig, names in section.get("figures", {}).items():
        for name in names:
            users.setdefault(name, []).append(fig)
    for name in ablation_settings(section):
        users.setdefault(name, []).append("fig_ablations")
    jobs = []
    for name, items in users.items():
        s = settings[name]
        lrs = len(s.get("lr_factors", [])) + len(s.get("lrs", []))
        job = _fullbatch_job("eos", items, f"setting/{name}", s, optimizer="sgd", hparams={})
        job.steps *= max(lrs, 1)
        job.extra_passes *= max(lrs, 1)
        job.extra_passes += float(s.get("flow", {}).get("max_evals", 0))  # flow evaluations
        job.cap = (job.steps, job.extra_passes)
        job.notes.append(f"{lrs} learning rates + gradient flow")
        expected = expected_sweep(s, job.n_train, LANCZOS_ITERS * 2.0)
        if expected is not None:
            job.steps, job.expected = expected.steps, EXPECTED_BASIS
            job.extra_passes = expected.lanczos_passes + expected.flow_passes
            job.notes.append(expected.note)
        jobs.append(job)
    return jobs


def gradcam_jobs(section: dict[str, Any]) -> list[Job]:
    """minorfirst's Grad-CAM item: every data set x optimizer x init scale x seed."""
    jobs = []
    for key, ds in section.get("datasets", {}).items():
        for opt_key, opt in section.get("optimizers", {}).items():
            for alpha in section.get("alphas", []):
                for seed in section.get("seeds", []):
                    cfg = deep_merge(section["train"], {"dataset": ds["name"],
                                 "optimizer": opt["name"], "opt_hparams": opt["hparams"]})
                    jobs.append(_train_job("minorfirst", ["gradcam"],
                                           f"gradcam/{key}/{opt_key}/a{alpha}/s{seed}", cfg))
    return jobs


def bridges_jobs(section: dict[str, Any]) -> list[Job]:
    """The SAM-at-the-edge-of-stability bridge: GD, SAM, LE-SAM over one learning-rate grid."""
    spec = section.get("sam_eos")
    if not spec:
        return []
    from sharpness.bridges.sam_eos import (  # lazy: torch; `sharpness cost` needs none
        ENGINE_NAMES,
        SamEosParams,
    )

    params = SamEosParams.from_dict(spec)
    optimizers = params.optimizers
    setting = {**SamEosParams().setting, **params.setting}
    lrs = len(setting.get("lr_factors", [])) + len(setting.get("lrs", []))
    jobs = []
    for opt in optimizers:
        job = _fullbatch_job("bridges", ["sam_eos"], f"sam_eos/{opt['name']}", setting,
                             optimizer=ENGINE_NAMES[opt["name"]], hparams=opt.get("hparams", {}))
        job.steps *= max(lrs, 1)
        job.extra_passes *= max(lrs, 1)
        job.cap = (job.steps, job.extra_passes)  # no measured counts: priced at its caps
        jobs.append(job)
    return jobs


def plan_jobs(config: dict[str, Any]) -> list[Job]:
    """Every priced job of a workflow config, paper by paper."""
    jobs: list[Job] = []
    if config.get("lesam"):
        jobs += lesam_jobs(config["lesam"])
    if config.get("eos"):
        jobs += eos_jobs(config["eos"])
    if config.get("gradcam"):
        jobs += gradcam_jobs(config["gradcam"])
    if config.get("bridges"):
        jobs += bridges_jobs(config["bridges"])
    return jobs


# -- pricing -------------------------------------------------------------------------------------
