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
    long-tail runs: ``{base overrides, method, imbalance_factors, optimizers, seeds}``; an
    imbalance factor is a number or ``{factor, method, overrides, source}`` with its own
    settings (:func:`glmc_factors`);
``signal``
    the mechanism runs of ``fig_signal``.

Run ids are ``<group>-<label>-s<seed>``. Where each run and step writes is stated once, here
(:data:`TRAIN_FINAL`, :data:`TRAIN_MODEL`, :data:`GLMC_FINAL`, :data:`SIGNAL_PROBES`,
:data:`EVALUATION`: patterns of the rule file's wildcards, filled by :func:`output`). Every run's config carries ``tags`` ``{group, label}``
(GLMC runs: group ``lt<IF>``; signal runs: group ``signal``), which its provenance record
keeps: the tables and figures read which run is which from the records
(:mod:`sharpness.lesam.records`), never from this expansion.

The expansion is computed once per process for a given section: :func:`all_runs` caches it by
the section's canonical JSON and hands out one read-only copy (:mod:`sharpness.frozen`), which
:func:`training_runs`, :func:`glmc_runs`, :func:`signal_runs` and every caller
(:mod:`sharpness.config.check`, :mod:`sharpness.lesam.steps`, the rule file, the cost planner)
read. A caller that must change a run's config deep-copies it first.

Hyper-parameters: every run's ``opt_hparams`` are resolved here, once an optimizer entry, by
the optimizer's spec (:meth:`sharpness.optim.spec.OptimizerSpec.resolve`: checked, defaults
filled in); a refused value is a :class:`~sharpness.errors.ConfigError` naming the config key
and the first run that uses it. The job files hold these resolved values, and the training
process takes them as they are (:func:`sharpness.train.config.validate_config` with
``resolved=True``): the spec is asked once, when the run list is built.

Sources (the paper profile): ``base``, each optimizer of ``optimizers``, each dict entry of a
group's list, each group (for its ``overrides``), ``glmc`` and ``signal`` may carry a
``source`` mapping, setting -> ``"official: <repo> <file> ..."``, ``"paper: <where>"`` or
``"choice: <why>"``. It never reaches the optimizer or the engine as a setting: each run's
config gets ``sources`` (``lr``, ``opt_hparams.rho``, ...), which the provenance records and
``sharpness audit`` and the table captions show. :func:`missing_sources` lists the settings
of a section written without one (the paper profile must have none).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from sharpness.errors import ConfigError
from sharpness.frozen import freeze
from sharpness.mappings import deep_merge
from sharpness.optim.spec import optimizer_spec

RESULTS = "results/lesam"
RUNS_DIR = f"{RESULTS}/runs"
#: the ``tags.group`` of the ``fig_signal`` runs (their folders are named by label)
SIGNAL_GROUP = "signal"
GLMC_DIR = f"{RESULTS}/glmc"
#: the output layout, one pattern per file kind (``{run}``: a run id or signal key,
#: ``{what}``: an evaluation of ``sharpness.lesam.steps.EVAL_ITEMS``)
TRAIN_FINAL = f"{RUNS_DIR}/{{run}}/final.json"
TRAIN_MODEL = f"{RUNS_DIR}/{{run}}/model.pt"
GLMC_FINAL = f"{GLMC_DIR}/{{run}}/final.json"
SIGNAL_PROBES = f"{RESULTS}/signal/{{run}}/signal.jsonl"
EVALUATION = f"{RESULTS}/eval/{{what}}.json"
#: the config file a job reads (written when the workflow plans, by
#: :meth:`sharpness.jobs.Plan.write`): a training run's, and a GLMC run's or a
#: signal probe's (``{step}`` is ``glmc`` or ``signal``)
TRAIN_CONFIG = f"{RESULTS}/configs/{{run}}.json"
STEP_CONFIG = f"{RESULTS}/configs/{{step}}/{{run}}.json"
SOURCE_KEY = "source"
SOURCE_KINDS = ("official", "paper", "choice")
#: run-config keys that are optimizer settings and need a source when written in the config
SOURCED_TRAIN_KEYS = ("epochs", "batch_size", "lr", "momentum", "weight_decay", "nesterov",
                      "lr_schedule", "warmup_steps", "label_smoothing", "augment", "bf16")


def _strip(spec: dict[str, Any]) -> tuple[dict[str, Any], dict[str, str]]:
    """``(settings without source, source mapping)``."""
    spec = dict(spec or {})
    return spec, dict(spec.pop(SOURCE_KEY, None) or {})


def _with_sources(cfg: dict[str, Any], sources: dict[str, str]) -> dict[str, Any]:
    """The run config with its ``sources`` (only when there are any: the quick profile's run
    configs, and so their cache keys, are unchanged)."""
    if sources:
        cfg["sources"] = dict(sorted(sources.items()))
    return cfg


def _train_sources(*layers: tuple[dict[str, Any], dict[str, str]]) -> dict[str, str]:
    """Sources of the training keys set in each layer (later layers win)."""
    out: dict[str, str] = {}
    for settings, sources in layers:
        for key, text in sources.items():
            if key in settings or key not in SOURCED_TRAIN_KEYS:
                out[key] = text
    return out


def optimizer_entries(section: dict[str, Any], entries: list[Any]) -> list[dict[str, Any]]:
    """Normalise a group's optimizer list to ``{label, optimizer, hparams, seeds, sources}``
    dicts (``sources``: hyper-parameter -> source, the entry's over the optimizer's)."""
    known = section.get("optimizers", {})
    out = []
    for entry in entries:
        if isinstance(entry, str):
            if entry not in known:
                raise KeyError(f"lesam: optimizer {entry!r} is not in lesam.optimizers "
                               f"(known: {', '.join(known)})")
            hparams, sources = _strip(known[entry])
            out.append({"label": entry, "optimizer": entry, "hparams": hparams,
                        "seeds": None, "sources": sources})
        else:
            name = entry["optimizer"]
            base, base_sources = _strip(known.get(name, {}))
            hparams = deep_merge(base, entry.get("hparams", {}))
            sources = {**base_sources, **(entry.get(SOURCE_KEY) or {})}
            out.append({"label": entry["label"], "optimizer": name, "hparams": hparams,
                        "seeds": entry.get("seeds"), "sources": sources})
    return out


def _opt_sources(entry: dict[str, Any]) -> dict[str, str]:
    return {f"opt_hparams.{k}": v for k, v in entry["sources"].items() if k in entry["hparams"]}


def _written(entry: dict[str, Any]) -> list[str]:
    """The hyper-parameters the config writes for ``entry`` (each needs a source; a default
    has its own in ``optimizers.yaml``)."""
    return sorted(f"opt_hparams.{k}" for k in entry["hparams"])


def resolved_hparams(entry: dict[str, Any], where: str) -> dict[str, Any]:
    """The optimizer entry's hyper-parameters resolved by its spec (checked, defaults filled
    in): the one call that resolves a lesam run's hyper-parameters. ``where`` names the first
    run that uses them (``run cifar-sam-s0``) in the error."""
    name, label = entry["optimizer"], entry["label"]
    try:
        return optimizer_spec(name).resolve(entry["hparams"])
    except (KeyError, ValueError) as exc:
        key = (f"lesam.optimizers.{name}" if label == name
               else f"lesam.optimizers.{name} with the hparams of entry {label!r}")
        reason = exc.args[0] if exc.args else exc
        raise ConfigError(f"config key {key} (lesam {where}): {reason}") from None


def base_config(section: dict[str, Any]) -> dict[str, Any]:
    """``base`` without its ``source`` mapping."""
    return _strip(section.get("base", {}))[0]


def optimizer_hparams(section: dict[str, Any], name: str) -> dict[str, Any]:
    """The hyper-parameters of ``optimizers.<name>`` without its ``source`` mapping."""
    return _strip(section.get("optimizers", {})[name])[0]


def run_id(group: str, label: str, seed: int) -> str:
    """``<group>-<label>-s<seed>``."""
    return f"{group}-{label}-s{seed}"


def output(pattern: str, **wildcards: str) -> str:
    """One file of the output layout: ``output(TRAIN_FINAL, run="cifar-sam-s0")``."""
    return pattern.format(**wildcards)


@dataclass(frozen=True)
class Runs:
    """Every run of a lesam section, read-only: ``training`` (:func:`training_runs`),
    ``glmc`` (:func:`glmc_runs`) and ``signal`` (:func:`signal_runs`)."""

    training: Mapping[str, Mapping[str, Any]]
    glmc: Mapping[str, Mapping[str, Any]]
    signal: Mapping[str, Mapping[str, Any]]


@lru_cache(maxsize=16)
def expand(canonical: str) -> Runs:
    """The runs of the section whose canonical JSON (:func:`canonical`) is ``canonical``,
    computed once per process (``expand.cache_info().misses`` counts the expansions)."""
    section = json.loads(canonical)
    return Runs(freeze(_training_runs(section)), freeze(_glmc_runs(section)),
                freeze(_signal_runs(section)))


def canonical(section: Mapping[str, Any]) -> str:
    """The section as compact JSON, keys in the config's order (the order of the groups and
    entries is the order of the runs): the key of its expansion."""
    return json.dumps(section, separators=(",", ":"))


def all_runs(section: Mapping[str, Any]) -> Runs:
    """Every run of ``section``, expanded once per process (:func:`expand`)."""
    return expand(canonical(section))


def training_runs(section: Mapping[str, Any]) -> Mapping[str, Mapping[str, Any]]:
    """Every training run of the section: run id -> ``{group, label, optimizer, seed, config,
    depends, sourced}`` where ``config`` is the full train config (``opt_hparams`` resolved),
    ``depends`` the run ids whose models it needs and ``sourced`` the settings written for it
    that need a source (read-only: :func:`all_runs`)."""
    return all_runs(section).training


def _training_runs(section: dict[str, Any]) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    base, base_src = _strip(section.get("base", {}))
    for group, spec in section.get("groups", {}).items():
        overrides = spec.get("overrides", {})
        cfg_group = deep_merge(base, overrides)
        train_src = _train_sources((base, base_src), (overrides, spec.get(SOURCE_KEY) or {}))
        for entry in optimizer_entries(section, spec["optimizers"]):
            seeds = entry["seeds"] or spec["seeds"]
            hparams = resolved_hparams(
                entry, f"run {run_id(group, entry['label'], seeds[0])}") if seeds else {}
            for seed in seeds:
                cfg = deep_merge(cfg_group, {"optimizer": entry["optimizer"],
                                         "opt_hparams": hparams, "seed": int(seed),
                                         "tags": {"group": group, "label": entry["label"]}})
                _with_sources(cfg, {**train_src, **_opt_sources(entry)})
                depends = []
                if spec.get("init_from"):
                    src_group, src_label = spec["init_from"]
                    src = run_id(src_group, src_label, seed)
                    cfg["init_from"] = output(TRAIN_MODEL, run=src)
                    depends.append(src)
                out[run_id(group, entry["label"], seed)] = {
                    "group": group, "label": entry["label"], "optimizer": entry["optimizer"],
                    "seed": int(seed), "config": cfg, "depends": depends,
                    "sourced": _written(entry)}
    return out


def group_runs(section: Mapping[str, Any], group: str) -> list[str]:
    """Run ids of one group (in config order)."""
    return [rid for rid, r in training_runs(section).items() if r["group"] == group]


def _study_config(section: dict[str, Any], spec: dict[str, Any], group: str
                  ) -> Callable[[dict[str, Any], dict[str, Any], int], dict[str, Any]]:
    """For a study with its own ``overrides`` (GLMC, the signal probe): the train config of
    one (optimizer entry, its resolved hyper-parameters, seed), with the source of every
    setting recorded and the run's ``group`` and ``label`` in its ``tags`` (which its record
    keeps)."""
    base_cfg, base_src = _strip(section.get("base", {}))
    overrides = spec.get("overrides", {})
    base = deep_merge(base_cfg, overrides)
    train_src = _train_sources((base_cfg, base_src), (overrides, spec.get(SOURCE_KEY) or {}))

    def run_config(entry: dict[str, Any], hparams: dict[str, Any], seed: int
                   ) -> dict[str, Any]:
        cfg = deep_merge(base, {"optimizer": entry["optimizer"], "opt_hparams": hparams,
                            "seed": seed, "tags": {"group": group, "label": entry["label"]}})
        _with_sources(cfg, {**train_src, **_opt_sources(entry)})
        return cfg
    return run_config


def glmc_factors(spec: dict[str, Any]) -> list[dict[str, Any]]:
    """The imbalance factors of a ``glmc`` spec as ``{factor, method, overrides, source}``.

    An entry is a number (the spec's ``method`` and ``overrides`` as they are) or a mapping
    with ``factor`` and its own ``method``/``overrides``/``source``, merged over the spec's:
    the GLMC README's settings differ per imbalance factor."""
    out = []
    for item in spec["imbalance_factors"]:
        item = item if isinstance(item, dict) else {"factor": item}
        out.append({"factor": item["factor"],
                    "method": deep_merge(spec.get("method", {}), item.get("method", {})),
                    "overrides": deep_merge(spec.get("overrides", {}), item.get("overrides", {})),
                    "source": {**(spec.get(SOURCE_KEY) or {}), **(item.get(SOURCE_KEY) or {})},
                    "written": set(spec.get("method", {})) | set(item.get("method", {}))})
    return out


def glmc_runs(section: Mapping[str, Any]) -> Mapping[str, Mapping[str, Any]]:
    """Long-tail runs: ``lt<IF>-<label>-s<seed>`` -> GLMC settings (train keys + GLMC keys),
    read-only (:func:`all_runs`).

    The source of a GLMC setting (``method`` key) is recorded as ``glmc.<key>``."""
    return all_runs(section).glmc


def _glmc_runs(section: dict[str, Any]) -> dict[str, dict[str, Any]]:
    spec = section.get("glmc")
    if not spec:
        return {}
    out = {}
    for item in glmc_factors(spec):
        factor, method = item["factor"], item["method"]
        train_source = {k: v for k, v in item["source"].items() if k not in method}
        run_config = _study_config(section, {"overrides": item["overrides"],
                                             SOURCE_KEY: train_source}, f"lt{factor:g}")
        glmc_sources = {f"glmc.{k}": v for k, v in item["source"].items() if k in method}
        for entry in optimizer_entries(section, spec["optimizers"]):
            hparams = resolved_hparams(entry, "glmc run " + run_id(
                f"lt{factor:g}", entry["label"], spec["seeds"][0])) if spec["seeds"] else {}
            for seed in spec["seeds"]:
                cfg = run_config(entry, hparams, int(seed))
                cfg["glmc"] = deep_merge(method, {"imbalance_factor": factor})
                if glmc_sources:
                    cfg["sources"] = dict(sorted({**cfg.get("sources", {}),
                                                  **glmc_sources}.items()))
                rid = run_id(f"lt{factor:g}", entry["label"], seed)
                out[rid] = {"imbalance_factor": factor, "label": entry["label"],
                             "optimizer": entry["optimizer"], "seed": int(seed), "config": cfg,
                             "sourced": _written(entry) + sorted(
                                 f"glmc.{k}" for k in item["written"] if k != "lt_seed")}
    return out


def signal_seeds(spec: dict[str, Any]) -> list[int]:
    """The seeds of the ``fig_signal`` runs: ``seeds``, else the one ``seed`` (default 0)."""
    return [int(s) for s in (spec.get("seeds") or [spec.get("seed", 0)])]


def signal_runs(section: Mapping[str, Any]) -> Mapping[str, Mapping[str, Any]]:
    """The ``fig_signal`` runs: run key -> settings (train keys + probe settings, the
    optimizer ``label`` and the ``seed``), read-only (:func:`all_runs`). The first seed's run
    of an optimizer is keyed by its label (the run the figure draws), a further seed's by
    ``<label>-s<seed>`` (in the CSV: the claims ledger's independent runs)."""
    return all_runs(section).signal


def _signal_runs(section: dict[str, Any]) -> dict[str, dict[str, Any]]:
    spec = section.get("signal")
    if not spec:
        return {}
    run_config = _study_config(section, spec, SIGNAL_GROUP)
    out = {}
    seeds = signal_seeds(spec)
    for entry in optimizer_entries(section, spec["optimizers"]):
        hparams = resolved_hparams(entry, f"signal run {entry['label']}")
        for k, seed in enumerate(seeds):
            key = entry["label"] if k == 0 else f"{entry['label']}-s{seed}"
            out[key] = {"config": run_config(entry, hparams, seed),
                        "probe_every": spec["probe_every"],
                        "probe_batch": spec.get("probe_batch"), "label": entry["label"],
                        "seed": seed, "sourced": _written(entry)}
    return out


def _runs(section: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    """Every run of the section (training, GLMC, signal) by ``"<kind> <id>"``."""
    out = {f"run {rid}": r for rid, r in training_runs(section).items()}
    out.update({f"glmc run {rid}": r for rid, r in glmc_runs(section).items()})
    out.update({f"signal run {lab}": r for lab, r in signal_runs(section).items()})
    return out


def missing_sources(section: dict[str, Any]) -> list[str]:
    """Settings written in the section without a valid source, one line each (deduplicated):
    every optimizer hyper-parameter a run's entry writes (a run's ``sourced``; a default's
    source is its ``optimizers.yaml`` entry's), and the training keys of
    :data:`SOURCED_TRAIN_KEYS` that ``base`` or an override sets."""
    written = set(base_config(section))
    for key in ("glmc", "signal"):
        written |= set((section.get(key) or {}).get("overrides", {}))
    if section.get("glmc"):
        for item in glmc_factors(section["glmc"]):
            written |= set(item["overrides"])
    for spec in section.get("groups", {}).values():
        written |= set(spec.get("overrides", {}))
    problems: set[str] = set()
    for where, run in _runs(section).items():
        cfg = run["config"]
        sources = cfg.get("sources", {})
        wanted = list(run["sourced"])  # the hyper-parameters (and GLMC settings) written
        wanted += [k for k in SOURCED_TRAIN_KEYS if k in written and k in cfg]
        for key in wanted:
            text = sources.get(key)
            kind = str(text).split(":", 1)[0] if text else None
            if kind not in SOURCE_KINDS or not str(text).split(":", 1)[1].strip():
                label = where.split(" ")[-1].rsplit("-s", 1)[0]
                problems.add(f"{label}: {key} has no source (official:/paper:/choice:)"
                             if not text else f"{label}: {key} source {text!r} must start "
                             "with official:, paper: or choice:")
    return sorted(problems)


def sources_by_kind(section: dict[str, Any]) -> dict[str, list[str]]:
    """``{kind: ["<optimizer>.<setting> = <value> (<source>) [runs]", ...]}``: every sourced
    setting once, with the run ids (seeds dropped) that use it."""
    found: dict[tuple[str, str, str], set[str]] = {}
    for where, entry in _runs(section).items():
        cfg, run = entry["config"], where.split(" ")[-1].rsplit("-s", 1)[0]
        for key, text in cfg.get("sources", {}).items():
            if key.startswith("opt_hparams."):
                name = key.split(".", 1)[1]
                setting, value = f"{cfg['optimizer']}.{name}", cfg["opt_hparams"].get(name)
            else:
                setting, value = key, cfg.get(key)
            found.setdefault((setting, repr(value), text), set()).add(run)
    out: dict[str, list[str]] = {kind: [] for kind in SOURCE_KINDS}
    for (setting, value, text), runs in sorted(found.items()):
        kind = text.split(":", 1)[0]
        out.setdefault(kind, []).append(
            f"{setting} = {value} ({text}) [{', '.join(sorted(runs))}]")
    return out


def data_root(data: dict[str, Any], cfg: dict[str, Any]) -> str:
    """The folder a run reads its data set from: ``data.imagenet`` for ImageNet (the same
    key the ImageNet check reads), ``data.root`` for everything else."""
    if cfg["dataset"] == "imagenet":
        return str(data.get("imagenet") or "")
    return str(data["root"])
