"""Which record vouches for a file of a crate: its own signed sidecar, never the crate's links.

A crate's metadata is not signed, so the link from a figure to the job that made it (its
``CreateAction``'s ``subjectOf``) is whatever the crate says: pointing a figure's job at another
genuine, signed record (one that does not list the figure) let edited bytes pass. The record
that checks a figure or table is therefore found by its name (``<stem>.provenance.json``
beside it, the pipeline's sidecar); a job link that names another record is a failed check; a
file of a run folder is checked against its folder's ``provenance.json``. Whatever record
checks a file must be intact and signed by a trusted key (``record_edited``,
:mod:`sharpness.runs.signing`) and must list the file with its SHA-256: the figure's hash is
checked from the signed record alone.
"""

from __future__ import annotations

from typing import Any, Protocol

from sharpness.runs.provenance import SIDECAR_SUFFIX


class _Graph(Protocol):
    entities: dict[str, dict[str, Any]]

    def get(self, ident: Any) -> dict[str, Any]: ...


def sidecar_of(ident: str) -> str:
    """``figures/p/x.pdf`` -> ``figures/p/x.provenance.json`` (the pipeline's sidecar name)."""
    head, _, name = ident.rpartition("/")
    stem = name.rsplit(".", 1)[0] if "." in name else name
    return f"{head}/{stem}{SIDECAR_SUFFIX}" if head else f"{stem}{SIDECAR_SUFFIX}"


def vouching_record(crate: _Graph, ident: str, job: dict[str, Any]) -> tuple[str | None,
                                                                             list[str]]:
    """The crate path of the record that checks ``ident``, and failed checks: its own sidecar
    when the crate holds one (a job link naming another record fails), else its job's."""
    linked = crate.get(job.get("subjectOf")).get("@id")
    sidecar = sidecar_of(ident)
    if sidecar in crate.entities and sidecar != ident:
        bad = ([f"JOB MISMATCH: the crate links {ident} to the job of {linked}, but its own "
                f"signed sidecar is {sidecar} (a crate's links are not signed; the sidecar "
                "is what is checked)"] if linked and linked != sidecar else [])
        return sidecar, bad
    return linked, []


def signed_checks(record: dict[str, Any], record_path: str, ident: str,
                  recorded: str | None) -> list[str]:
    """Failed checks of the record that vouches for ``ident`` beyond its own integrity (its id
    and its signature by a trusted key, which ``record_edited`` checks): it must list
    ``ident`` among its outputs (``recorded``: the SHA-256 it lists, if any)."""
    bad = []
    if recorded is None:
        bad.append(f"NOT IN ITS RECORD: {record_path} does not list {ident} among the files "
                   "it vouches for; its SHA-256 is checked by no signed record")
    return bad
