"""Which runs a row may count as independent replicates: proven by their records, else (runs
whose records carry no fingerprint) read from their numbers.

A run whose training record carries the fingerprints of its initial weights and data order
(written at its start and signed with its record) is independent of another only when all of
them differ (:func:`distinct_by_records`); nothing is then read from the numbers. For runs
without them, the fallback below holds, and the row's note says independence was read from
the numbers.

A row that counts runs (seeds) as replicates counts each *distinct* run once. Each run carries a
fingerprint: its seed label and what identifies its draw. The producers of the figures record no
hash of a run's initial weights or data order, so the fingerprint is the run's own result
values (every number the figure holds for it, the seed label left out): two independent draws
do not agree to the last digit in every value, copies do. :func:`distinct_runs` keeps the first
run of each fingerprint and of each seed label and says which were refused;
:func:`frame_fingerprint` is the fingerprint of one run's rows; :func:`zero_spread` names a set
of paired differences with no spread at all, which independent runs do not give either.
"""

from __future__ import annotations

import hashlib
from collections.abc import Hashable, Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

#: columns that label a run rather than measure it (left out of its fingerprint)
LABELS = ("seed",)


def frame_fingerprint(rows: pd.DataFrame, labels: Sequence[str] = LABELS) -> str:
    """SHA-256 of one run's rows without its label columns, rows and columns in a fixed order
    and numbers written to 12 significant digits (a copy of a run hashes the same whatever
    seed it is labelled with)."""
    cols = sorted(c for c in rows.columns if c not in labels)
    part = rows[cols]
    if len(part):
        part = part.sort_values(cols, kind="mergesort", na_position="last")
    text = part.to_csv(index=False, float_format="%.12g")
    return hashlib.sha256(text.encode()).hexdigest()


@dataclass
class Distinct:
    """The runs kept (their seed labels, in order) and those refused, with why."""

    kept: list[Hashable] = field(default_factory=list)
    copies: dict[Hashable, Hashable] = field(default_factory=dict)  # refused -> run it repeats
    relabelled: list[Hashable] = field(default_factory=list)        # a seed label used twice

    def note(self) -> str:
        """What was refused, for the row's note ("" when every run is distinct)."""
        out = []
        if self.copies:
            out.append("refused as copies, counted once (identical results are not "
                       "independent runs): " + ", ".join(
                           f"seed {s} = seed {t}" for s, t in self.copies.items()))
        if self.relabelled:
            out.append("seed label used by more than one run, counted once: "
                       + ", ".join(str(s) for s in dict.fromkeys(self.relabelled)))
        return "; ".join(out)


def distinct_runs(runs: Iterable[tuple[Hashable, Hashable]]) -> Distinct:
    """From ``(seed, fingerprint)`` pairs, the runs a row may count: the first of each seed
    label and of each fingerprint (a copy under another label is refused and named)."""
    return distinct_by_records((seed, [fingerprint]) for seed, fingerprint in runs)


def distinct_frames(groups: Iterable[tuple[Hashable, pd.DataFrame]]
                    ) -> tuple[list[tuple[Hashable, pd.DataFrame]], Distinct]:
    """The distinct runs of ``(seed, rows)`` groups (:func:`distinct_runs` on
    :func:`frame_fingerprint`), in their order, with what was refused."""
    groups = list(groups)
    found = distinct_runs((seed, frame_fingerprint(part)) for seed, part in groups)
    keep = set(found.kept)
    seen: set[Hashable] = set()
    kept = []
    for seed, part in groups:
        if seed in keep and seed not in seen:
            seen.add(seed)
            kept.append((seed, part))
    return kept, found


def distinct_by_records(runs: Iterable[tuple[Hashable, Sequence[Hashable]]]) -> Distinct:
    """From ``(seed, [fingerprints])`` pairs (a run's recorded fingerprints: initial weights,
    data order, in each arm), the runs a row may count: a run counts only when every one of
    its fingerprints differs from every counted run's (and its seed label too); nothing is
    read from the numbers. A run sharing any fingerprint is refused as a copy of its owner."""
    out = Distinct()
    owner: dict[Hashable, Hashable] = {}
    for seed, prints in runs:
        if seed in out.kept or seed in out.copies:
            out.relabelled.append(seed)
            continue
        shared = [owner[p] for p in prints if p in owner]
        if shared:
            out.copies[seed] = shared[0]
            continue
        for p in prints:
            owner[p] = seed
        out.kept.append(seed)
    return out


def zero_spread(values: Sequence[float], rel: float = 1e-9) -> bool:
    """Whether two or more finite values are equal up to rounding (their range at most
    ``rel`` of their size: no spread, what copies, or a constant added to copies, give)."""
    v = np.asarray([x for x in values if np.isfinite(x)], float)
    return len(v) >= 2 and float(np.ptp(v)) <= rel * max(1.0, float(np.abs(v).max()))
