"""Nested mappings merged key by key: the one recursive merge every part of the project uses.

A profile's config files (:mod:`sharpness.config.profiles`), a lesam group's overrides over
its base (:mod:`sharpness.lesam.experiments`) and the cost planner's runs
(:mod:`sharpness.cost.plan`) all merge the same way. It is a leaf (standard library only) so
that the experiment packages can use it without importing the configuration package, which
sits above them (its checks expand their sections).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
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
