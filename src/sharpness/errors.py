"""Errors the user can act on; the CLI prints them without a traceback."""

from __future__ import annotations

from collections.abc import Collection, Iterable


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
