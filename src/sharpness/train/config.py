"""The run configuration of a training run: a plain dict, validated with errors naming the key.

A run is data (design principle 2): the workflow puts one dict a run in the config, and
:func:`validate_config` fills the defaults and checks every key, so a typo or a bad value stops
the run at load with ``ConfigError: train config key 'lr': ...`` instead of hours later.

Keys (defaults in :data:`DEFAULTS`):

data
    ``dataset`` (registry name, e.g. ``cifar10_embedded``), ``data_root``, ``train_size`` /
    ``test_size`` (first N examples), ``classes`` (keep only these labels, relabelled 0..k-1),
    ``normalize`` (per-channel standardisation with train-set statistics, done inside the
    model so saved models take raw [0, 1] images, as Grad-CAM and PGD want), ``stand_ins``
    (labels such as ``"MNIST-on-CIFAR crops for SVHN"``, copied into the provenance).
model
    ``model`` (name in :data:`sharpness.models.MODELS`), ``width``, ``model_kwargs``,
    ``init_from`` (a run's ``model.pt``: parameters of matching name and shape are loaded
    after the seeded init, the rest, e.g. a new head, keep theirs; for fine-tuning),
    ``init_exclude`` (state-dict key prefixes never loaded, e.g. ``["net.heads"]`` for a fresh
    ViT head, ``["net.fc"]`` for a ResNet's).
optimizer
    ``optimizer`` (name in :data:`sharpness.optim.OPTIMIZERS`), ``lr``, ``momentum``,
    ``weight_decay``, ``nesterov``, ``opt_hparams`` (``rho``, ``sigma``, ...).
schedule and loss
    ``mode``: ``minibatch`` (epochs over shuffled batches) or ``fullbatch`` (GD on the whole
    train set until ``loss_goal`` or ``max_steps``); ``epochs``, ``batch_size``, ``drop_last``,
    ``max_steps``, ``loss_goal``, ``lr_schedule`` (``cosine``/``constant``, per step;
    default cosine for mini-batch, constant for full-batch; ``cosine_epoch``: cosine stepped
    once per epoch, as the official LE-SAM/ESAM/ASAM/Eigen-SAM loops),
    ``warmup_steps``, ``loss`` (``ce``/``mse``), ``label_smoothing``, ``augment``
    (``crop`` padding, ``flip``, ``cutout`` size; mini-batch only).
logging and checkpoints
    ``log_every`` (steps between step rows in metrics.jsonl; default 0 = none in mini-batch
    mode, 1 in full-batch mode), ``eval_every`` (test evaluation every N epochs / steps;
    default 1 epoch / 0 = only at the end), ``sharpness_every`` (epochs / steps; needs a
    sharpness hook), ``checkpoint_every`` (default 1 epoch / 500 steps), ``fullbatch_chunk`` (examples a forward pass in
    full-batch mode; gradients are summed exactly), ``diverge_loss`` (loss above it counts as
    divergence, besides NaN/inf), ``diverge_factor`` (a loss above this many times the
    run's initial loss counts as divergence; default
    :data:`sharpness.runs.state.BLOW_UP_FACTOR`; see :mod:`sharpness.runs.state`).
run
    ``seed``, ``device`` (``auto``/``cpu``/``cuda``), ``bf16`` (autocast on CUDA; float16 is
    refused, see :mod:`sharpness.train.performance`), ``deterministic`` (off: cuDNN
    autotuning), ``channels_last`` (``auto``: convolutional nets on CUDA),
    ``data_on_device`` (``auto``: small-image sets live on the device, see
    :mod:`sharpness.train.device_data`), ``loader_workers`` (DataLoader path), ``gpus``
    (processes of a DistributedDataParallel run launched by ``torchrun``; ``batch_size`` is
    the global batch, each process perturbs on ``batch_size / gpus`` examples, see
    :mod:`sharpness.train.distributed`), ``ddp_perturbation`` (``local``: m-sharpness with
    m = per-device batch; ``global``: the all-reduced gradient, as the LE-SAM code's DDP loop), ``sharpness_fn`` / ``metrics_fn`` (``module:function`` of hooks the
    CLI can load), ``sources`` (setting -> where its value comes from, ``official: ...``,
    ``paper: ...`` or ``choice: ...``; recorded in the provenance, never read by training),
    ``tags`` (name -> text a study gives the run, e.g. the lesam run's ``group`` and
    ``label``; recorded in the provenance, where tables read which run is which, never read
    by training).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sharpness.errors import ConfigError, key_path, nonfinite
from sharpness.mappings import deep_merge
from sharpness.models import model_problem
from sharpness.optim.spec import optimizer_spec, optimizer_specs
from sharpness.runs.state import BLOW_UP_FACTOR

#: config keys or values that ask for float16 autocast, which :func:`refuse_fp16` rejects
#: (why: :mod:`sharpness.train.performance`)
FP16_KEYS = ("fp16", "amp", "half")
FP16_VALUES = ("fp16", "float16", "half", "16", "16-mixed")

FP16_REASON = ("float16 autocast is not supported: it needs a GradScaler, and SAM-type "
               "optimizers build their perturbation from the first pass's gradients, which a "
               "scaler leaves scaled (or inf) between the two passes; use `bf16: true` "
               "(bfloat16 autocast on CUDA, no loss scaling needed)")

#: optimizers whose step is exactly one clean and one perturbed closure call (or one pass),
#: which is what a multi-process run's no_sync / synchronised split needs
#: (:mod:`sharpness.train.distributed`; their declarations say so)
DDP_OPTIMIZERS = tuple(name for name, spec in optimizer_specs().items() if spec.distributed)

#: augmentation options and defaults; Cutout fires with probability ``cutout_p``, 0.5 as the
#: official ESAM code (dydjw9/Efficient_SAM utils/cutout.py)
AUGMENT_KEYS = {"crop": 0, "flip": False, "cutout": 0, "cutout_p": 0.5}
DEFAULTS: dict[str, Any] = {
    # data
    "dataset": None,
    "data_root": "data",
    "train_size": None,
    "test_size": None,
    "classes": None,
    "normalize": True,
    "stand_ins": [],
    # model
    "model": None,
    "width": 1.0,
    "model_kwargs": {},
    "init_from": None,
    "init_exclude": [],
    "freeze_bn": False,  # BatchNorm in eval mode while training (DomainBed's ResNet)
    # optimizer
    "optimizer": "sgd",
    "lr": 0.1,
    "momentum": 0.9,
    "weight_decay": 5e-4,
    "nesterov": False,
    "opt_hparams": {},
    # schedule and loss
    "mode": "minibatch",
    "epochs": 1,
    "batch_size": 128,
    "drop_last": False,
    "max_steps": 1000,
    "loss_goal": None,
    "lr_schedule": None,
    "warmup_steps": 0,
    "loss": "ce",
    "label_smoothing": 0.0,
    "augment": AUGMENT_KEYS,
    # logging and checkpoints
    "log_every": None,
    "eval_every": None,
    "sharpness_every": 0,
    "checkpoint_every": None,
    "fullbatch_chunk": None,
    "diverge_loss": None,
    "diverge_factor": BLOW_UP_FACTOR,
    # run
    "seed": 0,
    "device": "auto",
    "bf16": False,
    "deterministic": True,
    "channels_last": "auto",
    "data_on_device": "auto",
    "loader_workers": 0,
    "gpus": 1,
    "ddp_perturbation": "local",
    "sharpness_fn": None,
    "metrics_fn": None,
    "sources": {},
    "tags": {},
}

REQUIRED = ("dataset", "model")


def _fail(key: str, reason: str) -> ConfigError:
    return ConfigError(f"train config key {key!r}: {reason}")


def _check_type(cfg: dict[str, Any], key: str, types: tuple[type, ...], *,
                optional: bool = False) -> None:
    value = cfg[key]
    if value is None and optional:
        return
    if isinstance(value, bool) and bool not in types:
        raise _fail(key, f"expected {' or '.join(t.__name__ for t in types)}, got bool {value}")
    if not isinstance(value, types):
        raise _fail(key, f"expected {' or '.join(t.__name__ for t in types)}"
                         f"{' or null' if optional else ''}, got {type(value).__name__} "
                         f"{value!r}")


def _check(cfg: dict[str, Any], key: str, ok: Callable[[Any], bool], reason: str) -> None:
    if cfg[key] is not None and not ok(cfg[key]):
        raise _fail(key, f"{reason}, got {cfg[key]!r}")


def validate_config(config: dict[str, Any], *, resolved: bool = False) -> dict[str, Any]:
    """Return ``config`` with defaults filled in and its ``opt_hparams`` resolved, or raise
    ``ConfigError`` naming the key.

    The model and optimizer names are checked against their registries, and the model's own
    options against the builder's signature, so every typo fails here. The hyper-parameters
    are resolved by the optimizer's spec (:meth:`sharpness.optim.spec.OptimizerSpec.resolve`:
    checked, defaults filled in), unless ``resolved``: a job file the workflow's plan wrote
    and signed holds them resolved already (:mod:`sharpness.lesam.experiments`,
    :mod:`sharpness.jobs.files`), so only their names are checked (every hyper-parameter of
    the optimizer, no other) and their values are taken as the plan resolved them (the file's
    SHA-256 and signer are in the run's provenance). Either way the
    result is the same config, so the optimizer takes ``opt_hparams`` as they are.
    """
    if not isinstance(config, dict):
        raise ConfigError(f"train config must be a JSON object, got {type(config).__name__}")
    refuse_fp16(config)
    for path, number in nonfinite(config):
        raise _fail(key_path(list(path)), f"{number} is not a finite number")
    unknown = sorted(set(config) - set(DEFAULTS))
    if unknown:
        raise ConfigError(f"train config has unknown key(s) {', '.join(map(repr, unknown))}; "
                          f"known keys: {', '.join(sorted(DEFAULTS))}")
    cfg = deep_merge(DEFAULTS, config)  # nested settings (augment) merge key by key
    for key in REQUIRED:
        if cfg[key] is None:
            raise _fail(key, "is required")
    num = (int, float)
    _check_type(cfg, "dataset", (str,))
    _check_type(cfg, "data_root", (str,))
    for key in ("train_size", "test_size"):
        _check_type(cfg, key, (int,), optional=True)
        _check(cfg, key, lambda v: v > 0, "must be positive")
    _check_type(cfg, "classes", (list,), optional=True)
    if cfg["classes"] is not None and (not cfg["classes"] or not all(
            isinstance(c, int) and not isinstance(c, bool) for c in cfg["classes"])
            or len(set(cfg["classes"])) != len(cfg["classes"])):
        raise _fail("classes", f"must be a non-empty list of distinct ints, got {cfg['classes']!r}")
    _check_type(cfg, "normalize", (bool,))
    _check_type(cfg, "stand_ins", (list,))
    if not all(isinstance(v, str) for v in cfg["stand_ins"]):
        raise _fail("stand_ins", "must be a list of strings")
    _check_type(cfg, "init_from", (str,), optional=True)
    _check_type(cfg, "init_exclude", (list,))
    if not all(isinstance(v, str) for v in cfg["init_exclude"]):
        raise _fail("init_exclude", "must be a list of state-dict key prefixes (strings)")
    _check_type(cfg, "model", (str,))
    _check_type(cfg, "width", num)
    _check(cfg, "width", lambda v: v > 0, "must be positive")
    _check_type(cfg, "model_kwargs", (dict,))
    _check_type(cfg, "freeze_bn", (bool,))
    _check_type(cfg, "optimizer", (str,))
    for key in ("lr", "momentum", "weight_decay"):
        _check_type(cfg, key, num)
        _check(cfg, key, lambda v: v >= 0, "must be non-negative")
    _check_type(cfg, "nesterov", (bool,))
    _check_type(cfg, "opt_hparams", (dict,))
    _check(cfg, "mode", lambda v: v in ("minibatch", "fullbatch"), "must be 'minibatch' or "
           "'fullbatch'")
    for key in ("epochs", "batch_size", "max_steps"):
        _check_type(cfg, key, (int,))
        _check(cfg, key, lambda v: v > 0, "must be positive")
    _check_type(cfg, "drop_last", (bool,))
    _check_type(cfg, "loss_goal", num, optional=True)
    _check(cfg, "loss_goal", lambda v: v > 0, "must be positive")
    if cfg["loss_goal"] is not None and cfg["mode"] != "fullbatch":
        raise _fail("loss_goal", "only applies to mode 'fullbatch'")
    if cfg["lr_schedule"] is None:
        cfg["lr_schedule"] = "cosine" if cfg["mode"] == "minibatch" else "constant"
    _check(cfg, "lr_schedule", lambda v: v in ("cosine", "cosine_epoch", "constant"),
           "must be 'cosine', 'cosine_epoch' or 'constant'")
    if cfg["lr_schedule"] == "cosine_epoch" and cfg["mode"] != "minibatch":
        raise _fail("lr_schedule", "'cosine_epoch' needs mode 'minibatch'")
    _check_type(cfg, "warmup_steps", (int,))
    _check(cfg, "warmup_steps", lambda v: v >= 0, "must be non-negative")
    _check(cfg, "loss", lambda v: v in ("ce", "mse"), "must be 'ce' or 'mse'")
    _check_type(cfg, "label_smoothing", num)
    _check(cfg, "label_smoothing", lambda v: 0 <= v < 1, "must be in [0, 1)")
    if cfg["label_smoothing"] and cfg["loss"] != "ce":
        raise _fail("label_smoothing", "only applies to loss 'ce'")
    _check_type(cfg, "augment", (dict,))
    bad = sorted(set(cfg["augment"]) - set(AUGMENT_KEYS))
    if bad:
        raise _fail("augment", f"unknown option(s) {', '.join(bad)}; known: "
                               f"{', '.join(AUGMENT_KEYS)}")
    for key in ("crop", "cutout"):
        value = cfg["augment"][key]
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise _fail("augment", f"{key} must be a non-negative int, got {value!r}")
    p = cfg["augment"]["cutout_p"]
    if isinstance(p, bool) or not isinstance(p, (int, float)) or not 0 <= p <= 1:
        raise _fail("augment", f"cutout_p must be a probability in [0, 1], got {p!r}")
    if not isinstance(cfg["augment"]["flip"], bool):
        raise _fail("augment", f"flip must be true/false, got {cfg['augment']['flip']!r}")
    mini = cfg["mode"] == "minibatch"
    for key, mini_default, full_default in (("log_every", 0, 1), ("eval_every", 1, 0),
                                            ("checkpoint_every", 1, 500)):
        if cfg[key] is None:
            cfg[key] = mini_default if mini else full_default
    for key in ("log_every", "eval_every", "sharpness_every", "checkpoint_every"):
        _check_type(cfg, key, (int,))
        _check(cfg, key, lambda v: v >= 0, "must be non-negative (0 = never)")
    _check_type(cfg, "fullbatch_chunk", (int,), optional=True)
    _check(cfg, "fullbatch_chunk", lambda v: v > 0, "must be positive")
    _check_type(cfg, "diverge_loss", num, optional=True)
    _check_type(cfg, "diverge_factor", num, optional=True)
    _check(cfg, "diverge_factor", lambda v: v > 1, "must be above 1 (null: no blow-up rule)")
    _check_type(cfg, "seed", (int,))
    _check(cfg, "seed", lambda v: v >= 0, "must be non-negative")
    _check(cfg, "device", lambda v: v in ("auto", "cpu", "cuda") or str(v).startswith("cuda:"),
           "must be 'auto', 'cpu' or 'cuda[:N]'")
    _check_type(cfg, "bf16", (bool,))
    _check_type(cfg, "deterministic", (bool,))
    for key in ("channels_last", "data_on_device"):
        _check(cfg, key, lambda v: v == "auto" or isinstance(v, bool), "must be 'auto', true "
               "or false")
    for key in ("loader_workers", "gpus"):
        _check_type(cfg, key, (int,))
    _check(cfg, "loader_workers", lambda v: v >= 0, "must be non-negative")
    _check(cfg, "gpus", lambda v: v >= 1, "must be at least 1 (processes of a DDP run)")
    _check(cfg, "ddp_perturbation", lambda v: v in ("local", "global"),
           "must be 'local' (each device perturbs with its own gradient) or 'global'")
    for key in ("sharpness_fn", "metrics_fn"):
        _check_type(cfg, key, (str,), optional=True)
        _check(cfg, key, lambda v: ":" in v, "must be 'module:function'")
    _check_type(cfg, "sources", (dict,))
    if not all(isinstance(k, str) and isinstance(v, str) for k, v in cfg["sources"].items()):
        raise _fail("sources", "must map setting names to source strings")
    _check_type(cfg, "tags", (dict,))
    if not all(isinstance(k, str) and isinstance(v, str) for k, v in cfg["tags"].items()):
        raise _fail("tags", "must map names to strings")
    _check_registries(cfg, resolved)
    check_distributed(cfg)
    return cfg


def refuse_fp16(config: dict[str, Any]) -> None:
    """Raise ``ConfigError`` naming the key if ``config`` asks for float16 in any spelling."""
    for key in FP16_KEYS:
        if key in config and config[key] not in (False, None):
            raise ConfigError(f"train config key {key!r}: {FP16_REASON}")
    for key in ("precision", "dtype", "autocast"):
        value = config.get(key)
        if isinstance(value, str | int) and str(value).lower() in FP16_VALUES:
            raise ConfigError(f"train config key {key!r} = {value!r}: {FP16_REASON}")


def check_distributed(cfg: dict[str, Any]) -> None:
    """The settings a multi-process run needs; ``ConfigError`` naming the key otherwise."""
    n = cfg["gpus"]
    if n == 1:
        return
    if cfg["mode"] != "minibatch":
        raise ConfigError(f"train config key 'gpus': {n} processes need mode 'minibatch' "
                          f"(full-batch runs are single-device), got mode {cfg['mode']!r}")
    if cfg["optimizer"] not in DDP_OPTIMIZERS:
        raise ConfigError(f"train config key 'optimizer': {cfg['optimizer']!r} is not supported "
                          f"with gpus > 1 (its step makes extra closure calls that DDP cannot "
                          f"split into a local and a synchronised pass); supported: "
                          f"{', '.join(DDP_OPTIMIZERS)}")
    if cfg["batch_size"] % n:
        raise ConfigError(f"train config key 'batch_size': {cfg['batch_size']} is not divisible "
                          f"by gpus={n} (the per-device batch is the m of m-sharpness)")
    if cfg["sharpness_fn"] is not None or cfg["sharpness_every"]:
        raise ConfigError("train config key 'sharpness_every': sharpness hooks run on one "
                          "device; use gpus: 1")


def _check_registries(cfg: dict[str, Any], resolved: bool) -> None:
    found = model_problem(cfg["model"], cfg["model_kwargs"])
    if found:
        raise _fail(*found)
    if cfg["optimizer"] not in optimizer_specs():
        raise _fail("optimizer", f"unknown optimizer {cfg['optimizer']!r}; known: "
                                 f"{', '.join(optimizer_specs())}")
    spec = optimizer_spec(cfg["optimizer"])
    if resolved:  # resolved by the plan: the names only
        missing = sorted(set(spec.defaults) - set(cfg["opt_hparams"]))
        extra = sorted(set(cfg["opt_hparams"]) - set(spec.defaults))
        if missing or extra:
            raise _fail("opt_hparams", f"not resolved for optimizer {spec.name!r} (missing: "
                                       f"{', '.join(missing) or 'none'}; unknown: "
                                       f"{', '.join(extra) or 'none'}): a job file holds every "
                                       "hyper-parameter of its optimizer, as the plan wrote it")
        return
    try:  # the optimizer's spec checks its hyper-parameters (the one place that does)
        cfg["opt_hparams"] = spec.resolve(cfg["opt_hparams"])
    except ValueError as exc:
        raise _fail("opt_hparams", str(exc)) from None
