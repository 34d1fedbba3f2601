"""Errors the user can act on; the CLI prints them without a traceback."""


class SharpnessError(Exception):
    """Base class: a problem with input (config, data, paths) explained in the message."""


class ConfigError(SharpnessError, ValueError):
    """An invalid setting; the message names the key and the reason."""


class DataError(SharpnessError, FileNotFoundError):
    """A data set that cannot be found or verified; the message says what to put where."""
