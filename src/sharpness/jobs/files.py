"""A job's config file: written once when the workflow plans, read by the job it names.

Every job of a build reads its resolved settings from a file the plan writes
(:meth:`sharpness.jobs.Plan.write`), never from its command line: the command line names the
file, a reader of ``snakemake -n`` sees which job runs, and a changed setting rewrites exactly
the files whose content changed, so Snakemake (which reads each file as an input of its job)
reruns exactly those jobs. The job records the file's path and SHA-256 in its provenance
(:func:`read_job_file` hashes the bytes it parses). Pure Python, no torch.

**The plan signs what it wrote.** Beside each file the plan writes its signature
(``<file>.sig``: the file's SHA-256, signed with this machine's key, kept outside the results
tree: :mod:`sharpness.runs.signing`). A job trusts a file's settings as resolved and checked
by the plan only when that signature holds for the bytes it read, by a key trusted here
(:func:`read_job_file` then records ``signed_by``); a file written by hand, or changed after
the plan wrote it, is checked in full like a config given on the command line (a training
job resolves its hyper-parameters through the optimizer's spec), so nobody who can write
``results/`` can hand a job values that no check saw. The file's own bytes hold no signature:
they are the same on every machine, and so is their hash in a run's provenance.
"""

from __future__ import annotations

import hashlib
import json
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from sharpness.errors import ConfigError
from sharpness.io import atomic_write_text


def config_text(content: Any) -> str:
    """A job's config file as written: sorted keys, one key a line (a reader sees a setting
    and a diff names it)."""
    return json.dumps(content, sort_keys=True, indent=1) + "\n"


#: what a job file's signature says it vouches for (the ``kind`` of its signed record)
SIGNED_KIND = "planned_job_file"
#: the most a signature file may hold (one is about 350 bytes); a larger one is not read
SIGNATURE_MAX_BYTES = 4096


def signature_path(path: str | Path) -> Path:
    """Where the plan's signature of the job file ``path`` is: beside it, ``<file>.sig``."""
    path = Path(path)
    return path.with_name(path.name + ".sig")


def signature_text(text: str) -> str:
    """The signature file of a job file holding ``text``: its SHA-256 signed with this
    machine's key. Ed25519 signs deterministically, so the same text and key give the same
    signature file, which planning again leaves untouched."""
    from sharpness.runs.signing import sign

    record = {"kind": SIGNED_KIND, "sha256": hashlib.sha256(text.encode()).hexdigest()}
    return json.dumps(sign(record), sort_keys=True, indent=1) + "\n"


def _unchanged(path: Path, text: str) -> bool:
    try:
        return path.read_text() == text
    except (OSError, UnicodeDecodeError):
        return False


def write_files(files: Mapping[str, Any], root: str | Path = ".") -> list[str]:
    """Write each ``{relative path: content}`` under ``root`` as :func:`config_text`, with
    its signature beside it (:func:`signature_text`); a file whose text is unchanged is not
    touched (its modification time stays, so Snakemake reruns only the jobs whose config
    changed), nor is a signature that is. Returns the paths of the job files written."""
    written = []
    for rel, content in files.items():
        path, text = Path(root) / rel, config_text(content)
        signature = signature_text(text)
        if not _unchanged(path, text):
            path.parent.mkdir(parents=True, exist_ok=True)
            atomic_write_text(path, text)
            written.append(rel)
        if not _unchanged(signature_path(path), signature):
            atomic_write_text(signature_path(path), signature)
    return written


def plan_signer(path: str | Path, sha256: str) -> str | None:
    """The public key (hex) that signed the job file ``path`` as a plan wrote it with the
    SHA-256 ``sha256`` (the bytes a job read), when that key is trusted here; ``None`` when
    the file has no signature beside it, or one that does not hold for these bytes (the file
    was written by hand or changed after the plan wrote it) or by a key not trusted here, or
    one larger than :data:`SIGNATURE_MAX_BYTES` (not read)."""
    from sharpness.runs.signing import FIELD, signature_problem

    try:
        with open(signature_path(path), "rb") as handle:
            data = handle.read(SIGNATURE_MAX_BYTES + 1)
        record = json.loads(data) if len(data) <= SIGNATURE_MAX_BYTES else None
    except (OSError, ValueError, RecursionError):
        return None
    if (not isinstance(record, dict) or record.get("kind") != SIGNED_KIND
            or record.get("sha256") != sha256 or signature_problem(record) is not None):
        return None
    return str(record[FIELD]["public_key"])


def read_job_file(path: str, option: str = "--config-file") -> tuple[Any, dict[str, str]]:
    """The JSON value of the job file ``path`` and ``{"path", "sha256"}`` of the bytes parsed
    (read once, so the hash is that of the config the job runs), with ``signed_by`` (the key
    of :func:`plan_signer`) when the plan's signature holds for them. ``option`` names the
    command-line option in errors. A signature beside the file that does not hold is said on
    stderr: the job then checks the file's settings in full."""
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise ConfigError(f"{option} {path!r}: {exc.strerror or exc}") from None
    try:
        value = json.loads(data)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{option} {path!r} is not valid JSON: {exc}") from None
    source = {"path": path, "sha256": hashlib.sha256(data).hexdigest()}
    signer = plan_signer(path, source["sha256"])
    if signer is not None:
        source["signed_by"] = signer
    elif signature_path(path).exists():
        print(f"{option} {path}: not the file its plan signed (changed since, or signed by a "
              "key not trusted here); its settings are checked in full", file=sys.stderr)
    return value, source


def read_job_object(path: str, option: str = "--config-file") -> tuple[dict[str, Any],
                                                                        dict[str, str]]:
    """:func:`read_job_file` for a file that must hold a JSON object."""
    value, source = read_job_file(path, option)
    if not isinstance(value, dict):
        raise ConfigError(f"{option} {path!r}: expected a JSON object, got "
                          f"{type(value).__name__}")
    return value, source


def job_settings(config_file: str | None, params: str | None,
                 expected: str = "a JSON object") -> tuple[dict[str, Any], dict[str, str] | None]:
    """A command's settings: the job file ``config_file`` (with its path and SHA-256, as the
    workflow passes it) or else the ``--params`` JSON text ``params`` (source ``None``, for use
    by hand); ``expected`` says in an error what ``--params`` must hold."""
    if config_file is not None:
        return read_job_object(config_file)
    try:
        value = json.loads(params or "")
    except json.JSONDecodeError as exc:
        raise ConfigError(f"--params is not valid JSON: {exc}") from None
    if not isinstance(value, dict):
        raise ConfigError(f"--params must be {expected}, got {type(value).__name__}")
    return value, None
