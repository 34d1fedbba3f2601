"""Shared helpers of the lesam tables and figures: reading runs, mean ± std, paper numbers."""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from sharpness.evidence.reported import entries
from sharpness.io import read_jsonl
from sharpness.plots.methods import method_text
from sharpness.runs.seal import read_verified

#: LE-SAM numbers the summary of paper 002 reports, keyed by (item, key): the text of
#: ``sharpness/evidence/paper_reported.yaml`` (numbers and their sources live there)
PAPER_REPORTED: dict[tuple[str, str], str] = {
    (e["item"], str(e["key"])): e["text"] for e in entries() if e["item"].startswith("table_")}



def label(name: str) -> str:
    """Table and caption name of an optimizer (the methods table's plain text,
    :func:`sharpness.plots.methods.method_text`); an ablation label stays as it is."""
    return method_text(name)


def mean_std(values: Sequence[float], scale: float = 100.0, digits: int = 2, *,
             diverged: int = 0, failed: int = 0) -> tuple[float, float | None, str]:
    """``(mean, std, "m ± s (n=k)")`` of ``values * scale``; std is the sample std (ddof 1),
    absent for one seed. The text always says how many seeds the mean is over and, when some
    runs were left out, how many diverged or failed: ``"91.20 ± 0.40 (n=2; 1 diverged)"``."""
    vals = [v * scale for v in values if v is not None and math.isfinite(v)]
    left_out = "".join(f"; {k} {what}" for k, what in ((diverged, "diverged"),
                                                       (failed, "failed")) if k)
    if not vals:
        return float("nan"), None, f"n/a (n=0{left_out})"
    m = statistics.fmean(vals)
    note = f"(n={len(vals)}{left_out})"
    if len(vals) == 1:
        return m, None, f"{m:.{digits}f} {note}"
    s = statistics.stdev(vals)
    return m, s, f"{m:.{digits}f} ± {s:.{digits}f} {note}"


def _span(values: Sequence[int]) -> str:
    vals = sorted(set(values))
    return f"{vals[0]:,}" if len(vals) == 1 else f"{vals[0]:,}–{vals[-1]:,}"


def runs_sentence(finals: Sequence[dict[str, Any]], seeds: Sequence[int]) -> str:
    """What the runs an item reads actually used, from their ``final.json`` records (never
    from the config's prose): how many runs and seeds, train / test images, epochs, precision.
    E.g. ``"Read from the 3 runs' records: seeds 0, 1; 4,000 train / 1,000 test images;
    3 epochs; precision fp32."``.
    """
    if not finals:
        return "No finished runs were read."
    distinct = sorted({int(s) for s in seeds})
    parts = [("seed " if len(distinct) == 1 else "seeds ") + ", ".join(map(str, distinct))]
    n_train = [int(f["n_train"]) for f in finals if f.get("n_train") is not None]
    n_test = [int(f["n_test"]) for f in finals if f.get("n_test") is not None]
    if n_train:
        parts.append(f"{_span(n_train)} train" + (f" / {_span(n_test)} test" if n_test else "")
                     + " images")
    epochs = [int(f["epochs"]) for f in finals if f.get("epochs") is not None]
    if epochs:
        parts.append(f"{_span(epochs)} epoch{'s' if max(epochs) > 1 else ''}")
    parts.append(precision_text(finals))
    runs = "the run's" if len(finals) == 1 else f"the {len(finals)} runs'"
    return f"Read from {runs} records: " + "; ".join(parts) + "."


def status_counts(finals: Sequence[dict[str, Any]]) -> dict[str, int]:
    """``{"diverged": k, "failed": j}`` among runs' ``final.json`` records."""
    return {what: sum(f.get("status") == what for f in finals) for what in ("diverged", "failed")}


def per_seed_text(pairs: Iterable[tuple[int, dict[str, Any]]], scale: float = 100.0) -> str:
    """``"0:45.2000 1:46.1000"``: each seed's final accuracy (x ``scale``) for paired
    comparisons in the claims ledger; seeds that did not end ``ok`` are left out."""
    return " ".join(f"{int(seed)}:{scale * f['final_test_acc']:.4f}" for seed, f in pairs
                    if f.get("status") == "ok" and f.get("final_test_acc") is not None)


PRECISION_TEXT = {"fp32": "fp32 (TF32 as PyTorch's defaults leave it)",
                  "bf16": "bf16 autocast (the speed option, not the official codes' fp32)"}


def precision_text(finals: Sequence[dict[str, Any]]) -> str:
    """``"precision fp32 (...)"``, or the mix (``"precision mixed: 2 fp32, 1 bf16"``): what the
    runs computed in, from their ``final.json`` (``"unrecorded"`` for runs written before the
    key existed)."""
    kinds = [str(f.get("precision", "unrecorded")) for f in finals]
    distinct = sorted(set(kinds))
    if len(distinct) == 1:
        return f"precision {PRECISION_TEXT.get(distinct[0], distinct[0])}"
    return "precision mixed: " + ", ".join(f"{kinds.count(k)} {k}" for k in distinct)


def best_epoch(run_dir: str | Path) -> tuple[float | None, int | None]:
    """``(best test accuracy, its epoch)`` over the run's per-epoch evaluations
    (``metrics.jsonl`` rows of kind ``epoch``), as the LE-SAM, ESAM and GLMC loops keep it;
    ``(None, None)`` when the run evaluated no epoch."""

    path = Path(run_dir) / "metrics.jsonl"
    if not path.exists():
        return None, None
    evals = [(float(r["test_acc"]), int(r["epoch"]))
             for r in read_verified(path, read_jsonl, what="training run")
             if r.get("kind") == "epoch" and r.get("test_acc") is not None]
    if not evals:
        return None, None
    acc, epoch = max(evals, key=lambda e: (e[0], -e[1]))  # the first epoch reaching the best
    return acc, epoch


def read_final(run_dir: str | Path) -> dict[str, Any]:
    """A run's ``final.json``, checked against the hash in the run's record (a damaged one
    stops the table with its name and the command that recomputes it, never a traceback),
    plus ``best_test_acc`` and ``best_epoch`` from its per-epoch evaluations
    (:func:`best_epoch`; computed, not stored)."""

    path = Path(run_dir) / "final.json"
    final = read_verified(path, what="training run")
    final["best_test_acc"], final["best_epoch"] = best_epoch(run_dir)
    return final


def per_seed_best_text(pairs: Iterable[tuple[int, dict[str, Any]]], scale: float = 100.0) -> str:
    """As :func:`per_seed_text`, with each seed's best-epoch accuracy."""
    return " ".join(f"{int(seed)}:{scale * f['best_test_acc']:.4f}" for seed, f in pairs
                    if f.get("status") == "ok" and f.get("best_test_acc") is not None)


def group_by(rows: Iterable[dict[str, Any]], *keys: str) -> dict[tuple[Any, ...], list[dict]]:
    """Rows grouped by the values of ``keys`` (insertion order kept)."""
    out: dict[tuple[Any, ...], list[dict[str, Any]]] = {}
    for row in rows:
        out.setdefault(tuple(row[k] for k in keys), []).append(row)
    return out
