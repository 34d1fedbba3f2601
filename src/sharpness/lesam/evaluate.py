"""Evaluations of finished runs for the lesam tables and figures.

Each function reads run directories written by :func:`sharpness.train.train` (``config.json``,
``model.pt``), evaluates the final model and returns tidy rows:

* :func:`robustness_rows`: accuracy under L2 and L_inf PGD at several radii (``table_robustness``);
* :func:`rotation_rows`: accuracy on the test digits rotated by each angle (``table_domain_gen``,
  the quick profile's Rotated-MNIST stand-in); :func:`domain_rows`: accuracy on each unseen
  PACS/VLCS domain of single-source runs (``table_domain_gen`` in the paper profile);
* :func:`flatness_rows`: Hutchinson trace and Lanczos top-k eigenvalues of the train loss
  Hessian on a fixed subset (``fig_flatness``);
* :func:`cost_rows`: time per step (median over interleaved rounds, measured in one process)
  and memory for each optimizer (``table_cost``).
"""

from __future__ import annotations

import os
import statistics
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F

from sharpness.attacks import robust_accuracy
from sharpness.curvature import (
    HessianOperator,
    hutchinson_trace,
    lanczos_relative_error,
    top_eigenvalues,
)
from sharpness.device import resolve_device
from sharpness.evidence.records import train_record
from sharpness.optim import BatchClosure, build_optimizer
from sharpness.runs.provenance import PROVENANCE_NAME
from sharpness.runs.seal import read_verified
from sharpness.train import load_trained_model, per_example_loss, validate_config
from sharpness.train.data_prep import prepare_data
from sharpness.train.model_io import build_run_model

PathLike = str | os.PathLike[str]


def _run_data(run_dir: PathLike) -> tuple[torch.nn.Module, Any, dict[str, Any]]:
    cfg = read_verified(Path(run_dir) / "config.json", what="evaluated run")
    model = load_trained_model(run_dir)
    data = prepare_data(cfg, torch.device("cpu"))
    # the run's own status rides on every row, so a table leaves a diverged run out, and says so
    cfg["status"] = read_verified(Path(run_dir) / "final.json",
                                  what="evaluated run").get("status", "ok")
    return model, data, cfg


def _train(run_dir: PathLike) -> dict[str, Any]:
    """The run's final train loss/accuracy and classes (the ledger's sanity check reads them)."""

    final = Path(run_dir) / "final.json"
    return train_record(read_verified(final, what="evaluated run")) if final.is_file() else {}


def _record_id(run_dir: PathLike) -> str | None:
    """The id of the run's signed provenance record (what tells the ledger which run a row
    is: :data:`sharpness.evidence.records.RUN_ID`); None when the folder holds none."""
    record = Path(run_dir) / PROVENANCE_NAME
    return read_verified(record, what="evaluated run").get("id") if record.is_file() else None


@torch.no_grad()
def _accuracy(model: torch.nn.Module, x: torch.Tensor, y: torch.Tensor) -> float:
    pred = torch.cat([model(x[i:i + 500]).argmax(1) for i in range(0, len(x), 500)])
    return float((pred == y).float().mean())


def robustness_rows(run_dirs: Sequence[PathLike], *, radii: dict[str, list[float]],
                    steps: int, n_test: int | None = None, seed: int = 0) -> list[dict[str, Any]]:
    """One row per (run, norm, radius): PGD accuracy on the first ``n_test`` test images."""

    rows = []
    for run in run_dirs:
        model, data, cfg = _run_data(run)
        x, y = data.x_test[:n_test], data.y_test[:n_test]
        for norm, values in radii.items():
            for eps in values:
                acc = robust_accuracy(model, x, y, norm=norm, eps=float(eps), steps=steps,
                                      seed=seed)
                rows.append({"run": Path(run).name, "optimizer": cfg["optimizer"],
                             "seed": cfg["seed"], "norm": norm, "radius": float(eps),
                             "accuracy": acc, "n_test": len(x), "status": cfg["status"],
                             "train": _train(run)})
    return rows


def rotation_rows(run_dirs: Sequence[PathLike], *, angles: Sequence[float]
                  ) -> list[dict[str, Any]]:
    """One row per (run, angle): accuracy on the test set rotated by ``angle`` degrees."""
    from sharpness.data.rotated import rotate_images  # lazy: torchvision; rotation only

    rows = []
    for run in run_dirs:
        model, data, cfg = _run_data(run)
        for angle in angles:
            acc = _accuracy(model, rotate_images(data.x_test, angle), data.y_test)
            rows.append({"run": Path(run).name, "optimizer": cfg["optimizer"],
                         "seed": cfg["seed"], "angle": float(angle), "accuracy": acc,
                         "n_test": len(data.x_test), "status": cfg["status"],
                         "train": _train(run)})
    return rows


@torch.no_grad()
def _folder_accuracy(model: torch.nn.Module, x: Any, y: torch.Tensor, device: torch.device,
                     batch_size: int = 100) -> float:
    """Accuracy over images that may be a lazy image folder (read through a DataLoader)."""
    model.to(device).eval()
    if hasattr(x, "loader"):
        batches: Any = x.loader(y, batch_size)
    else:
        batches = ((x[i:i + batch_size], y[i:i + batch_size]) for i in range(0, len(x),
                                                                            batch_size))
    correct = 0
    for xb, yb in batches:
        correct += int((model(xb.to(device)).argmax(1).cpu() == yb).sum())
    return correct / max(len(y), 1)


def domain_rows(run_dirs: Sequence[PathLike]) -> list[dict[str, Any]]:
    """One row per (run, unseen domain) of single-source PACS/VLCS runs: the final model's
    accuracy on each other domain (``info["test_domains"]`` of the run's data; a domain cut
    short by ``test_size`` counts the images that are there, an absent one no row). On CUDA
    when there is one."""
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    rows = []
    for run in run_dirs:
        model, data, cfg = _run_data(run)
        precision = read_verified(Path(run) / "final.json",
                                  what="evaluated run").get("precision", "unrecorded")
        n = len(data.x_test)
        for part in data.info["test_domains"]:
            start, count = int(part["start"]), min(int(part["n"]), n - int(part["start"]))
            if count <= 0:
                continue
            piece = slice(start, start + count)
            x = data.x_test.part(piece) if hasattr(data.x_test, "part") else data.x_test[piece]
            rows.append({"run": Path(run).name, "optimizer": cfg["optimizer"],
                         "seed": cfg["seed"], "dataset": cfg["dataset"].split(":")[0],
                         "source": data.info["source_domain"], "target": part["domain"],
                         "accuracy": _folder_accuracy(model, x, data.y_test[piece], device),
                         "n_test": count, "precision": precision})
    return rows


#: tiny models per evaluated run on which the flatness evaluation checks Lanczos (about a
#: CPU-second each), so even a one-seed figure gives the check independent draws
LANCZOS_DRAWS = 3


def flatness_rows(run_dirs: Sequence[PathLike], *, n_examples: int, k: int,
                  trace_samples: int, tol: float = 1e-3, seed: int = 0) -> list[dict[str, Any]]:
    """Hessian trace (Hutchinson, 95% CI) and top-``k`` eigenvalues (Lanczos) per run.

    The Hessian is that of the mean cross-entropy on the first ``n_examples`` (un-augmented)
    training images, in eval mode (BatchNorm running statistics), at the final parameters.
    Each row also carries ``lanczos_rel_error``: the largest error of Lanczos against the
    dense Hessian over ``lanczos_draws`` tiny models drawn from the run's seed (distinct draws
    for distinct seeds), computed here (the ledger's ``ls-lanczos`` check).
    """

    rows = []
    for run in run_dirs:
        model, data, cfg = _run_data(run)
        batch = (data.x_train[:n_examples], data.y_train[:n_examples])
        op = HessianOperator(model, F.cross_entropy, batch, mode="eval")
        eig = top_eigenvalues(op, k=k, tol=tol, seed=seed)
        tr = hutchinson_trace(op, num_samples=trace_samples, seed=seed)
        row: dict[str, Any] = {"run": Path(run).name, "optimizer": cfg["optimizer"],
                               "seed": cfg["seed"], "trace": tr.mean, "trace_ci_low": tr.ci_low,
                               "trace_ci_high": tr.ci_high, "n_examples": len(batch[0]),
                               "num_hvps": op.num_hvps, "status": cfg["status"]}
        row.update({f"lambda_{i + 1}": float(v) for i, v in enumerate(eig.eigenvalues)})
        draws = [LANCZOS_DRAWS * int(cfg["seed"]) + j for j in range(LANCZOS_DRAWS)]
        row["lanczos_rel_error"] = max(lanczos_relative_error(d, k=min(k, 5)) for d in draws)
        row["lanczos_draws"] = len(draws)
        row.update(_train(run))  # the ledger's sanity check and training level
        row["run_id"] = _record_id(run)  # the record the row comes from (its replicate proof)
        rows.append(row)
    return rows


def _state_bytes(obj: Any) -> int:
    if isinstance(obj, torch.Tensor):
        return obj.numel() * obj.element_size()
    if isinstance(obj, dict):
        return sum(_state_bytes(v) for v in obj.values())
    if isinstance(obj, list | tuple):
        return sum(_state_bytes(v) for v in obj)
    return 0


def cost_rows(config: dict[str, Any], optimizers: dict[str, dict[str, Any]], *, steps: int,
              rounds: int, threads: int | None = None) -> list[dict[str, Any]]:
    """Time per step of each optimizer on one model and batch, measured in one process.

    The optimizers are interleaved (``rounds`` rounds of ``steps`` steps each, after one
    warm-up step) so that machine load affects all alike; the median step time is reported,
    with the epoch time it implies. Memory: on CUDA the peak allocated during the steps; on
    the CPU the bytes of optimizer state plus the parameter copy a two-pass step holds.
    """

    if threads:
        torch.set_num_threads(threads)
    cfg = validate_config(config)
    device = resolve_device(cfg["device"])  # a missing requested device is an error
    data = prepare_data(cfg, device)
    bs = min(cfg["batch_size"], len(data.x_train))
    x, y = data.x_train[:bs], data.y_train[:bs]
    loss_fn = per_example_loss("ce", data.num_classes)
    steps_per_epoch = -(-len(data.x_train) // bs)
    setups = {}
    for name, hparams in optimizers.items():
        torch.manual_seed(0)
        model = build_run_model(cfg, data)
        opt = build_optimizer(name, model, lr=1e-3, momentum=cfg["momentum"],
                              weight_decay=cfg["weight_decay"], total_steps=10_000,
                              steps_per_epoch=steps_per_epoch, **hparams)
        opt.step(BatchClosure(model, x, y, loss_fn))  # warm-up (allocations, EMA buffers)
        setups[name] = (model, opt)
    times: dict[str, list[float]] = {name: [] for name in optimizers}
    peak: dict[str, int] = {}
    for _ in range(rounds):
        for name, (model, opt) in setups.items():
            if device.type == "cuda":
                torch.cuda.synchronize()
                torch.cuda.reset_peak_memory_stats()
            for _ in range(steps):
                t0 = time.perf_counter()
                opt.step(BatchClosure(model, x, y, loss_fn))
                if device.type == "cuda":
                    torch.cuda.synchronize()
                times[name].append(time.perf_counter() - t0)
            if device.type == "cuda":
                peak[name] = max(peak.get(name, 0), torch.cuda.max_memory_allocated())
    rows = []
    for name, (model, opt) in setups.items():
        step_s = statistics.median(times[name])
        params = sum(p.numel() * p.element_size() for p in model.parameters())
        state = _state_bytes(opt.state_dict()) + (params if opt.two_pass else 0)
        rows.append({"optimizer": name, "step_s": step_s, "epoch_s": step_s * steps_per_epoch,
                     "steps_per_epoch": steps_per_epoch, "batch_size": bs,
                     "timed_steps": len(times[name]),
                     "memory_kind": "cuda_peak" if device.type == "cuda" else "optimizer_state",
                     "memory_mb": (peak[name] if device.type == "cuda" else state) / 2**20,
                     "param_mb": params / 2**20, "device": device.type})
    ref = {r["optimizer"]: r["step_s"] for r in rows}
    # each round's median step time, so the ledger can put an interval on the ratios
    per_round = {n: [statistics.median(t[k * steps:(k + 1) * steps]) for k in range(rounds)]
                 for n, t in times.items()}
    for r in rows:
        r["ratio_vs_sgd"] = r["step_s"] / ref["sgd"] if "sgd" in ref else None
        r["ratio_vs_sam"] = r["step_s"] / ref["sam"] if "sam" in ref else None
        for other in ("sgd", "sam"):
            r[f"round_ratios_vs_{other}"] = " ".join(
                f"{a / b:.4f}" for a, b in zip(per_round[r["optimizer"]], per_round[other],
                                              strict=True)) if other in per_round else ""
    return rows
