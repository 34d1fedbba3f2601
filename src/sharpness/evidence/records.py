"""The runs' training records as the tables carry them to the claims ledger (no heavy imports:
the table builders write them).

A trained-network table row holds, beside its ``per_seed`` values, a ``per_seed_train`` cell:
``"0:0.4210/0.8800/10 1:…"``, each seed's final train loss / train accuracy (a fraction) /
number of classes, read from the run's ``final.json``, then, when its record carries them, the
fingerprints of its initial weights and data order (``.../<init>/<order>``): what the ledger
proves replicates independent by (:mod:`sharpness.claims.independence`). The ledger's sanity check
(:mod:`sharpness.claims.rules`) reads it back with :func:`parse_train_records`.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class TrainRecord:
    """A run's final train loss and accuracy (a fraction) and its number of classes."""

    loss: float | None
    acc: float | None
    classes: int | None
    init: str | None = None   # fingerprint of the run's initial weights (its record's)
    order: str | None = None  # fingerprint of the run's data order (its record's)
    run: str | None = None    # the id of the run's record, where a figure's row names it

    @property
    def proven(self) -> bool:
        """Whether the record carries the run's fingerprints (initial weights, data order)."""
        return bool(self.init) and bool(self.order)

    def failure(self, loss_margin: float, acc_margin: float, check_loss: bool = True
                ) -> str | None:
        """Why this run does not count as trained (None: it trained): its train loss is not
        below ``(1 − loss_margin) · ln C`` (read only with ``check_loss``) or its train
        accuracy not above ``1/C + acc_margin``, or the record is missing or not finite."""
        if self.loss is None or self.acc is None or not self.classes:
            return "no training record"
        if not (math.isfinite(self.loss) and math.isfinite(self.acc)):
            return "non-finite training record"
        ln_c, chance = math.log(self.classes), 1.0 / self.classes
        if check_loss and self.loss >= (1 - loss_margin) * ln_c:
            return (f"train loss {self.loss:.3f} ≥ {1 - loss_margin:g}·ln {self.classes} = "
                    f"{(1 - loss_margin) * ln_c:.3f}")
        if self.acc <= chance + acc_margin:
            return (f"train acc {100 * self.acc:.1f} % ≤ chance + {100 * acc_margin:g} = "
                    f"{100 * (chance + acc_margin):.1f} %")
        return None


def record_of_row(row: Mapping[str, Any]) -> TrainRecord:
    """A run's training record from the per-run columns a figure's rows carry
    (``final_train_loss``, ``final_train_acc``, ``num_classes``, the fingerprints
    ``init_sha256`` / ``order_sha256`` its record holds and the record's id ``run_id``; a
    missing or NaN cell: None)."""
    def value(key: str) -> float | None:
        x = row.get(key)
        return None if x is None or (isinstance(x, float) and math.isnan(x)) else float(x)

    def text(key: str) -> str | None:
        x = row.get(key)
        return x.strip() if isinstance(x, str) and x.strip() else None

    classes = value("num_classes")
    return TrainRecord(value("final_train_loss"), value("final_train_acc"),
                       int(classes) if classes else None, *(text(k) for k in FINGERPRINTS),
                       run=text(RUN_ID))


def train_record(final: Mapping[str, Any]) -> dict[str, Any]:
    """The fields of a run's ``final.json`` the sanity check reads (for evaluation records
    that carry them on to a table)."""
    return {k: final.get(k) for k in ("final_train_loss", "final_train_acc", "num_classes",
                                      *FINGERPRINTS)}


#: the fields of a run's record that fingerprint its draw (written at its start, signed)
FINGERPRINTS = ("init_sha256", "order_sha256")

#: the column of a figure's rows that names the record (its id) of the run a row comes from
RUN_ID = "run_id"


def train_records_text(pairs: Iterable[tuple[int, Mapping[str, Any]]]) -> str:
    """``"0:0.4210/0.8800/10 1:…"`` from ``(seed, final.json)`` pairs; a value the record
    lacks is written ``nan`` (and the run will not count)."""
    def num(x: Any) -> str:
        return "nan" if x is None else f"{float(x):.4f}"

    def prints(f: Mapping[str, Any]) -> str:
        init, order = (str(f.get(k) or "")[:16] for k in FINGERPRINTS)
        return f"/{init}/{order}" if init and order else ""

    return " ".join(f"{int(seed)}:{num(f.get('final_train_loss'))}/"
                    f"{num(f.get('final_train_acc'))}/{int(f.get('num_classes') or 0)}"
                    f"{prints(f)}" for seed, f in pairs)


def parse_train_records(text: object) -> dict[int, TrainRecord] | None:
    """The inverse of :func:`train_records_text`; ``None`` for a missing cell (the producer
    wrote no records)."""
    if not isinstance(text, str) or not text.strip():
        return None
    out: dict[int, TrainRecord] = {}
    for part in text.split():
        seed, _, rest = part.partition(":")
        loss, acc, classes, init, order = (rest.split("/") + [""] * 5)[:5]
        value = [float(x) if x not in ("", "nan") else None for x in (loss, acc)]
        out[int(seed)] = TrainRecord(value[0], value[1], int(classes) or None if classes
                                     else None, init or None, order or None)
    return out
