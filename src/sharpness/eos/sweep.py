"""One `eos` *setting*: gradient-flow reference, then a full-batch GD sweep over learning rates.

A setting (one entry of the config's ``eos.settings``) fixes the data, model, loss, loss
goal and seed; every run of the setting starts from the *same* initial parameters (the
training engine seeds the model init with ``seed`` alone). :func:`run_setting`:

1. builds the model exactly as the engine does and integrates gradient flow from its init
   (:func:`sharpness.eos.flow.gradient_flow`), giving ``s_GF`` and ``eta_c = 2 / s_GF``;
2. runs full-batch GD (``sgd`` with momentum 0 and no weight decay, through
   :func:`sharpness.train.train`) for every learning rate of the grid, ``lrs`` (absolute) and
   ``lr_factors`` (multiples of ``eta_c``), each until the loss goal, divergence (status
   ``diverged``, not an error) or ``max_steps``; sharpness (Lanczos) every
   ``sharpness_every`` steps and norms on every logged step;
3. measures every final model: sharpness, l1/l2/nuclear norms, Hessian trace, worst-case,
   adaptive and average sharpness, train and test loss and error;
4. writes ``flow.json`` / ``flow.npz`` and ``sweep.json`` (one row per learning rate).

Runs are resumable (the engine skips finished runs and continues from checkpoints), so a
killed sweep restarts where it stopped: the flow is reused when it finished, every finished
run is reused and the run that was cut continues from its last ``checkpoint.pt`` (every
``checkpoint_every`` steps). A setting whose finished ``sweep.json`` was removed (a forced
rerun: Snakemake deletes it first) starts its flow and runs over instead
(:func:`sharpness.runs.restart.start_over_if_removed`).
"""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import Tensor, nn

from sharpness.device import resolve_device
from sharpness.eos.flow import gradient_flow
from sharpness.eos.measures import all_measures
from sharpness.eos.measures import sharpness as lanczos_sharpness
from sharpness.eos.narrate import flow_reporter, run_outcome
from sharpness.eos.norms import parameter_norms
from sharpness.eos.setting import resolve_setting
from sharpness.evidence.records import FINGERPRINTS
from sharpness.io import atomic_save_npz, atomic_write_json, read_json, read_jsonl
from sharpness.runs.cache import cache_key, claim_dir
from sharpness.runs.progress import say
from sharpness.runs.provenance import PROVENANCE_NAME
from sharpness.runs.restart import start_over_if_removed
from sharpness.runs.seal import load_sealed, read_verified, seal
from sharpness.train import TrainHooks, evaluate, per_example_loss, train
from sharpness.train.checkpoint import safe_load
from sharpness.train.config import validate_config
from sharpness.train.data_prep import prepare_data
from sharpness.train.model_io import build_run_model


def engine_config(setting: dict[str, Any], lr: float, data_root: str) -> dict[str, Any]:
    """The training-engine config of one GD run of ``setting`` at learning rate ``lr``."""
    s = setting
    return {
        "dataset": s["dataset"], "data_root": data_root, "train_size": s["train_size"],
        "test_size": s["test_size"], "classes": s["classes"], "normalize": s["normalize"],
        "stand_ins": list(s["stand_ins"]), "model": s["model"], "width": s["width"],
        "model_kwargs": dict(s["model_kwargs"]), "optimizer": "sgd", "lr": float(lr),
        "momentum": 0.0, "weight_decay": 0.0, "mode": "fullbatch",
        "max_steps": s["max_steps"], "loss_goal": s["loss_goal"], "loss": s["loss"],
        "log_every": s["log_every"], "eval_every": 0, "sharpness_every": s["sharpness_every"],
        "checkpoint_every": s["checkpoint_every"], "diverge_loss": s["diverge_loss"],
        "fullbatch_chunk": s["fullbatch_chunk"], "seed": s["seed"], "device": s["device"],
    }


def mean_criterion(kind: str, num_classes: int) -> Any:
    """Mean of the engine's per-example loss (``0.5 ||f - onehot||^2`` or cross-entropy)."""

    per = per_example_loss(kind, num_classes)

    def criterion(out: Tensor, y: Tensor) -> Tensor:
        return per(out, y).mean()
    return criterion


def build_initial(setting: dict[str, Any], data_root: str) -> tuple[nn.Module, Any, Any]:
    """Model at its seeded init, the prepared data and the mean criterion - exactly as the
    training engine builds them, so the flow and every GD run share one initial point."""

    cfg = validate_config(engine_config(setting, 0.0, data_root))
    device = resolve_device(cfg["device"])
    data = prepare_data(cfg, device)
    torch.manual_seed(cfg["seed"])
    model = build_run_model(cfg, data)
    return model, data, mean_criterion(cfg["loss"], data.num_classes)


class SharpnessHook:
    """Engine hook: warm-started Lanczos sharpness (the previous eigenvector is the start).

    The warm start is part of the run's state: the engine keeps it in each checkpoint
    (:meth:`state_dict`), so a resumed run measures from the vector the uncut run had and
    logs the same sharpness, bit for bit on the CPU."""

    def __init__(self, tol: float, seed: int) -> None:
        self.v0: np.ndarray | None = None
        self.tol, self.seed = tol, seed

    def __call__(self, model: nn.Module, criterion: Any, x: Tensor, y: Tensor) -> dict[str, float]:
        value, self.v0, hvps = lanczos_sharpness(model, criterion, x, y, mode="train",
                                                 v0=self.v0, tol=self.tol, seed=self.seed)
        return {"sharpness": value, "lanczos_hvps": float(hvps)}

    def state_dict(self) -> dict[str, Tensor | None]:
        """The warm start as a tensor (a checkpoint loads with ``weights_only=True``)."""
        return {"v0": None if self.v0 is None else torch.from_numpy(np.array(self.v0))}

    def load_state_dict(self, state: Any) -> None:
        """Restore the warm start a checkpoint holds (anything but a tensor: a cold start;
        a vector of another size is refused by the Lanczos call, which then starts cold)."""
        v0 = state.get("v0") if isinstance(state, dict) else None
        self.v0 = v0.detach().cpu().numpy().copy() if isinstance(v0, Tensor) else None


def run_hooks(setting: dict[str, Any]) -> Any:
    """The measurement hooks of one run of ``setting`` (the eos sweep and ``bridges/sam_eos``):
    sharpness every ``sharpness_every`` steps, parameter norms on every logged step."""

    return TrainHooks(sharpness=SharpnessHook(setting["lanczos_tol"], setting["seed"]),
                      metrics=parameter_norms)


#: Setting keys the gradient flow does not read (the sweep's grid, its logging, labels).
NOT_FLOW_KEYS = ("label", "ablation", "stand_ins", "lrs", "lr_factors", "max_steps",
                 "sharpness_every", "log_every", "checkpoint_every", "diverge_loss",
                 "fullbatch_chunk", "measures")
FLOW_FILES = ("flow.json", "flow.npz")


def flow_cache_key(setting: dict[str, Any], data_root: str) -> dict[str, Any]:
    """Cache key of a setting's gradient flow: every setting it reads, resolved, and the code
    of this module's closure (flow, measures, engine, models, data)."""

    settings = {k: v for k, v in resolve_setting(setting).items() if k not in NOT_FLOW_KEYS}
    settings.update(data_root=str(data_root), device=resolve_device(setting["device"]).type)
    return cache_key("eos_flow", settings, ["sharpness.eos.sweep"])


def run_flow(setting: dict[str, Any], out_dir: str | os.PathLike[str], data_root: str,
             ) -> dict[str, Any]:
    """Gradient flow of ``setting`` from its init; writes ``flow.json`` and ``flow.npz``.

    An existing flow is reused only when its cache key (the flow's settings, the data root,
    the device and the code fingerprint) is this one's (:func:`flow_cache_key`); otherwise it
    is recomputed and the log says why."""
    out = Path(out_dir)
    summary_path = out / "flow.json"
    key = flow_cache_key(setting, data_root)
    label = setting.get("label") or "eos"
    if claim_dir(out, key, stale=FLOW_FILES, what="gradient flow"):
        # reused only when flow.json and flow.npz match their recorded hashes (else logged)
        cached = load_sealed(out, "flow.json", read_json, what="gradient flow",
                             also=("flow.npz",))
        if cached is not None:
            say(f"{label}: gradient flow reused from {summary_path} (same settings and code): "
                f"s_GF = {cached['s_gf']:.4g}, eta_c = {cached['eta_c']:.4g}")
            return cached
    model, data, criterion = build_initial(setting, data_root)
    f = setting["flow"]
    say(f"{label}: gradient flow from the init ({f['method']}, rtol {f['rtol']:g}) until the "
        f"loss is below {setting['loss_goal']:g}, flow time at most {f['t_max']:g}")
    result = gradient_flow(model, criterion, data.x_train, data.y_train,
                           loss_goal=setting["loss_goal"], t_max=f["t_max"], method=f["method"],
                           rtol=f["rtol"], atol=f["atol"], record_factor=f["record_factor"],
                           record_growth=f["record_growth"],
                           record_first_drop=f["record_first_drop"], max_evals=f["max_evals"],
                           krylov_dim=f["krylov_dim"],
                           lanczos_tol=setting["lanczos_tol"], seed=setting["seed"],
                           on_record=flow_reporter(label))
    summary = result.summary()
    say(f"{label}: gradient flow ended {result.status} at t = {summary['t_end']:.4g} "
        f"(loss {summary['final_loss']:.4g}, {summary['cost']} gradient units): "
        f"s_GF = {summary['s_gf']:.4g}, eta_c = {summary['eta_c']:.4g}")
    test_loss, test_acc = evaluate(model, data.x_test, data.y_test,
                                   per_example_loss(setting["loss"], data.num_classes))
    summary.update(final_test_loss=test_loss, final_test_error=1.0 - test_acc,
                   final_norms=parameter_norms(model), n_train=len(data.x_train),
                   data=data.info)
    atomic_save_npz(out / "flow.npz", **result.arrays())
    atomic_write_json(summary_path, summary)
    seal(out, *FLOW_FILES)
    return summary


def learning_rates(setting: dict[str, Any], eta_c: float) -> list[dict[str, Any]]:
    """The sweep's grid: absolute ``lrs`` and ``lr_factors * eta_c``, sorted, deduplicated."""
    grid = [{"lr": float(lr), "factor": None} for lr in setting["lrs"]]
    grid += [{"lr": float(f) * eta_c, "factor": float(f)} for f in setting["lr_factors"]]
    grid.sort(key=lambda g: g["lr"])
    unique: list[dict[str, Any]] = []
    for g in grid:
        if not unique or not math.isclose(g["lr"], unique[-1]["lr"], rel_tol=1e-9):
            unique.append(g)
    return unique


def run_name(lr: float) -> str:
    """Directory name of the run at learning rate ``lr`` (stable, sortable)."""
    return f"lr_{lr:.6e}"


def final_measures(setting: dict[str, Any], run_dir: Path, model_template: nn.Module,
                   data: Any, criterion: Any, *, grad_norm: bool = False,
                   measures: bool = True, diverged: bool = False) -> dict[str, Any]:
    """Norms, sharpness and (``measures``) the other measures of a finished run's final model.

    Nothing but the norms when the run ``diverged`` (its own status: no measurement pretends
    it converged) or its train loss is not finite, nothing at all when a parameter is not
    finite. ``grad_norm`` adds the full-batch gradient norm (the SAM-type edges of
    ``bridges/sam_eos`` need it)."""
    blob = safe_load(run_dir / "model.pt")
    model_template.load_state_dict(blob["state_dict"])
    model = model_template
    params = [p for p in model.parameters() if p.requires_grad]
    if not all(bool(torch.isfinite(p).all()) for p in params):
        return {}
    out: dict[str, Any] = {**parameter_norms(model)}
    with torch.set_grad_enabled(grad_norm):
        loss = criterion(model(data.x_train), data.y_train)
    train_loss = float(loss.detach())
    if diverged or not math.isfinite(train_loss):
        return out
    if grad_norm:
        grads = torch.autograd.grad(loss, params)
        out["grad_norm"] = float(torch.sqrt(sum(g.double().square().sum() for g in grads)))
    s, _, _ = lanczos_sharpness(model, criterion, data.x_train, data.y_train, mode="train",
                                tol=setting["lanczos_tol"], seed=setting["seed"])
    out["sharpness"] = s
    if measures:
        m = setting["measures"]
        out.update(all_measures(model, criterion, data.x_train, data.y_train, rho=m["rho"],
                                adaptive_rho=m["adaptive_rho"], sigma=m["sigma"],
                                trace_samples=m["trace_samples"],
                                ascent_steps=m["ascent_steps"], avg_samples=m["avg_samples"],
                                seed=setting["seed"]))
    return out


def initial_loss(model: nn.Module, data: Any, criterion: Any) -> float:
    """The full-batch train loss at the shared init (recorded in every sweep row)."""
    with torch.no_grad():
        return float(criterion(model(data.x_train), data.y_train))


def run_row(final: dict[str, Any], lr: float, factor: float | None, eta_c: float,
            init_loss: float, run_dir: Path) -> dict[str, Any]:
    """The sweep row of one finished engine run, with the run's own status: the engine
    applies the one divergence rule (:mod:`sharpness.runs.state`), so the row and the run's
    ``final.json`` and ``provenance.json`` always agree, ``diverged_step`` included."""
    status, reason = final["status"], final["reason"]

    def error(acc: float | None) -> float | None:
        return None if acc is None else 1 - acc

    return {
        "lr": lr, "factor": factor, "lr_over_eta_c": lr / eta_c,
        "status": status, "reason": reason, "steps": final["steps"],
        "converged": status == "ok" and reason == "loss_goal",
        "diverged": status == "diverged",
        "diverged_step": final.get("diverged_step"),
        "diverged_why": final.get("diverged_why"), "initial_train_loss": init_loss,
        "train_loss": final["final_train_loss"], "train_error": error(final["final_train_acc"]),
        "test_loss": final["final_test_loss"], "test_error": error(final.get("final_test_acc")),
        "run": str(run_dir), **run_identity(final, run_dir),
    }


def run_identity(final: dict[str, Any], run_dir: Path) -> dict[str, Any]:
    """What joins a sweep row to its run's signed record: ``run_id`` (the id of the run's
    provenance record) and the fingerprints of its draw (initial weights, data order) the
    engine recorded at its start; None for what the run did not record."""
    record = run_dir / PROVENANCE_NAME
    try:
        run_id = read_json(record).get("id") if record.is_file() else None
    except (OSError, ValueError):
        run_id = None
    return {"run_id": run_id, **{k: final.get(k) for k in FINGERPRINTS}}


def measured_run(setting: dict[str, Any], cfg: dict[str, Any], run_dir: Path,
                 grid_point: dict[str, Any], eta_c: float, initial: tuple[Any, Any, Any],
                 init_loss: float, *, threads: int | None = None, grad_norm: bool = False,
                 measures: bool = True) -> dict[str, Any]:
    """Train one run of the grid (engine config ``cfg``) with :func:`run_hooks`, then its row:
    :func:`run_row` plus :func:`final_measures` and ``eta * S / 2``. ``initial`` is
    :func:`build_initial`'s ``(model, data, criterion)``; the model is overwritten."""

    lr = grid_point["lr"]
    say(f"{setting.get('label') or 'eos'}: GD run at eta = {lr:.4g} "
        f"({lr / eta_c:.3g} eta_c), {cfg['optimizer']}, at most {cfg['max_steps']} steps "
        f"-> {run_dir}")
    final = train(cfg, run_dir, hooks=run_hooks(setting), threads=threads)
    row = run_row(final, lr, grid_point["factor"], eta_c, init_loss, run_dir)
    model, data, criterion = initial
    row.update(final_measures(setting, run_dir, model, data, criterion, grad_norm=grad_norm,
                              measures=measures, diverged=row["diverged"]))
    if "sharpness" in row:
        row["eta_s_over_2"] = lr * row["sharpness"] / 2
    say(f"{setting.get('label') or 'eos'}: eta = {lr:.4g} {run_outcome(row)}")
    return row


def run_sweep(setting: dict[str, Any], flow_summary: dict[str, Any],
              out_dir: str | os.PathLike[str], data_root: str,
              threads: int | None = None, seal_result: bool = True) -> dict[str, Any]:
    """GD at every learning rate of the grid; writes ``sweep.json`` (rows + flow summary) and
    seals it (``seal_result``; a job that runs several settings seals them together when the
    last one has finished: :func:`sharpness.runs.restart.removed_result`)."""
    out = Path(out_dir)
    eta_c = float(flow_summary["eta_c"])
    initial = build_initial(setting, data_root)
    init_loss = initial_loss(*initial)
    grid = learning_rates(setting, eta_c)
    say(f"{setting.get('label') or 'eos'}: sweep of {len(grid)} learning rates around "
        f"eta_c = {eta_c:.4g} (s_GF = {flow_summary['s_gf']:.4g}), initial loss "
        f"{init_loss:.4g}")
    rows = [measured_run(setting, engine_config(setting, g["lr"], data_root),
                         out / "runs" / run_name(g["lr"]), g, eta_c, initial, init_loss,
                         threads=threads)
            for g in grid]
    summary = {"setting": setting, "flow": flow_summary, "eta_c": eta_c,
               "s_gf": flow_summary["s_gf"], "rows": rows}
    atomic_write_json(out / "sweep.json", summary)
    if seal_result:
        seal(out, "sweep.json")  # its readers check it against this hash
    return summary


def run_setting(setting: dict[str, Any], out_dir: str | os.PathLike[str], *,
                data_root: str = "data", threads: int | None = None,
                seal_result: bool = True) -> dict[str, Any]:
    """Flow, then sweep, of one setting into ``out_dir`` (``flow/``, ``runs/`` and
    ``sweep.json``, sealed unless ``seal_result`` is False: see :func:`run_sweep`). A cut
    setting resumes; one whose finished ``sweep.json`` was removed (sealed but gone: a forced
    rerun) first deletes ``flow/`` and ``runs/`` and starts over."""
    if threads:
        torch.set_num_threads(int(threads))
    setting = resolve_setting(setting)
    start_over_if_removed(out_dir, "sweep.json", ("flow", "runs"),
                          what=f"eos setting {setting.get('label') or Path(out_dir).name}")
    flow_summary = run_flow(setting, Path(out_dir) / "flow", data_root)
    return run_sweep(setting, flow_summary, out_dir, data_root, threads, seal_result)


def load_trajectory(run_dir: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """The step rows of a GD run's ``metrics.jsonl`` (for the trajectory figure)."""

    rows = read_verified(Path(run_dir) / "metrics.jsonl", read_jsonl, what="eos trajectory")
    return [r for r in rows if r.get("kind") == "step"]
