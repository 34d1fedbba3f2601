"""The training engine: mini-batch SGD-type training and full-batch GD, resumable and exact.

One function, :func:`train`, runs a validated config (:mod:`sharpness.train.config`) into a
run directory. Its pieces: :mod:`~sharpness.train.run` (one run's state: set-up, rows,
checkpoints, final files), :mod:`~sharpness.train.loop` (the mini-batch and full-batch loops),
:mod:`~sharpness.train.hooks` (what callers plug in), :mod:`~sharpness.train.closure`,
:mod:`~sharpness.train.losses`, :mod:`~sharpness.train.schedule`,
:mod:`~sharpness.train.data_prep`, :mod:`~sharpness.train.model_io`,
:mod:`~sharpness.train.evaluation` and :mod:`~sharpness.train.layout` (the file names). The run
folder:

``metrics.jsonl``
    one JSON row per epoch (mini-batch) or per logged step (full-batch), plus optional step
    rows; only quantities that are functions of (config, seed), so identical runs give
    identical files. Rows have ``kind`` = ``epoch`` / ``step`` / ``diverged``.
``timing.jsonl``
    wall-clock seconds per epoch / logged step (kept apart so metrics stay comparable).
``checkpoint.pt``
    everything needed to continue exactly: model, optimizer (incl. its RNG), the data/augment
    generator, the global torch (and CUDA) RNG states, counters, and how many metric rows
    existed; written atomically every ``checkpoint_every`` epochs / steps.
``model.pt``
    the final model with what is needed to rebuild it (:func:`load_trained_model`).
``final.json``
    summary: status (``ok`` / ``diverged``, with ``diverged_step``, ``diverged_loss`` and
    ``diverged_why``), stop reason, steps, the initial loss, final train/test loss and
    accuracy.
``provenance.json``
    through :class:`sharpness.runs.run_record.RunRecord` (status ``ok``/``diverged``/``failed``).

Cache key (:mod:`sharpness.runs.cache`): a run folder holds ``cache_key.json``, the digest of the
resolved config, the device used and the code fingerprint of the engine and its hooks'
modules. A finished run (``final.json``) is reused, and a checkpoint resumed, only under the
same key; any other key starts the run over from step 0 and logs why. A finished run deletes
its ``checkpoint.pt``. Checkpoints and ``model.pt`` load with ``weights_only=True``
(:mod:`sharpness.train.checkpoint`).

Resume: if ``checkpoint.pt`` exists (same key), training continues from it, the metrics
file is cut back to the rows that existed at the checkpoint, and the run ends with exactly
the numbers of an uninterrupted run (CPU; tested bit for bit).

Divergence (one rule for every run kind, :mod:`sharpness.runs.state`): the training closure checks
the clean loss of every step *before* the update; a NaN/inf loss, one above ``diverge_factor``
times the run's initial loss (the first step's; checkpointed) or one above ``diverge_loss``
stops the run with status ``diverged``, the step and the reason (``diverged_why``), keeps the
last finite parameters, and is not an exception. At the end, a run whose train loss is above
its initial loss (cross-entropy: and above ``ln C``) is diverged too, at its last step.
Ctrl-C or SIGTERM leave the provenance record ``interrupted``; a SIGKILL leaves ``running``,
which :func:`sharpness.runs.state.run_state` reads as ``interrupted`` (owner pid, heartbeat).
Progress: a bar on a terminal, else lines in the log (:mod:`sharpness.runs.progress`). Full-batch runs stop the same
way, with status ``ok``, at the first iterate whose train loss is below ``loss_goal``.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import torch

from sharpness.io import atomic_write_json, read_json
from sharpness.optim.eager import set_deterministic
from sharpness.runs import cache
from sharpness.runs.provenance import file_sha256
from sharpness.runs.run_record import RunRecord
from sharpness.runs.seal import load_sealed
from sharpness.train import distributed as ddp
from sharpness.train import status as run_status
from sharpness.train.config import validate_config
from sharpness.train.data_prep import PreparedData, prepare_data
from sharpness.train.evaluation import evaluate, param_norm
from sharpness.train.hooks import BatchStep, StepInfo, StepProbe, TrainHooks
from sharpness.train.layout import CONFIG, FINAL, MODEL, RUN_FILES
from sharpness.train.loop import run_fullbatch, run_minibatch
from sharpness.train.losses import Criterion, per_example_loss
from sharpness.train.model_io import InputNormalization, build_run_model, load_trained_model
from sharpness.train.performance import cudnn_autotune, precision_record
from sharpness.train.run import Run
from sharpness.train.schedule import lr_at

#: the names this module has always offered (their homes are the modules above)
__all__ = ["BatchStep", "Criterion", "InputNormalization", "PreparedData", "StepInfo",
           "StepProbe", "TrainHooks", "build_run_model", "deterministic_mode", "evaluate",
           "load_trained_model", "lr_at", "param_norm", "per_example_loss", "prepare_data",
           "run_cache_key", "train"]


@contextlib.contextmanager
def deterministic_mode(enabled: bool, device: torch.device) -> Iterator[None]:
    """Deterministic kernels where PyTorch allows (warn where it cannot); restored after.

    Through :func:`sharpness.optim.eager.set_deterministic`: the public call imports
    ``torch._inductor`` (and dynamo) to set a flag only compiled code reads.
    """
    if not enabled:
        yield
        return
    if device.type == "cuda":
        os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
    prev = (torch.are_deterministic_algorithms_enabled(),
            torch.is_deterministic_algorithms_warn_only_enabled(),
            torch.backends.cudnn.deterministic, torch.backends.cudnn.benchmark)
    set_deterministic(True, warn_only=True)
    torch.backends.cudnn.deterministic = True
    torch.backends.cudnn.benchmark = False
    try:
        yield
    finally:
        set_deterministic(prev[0], warn_only=prev[1])
        torch.backends.cudnn.deterministic = prev[2]
        torch.backends.cudnn.benchmark = prev[3]


def run_cache_key(cfg: dict[str, Any], device: torch.device, hooks: TrainHooks
                  ) -> dict[str, Any]:
    """Cache key of a run: resolved config, device type, code of the engine and its hooks."""
    roots = ["sharpness.train.engine",
             *cache.callable_modules(*hooks.callables())]
    roots += [name.split(":")[0] for name in (cfg.get("sharpness_fn"), cfg.get("metrics_fn"))
              if name and name.startswith("sharpness.")]
    settings: dict[str, Any] = {"config": cfg, "device": device.type}
    if hooks.settings:  # what the hooks measure with (e.g. a probe's interval)
        settings["hooks"] = hooks.settings
    if cfg.get("init_from"):  # the weights a fine-tuning run starts from are an input
        settings["init_from_sha256"] = file_sha256(cfg["init_from"])
    return cache.cache_key("train_run", settings, roots)


def train(config: dict[str, Any], run_dir: str | os.PathLike[str], *,
          hooks: TrainHooks | None = None, threads: int | None = None,
          progress: bool = True, config_file: dict[str, str] | None = None) -> dict[str, Any]:
    """Run (or resume, or skip if finished) the training run ``config`` into ``run_dir``.

    Returns the ``final.json`` summary. ``threads`` sets ``torch.set_num_threads`` (the
    workflow passes the rule's threads). ``progress``: a tqdm bar when stderr is a terminal,
    else progress lines in the log (:mod:`sharpness.runs.progress`); ``False``: silent. A finished run (``final.json``) of the same cache key
    (config, device, code of the engine and the hooks) is returned as is; a run with
    ``checkpoint.pt`` of the same key continues from it; anything else starts over.
    ``config_file`` (``{"path", "sha256"}``, and ``signed_by`` when its plan's signature
    holds: :func:`sharpness.jobs.files.read_job_file`) is recorded under ``config_file`` in
    ``provenance.json``; it is not part of the cache key (the config it holds is).

    ``config`` is validated here, once (the one validation of a run in its process): with
    its hyper-parameters resolved by the optimizer's spec, or, for a config read from a job
    file its plan signed (``config_file`` with ``signed_by``), whose plan resolved them,
    with their names checked and their values taken as written
    (:func:`sharpness.train.config.validate_config`). The optimizer takes them as they are.
    """
    cfg = validate_config(config, resolved=bool(config_file and config_file.get("signed_by")))
    run_dir = Path(run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    if threads:
        torch.set_num_threads(int(threads))
    run = Run(cfg, run_dir, hooks or TrainHooks(), progress)
    key = run_cache_key(cfg, run.device, run.hooks)
    run.config_id = key["digest"]
    if run.dist.is_main:  # rank 0 owns the folder's files
        cache.claim_dir(run_dir, key, what="training run", stale=RUN_FILES)
    final_path = run_dir / FINAL
    if final_path.exists():
        # reused only when final.json and model.pt match their recorded hashes (else logged)
        final = load_sealed(run_dir, FINAL, read_json, what="training run", also=(MODEL,))
        if final is not None and final.get("config_id") == run.config_id:
            return final
        if run.dist.is_main:
            final_path.unlink(missing_ok=True)
    ddp.init(run.dist)
    try:
        return _train(run, cfg, run_dir, config_file)
    finally:
        ddp.shutdown(run.dist)


def _train(run: Run, cfg: dict[str, Any], run_dir: Path,
           config_file: dict[str, str] | None = None) -> dict[str, Any]:
    if run.dist.is_main:
        atomic_write_json(run_dir / CONFIG, cfg)
    t0 = time.perf_counter()
    with deterministic_mode(cfg["deterministic"], run.device), \
            cudnn_autotune(not cfg["deterministic"], run.device) as autotuned:
        run.setup()
        per_device = cfg["batch_size"] // run.dist.world
        record_cm = RunRecord(run_dir, params=cfg, seed=cfg["seed"], data=[run.data.info],
                              stand_ins=cfg["stand_ins"]) if run.dist.is_main \
            else ddp.NullRecord()
        with record_cm as record:
            record.update(**run.fingerprints,  # the draw, at its start (signed)
                          resumed_from_step=run.step if run.resumed else None,
                          device_used=str(run.device), bf16=run.use_bf16,
                          **precision_record(run.use_bf16),
                          channels_last=run.channels_last, cudnn_benchmark=autotuned,
                          data_path=run.batches.kind if cfg["mode"] == "minibatch" else "device",
                          distributed=run.dist.describe(per_device,
                                                        cfg["ddp_perturbation"]))
            if run.hooks.settings:
                record.update(hook_settings=run.hooks.settings)
            if config_file is not None:  # the file the job read its config from
                record.update(config_file=dict(config_file))
            if cfg["mode"] == "minibatch":
                run_minibatch(run)
            else:
                run_fullbatch(run)
            final = run.finish()
            record.update(steps=final["steps"], wall_s=round(time.perf_counter() - t0, 3),
                          final_test_acc=final["final_test_acc"])
            run_status.record_final(record, final)
    return final
