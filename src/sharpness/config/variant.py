"""Your own settings beside the default build: which variant a config is, and where it builds.

A build of a profile as committed (``quick.yaml``, ``evidence.yaml``, ``paper.yaml``) writes
the default folders: ``results/``, ``figures/``, ``logs/``. A config that changes any setting
of the profile (a ``--configfile my.yaml`` merged over it, a ``--config key=value``, a
``seed_offset``) is a *variant*: the workflow builds it in ``variants/<name>/`` (its own
``results/``, ``figures/``, ``logs/`` and Snakemake state), so the default build stays intact
and the two can be compared (``sharpness diff``). The name is the config's ``variant`` key, or
derived: ``seed<N>`` for a second look that moves only the seeds, else the last config file's
stem and a hash of the differences (``my-3fa2c1``), so the same settings land in the same
folder and other settings never overwrite it.

Not counted as differences: ``data`` (where the inputs live, not what is computed), ``plan``
(a GPU-budget plan, written by ``sharpness plan``, builds a subset of the profile's own runs
into the default folders; its ledger names the plan) and ``variant`` itself. The value
``variant: default`` builds into the default folders whatever the settings (what the test
suite does to check those paths); the figures then still state their profile only.

This module is plain data (no Snakemake): the Snakefile calls :func:`variant_of` and moves its
working folder to :attr:`Variant.folder`; drawing jobs read the variant's record
(:func:`write_record`, :func:`read_record`) to name it on every figure, caption and ledger.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sharpness.errors import ConfigError

#: the folder every variant builds under (one subfolder each), relative to the checkout
FOLDER = "variants"
#: the value of ``variant`` that builds into the default folders
DEFAULT = "default"
#: top-level keys that do not make a config a variant (see the module docstring)
NOT_SETTINGS = ("data", "plan", "variant")
#: a variant's name: a folder name anyone can type (no separator, no leading dot or dash)
NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,47}$")
#: the record of the variant a build is, written in its folder at planning time
RECORD = "variant.json"
#: the environment variable through which a job finds the record (set by the Snakefile)
ENV = "SHARPNESS_VARIANT"
#: how many differences a caption or corner mark spells out before "and N more"
SHOWN = 4


@dataclass(frozen=True)
class Variant:
    """A named config that differs from its profile: ``differences`` are ``(dotted key,
    profile value, variant value)``; a value absent on one side is None."""

    name: str
    profile: str
    differences: tuple[tuple[str, Any, Any], ...]

    @property
    def folder(self) -> str:
        """Where it builds, relative to the checkout: ``variants/<name>``."""
        return f"{FOLDER}/{self.name}"

    def summary(self, shown: int = SHOWN) -> str:
        """One line: the name, the profile and the first differences (``key: a → b``)."""
        return describe(self.as_record(), shown)

    def as_record(self) -> dict[str, Any]:
        """The JSON-able record :func:`write_record` writes."""
        return {"name": self.name, "profile": self.profile,
                "differences": [{"key": k, "profile": a, "variant": b}
                                for k, a, b in self.differences]}


def differences(profile: Mapping[str, Any], config: Mapping[str, Any],
                prefix: str = "") -> list[tuple[str, Any, Any]]:
    """Every leaf where ``config`` differs from ``profile``, as ``(dotted key, profile value,
    config value)``, sorted by key; mappings are compared key by key, anything else (lists
    included) as a whole; :data:`NOT_SETTINGS` are skipped at the top level."""
    out: list[tuple[str, Any, Any]] = []
    for key in sorted(set(profile) | set(config), key=str):
        if not prefix and key in NOT_SETTINGS:
            continue
        a, b = profile.get(key), config.get(key)
        dotted = f"{prefix}{key}"
        if isinstance(a, Mapping) and isinstance(b, Mapping):
            out += differences(a, b, dotted + ".")
        elif a != b:
            out.append((dotted, a, b))
    return out


def derived_name(diffs: Sequence[tuple[str, Any, Any]], hint: str | None) -> str:
    """``seed<N>`` when only ``seed_offset`` differs, else ``<hint>-<6 hex digits of the
    differences' SHA-256>`` (``hint``: the last config file's stem, ``config`` when none)."""
    if [k for k, _, _ in diffs] == ["seed_offset"]:
        return f"seed{diffs[0][2]}"
    digest = hashlib.sha256(json.dumps([list(d) for d in diffs], sort_keys=True,
                                       default=str).encode()).hexdigest()[:6]
    stem = re.sub(r"[^A-Za-z0-9_.-]+", "-", hint or "config").strip("-.") or "config"
    return f"{stem[:40]}-{digest}"


def variant_of(config: Mapping[str, Any], profile: Mapping[str, Any],
               hint: str | None = None) -> Variant | None:
    """The variant ``config`` is, measured against the ``profile`` it was merged over; None
    for the default build (no difference, or ``variant: default``). A ``variant`` name that
    is not a plain folder name is a :class:`ConfigError` naming the key."""
    name = config.get("variant")
    if name == DEFAULT:
        return None
    diffs = differences(profile, config)
    if name is None and not diffs:
        return None
    if name is not None and (not isinstance(name, str) or not NAME.match(name)):
        raise ConfigError(f"config variant: {name!r} is not a folder name (letters, digits, "
                          "'_', '.', '-'; at most 48; not starting with '.' or '-'), or "
                          f"{DEFAULT!r} to build into the default folders")
    return Variant(name=name or derived_name(diffs, hint),
                   profile=str(config.get("profile", "quick")), differences=tuple(diffs))


def variant_of_files(files: Sequence[str | os.PathLike[str]],
                     layers: Sequence[Mapping[str, Any]], config: Mapping[str, Any],
                     default: Mapping[str, Any]) -> Variant | None:
    """The variant a run with the config files ``files`` (read as ``layers``) is, ``config``
    being what they compose to (``--config`` included): measured against the last whole
    profile among them (else ``default``, the Snakefile's ``quick.yaml``) with any plan
    overlay merged in; named after the last file that is neither a profile nor a plan. The
    Snakefile and ``sharpness campaign`` both ask this."""
    from sharpness.config.profiles import compose, is_whole_profile

    wholes = [c for c in layers if is_whole_profile(c)]
    base = [wholes[-1] if wholes else default]
    base += [c for c in layers if "plan" in c and not is_whole_profile(c)]  # same runs
    own = [f for f, c in zip(files, layers, strict=True)
           if not is_whole_profile(c) and "plan" not in c]
    hint = os.path.splitext(os.path.basename(str(own[-1])))[0] if own else None
    return variant_of(config, compose(base), hint=hint)


def rebase(path: Any, folder: str) -> Any:
    """A path named from the checkout, as seen from the variant's ``folder`` (an absolute
    path, or anything not a non-empty string, unchanged)."""
    if not isinstance(path, str) or not path or os.path.isabs(path):
        return path
    return os.path.relpath(os.path.abspath(path), os.path.abspath(folder))


def _short(value: Any) -> str:
    text = "(absent)" if value is None else json.dumps(value, default=str)
    return text if len(text) <= 40 else text[:37] + "..."


def describe(record: Mapping[str, Any], shown: int = SHOWN) -> str:
    """``variant 'my' of the quick profile: a.b: 1 → 2; ...`` from a record."""
    diffs = list(record.get("differences") or [])
    parts = [f"{d.get('key')}: {_short(d.get('profile'))} → {_short(d.get('variant'))}"
             for d in diffs[:shown] if isinstance(d, Mapping)]
    more = f"; and {len(diffs) - shown} more (variants/{record.get('name')}/{RECORD})" \
        if len(diffs) > shown else ""
    changed = ("; ".join(parts) + more) if parts else "named, no setting changed"
    return (f"variant {record.get('name')!r} of the {record.get('profile')} profile: "
            f"{changed}")


def write_record(variant: Variant, folder: str | os.PathLike[str] = ".") -> Path:
    """Write ``variant.json`` in ``folder`` when its content changed (an unchanged record
    keeps its time stamp), and return its path."""
    from sharpness.io import atomic_write_text

    path = Path(folder) / RECORD
    text = json.dumps(variant.as_record(), indent=1, sort_keys=True, default=str) + "\n"
    try:
        if path.read_text() == text:
            return path
    except OSError:
        pass
    atomic_write_text(path, text)
    return path


def read_record(path: str | os.PathLike[str] | None = None) -> dict[str, Any] | None:
    """The record of the variant this process builds: the file the environment variable
    :data:`ENV` names (``path`` overrides it); None outside a variant. A record that cannot
    be read is named as such rather than dropped, so a figure never passes for the
    default."""
    name = path if path is not None else os.environ.get(ENV)
    if not name:
        return None
    try:
        record = json.loads(Path(name).read_text())
        if isinstance(record, dict) and isinstance(record.get("name"), str):
            return record
    except (OSError, ValueError):
        pass
    return {"name": "unknown", "profile": "?", "differences": [],
            "unreadable": f"{name}: not a readable variant record"}


def checkout_of(build: str | os.PathLike[str]) -> Path:
    """The checkout whose workflow made the build in folder ``build``: ``build`` itself, or,
    for a variant's folder (``<checkout>/variants/<name>``), the checkout two levels up."""
    build = Path(build)
    up = build.resolve().parents
    if (not (build / "Snakefile").is_file() and build.resolve().parent.name == FOLDER
            and len(up) > 1 and (up[1] / "Snakefile").is_file()):
        return up[1]
    return build


def in_checkout(path: str | os.PathLike[str]) -> Path:
    """A checkout file named relative to the checkout (``docs/registration/quick.json``,
    ``workflow/config/quick.yaml``) as seen from here: the path itself when it exists from
    the current folder, else the same file of the checkout a variant's folder belongs to
    (relative, ``../../docs/...``), else the path unchanged."""
    path = Path(path)
    if path.is_absolute() or path.exists():
        return path
    home = checkout_of(".")
    if home != Path(".") and (home / path).exists():
        return Path(os.path.relpath(home / path))
    return path


def current_note() -> str:
    """The line every figure, table and ledger of a variant carries; empty for the default."""
    record = read_record()
    return describe(record) if record else ""
