"""Errors the user can act on; the CLI prints them without a traceback."""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from typing import TypeVar

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
