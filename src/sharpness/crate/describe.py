"""What a crate says about its files, software and people beyond what the records hold.

roc-validator's RECOMMENDED checks of the profiles a crate declares ask for more than the
records tell (``docs/audit.md``, "The validator's RECOMMENDED issues", lists those left and
why): a media type on every file, a registry address for each package, an agent for each
action, an author, a README about the crate, single values rather than lists of one. This
module gives those, so that :mod:`sharpness.crate.build` stays the mapping from records to
entities:

* :func:`encoding_format`: a fixed table of the formats a build writes (never the host's
  ``mimetypes``, which differs between machines and calls a ``.smk`` file a video);
* :func:`package_id`: a package's PyPI release page (an absolute address, as the Process Run
  Crate asks for a ``SoftwareApplication``), except this workflow's own package;
* :func:`agent_of`: whoever ran the build: ``--agent``, else git's ``user.name`` in the
  build's checkout, else an explicit "unknown agent" (never guessed from the host);
* :func:`readme`: the crate's own ``README.md`` (not the repository's);
* :func:`compact`: every list of one written as its single value (RO-Crate 1.1's form).
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path
from typing import Any

from rocrate.model import ContextEntity
from rocrate.rocrate import ROCrate

from sharpness.errors import SharpnessError
from sharpness.runs.environment import SAFE_GIT_OPTIONS

#: the media type of each kind of file a build writes (by the end of its name); Snakemake's
#: files are plain text with Python in them (no registered type names them)
FORMATS = {".csv": "text/csv", ".json": "application/json", ".md": "text/markdown",
           ".pdf": "application/pdf", ".png": "image/png", ".svg": "image/svg+xml",
           ".txt": "text/plain", ".log": "text/plain", ".tsv": "text/tab-separated-values",
           ".tex": "text/x-tex", ".rst": "text/x-rst", ".yaml": "application/yaml",
           ".yml": "application/yaml", ".smk": "text/plain", ".py": "text/x-python",
           ".npz": "application/zip", ".zip": "application/zip", ".gz": "application/gzip",
           ".html": "text/html"}
#: files named without an extension that a build's crate holds
NAMED_FORMATS = {"Snakefile": "text/plain"}
#: any other file: bytes, no claim about what they mean (a checkpoint, a ``.npy`` array)
OTHER_FORMAT = "application/octet-stream"
#: this workflow's own package: not published on a registry, named by the crate alone
OWN_PACKAGE = "sharpness"
UNKNOWN_AGENT = "#unknown-agent"
#: an agent's id given by hand: an absolute web address (an ORCID) or a crate-local ``#name``
AGENT_ID = re.compile(r"^(https?://[^\s\"<>]+|#[A-Za-z0-9_.-]+)$")
MAX_NAME = 200


def encoding_format(name: str) -> str:
    """The media type of the file ``name`` (a path): from :data:`FORMATS` by its last
    extension, :data:`OTHER_FORMAT` when the table does not know it."""
    base = name.rsplit("/", 1)[-1]
    if base in NAMED_FORMATS:
        return NAMED_FORMATS[base]
    suffix = "." + base.rsplit(".", 1)[-1].lower() if "." in base else ""
    return FORMATS.get(suffix, OTHER_FORMAT)


def package_id(name: str, version: str | None) -> str:
    """A package's entity id: its PyPI release page (the project page without a version);
    this workflow's own package a crate-local ``#package-...`` (it is on no registry)."""
    slug = re.sub(r"[^A-Za-z0-9_.-]+", "-", name).strip("-") or "x"
    if name == OWN_PACKAGE:
        return f"#package-{slug}" + (f"-{re.sub(r'[^A-Za-z0-9_.-]+', '-', version)}"
                                     if version else "")
    return f"https://pypi.org/project/{slug}/" + (f"{version}/" if version else "")


def _git_user(root: Path) -> str | None:
    """git's ``user.name`` as seen from the build's folder (its checkout's, else the user's),
    git run with :data:`SAFE_GIT_OPTIONS`; None when git or the setting is missing."""
    try:
        out = subprocess.run(["git", "-C", str(root), *SAFE_GIT_OPTIONS, "config", "--get",
                              "user.name"], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() if out.returncode == 0 and out.stdout.strip() else None


def _clean(name: str, what: str) -> str:
    name = " ".join(name.split())
    if not name or len(name) > MAX_NAME or not name.isprintable():
        raise SharpnessError(f"{what} {name[:40]!r}: a name of 1 to {MAX_NAME} printable "
                             "characters")
    return name


def agent_of(crate: ROCrate, root: Path, name: str | None = None,
             ident: str | None = None) -> ContextEntity:
    """The ``Person`` who ran the build (each action's ``agent``, the crate's ``author``):
    ``name`` (``--agent``), else git's ``user.name``; ``ident`` (``--agent-id``, an ORCID)
    when given. Without a name: the explicit :data:`UNKNOWN_AGENT`, whose description says
    so (no e-mail address, user or host name is ever taken: a crate is published)."""
    if ident is not None and not AGENT_ID.match(ident):
        raise SharpnessError(f"--agent-id {ident[:60]!r}: an absolute web address (such as "
                             "https://orcid.org/0000-0002-1825-0097) or a '#name'")
    name = _clean(name, "--agent") if name is not None else _git_user(root)
    if name is None:
        return crate.add(ContextEntity(crate, ident or UNKNOWN_AGENT, properties={
            "@type": "Person", "name": "unknown agent",
            "description": "Who ran this build is not recorded: `sharpness crate` was given "
                           "no --agent and git has no user.name in the build's checkout."}))
    name = _clean(name, "git user.name")
    slug = re.sub(r"[^A-Za-z0-9_.-]+", "-", name).strip("-") or "x"
    return crate.add(ContextEntity(crate, ident or f"#agent-{slug}", properties={
        "@type": "Person", "name": name,
        "description": "who ran the build and packed this crate"}))


def readme(crate: ROCrate, lines: list[str]) -> str:
    """The crate's ``README.md``: its name and description, then ``lines`` (what it holds),
    and how a reader checks it."""
    return "\n".join([
        f"# {crate.name}", "", str(crate.description), "", *lines, "",
        "Check a figure or table against this crate alone (hashes, stamp, signed records, "
        "commit, registration):", "",
        "    sharpness audit --crate build.crate.zip figures/<paper>/<figure>.pdf", "",
        "`ro-crate-metadata.json` describes every file and job (Provenance Run Crate 0.5 over "
        "RO-Crate 1.1 and Workflow RO-Crate 1.0).", ""])


def compact(crate: ROCrate) -> None:
    """Every property whose value is a list of one written as that value (RO-Crate 1.1
    writes single values; roc-validator reports lists of one)."""
    for entity in [*crate.get_entities(), crate.root_dataset, crate.metadata]:
        for key, value in list(entity.properties().items()):
            if not key.startswith("@") and isinstance(value, list) and len(value) == 1:
                entity[key] = value[0]


def as_list(value: Any) -> list[Any]:
    """A property's value as a list (a single value or none written compactly)."""
    return value if isinstance(value, list) else [] if value is None else [value]
