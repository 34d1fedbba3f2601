"""The lesam tables: Markdown, LaTeX and CSV through :func:`sharpness.plots.save_table`.

Every builder takes what its job was given (:class:`sharpness.lesam.records.Given`: the
item's settings, the runs its rule names, read from their records, and the evaluation file)
and the output path, and writes one table whose caption names the data actually used (and
every stand-in, also in the title line and the provenance). Cells
are mean ± sample std over seeds with the seed count beside every mean (``(n=3)``, and
``(n=2; 1 diverged)`` when runs were left out); the paper's reported
numbers sit in their own column where the catalog gives them, never mixed with ours.
"""

from __future__ import annotations

import os
from typing import Any

from sharpness.evidence.records import train_records_text
from sharpness.evidence.reported import comparable_setting, paper_column
from sharpness.lesam.records import (
    Given,
    Run,
    by_label,
    files_of,
    read_sentence,
    sources_sentence,
)
from sharpness.lesam.report import (
    group_by,
    label,
    mean_std,
    per_seed_best_text,
    per_seed_text,
    precision_text,
    status_counts,
)
from sharpness.plots import save_table, stand_in_title
from sharpness.runs.seal import read_verified

PathLike = str | os.PathLike[str]


def evaluated(given: Given) -> list[dict[str, Any]]:
    """The rows of the evaluation file the job was given, read through the hash the
    evaluation job recorded."""
    return read_verified(given.evaluated(), what=f"lesam {given.item}")


def runs_of(given: Given, groups: list[str]) -> list[Run]:
    """The given runs of ``groups``."""
    return [r for r in given.runs if r.group in groups]


def heading(spec: dict[str, Any]) -> str:
    """An item's title line: its configured title, naming its stand-ins."""
    return stand_in_title(spec["title"], spec.get("stand_ins", []))


def _caption(spec: dict[str, Any], what: str, sources: str = "",
             read: str = "") -> str:
    """The caption: what the item shows, the data used (the config's words), what the runs
    read actually used (``read``: :func:`runs_sentence`, from their records) and the sources."""
    return (f"{what} Data used: {spec['data_used']}.{' ' + read if read else ''}"
            f"{' ' + sources if sources else ''}")


BEST = "best-epoch test acc. (%)"
FINAL = "final-epoch test acc. (%)"
#: the paper's numbers are best-epoch accuracies (the LE-SAM and ESAM loops keep the best test
#: accuracy over epochs; GLMC's too), so their column sits beside ours of the same kind
PAPER = "paper (reported, best epoch)"
ACC_COLUMNS = ["data set", "model", "optimizer", BEST, PAPER, FINAL]
METRIC_NOTE = ("'best epoch' is the highest test accuracy over the per-epoch evaluations (the "
               "metric the official LE-SAM, ESAM and GLMC loops keep and the paper reports); "
               "'final epoch' the accuracy after the last epoch.")


def accuracy_cells(finals: list[dict[str, Any]], seeds: list[Any]) -> dict[str, Any]:
    """A row's accuracy cells over seeds, best epoch and final epoch, each labelled.

    ``mean``/``std``/``per_seed`` keep the final epoch's values (the claims ledger reads them);
    ``best_mean``/``best_std``/``best_per_seed`` the best epoch's."""
    counts = status_counts(finals)
    ok = [f for f in finals if f.get("status") == "ok"]
    m, s, text = mean_std([f["final_test_acc"] for f in ok], **counts)
    bm, bs, btext = mean_std([f["best_test_acc"] for f in ok], **counts)
    pairs = list(zip(seeds, finals, strict=True))
    return {BEST: btext, FINAL: text, "mean": m, "std": s, "best_mean": bm, "best_std": bs,
            "best_epochs": " ".join(str(f["best_epoch"]) for f in ok
                                    if f.get("best_epoch") is not None),
            "seeds": len(ok), "diverged": counts["diverged"],
            "per_seed": per_seed_text(pairs), "best_per_seed": per_seed_best_text(pairs),
            # each seed's training level: the claims ledger's sanity check reads it
            "per_seed_train": train_records_text((sd, f) for sd, f in pairs
                                                 if f.get("status") == "ok")}


def _accuracy_rows(given: Given) -> tuple[list[dict[str, Any]], list[str], list[Run]]:
    """Rows (data set, model, optimizer) with test accuracy over seeds, for groups of runs,
    their inputs and the runs read."""
    spec, item = given.spec, given.item
    rows, inputs, read = [], [], []
    for block in spec.get("rows", []):
        for lab, runs in by_label(given.runs, block["group"]).items():
            inputs += files_of(runs)
            read += runs
            ok = comparable_setting(runs[0].config, spec.get("stand_ins"))
            paper = paper_column(item, block.get("paper_key", ""), ok) if lab == "lesam" else ""
            rows.append({"data set": block["dataset"], "model": block["model"],
                         "optimizer": label(lab),
                         **accuracy_cells([r.final for r in runs], [r.seed for r in runs]),
                         PAPER: paper, "group": block["group"], "label": lab})
    for block in spec.get("paper_only", []):
        rows.append({"data set": block["dataset"], "model": block.get("model", "all"),
                     "optimizer": "all", BEST: "paper profile only", FINAL: "",
                     "mean": None, "std": None, "seeds": 0, "diverged": 0,
                     PAPER: paper_column(item, block["dataset"], False)
                     + f" [{block['reason']}]"})
    return rows, inputs, read


def _seed_text(rows: list[dict[str, Any]]) -> str:
    """What the cells are, from the seed counts the rows hold (never "± std" for one seed)."""
    counts = sorted({int(r["seeds"]) for r in rows if r.get("seeds")})
    if not counts:
        return "no finished runs"
    if counts == [1]:
        return "one seed per row (no spread)"
    span = f"{counts[0]}–{counts[-1]}" if len(counts) > 1 else f"{counts[0]}"
    return (f"mean ± sample std over {span} seeds per row"
            + ("; rows with one seed show the value alone" if counts[0] == 1 else ""))


def build_accuracy_table(given: Given, out: PathLike) -> dict[str, Any]:
    """``table_cifar``, ``table_imagenet`` and ``table_transfer``: accuracy per run group."""
    spec = given.spec
    rows, inputs, read = _accuracy_rows(given)
    caption = _caption(spec, f"{heading(spec)}: test "
                             f"accuracy (%), {_seed_text(rows)}; {METRIC_NOTE}",
                       sources_sentence(read), read_sentence(read))
    return save_table(out, rows=rows, columns=ACC_COLUMNS, caption=caption, inputs=inputs,
                      params=spec, stand_ins=spec.get("stand_ins", []))


def build_table_robustness(given: Given, out: PathLike) -> dict[str, Any]:
    """Accuracy under PGD per optimizer, norm and radius (mean ± std over seeds)."""
    spec, path, evals = given.spec, given.evaluated(), evaluated(given)
    runs = runs_of(given, [spec["group"]])
    rows = []
    for (opt, norm, radius), items in group_by(evals, "optimizer", "norm", "radius").items():
        m, s, text = mean_std([r["accuracy"] for r in items if r.get("status", "ok") == "ok"],
                              **status_counts(items))
        rows.append({"optimizer": label(opt), "attack": f"PGD-{norm.upper()}",
                     "radius": radius, "accuracy (%)": text, "mean": m, "std": s,
                     "seeds": len(items), "steps": spec["steps"], "n_test": items[0]["n_test"],
                     "paper (reported)": paper_column("table_robustness", "any", False)
                     if opt == "lesam" else "", "label": opt,
                     "per_seed": per_seed_text((r["seed"], {"status": r.get("status", "ok"),
                                                            "final_test_acc": r["accuracy"]})
                                               for r in items),
                     "per_seed_train": train_records_text((r["seed"], r["train"]) for r in items
                                                          if "train" in r)})
    caption = _caption(spec, f"{heading(spec)}: accuracy "
                             f"(%) under {spec['steps']}-step PGD (step 2.5 eps/steps, random "
                             "start), radius in [0,1] pixel units; radius 0 is clean accuracy.",
                       sources_sentence(runs))
    return save_table(out, rows=rows, columns=["optimizer", "attack", "radius",
                                               "accuracy (%)", "paper (reported)"],
                      caption=caption, inputs=[path, *files_of(runs)], params=spec,
                      stand_ins=spec.get("stand_ins", []))


DATASET_NAMES = {"pacs": "PACS", "vlcs": "VLCS"}


def _table_domains(given: Given, evals: list[dict[str, Any]], out: PathLike
                   ) -> dict[str, Any]:
    """PACS/VLCS: per data set and optimizer, for each source domain the mean accuracy over
    the other domains, and the mean over sources (per seed, then mean ± std over seeds)."""
    spec, rows = given.spec, []
    sources_seen: list[str] = []
    runs = runs_of(given, list(spec["groups"]))
    comparable = bool(runs) and all(comparable_setting(r.config, spec.get("stand_ins"))
                                    for r in runs)
    for (dataset, opt), items in group_by(evals, "dataset", "optimizer").items():
        row: dict[str, Any] = {"data set": DATASET_NAMES.get(dataset, dataset),
                               "optimizer": label(opt)}
        per_seed: dict[int, list[float]] = {}
        for (source,), per in group_by(items, "source").items():
            name = f"from {source}"
            sources_seen += [name] if name not in sources_seen else []
            by_seed = {int(k[0]): statistics_mean([r["accuracy"] for r in v])
                       for k, v in group_by(per, "seed").items()}
            row[name] = mean_std(list(by_seed.values()))[2]
            for seed, acc in by_seed.items():
                per_seed.setdefault(seed, []).append(acc)
        means = {seed: statistics_mean(v) for seed, v in sorted(per_seed.items())}
        m, s, text = mean_std(list(means.values()))
        row.update({"mean over sources": text, "mean": m, "std": s, "seeds": len(means),
                    "paper (reported)": paper_column("table_domain_gen",
                                                     DATASET_NAMES.get(dataset, dataset),
                                                     comparable)
                    if opt == "lesam" else "", "label": opt,
                    "per_seed": " ".join(f"{k}:{100 * v:.4f}" for k, v in means.items())})
        rows.append(row)
    caption = _caption(spec, f"{heading(spec)}: single-source domain generalisation; each "
                             "'from <domain>' cell is the final model's accuracy (%) averaged "
                             "over every other domain of the data set, trained on that domain "
                             "alone; 'mean over sources' averages those per seed; "
                             f"{precision_text(evals)}.",
                       sources_sentence(runs))
    return save_table(out, rows=rows, columns=["data set", "optimizer", *sources_seen,
                                               "mean over sources", "paper (reported)"],
                      caption=caption, inputs=[given.evaluated(), *files_of(runs)],
                      params=spec,
                      stand_ins=spec.get("stand_ins", []))


def build_table_domain_gen(given: Given, out: PathLike) -> dict[str, Any]:
    """Domain generalisation: PACS/VLCS single-source (``groups``: one group per source
    domain) or the Rotated-MNIST stand-in (``angles``): accuracy on each unseen rotation and
    their mean, per optimizer."""
    spec, path, evals = given.spec, given.evaluated(), evaluated(given)
    if "groups" in spec:
        return _table_domains(given, evals, out)
    runs = runs_of(given, [spec["group"]])
    rows = []
    train_angle = float(spec.get("train_angle", 0))
    for (opt,), every in group_by(evals, "optimizer").items():
        row: dict[str, Any] = {"optimizer": label(opt)}
        items = [r for r in every if r.get("status", "ok") == "ok"]  # diverged: counted below
        left_out = status_counts(list({r["run"]: r for r in every}.values()))
        by_seed = group_by(items, "seed")
        for (angle,), per in group_by(items, "angle").items():
            row[f"{angle:g}°"] = mean_std([r["accuracy"] for r in per])[2]
        unseen = [statistics_mean([r["accuracy"] for r in per if r["angle"] != train_angle])
                  for per in by_seed.values()]
        m, s, text = mean_std(unseen, **left_out)
        row.update({"mean unseen": text, "mean": m, "std": s, "seeds": len(by_seed),
                    "paper (reported)": paper_column("table_domain_gen", "any", False)
                    if opt == "lesam" else "", "label": opt,
                    "per_seed": " ".join(f"{int(k[0])}:{100 * v:.4f}"
                                         for k, v in zip(by_seed, unseen, strict=True)),
                    "per_seed_train": train_records_text((k[0], per[0]["train"]) for k, per
                                                         in by_seed.items()
                                                         if "train" in per[0])})
        rows.append(row)
    angle_cols = [k for k in rows[0] if k.endswith("°")] if rows else []
    for block in spec.get("paper_only", []):
        rows.append({"optimizer": f"{block['dataset']}: not run", "mean unseen": block["reason"],
                     "paper (reported)": paper_column("table_domain_gen", block["dataset"],
                                                      False)})
    caption = _caption(spec, f"{heading(spec)}: trained on "
                             f"{train_angle:g}° only, accuracy (%) on each rotation; 'mean "
                             "unseen' averages the unseen angles per seed.",
                       sources_sentence(runs))
    return save_table(out, rows=rows, columns=["optimizer", *angle_cols, "mean unseen",
                                               "paper (reported)"],
                      caption=caption, inputs=[path, *files_of(runs)], params=spec,
                      stand_ins=spec.get("stand_ins", []))


def statistics_mean(values: list[float]) -> float:
    """Plain mean (nan for none)."""
    return sum(values) / len(values) if values else float("nan")


def glmc_sources_sentence(runs: list[Run]) -> str:
    """"GLMC settings and sources: IF 100: beta=0.5 [official: ...]; ..." (empty without
    sources): the settings of each imbalance factor, where the long-tail table's recipe is
    read from (each run's record: its sources and the GLMC settings it trained with)."""
    by_factor: dict[str, list[str]] = {}
    for run in runs:
        method = run.record.get("hook_settings", {}).get("glmc", {})
        items = [f"{key[5:]}={method.get(key[5:])} [{text}]"
                 for key, text in run.config.get("sources", {}).items()
                 if key.startswith("glmc.")]
        if items:
            by_factor[f"IF {run.final['imbalance_factor']:g}"] = items
    if not by_factor:
        return ""
    return "GLMC settings and sources: " + " | ".join(
        f"{factor}: {'; '.join(items)}" for factor, items in by_factor.items()) + "."


def build_table_long_tail(given: Given, out: PathLike) -> dict[str, Any]:
    """GLMC, GLMC+SAM, GLMC+LE-SAM per imbalance factor (balanced test set)."""
    spec, rows, inputs = given.spec, [], []
    keyed = [{"factor": r.final["imbalance_factor"], "label": r.label, "run": r}
             for r in given.runs]
    for (factor, lab), items in group_by(keyed, "factor", "label").items():
        runs = [item["run"] for item in items]
        finals = [r.final for r in runs]
        inputs += files_of(runs)
        name = "GLMC" if lab == "sgd" else f"GLMC + {label(lab)}"
        rows.append({"imbalance factor": factor, "method": name,
                     **accuracy_cells(finals, [r.seed for r in runs]),
                     "train counts (head→tail)": "/".join(map(str, finals[0]["train_counts"])),
                     PAPER: paper_column("table_long_tail", f"{factor:g}",
                                         comparable_setting(runs[0].config,
                                                            spec.get("stand_ins")))
                     if lab == "lesam" else "", "label": lab})
    caption = _caption(spec, f"{heading(spec)}: GLMC "
                             "(global MixUp / local CutMix consistency, cumulative re-weighted "
                             "loss) with SGD, SAM and LE-SAM as its optimizer; accuracy (%) "
                             f"on the balanced test set, {_seed_text(rows)}; {METRIC_NOTE}",
                       glmc_sources_sentence(given.runs), read_sentence(given.runs))
    return save_table(out, rows=rows, columns=["imbalance factor", "method", BEST, PAPER, FINAL,
                                               "train counts (head→tail)"],
                      caption=caption, inputs=inputs, params=spec,
                      stand_ins=spec.get("stand_ins", []))


def build_table_cost(given: Given, out: PathLike) -> dict[str, Any]:
    """Time per step and epoch, ratios to SGD and SAM, memory, measured in one process."""
    spec, path, evals = given.spec, given.evaluated(), evaluated(given)
    rows = []
    for r in evals:
        rows.append({"optimizer": label(r["optimizer"]), "step (ms)": f"{1e3 * r['step_s']:.1f}",
                     "epoch (s)": f"{r['epoch_s']:.2f}",
                     "÷ SGD": f"{r['ratio_vs_sgd']:.2f}" if r["ratio_vs_sgd"] else "",
                     "÷ SAM": f"{r['ratio_vs_sam']:.2f}" if r["ratio_vs_sam"] else "",
                     "memory (MB)": f"{r['memory_mb']:.2f} ({r['memory_kind']})",
                     **{f"raw_{k}": v for k, v in r.items()}})
    device = evals[0]["device"] if evals else "?"
    caption = _caption(spec, f"{heading(spec)}: median "
                             f"time per step over interleaved rounds in one process on {device} "
                             f"(batch {evals[0]['batch_size'] if evals else '?'}); epoch = "
                             "step × steps per epoch. Expected: SAM ÷ SGD ≈ 2, LE-SAM ÷ SAM ≈ 1. "
                             "CPU memory column = optimizer state + the parameter copy of a "
                             "two-pass step (CUDA: peak allocated).")
    return save_table(out, rows=rows, columns=["optimizer", "step (ms)", "epoch (s)", "÷ SGD",
                                               "÷ SAM", "memory (MB)"],
                      caption=caption, inputs=[path], params=spec,
                      stand_ins=spec.get("stand_ins", []))


TABLES = {
    "table_cifar": build_accuracy_table,
    "table_imagenet": build_accuracy_table,
    "table_transfer": build_accuracy_table,
    "table_robustness": build_table_robustness,
    "table_domain_gen": build_table_domain_gen,
    "table_long_tail": build_table_long_tail,
    "table_cost": build_table_cost,
}
