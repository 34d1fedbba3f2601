"""What changed in a figure's or table's numbers between two builds (the default and a
variant, :mod:`sharpness.config.variant`): ``sharpness diff --variant`` prints it under the
differences of the two provenance records.

Rows are compared in order when both CSVs have the same columns and number of rows (the
drawing code writes them in a fixed order); otherwise the shapes are reported and nothing is
aligned, since pairing rows by guess could report a difference that is not there.
"""

from __future__ import annotations

import csv
import math
import os
from pathlib import Path

#: at most this many columns are listed
SHOWN = 12


def _read(path: Path) -> tuple[list[str], list[dict[str, str]]]:
    with open(path, newline="") as handle:
        reader = csv.DictReader(handle)
        rows = list(reader)
        return list(reader.fieldnames or []), rows


def _number(text: str) -> float | None:
    try:
        value = float(text)
    except (TypeError, ValueError):
        return None
    return value if math.isfinite(value) else None


def csv_lines(a: str | os.PathLike[str], b: str | os.PathLike[str]) -> list[str]:
    """Lines saying how the numbers of ``b`` differ from those of ``a``: shapes, columns only
    in one, and per shared column the largest absolute difference of its numbers (or how many
    text cells differ)."""
    a, b = Path(a), Path(b)
    missing = [str(p) for p in (a, b) if not p.is_file()]
    if missing:
        return [f"numbers:  no CSV to compare ({', '.join(missing)} missing)"]
    cols_a, rows_a = _read(a)
    cols_b, rows_b = _read(b)
    lines = [f"numbers:  {len(rows_a)} rows x {len(cols_a)} columns -> {len(rows_b)} rows x "
             f"{len(cols_b)} columns"]
    only_a = [c for c in cols_a if c not in cols_b]
    only_b = [c for c in cols_b if c not in cols_a]
    if only_a or only_b:
        lines.append(f"          columns only in a: {only_a or '-'}; only in b: {only_b or '-'}")
    if len(rows_a) != len(rows_b):
        lines.append("          the row counts differ: rows are not paired (no per-column "
                     "difference is computed)")
        return lines
    shared = [c for c in cols_a if c in cols_b]
    changed = []
    for col in shared:
        pairs = [(ra.get(col, ""), rb.get(col, "")) for ra, rb in zip(rows_a, rows_b, strict=True)]
        nums = [(_number(x), _number(y)) for x, y in pairs]
        if all(x is not None and y is not None for x, y in nums):
            gap = max((abs(x - y) for x, y in nums if x is not None and y is not None),
                      default=0.0)
            if gap > 0:
                changed.append(f"{col}: max |b - a| = {gap:.4g}")
        else:
            differ = sum(x != y for x, y in pairs)
            if differ:
                changed.append(f"{col}: {differ} of {len(pairs)} cells differ")
    if not changed:
        lines.append("          every shared column holds the same values")
    for text in changed[:SHOWN]:
        lines.append(f"          {text}")
    if len(changed) > SHOWN:
        lines.append(f"          ... and {len(changed) - SHOWN} more columns")
    return lines
