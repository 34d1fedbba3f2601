"""The ledger's data model: an item's numbers, a claim with its predicate, and a result.

A *claim* is one statement of a paper (or one check of the catalog) with the *predicate*
that tests it: a function of the numbers of one or more figures/tables (their tidy CSVs and
the parameters in their provenance sidecars, never a caption). The predicate returns a
:class:`Result`: the measured value with its uncertainty, the verdict, and the evidence level
the numbers give the item.
"""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from sharpness.evidence.stats import CONTRADICTED, INCONCLUSIVE, NOT_RUN, SUPPORTED
from sharpness.runs.seal import read_verified, verify_result

#: what a row is: the paper's claim, this project's extension, or a check of the pipeline
KINDS = ("claim", "extension", "check")

#: evidence levels, strongest first (see figures/README.md)
EVIDENCE = "evidence"
WEAK = "weak"
SMOKE = "smoke"
LEVELS = (EVIDENCE, WEAK, SMOKE)


@dataclass
class ItemData:
    """The numbers of one figure or table: its CSV rows and its sidecar's params and id."""

    item: str                      # "<paper>/<id>", e.g. "eos/fig_phase"
    rows: pd.DataFrame
    params: dict[str, Any] = field(default_factory=dict)
    provenance_id: str | None = None
    code_files: dict[str, str] = field(default_factory=dict)  # producer's source file hashes
    started: str | None = None     # when the first job behind it started (``first_started``)

    @classmethod
    def from_rows(cls, item: str, rows: Sequence[Mapping[str, Any]],
                  params: Mapping[str, Any] | None = None) -> ItemData:
        """From in-memory tidy rows (what :func:`sharpness.plots.save_figure` writes)."""
        return cls(item, pd.DataFrame(list(rows)), dict(params or {}))


def load_item(figures: str | Path, item: str) -> ItemData | None:
    """``figures/<item>.csv`` with its provenance sidecar, or ``None`` when the CSV is absent.

    Both are checked first (:func:`sharpness.runs.seal.read_verified`): the sidecar must be the
    record its id was computed from and the CSV must have the SHA-256 the sidecar recorded, so
    a CSV edited after the build stops the ledger with
    :class:`~sharpness.runs.seal.UnverifiedResult` naming it, never a verdict drawn from it."""

    stem = Path(figures) / item
    csv = stem.with_suffix(".csv")
    if not csv.is_file():
        return None
    side = stem.parent / f"{stem.name}.provenance.json"
    what = f"claims ledger: item {item}"
    record = read_verified(side, what=what) if side.is_file() else None
    verify_result(csv, what=what)
    rows = pd.read_csv(csv) if csv.stat().st_size > 0 else pd.DataFrame()
    params: dict[str, Any] = (record or {}).get("params") or {}
    prov = (record or {}).get("id")
    code = ((record or {}).get("code") or {}).get("files") or {}
    # the earliest job behind the item (the runs its figure read), else the figure's own start
    began = (record or {}).get("first_started") or (record or {}).get("started")
    return ItemData(item, rows, params, prov, dict(code), began)


@dataclass
class Result:
    """What a predicate measured."""

    verdict: str
    value: str                     # the measured value with its uncertainty, in words
    level: str | None = None       # evidence level it gives its items (default: from verdict)
    estimate: float | None = None  # the headline number (for the README block and tests)
    low: float | None = None
    high: float | None = None
    note: str = ""
    n: int | None = None           # independent runs (seeds, initialisations, settings) used
    p_value: float | None = None   # two-sided p-value of the interval test that decides it

    def __post_init__(self) -> None:
        if self.verdict not in (SUPPORTED, CONTRADICTED, INCONCLUSIVE, NOT_RUN):
            raise ValueError(f"unknown verdict {self.verdict!r}")
        if self.level is None:
            self.level = EVIDENCE if self.verdict in (SUPPORTED, CONTRADICTED) else WEAK
        if self.level not in LEVELS:
            raise ValueError(f"unknown evidence level {self.level!r}")


#: a predicate: ``test(items)``, or ``test(items, rules=SeedRules)`` for a trained claim
Predicate = Callable[..., Result]
#: what a predicate reads: item id -> its data
Items = Mapping[str, ItemData]
#: a claim's registered parameters (claims.yaml)
Params = Mapping[str, Any]


@dataclass(frozen=True)
class Claim:
    """One row of the ledger.

    ``items`` are the figures/tables the predicate reads (``"<paper>/<id>"``); ``source`` says
    where the claim comes from (``paper 002``, ``catalog check``); ``paper_only`` holds, for a
    claim the quick profile cannot test at all, the profile and estimated cost that would
    settle it; ``sets_level``: whether this claim's result decides its items' evidence level
    (sanity checks such as "trains above chance" do not); ``kind``: ``claim`` (the paper's),
    ``extension`` (this project's own, beyond the paper) or ``check`` (of the pipeline's
    construction: it cannot bear on the paper and is not counted among its claims);
    ``trained``: a claim about trained networks, decided under the profile's
    :class:`~sharpness.claims.rules.SeedRules` (its predicate takes them as ``rules``);
    ``runs``: a claim about trained networks or optimizer runs (``trained`` implies it), which
    decides only on the profile's ``min_runs`` independent runs; ``params``: the claim's
    registered thresholds and tolerances (``claims.yaml``), passed to a predicate that takes
    ``params``."""

    id: str
    paper: str
    source: str
    claim: str
    predicate: str
    items: tuple[str, ...]
    test: Predicate | None = None
    paper_only: str | None = None
    sets_level: bool = True
    kind: str = "claim"
    trained: bool = False
    runs: bool = False
    params: Mapping[str, Any] = field(default_factory=dict, hash=False)

    def call(self, items: Mapping[str, ItemData], rules: Any) -> Result:
        """The predicate on ``items``, with ``rules`` for a trained-network claim and the
        claim's registered ``params`` for a predicate that takes them."""
        if self.test is None:
            raise ValueError(f"claim {self.id} has no predicate")
        kwargs: dict[str, Any] = {}
        if takes(self.test, "rules"):
            # a claim may register its own rules (e.g. the sanity check that fits its method)
            overrides = dict(self.params.get("rules") or {})
            kwargs["rules"] = dataclasses.replace(rules, **overrides) if overrides else rules
        if takes(self.test, "params"):
            kwargs["params"] = self.params
        return self.test(items, **kwargs)


def takes(test: Predicate, keyword: str) -> bool:
    """Whether a predicate takes ``keyword`` (``rules``: the profile's seed rules;
    ``params``: the claim's registered parameters)."""
    return keyword in inspect.signature(test).parameters
