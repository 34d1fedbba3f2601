"""The numbers the papers report (``paper_reported.yaml``, with their sources).

Kept out of code so that a number and its source are read in one place; the lesam tables
print a number beside a measured value only when the measured setting is comparable (the
paper profile's real data at full width), and otherwise the setting that would be.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

PATH = Path(__file__).with_name("paper_reported.yaml")


@functools.lru_cache(maxsize=1)
def entries() -> tuple[dict[str, Any], ...]:
    """Every reported number (item, key, value, text, setting, source)."""
    data = yaml.safe_load(PATH.read_text())
    for k, entry in enumerate(data):
        missing = {"item", "key", "text", "setting", "source"} - set(entry)
        if missing:
            raise ValueError(f"{PATH}: entry {k} lacks {sorted(missing)}")
    return tuple(data)


def reported(item: str, key: str) -> dict[str, Any] | None:
    """The entry of ``item``/``key`` (keys compared as text), or None."""
    for entry in entries():
        if entry["item"] == item and str(entry["key"]) == str(key):
            return entry
    return None


def paper_column(item: str, key: str, comparable: bool) -> str:
    """The "paper (reported)" cell: the number where comparable, else what would be."""
    entry = reported(item, key)
    if entry is None:
        return ""
    if comparable:
        return f"{entry['text']} [{entry['source']}]"
    return f"not comparable here; paper: {entry['setting']}"


def comparable_setting(config: Mapping[str, Any], stand_ins: Any = ()) -> bool:
    """Whether a training config measures what the paper measured: the real data set (not an
    embedded subset), no stand-in, full width, no train-size cap."""
    return (not stand_ins and not str(config.get("dataset", "")).endswith("_embedded")
            and float(config.get("width", 1.0) or 1.0) >= 1.0
            and config.get("train_size") is None and not config.get("stand_ins"))
