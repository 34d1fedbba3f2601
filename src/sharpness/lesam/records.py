"""The runs a lesam table or figure reads, each known from its own record.

A table or figure job is given run folders (its rule's inputs) and the item's own settings
(title, caption words, rows), never the config's run list. What each run was (its group and
label, optimizer, hyper-parameters, seed and whole training config) is read from the folder's
``provenance.json`` (the config's ``tags`` carry group and label), and what it reached from
its ``final.json``; both are checked against what their writer recorded
(:func:`sharpness.runs.seal.read_verified`). A folder whose record is missing, edited or
names another run stops the job with the folder's name, so a table never shows a run under
a name it was not trained as.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sharpness.errors import ConfigError, SharpnessError
from sharpness.lesam.experiments import SIGNAL_GROUP, run_id
from sharpness.lesam.report import label as label_text
from sharpness.lesam.report import read_final, runs_sentence
from sharpness.runs.provenance import PROVENANCE_NAME
from sharpness.runs.seal import read_verified, rebuild_hint

PathLike = str | os.PathLike[str]


class MisnamedRun(SharpnessError):
    """A run folder's record does not say which run it is, or says it is another one."""


@dataclass(frozen=True)
class Run:
    """One finished (or diverged, or failed) run as its record and ``final.json`` say."""

    folder: Path
    group: str
    label: str
    seed: int
    optimizer: str
    hparams: dict[str, Any]
    config: dict[str, Any]  # the resolved training config the run recorded
    record: dict[str, Any]  # its provenance record
    final: dict[str, Any]  # its final.json, with best_test_acc and best_epoch

    def files(self) -> list[str]:
        """The files of the folder a table reads (the inputs its own record lists). The run's
        record enters through them, by its id (:func:`sharpness.runs.provenance.input_entry`),
        never by its bytes: its times and host are not content."""
        return [str(self.folder / name) for name in ("final.json", "metrics.jsonl")]


@dataclass(frozen=True)
class Given:
    """What one table or figure job was given: its item's settings (``spec``), the runs its
    rule names (read from their records) and the evaluation file it draws, if any."""

    item: str
    spec: dict[str, Any]
    runs: list[Run]
    evaluation: Path | None = None

    def evaluated(self) -> Path:
        """The evaluation file, or a clear error when the job was given none."""
        if self.evaluation is None:
            raise ConfigError(f"lesam {self.item}: it is drawn from an evaluation file "
                              "(results/lesam/eval/<what>.json) and was given none")
        return self.evaluation


def folder_names(group: str, label: str, seed: int) -> list[str]:
    """The folder names a run of ``group``, ``label`` and ``seed`` may have: its run id; a
    ``fig_signal`` run's is its label (the run the figure draws) or ``<label>-s<seed>``
    (:func:`sharpness.lesam.experiments.signal_runs`)."""
    if group == SIGNAL_GROUP:
        return [f"{label}-s{seed}", label]
    return [run_id(group, label, seed)]


def read_run(folder: PathLike, *, what: str) -> Run:
    """The run in ``folder``, from its verified record and ``final.json``; :class:`MisnamedRun`
    when the record names no group and label or another run than the folder's name, and
    :class:`~sharpness.runs.seal.UnverifiedResult` when a file is missing or was edited."""
    folder = Path(folder)
    record = read_verified(folder / PROVENANCE_NAME, what=what)
    config = record.get("params") if isinstance(record, dict) else None
    tags = (config or {}).get("tags") or {}
    group, label, seed = tags.get("group"), tags.get("label"), record.get("seed")
    if not (isinstance(group, str) and isinstance(label, str) and isinstance(seed, int)):
        raise MisnamedRun(f"{what}: run folder {folder} is not used: its record "
                          f"{folder / PROVENANCE_NAME} names no group, label and seed "
                          f"(params.tags, seed; a run trained before runs were tagged). "
                          f"{rebuild_hint(folder / 'final.json')}")
    names = folder_names(group, label, seed)
    if folder.name not in names:
        raise MisnamedRun(f"{what}: run folder {folder} is not used: its record says it is "
                          f"run {names[0]} (group {group!r}, label {label!r}, seed {seed}), "
                          f"not {folder.name!r}. {rebuild_hint(folder / 'final.json')}")
    return Run(folder=folder, group=group, label=label, seed=seed,
               optimizer=str(config["optimizer"]), hparams=dict(config.get("opt_hparams", {})),
               config=config, record=record, final=read_final(folder))


def run_folders(paths: Iterable[PathLike]) -> list[Path]:
    """The folders of the files a job was given (``final.json``, ``signal.jsonl``), once each,
    in the order given."""
    out: list[Path] = []
    for path in paths:
        folder = Path(path).parent
        if folder not in out:
            out.append(folder)
    return out


def by_label(runs: Sequence[Run], group: str, labels: Sequence[str] | None = None
             ) -> dict[str, list[Run]]:
    """The runs of ``group`` (those of ``labels`` only, when given) by label, in the order the
    job was given them."""
    out: dict[str, list[Run]] = {}
    for run in runs:
        if run.group == group and (labels is None or run.label in labels):
            out.setdefault(run.label, []).append(run)
    return out


def files_of(runs: Iterable[Run]) -> list[str]:
    """The files a table read of ``runs`` (its provenance lists them as inputs)."""
    return [f for run in runs for f in run.files()]


def read_sentence(runs: Sequence[Run]) -> str:
    """:func:`~sharpness.lesam.report.runs_sentence` of ``runs``: what their records say they
    used."""
    return runs_sentence([r.final for r in runs], [r.seed for r in runs])


def sources_sentence(runs: Sequence[Run]) -> str:
    """"Settings and sources: ..." of ``runs``, from their records (empty without sources).

    Training settings shared by every run are listed once under "all"; each optimizer
    label's hyper-parameters after it, each with its source (``official:``/``paper:``/
    ``choice:``), so a reader of the table sees where every number of the recipe comes from.
    """
    return settings_sentence((r.label, r.config) for r in runs)


def settings_sentence(runs: Iterable[tuple[str, dict[str, Any]]]) -> str:
    """:func:`sources_sentence` of ``(label, training config)`` pairs."""
    items: dict[str, dict[str, str]] = {}
    for lab, cfg in runs:
        for key, text in cfg.get("sources", {}).items():
            if key.startswith("opt_hparams."):
                name = key.split(".", 1)[1]
                owner, value = label_text(lab), cfg["opt_hparams"].get(name)
            else:
                name, owner, value = key, "all", cfg.get(key)
            items.setdefault(owner, {})[f"{name}={value}"] = text
    if not items:
        return ""
    parts = []
    for owner in sorted(items, key=lambda o: (o != "all", o)):
        settings = "; ".join(f"{k} [{v}]" for k, v in sorted(items[owner].items()))
        parts.append(f"{owner}: {settings}")
    return "Settings and sources: " + " | ".join(parts) + "."
