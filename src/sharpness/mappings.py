"""Nested mappings: the one recursive merge every part of the project uses, and the one
seed offset every profile config gets.

A profile's config files (:mod:`sharpness.config.profiles`), a lesam group's overrides over
its base (:mod:`sharpness.lesam.experiments`), the cost planner's runs
(:mod:`sharpness.cost.plan`), an eos setting over its defaults (:mod:`sharpness.eos.config`,
:mod:`sharpness.eos.sweep`), a training run's config over its defaults
(:mod:`sharpness.train.config`) and a GLMC run's settings (:mod:`sharpness.lesam.glmc`) all
merge through :func:`deep_merge`. It is a leaf (standard library only) so
that the experiment packages can use it without importing the configuration package, which
sits above them (its checks expand their sections).

A second look with fresh seeds: the config key ``seed_offset`` moves every seed of a profile.
:func:`offset_seeds` is applied once, where the workflow reads its config (the Snakefile,
before any rule sees it), so every seed the config names moves by the same offset: keys
``seed`` and ``seeds`` (a list) and any key ending in ``_seed``, at any depth. A seed the
config leaves to the code's default is not moved: name it in the profile to offset it. The
offset stays in the config (and so in every run's provenance and the claims registration).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, MutableMapping
from typing import Any


def deep_merge(base: Mapping[str, Any], over: Mapping[str, Any]) -> dict[str, Any]:
    """Recursive dict merge (``over`` wins; nested mappings merge key by key), without
    mutating either argument."""
    out = copy.deepcopy(dict(base))
    for key, value in over.items():
        if isinstance(value, Mapping) and isinstance(out.get(key), Mapping):
            out[key] = deep_merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def _is_seed_key(key: object) -> bool:
    return key in ("seed", "seeds") or (isinstance(key, str) and key.endswith("_seed")
                                        and key != "seed_offset")


def _shift(value: Any, offset: int) -> Any:
    if isinstance(value, bool):
        return value
    if isinstance(value, int):
        return value + offset
    if isinstance(value, list):
        return [_shift(v, offset) for v in value]
    return value


def _walk(node: Any, offset: int) -> None:
    if isinstance(node, MutableMapping):
        for key in list(node):
            if _is_seed_key(key):
                node[key] = _shift(node[key], offset)
            else:
                _walk(node[key], offset)
    elif isinstance(node, list):
        for value in node:
            _walk(value, offset)


def offset_seeds(config: MutableMapping[str, Any]) -> int:
    """Add ``config["seed_offset"]`` (default 0) to every seed ``config`` names, in place;
    returns the offset. Applying it once per config read is the caller's duty (the
    Snakefile does it right after merging the config files)."""
    offset = int(config.get("seed_offset", 0) or 0)
    if offset:
        _walk(config, offset)
    return offset
