"""Packages that import each public name from its module when it is first asked for.

A package whose modules need torch but whose light parts are read without it (the model
names and options by the workflow's plan, a run's keys and checks) lists where each public
name lives, and its module ``__getattr__`` (PEP 562) returns :func:`lazy_attribute`:
``from package import name`` then imports only ``name``'s module. The hook stays a ``def``
in the package's ``__init__.py``: the code fingerprint (:mod:`sharpness.runs.cache`) reads a
package that defines one as reaching every module of it.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from typing import Any


def lazy_attribute(package: str, homes: Mapping[str, str], namespace: dict[str, Any],
                   name: str) -> Any:
    """``name`` of ``package``, imported from its module (``homes``: name -> module of the
    package) and kept in ``namespace`` (the package's globals), so the next lookup is a plain
    one; a name ``homes`` does not list is an ``AttributeError``."""
    if name not in homes:
        raise AttributeError(f"module {package!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{package}.{homes[name]}"), name)
    namespace[name] = value
    return value
