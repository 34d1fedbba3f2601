"""What a received crate may cost to read, and the shape its metadata must have.

A crate comes from elsewhere (a paper's supplement, WorkflowHub, Zenodo), so ``sharpness audit
--crate`` reads it as hostile input: the zip's entries, the bytes each member and all members
inflate to (:data:`LIMITS`) and the metadata's size and nesting are bounded
(:mod:`sharpness.limits`), and the metadata must be a graph of entities whose ``@id`` is text and
whose ``@type`` is text or a list of texts (a number where a type goes, or a file's ``sha256``
that is not text, is refused in one line rather than failing later as a ``TypeError``).
"""

from __future__ import annotations

from typing import Any

from sharpness.errors import SharpnessError
from sharpness.limits import ArchiveLimits

#: a crate's zip: entries, bytes a member inflates to, bytes all do (a build's crate holds its
#: figures and records, run outputs over 2 MiB named, not copied)
LIMITS = ArchiveLimits(entries=100_000, member_bytes=256 * 2**20, total_bytes=2 * 2**30)
#: the largest ``ro-crate-metadata.json`` read (a build of the paper profile: a few MB)
MAX_METADATA_BYTES = 64 * 2**20


def _texts(value: Any) -> bool:
    return isinstance(value, str) or (isinstance(value, list)
                                      and all(isinstance(v, str) for v in value))


def entities_of(graph: Any, what: str) -> dict[str, dict[str, Any]]:
    """The entities of a crate's ``@graph`` by id, after checking the shape every reader of
    them relies on; a graph of another shape is refused naming the first bad entity."""
    if not isinstance(graph, list):
        raise SharpnessError(f"{what}: its @graph is a {type(graph).__name__}, not a list of "
                             "entities; not a crate this command can check")
    entities: dict[str, dict[str, Any]] = {}
    for entity in graph:
        if not isinstance(entity, dict) or "@id" not in entity:
            continue
        ident = entity["@id"]
        bad = ("@id" if not isinstance(ident, str)
               else "@type" if "@type" in entity and not _texts(entity["@type"])
               else "sha256" if "sha256" in entity and not isinstance(entity["sha256"], str)
               else None)
        if bad:
            raise SharpnessError(f"{what}: entity {str(ident)[:80]!r} has a {bad} of type "
                                 f"{type(entity[bad]).__name__}; not a crate this command can "
                                 "check (refused, nothing run)")
        entities[ident] = entity
    return entities
