"""How a profile is assembled from config files: the one rule the Snakefile and the commands share.

A run of the workflow starts from the default profile (``workflow/config/quick.yaml``) and
merges each ``--configfile`` over it, except that a *whole* profile (a file that names its
``profile`` and its ``data``, as ``paper.yaml`` does) replaces everything before it: otherwise
the quick profile's stand-ins, widths and extra groups would leak into the paper profile.
Files that change only some settings are merged over the last profile, each layer by
:func:`sharpness.mappings.deep_merge` (the merge the lesam run list and the cost planner use).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from sharpness.config.plain import read_plain_config
from sharpness.mappings import deep_merge

DEFAULT_PROFILE = "workflow/config/quick.yaml"


def is_whole_profile(layer: Mapping[str, Any]) -> bool:
    """Whether a config file is a whole profile (it names its ``profile`` and its ``data``),
    which replaces the config before it instead of being merged over it."""
    return "profile" in layer and "data" in layer


def compose(files: Sequence[Mapping[str, Any]], base: Mapping[str, Any] | None = None,
            overrides: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The config a run sees: ``base`` with each of ``files`` merged over it in order, from
    the last whole profile on when one of them is, then ``overrides`` (``--config``)."""
    whole = [i for i, layer in enumerate(files) if is_whole_profile(layer)]
    layers = list(files[whole[-1]:]) if whole else [base or {}, *files]
    config: dict[str, Any] = {}
    for layer in [*layers, overrides or {}]:
        config = deep_merge(config, layer)
    return config


def read_config_file(name: str | Path) -> dict[str, Any]:
    """One YAML config file as a mapping of plain data (:mod:`sharpness.config.plain`: no yte
    template, tag or alias); a missing file, another YAML type or anything refused is a
    :class:`~sharpness.errors.ConfigError` naming it."""
    return read_plain_config(name)


def load_profile(files: Sequence[str | Path], base: str | Path | None) -> dict[str, Any]:
    """The config as the workflow sees it, read from disk: ``base`` (e.g.
    :data:`DEFAULT_PROFILE`; None for none) with each file merged over it by :func:`compose`."""
    return compose([read_config_file(name) for name in files],
                   read_config_file(base) if base else None)
