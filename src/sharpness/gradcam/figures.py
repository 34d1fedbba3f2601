"""Figure grid and background-share table of the Grad-CAM study, with the claim computed.

Inputs are the per-data-set ``maps.npz`` files of :func:`sharpness.gradcam.study.compute_maps`.
Statistics:

* a cell (data set, optimizer, init scale) averages the background shares of the panel
  images within each seed (massless maps excluded and counted) and reports the mean of the
  per-seed means ± the Student-t half-width over seeds (the images of one seed share one
  trained model, so the seed is the independent unit), with the per-seed means beside it;
* the paper's claim (SAM's background share exceeds GD's at the middle init on MNIST) is
  tested with *paired* differences: the same panel image under the same seed (hence the same
  initial weights and data order) trained by SAM and by GD. The images of one seed share one
  trained model, so they are not independent: the differences are averaged within each seed
  and the interval is a Student-t interval over the per-seed means (seed level,
  :func:`sharpness.evidence.stats.seed_level_interval`). "Exceeds" means that interval lies
  above 0; the caption says which of exceeds / higher but not significant / does not exceed
  the data show, and how many massless maps were dropped.

The middle init scale is the median of the configured ``alphas`` (sorted; the lower middle
one for an even count).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from sharpness.evidence.records import FINGERPRINTS, train_records_text
from sharpness.evidence.stats import seed_level_interval
from sharpness.gradcam.background import mean_ci
from sharpness.plots import method_color, new_figure, save_table
from sharpness.runs.seal import read_verified


def load_maps(path: str | os.PathLike[str]) -> dict[str, np.ndarray]:
    """The arrays of one ``maps.npz`` (a folder or the file), checked against the hash its job
    recorded (:func:`sharpness.runs.seal.read_verified`) before a number is drawn from it."""

    path = Path(path)
    if path.is_dir():
        path = path / "maps.npz"

    def arrays(p: Path) -> dict[str, np.ndarray]:
        with np.load(p, allow_pickle=False) as data:
            return {k: data[k] for k in data.files}

    return read_verified(path, arrays, what="gradcam figure")


def middle_index(alphas: Sequence[float]) -> int:
    """Index (into ``alphas`` as given) of the middle init scale."""
    order = np.argsort(np.asarray(alphas, float))
    return int(order[(len(order) - 1) // 2])


def optimizer_order(params: Mapping[str, Any], present: Sequence[str]) -> list[int]:
    """Indices of ``present`` optimizers in display order: the claim's GD first, then the
    others in config order (the workflow passes the config with sorted keys)."""
    names = [str(o) for o in present]
    gd = params.get("claim", {}).get("gd", "sgd")
    ordered = ([gd] if gd in names else []) + [n for n in names if n != gd]
    return [names.index(n) for n in ordered]


def summary_rows(params: Mapping[str, Any], maps: Mapping[str, Mapping[str, np.ndarray]],
                 level: float = 0.95) -> list[dict[str, Any]]:
    """One row per (data set, optimizer, init scale): share mean, CI, n, chance, accuracy."""
    rows = []
    for key, arr in maps.items():
        spec = params["datasets"][key]
        chance = float(np.mean(arr["masks"]))
        for i in optimizer_order(params, arr["optimizers"]):
            opt = arr["optimizers"][i]
            ospec = params["optimizers"][str(opt)]
            for j, alpha in enumerate(arr["alphas"]):
                shares = arr["shares"][i, j]
                _, _, n = mean_ci(shares.reshape(-1), level)
                share_iv, _ = seed_level_interval(list(shares), level)
                mean = share_iv.estimate
                half = (share_iv.high - share_iv.estimate) if share_iv.has_interval \
                    else float("nan")
                per_seed = [float(np.nanmean(s)) if np.isfinite(s).any() else float("nan")
                            for s in shares]
                gd = params.get("claim", {}).get("gd", "sgd")
                pair = (paired_difference(arr, str(opt), gd, j, level)
                        if str(opt) != gd and gd in [str(o) for o in arr["optimizers"]]
                        else None)
                rows.append({
                    "dataset": key, "dataset_label": spec["label"],
                    "optimizer": str(opt), "optimizer_label": ospec["label"],
                    "alpha": float(alpha), "share_mean": mean, "share_ci": half,
                    "n_maps": n, "massless_maps": int(shares.size - n),
                    "chance": chance, "test_acc": float(np.nanmean(arr["test_acc"][i, j])),
                    "per_seed_means": " ".join(f"{v:.3f}" for v in per_seed),
                    "per_seed_train": _train_text(arr, i, j),
                    "diff_vs_gd": pair["diff"] if pair else float("nan"),
                    "diff_vs_gd_ci": pair["diff_ci"] if pair else float("nan"),
                    "seed_diffs": pair["seed_diffs"] if pair else [],
                    "seed_diff": pair["seed_diff"] if pair else float("nan"),
                    "seed_diff_low": pair["seed_low"] if pair else float("nan"),
                    "seed_diff_high": pair["seed_high"] if pair else float("nan"),
                    "dropped_pairs": pair["dropped_pairs"] if pair else 0,
                })
    return rows


def paired_difference(arr: Mapping[str, np.ndarray], a: str, b: str, alpha_index: int,
                      level: float = 0.95) -> dict[str, Any]:
    """share(a) - share(b), paired by (seed, panel image), at one init scale.

    ``diff``/``diff_ci``: mean and t half-width over all image-seed pairs (pooled, as the
    table's share column); ``seed_diff`` with ``seed_low``/``seed_high``: the seed-level
    interval (pairs averaged within each seed first), which decides the ``verdict``.
    ``dropped_pairs`` counts pairs with a massless map on either side."""
    opts = [str(o) for o in arr["optimizers"]]
    per_a = arr["shares"][opts.index(a), alpha_index]  # (seeds, images)
    per_b = arr["shares"][opts.index(b), alpha_index]
    sa, sb = per_a.reshape(-1), per_b.reshape(-1)
    mean, half, n = mean_ci(sa - sb, level)
    ma, _, _ = mean_ci(sa, level)
    mb, _, _ = mean_ci(sb, level)
    seed_iv, seed_means = seed_level_interval(list(per_a - per_b), level)
    if seed_iv.has_interval and seed_iv.low > 0:
        verdict = "exceeds"
    elif np.isfinite(seed_iv.estimate) and seed_iv.estimate > 0:
        verdict = "is higher than, but not significantly above,"
    else:
        verdict = "does not exceed"
    return {"a": a, "b": b, "alpha": float(arr["alphas"][alpha_index]), "mean_a": ma,
            "mean_b": mb, "diff": mean, "diff_ci": half, "n_pairs": n, "verdict": verdict,
            "seed_diffs": seed_means, "seed_diff": seed_iv.estimate, "seed_low": seed_iv.low,
            "seed_high": seed_iv.high, "n_seeds": seed_iv.n,
            "dropped_pairs": int(sa.size - n)}


def claim_sentence(params: Mapping[str, Any], maps: Mapping[str, Mapping[str, np.ndarray]],
                   level: float = 0.95) -> tuple[str, list[dict[str, Any]]]:
    """The caption's sentence on the paper's claim, computed from the data, and its numbers."""
    claim = params.get("claim", {"dataset": "mnist", "gd": "sgd", "sam": ["sam", "sam_linf"]})
    key = claim["dataset"]
    if key not in maps:
        return f"(claim data set {key!r} not in this figure)", []
    arr = maps[key]
    mid = middle_index(arr["alphas"])
    sams = claim["sam"] if isinstance(claim["sam"], list) else [claim["sam"]]
    results = [paired_difference(arr, s, claim["gd"], mid, level) for s in sams]
    label = params["datasets"][key]["label"]
    gd_label = params["optimizers"][claim["gd"]]["label"]
    parts = []
    for r in results:
        s_label = params["optimizers"][r["a"]]["label"]
        agrees = "as the paper claims" if r["verdict"] == "exceeds" else \
            "so the paper's claim is not confirmed here"
        spread = (f"{level:.0%} CI [{r['seed_low']:+.3f}, {r['seed_high']:+.3f}] over the "
                  f"means of {r['n_seeds']} seeds (per seed: "
                  + " ".join(f"{v:+.3f}" for v in r["seed_diffs"]) + ")"
                  if r["n_seeds"] > 1 else "one seed, so no interval")
        parts.append(
            f"{s_label}'s background share ({r['mean_a']:.3f}) {r['verdict']} {gd_label}'s "
            f"({r['mean_b']:.3f}), {agrees} (paired difference {r['seed_diff']:+.3f}, "
            f"{spread}; {r['dropped_pairs']} of {r['n_pairs'] + r['dropped_pairs']} image-seed "
            f"pairs dropped for a massless map)")
    sentence = (f"On {label} at the middle init scale alpha = {results[0]['alpha']:g}: "
                + "; ".join(parts) + ".")
    return sentence, results


def _overlay(ax: Any, image: np.ndarray, cam: np.ndarray | None) -> None:
    if image.shape[0] == 1:
        ax.imshow(image[0], cmap="gray", vmin=0, vmax=1)
    else:
        ax.imshow(np.transpose(image, (1, 2, 0)))
    if cam is not None:
        ax.imshow(cam, cmap="jet", alpha=0.45, vmin=0, vmax=1)
    ax.set_xticks([])
    ax.set_yticks([])
    ax.grid(False)
    for spine in ax.spines.values():
        spine.set_visible(False)


def grid_size(params: Mapping[str, Any], maps: Mapping[str, Mapping[str, np.ndarray]],
              show: int) -> tuple[float, float]:
    """Figure size (inches) of :func:`draw_figure`'s grid: one column per input, optimizer
    and init scale, one row per shown image of each data set, and the share panels below."""
    first = next(iter(maps.values()))
    ncol = 1 + len(first["optimizers"]) * len(first["alphas"])
    return (1.05 * ncol + 0.6, 1.1 * len(maps) * show + 2.6)


def draw_figure(fig: Any, params: Mapping[str, Any],
                maps: Mapping[str, Mapping[str, np.ndarray]],
                rows: Sequence[Mapping[str, Any]], show: int) -> list[dict[str, Any]]:
    """Draw into ``fig`` the grid (data set x shown image rows; input + optimizer x init scale
    columns) and, below it, background share vs init scale per data set. Returns the tidy
    rows of every plotted number (one per map cell and one per share point)."""

    keys = list(maps)
    first = maps[keys[0]]
    order = optimizer_order(params, first["optimizers"])
    opts = [str(first["optimizers"][i]) for i in order]
    alphas = list(first["alphas"])
    ncol = 1 + len(opts) * len(alphas)
    nrow = len(keys) * show
    grid = fig.add_gridspec(nrow + 2, ncol, height_ratios=[1] * nrow + [0.25, 2.2],
                            hspace=0.08, wspace=0.05)
    plotted: list[dict[str, Any]] = []
    for d, key in enumerate(keys):
        arr = maps[key]
        label = params["datasets"][key]["label"]
        for r in range(show):
            row = d * show + r
            ax = fig.add_subplot(grid[row, 0])
            _overlay(ax, arr["images"][r], None)
            ax.set_ylabel(f"{label}\n(label {int(arr['labels'][r])})" if r == 0
                          else f"label {int(arr['labels'][r])}", fontsize=6)
            if row == 0:
                ax.set_title("input", fontsize=7)
            for col, (i, opt) in enumerate(zip(order, opts, strict=True)):
                for j, alpha in enumerate(alphas):
                    share = float(arr["shares"][i, j, 0, r])
                    cam = arr["maps"][i, j, 0, r] if np.isfinite(share) else None
                    ax = fig.add_subplot(grid[row, 1 + col * len(alphas) + j])
                    _overlay(ax, arr["images"][r], cam)
                    ax.text(0.02, 0.02, "no mass" if cam is None else f"{share:.2f}",
                            transform=ax.transAxes, fontsize=5, color="white",
                            bbox={"facecolor": "black", "alpha": 0.5, "pad": 1, "lw": 0})
                    if row == 0:
                        ax.set_title(f"{params['optimizers'][opt]['label']}\nα={alpha:g}",
                                     fontsize=6, color=method_color(opt))
                    plotted.append({"panel": "map", "dataset": key, "image": r,
                                    "test_index": int(arr["indices"][r]), "optimizer": opt,
                                    "alpha": float(alpha), "seed": int(arr["seeds"][0]),
                                    "background_share": share})
    ncols_bottom = len(keys)
    sub = grid[nrow + 1, :].subgridspec(1, ncols_bottom, wspace=0.35)
    for d, key in enumerate(keys):
        ax = fig.add_subplot(sub[0, d])
        chance = None
        for i, opt in enumerate(opts):  # display order
            pts = [r for r in rows if r["dataset"] == key and r["optimizer"] == opt]
            xs = np.array([p["alpha"] for p in pts])
            ys = np.array([p["share_mean"] for p in pts])
            es = np.array([p["share_ci"] for p in pts])
            offset = (i - (len(opts) - 1) / 2) * 0.04
            ax.errorbar(xs * (1 + offset), ys, yerr=es, marker="o", capsize=2,
                        color=method_color(opt), label=params["optimizers"][opt]["label"])
            chance = pts[0]["chance"] if pts else chance
            for p in pts:
                plotted.append({"panel": "share", "dataset": key, "optimizer": opt,
                                "alpha": p["alpha"], "share_mean": p["share_mean"],
                                "share_ci": p["share_ci"], "n_maps": p["n_maps"],
                                "chance": p["chance"]})
        if chance is not None:
            ax.axhline(chance, color="0.4", ls="--", lw=1, label="uniform map")
        ax.set_xscale("log")
        ax.set_xticks(alphas, [f"{a:g}" for a in alphas])
        ax.minorticks_off()
        ax.set_xlabel("init scale α")
        ax.set_title(params["datasets"][key]["label"], fontsize=8)
        if d == 0:
            ax.set_ylabel("background share")
            ax.legend(fontsize=6)
    return plotted


def _train_text(arr: Mapping[str, np.ndarray], i: int, j: int) -> str:
    """The runs' training records of one (optimizer, init scale), per seed, for the claims
    ledger's sanity check (empty for maps written before they were recorded)."""
    if "train_loss" not in arr:
        return ""

    classes = int(arr["num_classes"])
    # the runs' draw fingerprints (absent from maps written before they were recorded: the
    # ledger then counts the seeds as unproven)
    prints = [k for k in FINGERPRINTS if k in arr]
    return train_records_text(
        (int(seed), {"final_train_loss": _num(arr["train_loss"][i, j, k]),
                     "final_train_acc": _num(arr["train_acc"][i, j, k]),
                     "num_classes": classes,
                     **{p: str(arr[p][i, j, k]) for p in prints}})
        for k, seed in enumerate(arr["seeds"]))


def _num(x: float) -> float | None:
    return float(x) if np.isfinite(x) else None


def format_table_rows(rows: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Table rows with the share as ``mean ± CI`` text."""
    out = []
    for r in rows:
        ci = "n/a" if not np.isfinite(r["share_ci"]) else f"{r['share_ci']:.3f}"
        out.append({"data set": r["dataset_label"], "optimizer": r["optimizer_label"],
                    "alpha": r["alpha"], "background share": f"{r['share_mean']:.3f} ± {ci}",
                    "chance": round(r["chance"], 3), "maps": r["n_maps"],
                    "massless": r["massless_maps"], "per-seed means": r["per_seed_means"],
                    "minus GD (paired)": "" if not np.isfinite(r["seed_diff"]) else
                    _seed_text(r),
                    "test acc": round(r["test_acc"], 3),
                    "per-seed diff vs GD": " ".join(f"{v:.4f}" for v in r["seed_diffs"]),
                    "seed diff": r["seed_diff"], "seed diff low": r["seed_diff_low"],
                    "seed diff high": r["seed_diff_high"],
                    "dropped pairs": r["dropped_pairs"],
                    "per_seed_train": r.get("per_seed_train", "")})
    return out


def _seed_text(r: Mapping[str, Any]) -> str:
    if not np.isfinite(r["seed_diff_low"]):
        return f"{r['seed_diff']:+.3f} (1 seed, no interval)"
    return f"{r['seed_diff']:+.3f} [{r['seed_diff_low']:+.3f}, {r['seed_diff_high']:+.3f}]"


TABLE_COLUMNS = ["data set", "optimizer", "alpha", "background share", "minus GD (paired)",
                 "chance", "maps", "massless", "per-seed means", "test acc"]


def make_outputs(params: Mapping[str, Any], map_dirs: Mapping[str, str | os.PathLike[str]],
                 figure: str | os.PathLike[str], table: str | os.PathLike[str]) -> dict[str, Any]:
    """Build and save the figure grid and the table (with CSV and provenance)."""

    maps = {key: load_maps(path) for key, path in map_dirs.items()}
    level = float(params.get("ci_level", 0.95))
    rows = summary_rows(params, maps, level)
    sentence, results = claim_sentence(params, maps, level)
    subs = [s for key in maps for s in ([params["datasets"][key]["stand_in"]]
                                         if params["datasets"][key].get("stand_in") else [])]
    inputs = [str(Path(p) / "maps.npz") if Path(p).is_dir() else str(p)
              for p in map_dirs.values()]
    bg = "; ".join(f"{params['datasets'][k]['label']}: {_rule_text(params['datasets'][k])}"
                   for k in maps)
    weak = [f"{r['dataset_label']} {r['optimizer_label']} α={r['alpha']:g} "
            f"({r['test_acc']:.2f})" for r in rows
            if r["test_acc"] < 2.0 / len(np.unique(maps[r["dataset"]]["labels"]))]
    weak_note = ("" if not weak else " Models near chance (mean test accuracy below twice "
                 "chance), whose maps explain barely trained networks: " + ", ".join(weak) + ".")
    first = next(iter(maps.values()))
    cells, paired = _spread_text(first, level)
    common = (f"Share of Grad-CAM mass on background pixels (sum of the map over background "
              f"pixels / sum over all) of {cells}; 'chance' is the background pixel fraction "
              f"(a uniform map's share); {paired}; massless maps (all zero) are excluded and "
              f"counted. Background: {bg}.{weak_note} {sentence}")
    fig_caption = (f"Grad-CAM maps (first seed) of the same test images for every optimizer "
                   f"and init scale (number: the map's background share); below, background "
                   f"share vs init scale. {common}")
    show = int(params["panel"].get("show", 2))
    with new_figure(figure, None, figsize=grid_size(params, maps, show), stand_ins=subs) as f:
        f.add_rows(draw_figure(f.fig, params, maps, rows, show))
        f.title("Grad-CAM of CNNs trained by GD/SGD and SAM across init scales", fontsize=9)
        fig_record = f.save(fig_caption, inputs=inputs, params=dict(params))
    table_record = save_table(table, rows=format_table_rows(rows), columns=TABLE_COLUMNS,
                              caption=common, inputs=inputs, params=dict(params),
                              stand_ins=subs)
    return {"rows": rows, "claim": results, "sentence": sentence, "figure": fig_record,
            "table": table_record}


def _spread_text(arr: Mapping[str, np.ndarray], level: float) -> tuple[str, str]:
    """What the table's share and paired-difference cells are, from the seed and image
    counts the maps hold: a t-interval over seeds needs two or more seeds; one has none."""
    n_panel, n_seeds = len(arr["labels"]), len(arr["seeds"])
    if n_seeds == 1:
        return (f"{n_panel} panel test images and one seed: the mean over the images, with no "
                f"interval (one trained model per cell; an interval needs two or more seeds)",
                "'minus GD (paired)': the share minus GD's on the same image, averaged over "
                "the images, likewise without an interval")
    return (f"{n_panel} panel test images x {n_seeds} seeds: mean of the per-seed means ± "
            f"{level:.0%} t-interval over the {n_seeds} seeds",
            f"'minus GD (paired)': the share minus GD's on the same image and seed, averaged "
            f"within each seed, with the {level:.0%} t-interval over the {n_seeds} seed means "
            f"(images of one seed share a model, so the seed is the unit)")


def _rule_text(spec: Mapping[str, Any]) -> str:
    bg = spec["background"]
    rule = bg["rule"]
    if rule == "threshold":
        return f"luma < {bg.get('threshold', 0.2):g}"
    if rule == "below_median":
        return "luma below the image's median"
    return f"pixels off the pasted digit (digit intensity < {bg.get('threshold', 0.2):g})"
