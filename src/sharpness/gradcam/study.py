"""The Grad-CAM study as data: expand the config section, train the grid, explain the panel.

The ``gradcam`` config section (see ``workflow/config/quick.yaml``) names

* ``datasets``: key -> ``{name, label, background, stand_in?, train_size?, test_size?}``;
* ``optimizers``: key -> ``{name, label, hparams}`` (names of :mod:`sharpness.optim`);
* ``alphas`` (init scales, passed to the model's ``alpha``) and ``seeds``;
* ``train``: the shared :mod:`sharpness.train` run settings (model, epochs, lr, ...);
* ``panel``: ``{per_class, seed, show}`` for :func:`sharpness.gradcam.panel.select_panel`.

One training run per (data set, optimizer, init scale, seed) goes to
``<root>/<dataset>/<optimizer>/alpha<a>_seed<s>/`` through :func:`sharpness.train.train` (so
each has its metrics, model, resume and provenance). :func:`compute_maps` explains every model
of a data set on the shared panel and stores maps, masks and background shares in one npz.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import torch

from sharpness.data import load_dataset
from sharpness.evidence.records import FINGERPRINTS
from sharpness.gradcam.maps import gradcam_maps
from sharpness.gradcam.panel import select_panel
from sharpness.gradcam.runs import dataset_spec, run_config, run_name, stand_ins
from sharpness.io import atomic_save_npz, atomic_write_json
from sharpness.runs.provenance import write_run_provenance
from sharpness.runs.restart import start_over_if_removed
from sharpness.runs.seal import read_verified, seal
from sharpness.train import load_trained_model, train

SHARES_FILE = "maps.npz"
RUNS_FILE = "runs.json"


def train_group(params: Mapping[str, Any], dataset: str, optimizer: str,
                out: str | os.PathLike[str], threads: int | None = None, *,
                write: bool = True) -> dict[str, Any]:
    """Train every (init scale, seed) run of one data set and optimizer under ``out``.

    Finished runs are skipped and killed runs resume from their checkpoints (the engine's
    behaviour), unless the group's finished ``runs.json`` was removed (sealed but gone: a
    forced rerun deletes it first): then its run folders are deleted and every run starts over
    (:func:`sharpness.runs.restart.start_over_if_removed`). Returns the summary, one entry per
    run with its folder and final numbers; ``write`` (the default) also writes it as
    ``out/runs.json`` (:func:`write_group`). ``sharpness gradcam train`` trains every group
    first and writes the ``runs.json`` files last, so a job cut mid-way leaves none of them:
    the workflow deletes a cut job's outputs that exist before it reruns the job, which would
    start a finished group over.
    """

    out = Path(out)
    grid = [(float(a), int(s)) for a in params["alphas"] for s in params["seeds"]]
    start_over_if_removed(out, RUNS_FILE, [run_name(a, s) for a, s in grid],
                          what=f"gradcam group {dataset}/{optimizer}")
    entries = []
    for alpha, seed in grid:
        cfg = run_config(params, dataset, optimizer, alpha, seed)
        run_dir = out / run_name(alpha, seed)
        final = train(cfg, run_dir, threads=threads)
        entries.append({"alpha": alpha, "seed": seed, "dir": str(run_dir),
                        "status": final["status"],
                        "final_train_acc": final["final_train_acc"],
                        "final_test_acc": final["final_test_acc"],
                        "final_train_loss": final["final_train_loss"]})
    summary = {"dataset": dataset, "optimizer": optimizer, "runs": entries}
    if write:
        write_group(params, out, summary)
    return summary


def write_group(params: Mapping[str, Any], out: str | os.PathLike[str],
                summary: dict[str, Any], config_file: dict[str, str] | None = None) -> None:
    """Write a trained group's ``runs.json`` (sealed in the folder's record, which is how a
    later call knows it was finished) and its provenance record; ``config_file`` (path and
    SHA-256 of the job file the settings came from) goes into that record."""
    out = Path(out)
    atomic_write_json(out / RUNS_FILE, summary)
    seal(out, RUNS_FILE)
    # the group's own record (after its summary), naming its runs: `audit runs.json` works
    write_run_provenance(out, params={"dataset": summary["dataset"],
                                      "optimizer": summary["optimizer"],
                                      "alphas": list(params["alphas"]),
                                      "seeds": list(params["seeds"])},
                         inputs=[e["dir"] for e in summary["runs"]], outputs=[RUNS_FILE],
                         extra={"config_file": dict(config_file)} if config_file else None)


def load_panel_data(params: Mapping[str, Any], dataset: str, root: str = "data"
                    ) -> tuple[torch.Tensor, torch.Tensor, np.ndarray, np.ndarray, dict[str, Any]]:
    """Panel images, labels, test-set indices, background masks and the data info."""
    from sharpness.gradcam.background import mask_from_config  # lazy: scipy.stats; training skips

    spec = dataset_spec(params, dataset)
    root = spec.get("data_root", root)
    ds = load_dataset(spec["name"], root)
    digits = ds.extras.get("digit_test")  # the stand-in's exact digit masks
    if spec.get("test_size"):
        ds.x_test, ds.y_test = ds.x_test[:spec["test_size"]], ds.y_test[:spec["test_size"]]
    panel = params["panel"]
    idx = select_panel(ds.y_test, int(panel["per_class"]), int(panel.get("seed", 0)))
    x, y = ds.x_test[idx], ds.y_test[idx]
    masks = mask_from_config(x, spec["background"], digits[idx] if digits is not None else None)
    return x, y, idx, masks, dict(ds.info)


def compute_maps(params: Mapping[str, Any], dataset: str, runs_root: str | os.PathLike[str],
                 out: str | os.PathLike[str], root: str = "data",
                 threads: int | None = None,
                 config_file: dict[str, str] | None = None) -> dict[str, Any]:
    """Explain every trained model of ``dataset`` on the shared panel; write ``out/maps.npz``.

    Arrays: ``images`` (N, C, H, W), ``labels``, ``indices`` (into the test set), ``masks``
    (N, H, W), ``maps`` (O, A, S, N, H, W) and ``shares`` (O, A, S, N) over optimizers x init
    scales x seeds x panel images, ``test_acc``, ``train_loss`` and ``train_acc`` (O, A, S),
    ``num_classes``. Also ``out/provenance.json`` (with ``config_file``, the job file's path
    and SHA-256, when given).
    """
    from sharpness.gradcam.background import background_share  # lazy: scipy.stats

    if threads:
        torch.set_num_threads(int(threads))
    out = Path(out)
    x, y, idx, masks, info = load_panel_data(params, dataset, root)
    opts, alphas, seeds = list(params["optimizers"]), list(params["alphas"]), list(params["seeds"])
    n, (h, w) = len(x), x.shape[2:]
    maps = np.zeros((len(opts), len(alphas), len(seeds), n, h, w), np.float32)
    shares = np.full((len(opts), len(alphas), len(seeds), n), np.nan)
    test_acc = np.full((len(opts), len(alphas), len(seeds)), np.nan)
    train_loss, train_acc = np.full_like(test_acc, np.nan), np.full_like(test_acc, np.nan)
    # each run's draw as its record holds it (initial weights, data order): what the claims
    # ledger proves the seeds independent by; "" for a run that recorded none
    draws = {k: np.full(test_acc.shape, "", dtype="<U64") for k in FINGERPRINTS}
    num_classes = 0
    inputs = []
    for i, opt in enumerate(opts):
        group = Path(runs_root) / opt
        for j, alpha in enumerate(alphas):
            for k, seed in enumerate(seeds):
                run_dir = group / run_name(alpha, seed)
                final = read_verified(run_dir / "final.json", what="gradcam run")
                test_acc[i, j, k] = final["final_test_acc"]
                # the claims ledger's sanity check: did this model train?
                for arr_, key_ in ((train_loss, "final_train_loss"),
                                   (train_acc, "final_train_acc")):
                    arr_[i, j, k] = np.nan if final.get(key_) is None else final[key_]
                num_classes = int(final.get("num_classes") or num_classes)
                for key_, arr_s in draws.items():
                    arr_s[i, j, k] = str(final.get(key_) or "")
                inputs.append(str(run_dir))
                model = load_trained_model(run_dir)
                if final["status"] != "ok" or not all(
                        torch.isfinite(p).all() for p in model.parameters()):
                    continue  # a diverged model has no meaningful map: left NaN, counted
                maps[i, j, k] = gradcam_maps(model, x, y)
                shares[i, j, k] = background_share(maps[i, j, k], masks)
    spec = dataset_spec(params, dataset)
    atomic_save_npz(out / SHARES_FILE, images=x.numpy(), labels=y.numpy(), indices=idx,
                    masks=masks, maps=maps, shares=shares, test_acc=test_acc,
                    train_loss=train_loss, train_acc=train_acc,
                    num_classes=np.asarray(num_classes),
                    alphas=np.asarray(alphas, float), seeds=np.asarray(seeds),
                    optimizers=np.asarray(opts), **draws)
    write_run_provenance(out, params={"dataset": dataset, "spec": spec,
                                      "panel": params["panel"], "alphas": alphas,
                                      "seeds": seeds, "optimizers": params["optimizers"],
                                      "runs": inputs},
                         data=[info], stand_ins=stand_ins(spec),
                         # the training runs, by content: they enter the id, and
                         # `sharpness audit` follows the chain to them
                         inputs=inputs,
                         extra={"massless_maps": int(np.isnan(shares).sum()),
                                "panel_size": n,
                                **({"config_file": dict(config_file)} if config_file else {})},
                         outputs=[SHARES_FILE])  # the figure job checks it against this
    return {"shares": shares, "test_acc": test_acc}
