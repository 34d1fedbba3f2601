"""What a ledger says of its registration: the deviations section of ``CLAIMS.md``, the seeds
of the run against the registered ones, and whether the look is confirmatory.

Kept apart from :mod:`sharpness.claims.registration` (what is registered and compared) so each
stays small; both are read by ``sharpness claims build``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any


def seed_offset_mismatch(record: Mapping[str, Any], seed_offset: int) -> str | None:
    """Why a run with ``seed_offset`` is not the run ``record`` registered, or None when the
    offsets agree (the registered seeds are the offset ones, so equal offsets mean equal seeds
    for an unchanged profile config)."""
    registered = int((record.get("config") or {}).get("seed_offset") or 0)
    if registered == int(seed_offset):
        return None
    return (f"the run's seed_offset is {int(seed_offset)}, the registration's {registered}: "
            "its seeds are not the registered ones (register the run with `sharpness claims "
            f"register --profile {record.get('profile')} --seed-offset {int(seed_offset)}`)")


def deviations_markdown(rows: Sequence[Mapping[str, Any]], record: Mapping[str, Any] | None,
                        seed_offset: int = 0, git: Mapping[str, Any] | None = None,
                        look: Mapping[str, Any] | None = None) -> str:
    """The ledger's section "Deviations from the registration"; a run whose ``seed_offset``
    is not the registered one is a deviation of its own, named first; ``git``: what
    :func:`~sharpness.claims.registration_checks.git_check` found (its commit, stated); the
    rows re-registered after a ledger of their data existed are listed last; ``look``: whether
    the look is confirmatory (:func:`sharpness.claims.looks.look_status`), stated first."""
    lines = ["## Deviations from the registration", ""]
    if look is not None:  # sharpness.claims.looks.look_status
        lines += [f"**Look:** {'confirmatory' if look.get('confirmatory') else 'exploratory'}"
                  f": {look.get('why')}.", ""]
    if record is None:
        return "\n".join(lines + ["No registration was given for this profile: every "
                                  "threshold is the one in `claims.yaml` at build time.", ""])
    lines.append(f"Registration `{record.get('id')}` (profile `{record.get('profile')}`, "
                 f"seed offset {int((record.get('config') or {}).get('seed_offset') or 0)}, "
                 f"commit {str(record.get('git_commit') or '?')[:7]}, registered "
                 f"{str(record.get('registered') or '?')[:10]}).")
    if git and git.get("commit"):
        lines.append(f"Committed in {str(git['commit'])[:7]} ({git.get('committed')}); the "
                     f"run's first item built {git.get('first_job') or '(unknown)'}; the file "
                     f"{'equals' if git.get('blob_equal') else 'differs from'} the committed "
                     "blob.")
    mismatch = seed_offset_mismatch(record, seed_offset)
    if mismatch:
        lines += ["", f"**Seeds:** {mismatch}."]
    again = dict(record.get("re_registered_after_data") or {})
    tail = ["", "### Re-registered after data", "",
            "Rows whose parameters or stated predicate changed after a ledger of the profile "
            "had been run and committed (the rule was set with those data seen):", ""] + [
        f"- {cid}: re-registered after data of {where}" for cid, where in again.items()] \
        if again else []
    if not rows:
        return "\n".join(lines + ["", "None: every claim's predicate code and parameters are "
                                      "the registered ones.", ""] + tail + [""])
    lines += ["", "| id | what changed | verdict now | verdict under the registered parameters |",
              "|---|---|---|---|"]
    for r in rows:
        # the rules and the registration's commit are the ledger's, not one claim's
        then = r["verdict_registered"] or ("–" if r["id"] in (
            "rules", "registration", "decision code", "holm families")
            else "(not registered)")
        if any(str(w).startswith("input ") for w in r["what"]) and r["verdict_registered"]:
            then += " (on inputs built from other parameters)"
        if "predicate code changed" in r["what"] and r["verdict_registered"]:
            then += " (current code, registered parameters)"
        lines.append(f"| {r['id']} | {'; '.join(r['what'])} | {r['verdict_now'] or ''} | "
                     f"{then} |")
    return "\n".join(lines + tail) + "\n"
