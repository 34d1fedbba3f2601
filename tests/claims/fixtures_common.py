"""What the claims fixtures of every paper share: a tidy item, share rows, per-seed cells."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import pandas as pd

from sharpness.claims.model import ItemData

Rows = list[dict[str, Any]]


def item(name: str, rows: Rows, params: dict[str, Any] | None = None) -> ItemData:
    return ItemData(name, pd.DataFrame(rows), params or {})


def shares(seq: Sequence[int], d: int, **keys: Any) -> Rows:
    """Share rows whose dominant coordinate follows ``seq`` (1-based), with a tie at s = 0."""
    out = [{**keys, "s": 0.0, "coord": j + 1, "share": 1 / d} for j in range(d)]
    s = 0.0
    for dom in seq:
        for _ in range(3):
            s += 0.1
            out += [{**keys, "s": s, "coord": j + 1, "share": 0.6 if j + 1 == dom else
                     0.4 / (d - 1)} for j in range(d)]
    return out


def seeds(values: Sequence[float]) -> str:
    return " ".join(f"{k}:{v}" for k, v in enumerate(values))


def draw(seed: int, what: str) -> str:
    """The recorded fingerprint of seed ``seed``'s ``what`` (``init``, ``order``): a distinct
    draw per seed, as a run's record holds it (16 hex digits)."""
    import hashlib

    return hashlib.sha256(f"{what}/{seed}".encode()).hexdigest()[:16]


def proof(seed: int) -> str:
    """The fingerprints a ``per_seed_train`` entry of seed ``seed`` ends with
    (``/<init>/<order>``): its run's record proves it a distinct draw."""
    return f"/{draw(seed, 'init')}/{draw(seed, 'order')}"


def recorded(seed: int, arm: str = "") -> dict[str, str]:
    """The fingerprint columns a figure's rows of seed ``seed``'s run (of ``arm``) carry, as
    its producer copies them from the run's record: a distinct draw per seed."""
    return {"init_sha256": draw(seed, "init"), "order_sha256": draw(seed, "order"),
            "run_id": draw(seed, f"run/{arm}")}


def trained(n: int, classes: int = 10, bad: Sequence[int] = (), proven: bool = True) -> str:
    """A ``per_seed_train`` cell: ``n`` seeds that trained (loss 0.5, acc 0.85), except those
    in ``bad``, which sat at chance (loss ln C, acc 1/C); each a distinct draw, its record's
    fingerprints of initial weights and data order beside it (``proven``)."""

    def prints(k: int) -> str:
        return proof(k) if proven else ""

    return " ".join((f"{k}:{math.log(classes):.4f}/{1 / classes:.4f}/{classes}" if k in bad
                     else f"{k}:0.5000/0.8500/{classes}") + prints(k) for k in range(n))
