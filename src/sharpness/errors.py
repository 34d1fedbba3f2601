"""Errors the user can act on; the CLI prints them without a traceback."""

from __future__ import annotations

import math
from collections.abc import Collection, Iterable, Iterator, Mapping
from typing import Any, TypeVar

V = TypeVar("V")


class SharpnessError(Exception):
    """Base class: a problem with input (config, data, paths) explained in the message."""


class ConfigError(SharpnessError, ValueError):
    """An invalid setting; the message names the key and the reason."""


class DataError(SharpnessError, FileNotFoundError):
    """A data set that cannot be found or verified; the message says what to put where."""


def reject_unknown(where: str, given: Iterable[str], known: Collection[str]) -> None:
    """Raise :class:`ConfigError` when ``given`` has keys outside ``known``, naming them and
    the known ones (``where``: the config section, e.g. ``"bridges.sam_eos"``)."""
    unknown = sorted(set(given) - set(known))
    if unknown:
        raise ConfigError(f"{where} has unknown key(s) {unknown}; known: {sorted(known)}")


def lookup(table: Mapping[str, V], name: str, what: str,
           error: type[Exception] = ValueError) -> V:
    """``table[name]``; an unknown name raises ``error`` naming it and the known ones
    (``what``: what the table holds, e.g. ``"model"``)."""
    try:
        return table[name]
    except KeyError:
        raise error(f"unknown {what} {name!r}; known: {', '.join(sorted(table))}") from None


def key_path(parts: Iterator[Any] | list[Any]) -> str:
    """``["lesam", "groups", "g", "seeds", 0]`` -> ``lesam.groups.g.seeds[0]``."""
    out = ""
    for part in parts:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "(top level)"


def nonfinite(value: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[tuple[Any, ...], float]]:
    """Every NaN or infinity inside ``value`` (nested dicts and lists), with its path."""
    if isinstance(value, float) and not math.isfinite(value):
        yield path, value
    elif isinstance(value, Mapping):
        for key, item in value.items():
            yield from nonfinite(item, (*path, key))
    elif isinstance(value, (list, tuple)):
        for index, item in enumerate(value):
            yield from nonfinite(item, (*path, index))


def reject_nonfinite(value: Any, where: str = "") -> None:
    """Raise :class:`ConfigError` naming the first NaN or infinity inside ``value``."""
    for path, number in nonfinite(value):
        name = key_path([*([where] if where else []), *path])
        raise ConfigError(f"config key {name}: {number} is not a finite number")
