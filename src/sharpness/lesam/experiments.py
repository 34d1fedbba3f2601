"""The lesam experiments as data: expand the config's ``lesam`` section into runs.

Pure Python (no torch import), so the Snakemake rule file can call it at parse time. The
section has

``base``
    training-run keys (:mod:`sharpness.train.config`) shared by every run;
``optimizers``
    optimizer name -> its hyper-parameters (``opt_hparams``);
``groups``
    group name -> ``{overrides, optimizers, seeds, init_from}``: one training run per
    (optimizer entry, seed). An optimizer entry is a name of ``optimizers`` or a dict
    ``{label, optimizer, hparams, seeds}`` (ablation variants; ``seeds`` overrides the
    group's). ``init_from`` names another group
    and optimizer label whose final model (same seed) initialises this one (fine-tuning);
``glmc``
    long-tail runs: ``{base overrides, imbalance_factors, optimizers, seeds, ...}``;
``signal``
    the mechanism runs of ``fig_signal``.

Run ids are ``<group>-<label>-s<seed>``; every run's directory is
``results/lesam/runs/<run id>/``.
"""

from __future__ import annotations

import copy
from typing import Any

RUNS_DIR = "results/lesam/runs"
GLMC_DIR = "results/lesam/glmc"


def _merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    """Recursive dict merge (``over`` wins), without mutating either argument."""
    out = copy.deepcopy(base)
    for key, value in over.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def optimizer_entries(section: dict[str, Any], entries: list[Any]) -> list[dict[str, Any]]:
    """Normalise a group's optimizer list to ``{label, optimizer, hparams}`` dicts."""
    known = section.get("optimizers", {})
    out = []
    for entry in entries:
        if isinstance(entry, str):
            if entry not in known:
                raise KeyError(f"lesam: optimizer {entry!r} is not in lesam.optimizers "
                               f"(known: {', '.join(known)})")
            out.append({"label": entry, "optimizer": entry, "hparams": dict(known[entry]),
                        "seeds": None})
        else:
            name = entry["optimizer"]
            hparams = _merge(known.get(name, {}), entry.get("hparams", {}))
            out.append({"label": entry["label"], "optimizer": name, "hparams": hparams,
                        "seeds": entry.get("seeds")})
    return out


def run_id(group: str, label: str, seed: int) -> str:
    """``<group>-<label>-s<seed>``."""
    return f"{group}-{label}-s{seed}"


def training_runs(section: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Every training run of the section: run id -> ``{group, label, optimizer, seed, config,
    depends}`` where ``config`` is the full train config and ``depends`` the run ids whose
    models it needs."""
    runs: dict[str, dict[str, Any]] = {}
    base = section.get("base", {})
    for group, spec in section.get("groups", {}).items():
        cfg_group = _merge(base, spec.get("overrides", {}))
        for entry in optimizer_entries(section, spec["optimizers"]):
            for seed in entry["seeds"] or spec["seeds"]:
                cfg = _merge(cfg_group, {"optimizer": entry["optimizer"],
                                         "opt_hparams": entry["hparams"], "seed": int(seed)})
                depends = []
                if spec.get("init_from"):
                    src_group, src_label = spec["init_from"]
                    src = run_id(src_group, src_label, seed)
                    cfg["init_from"] = f"{RUNS_DIR}/{src}/model.pt"
                    depends.append(src)
                runs[run_id(group, entry["label"], seed)] = {
                    "group": group, "label": entry["label"], "optimizer": entry["optimizer"],
                    "seed": int(seed), "config": cfg, "depends": depends}
    return runs


def group_runs(section: dict[str, Any], group: str) -> list[str]:
    """Run ids of one group (in config order)."""
    return [rid for rid, r in training_runs(section).items() if r["group"] == group]


def glmc_runs(section: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Long-tail runs: ``lt<IF>-<label>-s<seed>`` -> GLMC settings (train keys + GLMC keys)."""
    spec = section.get("glmc")
    if not spec:
        return {}
    base = _merge(section.get("base", {}), spec.get("overrides", {}))
    runs = {}
    for factor in spec["imbalance_factors"]:
        for entry in optimizer_entries(section, spec["optimizers"]):
            for seed in spec["seeds"]:
                cfg = _merge(base, {"optimizer": entry["optimizer"],
                                    "opt_hparams": entry["hparams"], "seed": int(seed)})
                cfg["glmc"] = _merge(spec.get("method", {}),
                                     {"imbalance_factor": factor})
                rid = f"lt{factor:g}-{entry['label']}-s{seed}"
                runs[rid] = {"imbalance_factor": factor, "label": entry["label"],
                             "optimizer": entry["optimizer"], "seed": int(seed), "config": cfg}
    return runs


def signal_runs(section: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The ``fig_signal`` runs: label -> settings (train keys + probe settings)."""
    spec = section.get("signal")
    if not spec:
        return {}
    base = _merge(section.get("base", {}), spec.get("overrides", {}))
    out = {}
    for entry in optimizer_entries(section, spec["optimizers"]):
        cfg = _merge(base, {"optimizer": entry["optimizer"], "opt_hparams": entry["hparams"],
                            "seed": int(spec.get("seed", 0))})
        out[entry["label"]] = {"config": cfg, "probe_every": spec["probe_every"],
                               "probe_batch": spec.get("probe_batch")}
    return out


# -- what each workflow step needs (used by workflow/rules/lesam.smk) -------------------------

RESULTS = "results/lesam"
EVAL_ITEMS = {"robustness": "table_robustness", "domain_gen": "table_domain_gen",
              "flatness": "fig_flatness", "cost": "table_cost"}


def data_inputs(cfg: dict[str, Any]) -> list[str]:
    """The data-preparation output a run needs (none for the committed embedded sets, and
    none for ImageNet, which is user-provided and checked by its own step)."""
    name = cfg["dataset"]
    if name.endswith("_embedded") or name == "imagenet":
        return []
    return [f"results/data/{name}.json"]


def run_inputs(section: dict[str, Any], run: str) -> list[str]:
    """Inputs of one training run: the runs it starts from, its data, the ImageNet check."""
    spec = training_runs(section)[run]
    deps = [f"{RUNS_DIR}/{d}/final.json" for d in spec["depends"]]
    deps += data_inputs(spec["config"])
    if spec["config"]["dataset"] == "imagenet":
        deps.append(f"{RESULTS}/imagenet_check.json")
    return deps


def item_groups(section: dict[str, Any], item: str) -> list[str]:
    """The run groups an item reads."""
    spec = section["items"].get(item, {})
    groups = [row["group"] for row in spec.get("rows", [])]
    groups += [spec[key] for key in ("group", "reference_group") if key in spec]
    return groups


def runs_of(section: dict[str, Any], groups: list[str]) -> list[str]:
    """``final.json`` of every training run of ``groups``."""
    return [f"{RUNS_DIR}/{rid}/final.json" for rid, r in training_runs(section).items()
            if r["group"] in groups]


def build_inputs(section: dict[str, Any], item: str) -> list[str]:
    """Everything the table or figure ``item`` is drawn from."""
    if item == "table_long_tail":
        return [f"{GLMC_DIR}/{rid}/final.json" for rid in glmc_runs(section)]
    if item == "fig_signal":
        return [f"{RESULTS}/signal/{lab}/signal.jsonl" for lab in signal_runs(section)]
    evals = {v: k for k, v in EVAL_ITEMS.items()}
    if item in evals:
        return [f"{RESULTS}/eval/{evals[item]}.json"]
    return runs_of(section, item_groups(section, item))


def step_section(section: dict[str, Any], step: str, item: str | None = None) -> dict[str, Any]:
    """The part of the ``lesam`` section that one workflow step reads.

    The rules pass this, not the whole section, as the step's params, so that a setting
    change reruns only the steps that read it: editing ``items.table_robustness`` redoes the
    robustness evaluation and its table, not the GLMC and signal runs. ``step`` is ``glmc``,
    ``signal``, ``eval`` or ``build``; ``eval`` and ``build`` need the ``item`` they serve
    (an ``EVAL_ITEMS`` value or a catalog id). The subcommands give the same results from it
    as from the whole section."""
    shared = ("base", "optimizers")
    if step in ("glmc", "signal"):
        return {k: section[k] for k in (*shared, step) if k in section}
    if step not in ("eval", "build"):
        raise ValueError(f"unknown lesam step {step!r}: glmc, signal, eval or build")
    items = section.get("items", {})
    if item not in items:
        raise ValueError(f"lesam.items has no {item!r}; known: {', '.join(items)}")
    if step == "eval":
        sub = {k: section[k] for k in (*shared, "groups") if k in section}
    else:
        sub = {k: v for k, v in section.items() if k != "items"}
    sub["items"] = {item: items[item]}
    return sub


def gpu(cfg: dict[str, Any]) -> int:
    """GPUs of a training job: its ``gpus`` (default 1), 0 when pinned to the CPU."""
    from sharpness.launch import gpus_requested

    return gpus_requested(cfg)
