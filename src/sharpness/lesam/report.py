"""Shared helpers of the lesam tables and figures: reading runs, mean ± std, paper numbers."""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from sharpness.io import read_json

#: LE-SAM numbers the summary of paper 002 reports (catalog), keyed by (item, key)
PAPER_REPORTED: dict[tuple[str, str], str] = {
    ("table_cifar", "CIFAR-10"): "LE-SAM 97.63 (backbone not stated)",
    ("table_cifar", "CIFAR-100"): "LE-SAM 85.91 (backbone not stated); +1.34 to +1.49 over SAM",
    ("table_imagenet", "ResNet-50"): "LE-SAM top-1 79.31 (backbone not stated); +0.71 over SAM",
    ("table_imagenet", "ResNet-101"): "+0.77 over SAM",
    ("table_domain_gen", "PACS"): "+2.18 over SAM (mean accuracy)",
    ("table_domain_gen", "VLCS"): "+0.84 over SAM (mean accuracy)",
    ("table_robustness", "any"): "LE-SAM up to +2.47 over SAM",
    ("table_long_tail", "100"): "GLMC+LE-SAM 58.65 (CIFAR-100-LT IF 100)",
    ("table_long_tail", "50"): "GLMC+LE-SAM 63.67 (CIFAR-100-LT IF 50)",
    ("table_transfer", "any"): "LE-SAM above SAM on CIFAR-10 and CIFAR-100 (no numbers)",
}

OPTIMIZER_LABELS = {"sgd": "SGD", "sam": "SAM", "sam_linf": "SAM (L_inf)", "asam": "ASAM",
                    "esam": "ESAM", "fsam": "F-SAM", "eigensam": "Eigen-SAM",
                    "lesam": "LE-SAM"}


def label(name: str) -> str:
    """Display name of an optimizer (or ablation label)."""
    return OPTIMIZER_LABELS.get(name, name)


def mean_std(values: Sequence[float], scale: float = 100.0, digits: int = 2
             ) -> tuple[float, float | None, str]:
    """``(mean, std, "m ± s")`` of ``values * scale``; std is the sample std (ddof 1), absent
    for one seed, where the text says ``(1 seed)``."""
    vals = [v * scale for v in values if v is not None and math.isfinite(v)]
    if not vals:
        return float("nan"), None, "n/a"
    m = statistics.fmean(vals)
    if len(vals) == 1:
        return m, None, f"{m:.{digits}f} (1 seed)"
    s = statistics.stdev(vals)
    return m, s, f"{m:.{digits}f} ± {s:.{digits}f}"


def read_final(run_dir: str | Path) -> dict[str, Any]:
    """A run's ``final.json``."""
    return read_json(Path(run_dir) / "final.json")


def group_by(rows: Iterable[dict[str, Any]], *keys: str) -> dict[tuple[Any, ...], list[dict]]:
    """Rows grouped by the values of ``keys`` (insertion order kept)."""
    out: dict[tuple[Any, ...], list[dict[str, Any]]] = {}
    for row in rows:
        out.setdefault(tuple(row[k] for k in keys), []).append(row)
    return out
