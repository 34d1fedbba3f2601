"""Which runs a row may count as independent replicates: only those their records prove.

Every training run records at its start, signed with its record, the fingerprints of its
initial weights and of its data order beside its seed (``init_sha256`` and ``order_sha256``:
:func:`sharpness.train.run.draw_fingerprints`; the synthetic CNN's full-batch runs record the
SHA-256 of their data draw as their data order). The tables carry them per seed in the
``per_seed_train`` cell and the figures' CSVs per row (with the ``run_id`` of the run's
record). A run counts as independent of another only when its seed label, its initial
weights and its data order all differ from every counted run's, in each arm
(:func:`distinct_by_records`): a copy under another seed label, with its values nudged or its
steps shifted, carries the fingerprints of the run it copies and is refused.

Nothing is read from the numbers to decide independence. A run whose record carries no
fingerprint is *unproven*: it is not counted as an independent run, and the row it enters
does not decide (:attr:`Distinct.unproven`, named in the row's note); the row still states
its numbers and its test's p-value over the runs it read (:attr:`Distinct.read`), which stays
in the row's Holm family, so refusing proof never eases another row's correction. :func:`zero_spread` is an extra sanity
refusal (a set of paired differences with no spread, which independent runs do not give); it
never establishes independence.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from sharpness.evidence.records import RUN_ID  # the column naming a row's run record

#: the columns of a figure's rows that carry a run's recorded fingerprints
PRINT_COLUMNS = {"init": "init_sha256", "order": "order_sha256"}


@dataclass
class Distinct:
    """The runs kept (their seed labels, in order) and those refused, with why."""

    kept: list[Hashable] = field(default_factory=list)
    copies: dict[Hashable, Hashable] = field(default_factory=dict)  # refused -> run it repeats
    relabelled: list[Hashable] = field(default_factory=list)        # a seed label used twice
    unproven: list[Hashable] = field(default_factory=list)          # no fingerprint recorded

    @property
    def read(self) -> list[Hashable]:
        """The runs a row reads, in order: those proven distinct and those no record proves
        (a row with an unproven run still states its numbers and its test's p-value, which
        stays in its Holm family, but does not decide)."""
        return [*self.kept, *(s for s in self.unproven if s not in self.kept)]

    @property
    def decides(self) -> bool:
        """Whether the row may decide: every run it read is proven by its record."""
        return not self.unproven

    def note(self) -> str:
        """What was refused, for the row's note ("" when every run is distinct and proven)."""
        out = []
        if self.unproven:
            out.append("independence not proven, the row does not decide: no record proves "
                       "seed(s) " + ", ".join(str(s) for s in dict.fromkeys(self.unproven))
                       + " independent (their records carry no fingerprint of initial "
                       "weights and data order; nothing is read from the numbers)")
        if self.copies:
            out.append("refused as copies, counted once (their records carry another run's "
                       "fingerprints): " + ", ".join(
                           f"seed {s} = seed {t}" for s, t in self.copies.items()))
        if self.relabelled:
            out.append("seed label used by more than one run, counted once: "
                       + ", ".join(str(s) for s in dict.fromkeys(self.relabelled)))
        return "; ".join(out)


def distinct_by_records(runs: Iterable[tuple[Hashable, Sequence[Hashable] | None]]
                        ) -> Distinct:
    """From ``(seed, fingerprints)`` pairs (a run's recorded fingerprints: initial weights,
    data order, in each arm; ``None`` or an empty list: its record carries none), the runs a
    row may count: a run counts only when every one of its fingerprints differs from every
    counted run's and its seed label too. A run sharing any fingerprint is refused as a copy
    of its owner; a run without fingerprints is unproven. Nothing is read from the numbers."""
    out = Distinct()
    owner: dict[Hashable, Hashable] = {}
    for seed, prints in runs:
        if seed in out.kept or seed in out.copies or seed in out.unproven:
            out.relabelled.append(seed)
            continue
        if not prints:
            out.unproven.append(seed)
            continue
        shared = [owner[p] for p in prints if p in owner]
        if shared:
            out.copies[seed] = shared[0]
            continue
        for p in prints:
            owner[p] = seed
        out.kept.append(seed)
    return out


def frame_prints(rows: pd.DataFrame, arms: Sequence[str] = ()) -> list[Hashable] | None:
    """The recorded fingerprints of one seed's runs from a figure's rows: per run (the rows
    of one value of the ``arms`` columns present, e.g. the optimizer), its one initial-weights
    and one data-order fingerprint and, where the rows name it, its ``run_id`` (the record it
    comes from: two labels on one record are one run), keyed by the arm. None when a run's
    rows carry no fingerprint, or more than one fingerprint or run id (rows of two runs under
    one label prove nothing)."""
    keys = [c for c in arms if c in rows.columns]
    parts = list(rows.groupby(keys, dropna=False)) if keys else [((), rows)]
    out: list[Hashable] = []
    for arm, part in parts:
        for what, col in PRINT_COLUMNS.items():
            value = recorded(part, col)
            if value is None:
                return None
            out.append((what, arm if isinstance(arm, tuple) else (arm,), value))
        if RUN_ID in part.columns and part[RUN_ID].map(_named).any():
            run = recorded(part, RUN_ID)
            if run is None:
                return None
            out.append(("run", arm if isinstance(arm, tuple) else (arm,), run))
    return out


def _named(v: object) -> bool:
    return isinstance(v, str) and bool(v.strip())


def recorded(rows: pd.DataFrame, col: str) -> str | None:
    """The one value of a run's fingerprint column ``col`` over its rows; None when the
    column is absent, a row's cell is empty, or the rows hold more than one value."""
    if col not in rows.columns:
        return None
    values = {v.strip() for v in rows[col] if isinstance(v, str) and v.strip()}
    return values.pop() if len(values) == 1 and len(rows) and rows[col].map(_named).all() \
        else None


def distinct_frames(groups: Iterable[tuple[Hashable, pd.DataFrame]], arms: Sequence[str] = ()
                    ) -> tuple[list[tuple[Hashable, pd.DataFrame]], Distinct]:
    """The runs of ``(seed, rows)`` groups a row reads (:attr:`Distinct.read`: those their
    records prove distinct, :func:`distinct_by_records` on :func:`frame_prints`, and those no
    record proves, which keep the row from deciding), in their order, with what was refused
    or unproven."""
    groups = list(groups)
    found = distinct_by_records((seed, frame_prints(part, arms)) for seed, part in groups)
    keep = set(found.read)
    seen: set[Hashable] = set()
    kept = []
    for seed, part in groups:
        if seed in keep and seed not in seen:
            seen.add(seed)
            kept.append((seed, part))
    return kept, found


def zero_spread(values: Sequence[float], rel: float = 1e-9) -> bool:
    """Whether two or more finite values are equal up to rounding (their range at most
    ``rel`` of their size: no spread, what copies, or a constant added to copies, give). A
    sanity refusal beside the records' proof, never a proof of independence."""
    v = np.asarray([x for x in values if np.isfinite(x)], float)
    return len(v) >= 2 and float(np.ptp(v)) <= rel * max(1.0, float(np.abs(v).max()))
