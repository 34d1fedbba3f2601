"""Bounds on what an untrusted file may cost to read: archives by what they inflate to, parsed
data by size and depth.

An archive's compressed size says nothing of what it unpacks to (one 1 MiB member can inflate
to 1 GiB), and a parser given a file nested 200,000 deep, or an integer of 5,000 digits, ends in
a Python traceback rather than an error the user can read. Every unpacking of the pipeline (a
ledger's ``.figures.tar.gz``, a crate's zip, a downloaded data set's tar) counts entries and
the bytes each member and all of them inflate to *while it streams*, against an
:class:`ArchiveLimits`, and stops at the first limit passed with :class:`LimitExceeded`, which
says which limit it was; :func:`load_json` turns every way JSON can fail (syntax, size,
nesting, an integer past Python's 4,300-digit conversion limit) into one line naming the file.
A leaf: imports nothing of the package but its error type.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import IO, Any

from sharpness.errors import SharpnessError

_CHUNK = 1 << 20
#: the deepest nesting a JSON or YAML document of the pipeline may have (configs, records and
#: crate metadata are a handful of levels deep)
MAX_DEPTH = 64


class LimitExceeded(SharpnessError):
    """An untrusted file passed one of the bounds on what it may cost; the message names
    the file and the limit."""


@dataclass(frozen=True)
class ArchiveLimits:
    """The most an archive may hold: entries, bytes a single member inflates to, bytes all
    members inflate to together."""

    entries: int
    member_bytes: int
    total_bytes: int


class Budget:
    """Counts one archive's entries and inflated bytes against its :class:`ArchiveLimits`."""

    def __init__(self, limits: ArchiveLimits, what: str) -> None:
        self.limits, self.what = limits, what
        self.entries = 0
        self.total = 0

    def entry(self, name: str, declared: int | None = None) -> None:
        """Count one more entry (and check the size its header declares, when it has one)."""
        self.entries += 1
        if self.entries > self.limits.entries:
            raise LimitExceeded(f"{self.what}: more than {self.limits.entries:,} entries (the "
                                "entry-count limit); refused, nothing kept")
        if declared is not None:
            self._check(name, declared, self.total + declared)

    def _check(self, name: str, member: int, total: int, cap: int | None = None) -> None:
        most = min(cap, self.limits.member_bytes) if cap is not None else self.limits.member_bytes
        if member > most:
            raise LimitExceeded(f"{self.what}: member {name!r} inflates to more than "
                                f"{most:,} bytes (the per-member limit); refused, nothing kept")
        if total > self.limits.total_bytes:
            raise LimitExceeded(f"{self.what}: its members inflate to more than "
                                f"{self.limits.total_bytes:,} bytes together (the total "
                                "limit); refused, nothing kept")

    def read(self, name: str, stream: IO[bytes], cap: int | None = None) -> bytes:
        """Read one member from ``stream`` in blocks, stopping as soon as it passes the
        per-member limit (or ``cap``, when lower) or the total limit, whatever its header
        said."""
        blocks, size = [], 0
        while block := stream.read(_CHUNK):
            size += len(block)
            self._check(name, size, self.total + size, cap)
            blocks.append(block)
        self.total += size
        return b"".join(blocks)


def depth(value: Any) -> int:
    """How deeply ``value`` (parsed JSON or YAML: dicts, lists, scalars) nests, counted
    without recursion."""
    deepest, stack = 0, [(value, 1)]
    seen: set[int] = set()
    while stack:
        item, level = stack.pop()
        if isinstance(item, dict | list):
            if id(item) in seen:  # a YAML alias: counted once
                continue
            seen.add(id(item))
            deepest = max(deepest, level)
            stack.extend((v, level + 1) for v in (item.values() if isinstance(item, dict)
                                                  else item))
    return deepest


def load_json(data: bytes | str, what: str, *, max_bytes: int | None = None,
              max_depth: int = MAX_DEPTH) -> Any:
    """Parse untrusted JSON, every failure one :class:`SharpnessError` line naming ``what``:
    too large, not JSON (or not UTF-8), an integer past 4,300 digits, nested deeper than
    ``max_depth``."""
    if max_bytes is not None and len(data) > max_bytes:
        raise LimitExceeded(f"{what}: {len(data):,} bytes, more than the {max_bytes:,} it may "
                            "have; not read")
    try:
        value = json.loads(data)
    except RecursionError as exc:
        raise LimitExceeded(f"{what}: nested deeper than {max_depth} levels; not read") \
            from exc
    except (ValueError, UnicodeDecodeError) as exc:  # JSONDecodeError, int digits limit
        raise SharpnessError(f"{what}: not readable JSON ({exc})") from exc
    if depth(value) > max_depth:
        raise LimitExceeded(f"{what}: nested deeper than {max_depth} levels; not read")
    return value
