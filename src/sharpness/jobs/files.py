"""A job's config file: written once when the workflow plans, read by the job it names.

Every job of a build reads its resolved settings from a file the plan writes
(:meth:`sharpness.jobs.Plan.write`), never from its command line: the command line names the
file, a reader of ``snakemake -n`` sees which job runs, and a changed setting rewrites exactly
the files whose content changed, so Snakemake (which reads each file as an input of its job)
reruns exactly those jobs. The job records the file's path and SHA-256 in its provenance
(:func:`read_job_file` hashes the bytes it parses). Pure Python, no torch.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from sharpness.errors import ConfigError
from sharpness.io import atomic_write_text


def config_text(content: Any) -> str:
    """A job's config file as written: sorted keys, one key a line (a reader sees a setting
    and a diff names it)."""
    return json.dumps(content, sort_keys=True, indent=1) + "\n"


def write_files(files: Mapping[str, Any], root: str | Path = ".") -> list[str]:
    """Write each ``{relative path: content}`` under ``root`` as :func:`config_text`; a file
    whose text is unchanged is not touched (its modification time stays, so Snakemake reruns
    only the jobs whose config changed). Returns the paths written."""
    written = []
    for rel, content in files.items():
        path, text = Path(root) / rel, config_text(content)
        try:
            if path.read_text() == text:
                continue
        except (FileNotFoundError, UnicodeDecodeError):
            pass
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_text(path, text)
        written.append(rel)
    return written


def read_job_file(path: str, option: str = "--config-file") -> tuple[Any, dict[str, str]]:
    """The JSON value of the job file ``path`` and ``{"path", "sha256"}`` of the bytes parsed
    (read once, so the hash is that of the config the job runs). ``option`` names the
    command-line option in errors."""
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise ConfigError(f"{option} {path!r}: {exc.strerror or exc}") from None
    try:
        value = json.loads(data)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{option} {path!r} is not valid JSON: {exc}") from None
    return value, {"path": path, "sha256": hashlib.sha256(data).hexdigest()}


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
