"""Reading provenance records: ``sharpness audit`` (the chain behind an artifact) and
``sharpness diff`` (why two versions of an artifact differ).

An audit prints the artifact's record, then its inputs: what all inputs share (params, code,
packages, device, data) once, then for each input only what differs from the others, and so on
down the chain. A record made from uncommitted changes is flagged on a line of its own, with
the changed files. Each record is checked against the disk (:mod:`sharpness.runs.audit_checks`):
its id recomputed from its content (an edited setting or status), its files, their stamps and
hashes, its inputs' content, a ``running`` run whose owner is gone or whose loop makes no
progress (or that has no possible heartbeat); a failed check is a ``!!!`` line. ``--json`` gives the same chain as nested records for machines;
:func:`settings_yaml` gives the resolved settings of one record as YAML.

A diff compares two records part by part, the parts the content-addressed id is made of
(kind, params, seed, code, data, inputs), plus the package versions: e.g. a figure drawn again
after a setting change lists the setting under ``inputs``, with the param that changed.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

from sharpness.config.variant import describe as describe_variant
from sharpness.errors import SharpnessError
from sharpness.io import read_json
from sharpness.runs import audit_checks as checks
from sharpness.runs.cache import flatten
from sharpness.runs.provenance import PROVENANCE_NAME, SIDECAR_SUFFIX, find_provenance

_DIRTY = "!!! DIRTY TREE"


def load_record(path: str | os.PathLike[str]) -> tuple[Path, dict[str, Any]] | None:
    """The provenance file describing ``path`` and its record (``None`` when there is none)."""
    prov = find_provenance(path)
    if prov is None:
        return None
    try:  # a hostile record (nested 200,000 deep, a 5,000-digit number) is one line
        record = read_json(prov)
    except (OSError, ValueError) as exc:
        raise SharpnessError(f"{prov}: not a readable provenance record ({exc})") from None
    if not isinstance(record, dict):
        raise SharpnessError(f"{prov}: a provenance record is a JSON object, this is a "
                             f"{type(record).__name__}")
    return prov, record


def _show(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False)


def dirty_line(record: Mapping[str, Any]) -> str | None:
    """A loud line when ``record`` was made from a tree with uncommitted changes."""
    code = record.get("code", {})
    if not code.get("dirty"):
        return None
    files = code.get("dirty_files") or []
    shown = ", ".join(files[:8]) + (f" (+{len(files) - 8} more)" if len(files) > 8 else "")
    return (f"{_DIRTY}: made from uncommitted changes at {str(code.get('git_commit'))[:12]}"
            f"{': ' + shown if shown else ''}; the commit alone does not reproduce it")


def _facts(record: Mapping[str, Any]) -> dict[str, Any]:
    """What an audit compares between sibling inputs: params, seed, code, data, device."""
    code = record.get("code", {})
    dev = record.get("device", {})
    facts = {f"params.{k}": v for k, v in flatten(record.get("params", {})).items()}
    facts.update({
        "seed": record.get("seed"),
        "code": f"{str(code.get('git_commit') or 'unknown')[:12]}"
                f"{' DIRTY' if code.get('dirty') else ''} "
                f"fingerprint {str(code.get('fingerprint') or '-')[:12]}",
        "packages": ", ".join(f"{k} {v}" for k, v in record.get("packages", {}).items() if v),
        "device": f"{dev.get('cuda') or dev.get('cpu')} on {dev.get('host')}",
    })
    for i, item in enumerate(record.get("data", [])):
        facts[f"data[{i}]"] = f"{item.get('name')} sha256={item.get('sha256', '-')}"
    for stand_in in record.get("stand_ins", []):
        facts[f"STAND-IN {stand_in}"] = stand_in
    return facts


def _header(record: Mapping[str, Any], path: Any, prov: Path, pad: str,
            sink: list[str]) -> list[str]:
    """The record's first lines, then a ``!!!`` line for each failed check (also added to
    ``sink``): a file not the one recorded, an input changed, an interrupted run."""
    found = checks.problems(prov, record)
    sink += [f"{path}: {p}" for p in found]
    status = checks.run_status(record)
    if any(p.startswith("ORPHANED") for p in found):
        status = f"ORPHANED (the record says {status}, its output is gone)"
    extra = ""
    if status == "interrupted":
        extra = f" (last heartbeat {record.get('heartbeat')}); run it again to resume"
    elif status in ("stalled", "unknown"):
        extra = f" (last heartbeat {record.get('heartbeat')}; the record says running)"
    elif status == "diverged":
        step = record.get("diverged_step", record.get("diverged_at_step"))
        extra = f" at step {step}" if step is not None else ""
    elif status == "failed":
        extra = f": {record.get('error')}"
    lines = [f"{pad}{record.get('kind', '?')} {record.get('id', '?')}: {path}",
             f"{pad}  record:   {prov}",
             f"{pad}  status:   {status}{extra}   {record.get('started')} -> "
             f"{record.get('ended')}"]
    if isinstance(record.get("variant"), dict):  # built with other settings than its profile's
        lines.append(f"{pad}  variant:  {describe_variant(record['variant'], shown=8)}")
    loud = dirty_line(record)
    if loud:
        lines.insert(1, f"{pad}  {loud}")
    return lines + [f"{pad}  !!! {p}" for p in found]


def _fact_lines(facts: Mapping[str, Any], pad: str) -> list[str]:
    lines = []
    params = {k[len("params."):]: v for k, v in facts.items() if k.startswith("params.")}
    sources = {k[len("sources."):]: v for k, v in params.items() if k.startswith("sources.")}
    params = {k: v for k, v in params.items() if not k.startswith("sources.")}
    if params:
        lines.append(f"{pad}params:   " + ", ".join(f"{k}={_show(v)}"
                                                    for k, v in sorted(params.items())))
    for key, text in sorted(sources.items()):  # where each paper-profile setting comes from
        lines.append(f"{pad}source:   {key}: {text}")
    for key in ("seed", "code", "packages", "device"):
        if key in facts and facts[key] not in (None, ""):
            lines.append(f"{pad}{key + ':':<10}{facts[key]}")
    for key, value in facts.items():
        if key.startswith("data["):
            lines.append(f"{pad}data:     {value}")
        elif key.startswith("STAND-IN "):
            lines.append(f"{pad}STAND-IN: {value}")
    return lines


def audit_report(path: str | os.PathLike[str], max_depth: int = 6
                 ) -> tuple[list[str], list[str]]:
    """``(lines, problems)``: the chain of :func:`audit_lines` and every failed check in it
    (see :mod:`sharpness.runs.audit_checks`), each naming the file it concerns."""
    found: list[str] = []
    return audit_lines(path, max_depth, _problems=found), found


def audit_lines(path: str | os.PathLike[str], max_depth: int = 6, _depth: int = 0,
                _seen: set[str] | None = None, _problems: list[str] | None = None
                ) -> list[str]:
    """Human-readable provenance chain of ``path``: its record and the checks on its files,
    then what its inputs share (once) and what differs per input, recursively."""
    seen = set() if _seen is None else _seen
    sink = [] if _problems is None else _problems
    pad = "  " * _depth
    loaded = load_record(path)
    if loaded is None:
        return [f"{pad}{path}: no provenance record found"]
    prov, record = loaded
    key = str(prov.resolve())
    if key in seen:
        return [f"{pad}{path}: (see above, {prov})"]
    seen.add(key)
    lines = _header(record, path, prov, pad, sink)
    lines += _fact_lines(_facts(record), pad + "  ")
    if record.get("command"):  # never shown from a record that failed its check
        shown = (" ".join(map(str, record["command"])) if not checks.record_problems(record)
                 else "(not shown: the record failed its check)")
        lines.append(f"{pad}  command:  {shown}")
    inputs = record.get("inputs", [])
    if not inputs:
        return lines
    lines.append(f"{pad}  inputs ({len(inputs)}):")
    if _depth >= max_depth:
        return lines + [f"{pad}    ... (depth limit)"]
    children = [(entry, load_record(entry["path"])) for entry in inputs]
    facts = [_facts(c[1][1]) for c in children if c[1] is not None]
    shared: dict[str, Any] = {}
    if len(facts) > 1:
        shared = {k: v for k, v in facts[0].items()
                  if all(k in f and f[k] == v for f in facts[1:])}
        lines.append(f"{pad}    shared by all {len(facts)} inputs:")
        lines += _fact_lines(shared, pad + "      ")
    for entry, child in children:
        if child is None:
            digest = entry.get("sha256")
            lines.append(f"{pad}    {entry['path']}: no provenance record"
                         f"{' (sha256 ' + digest[:12] + ')' if digest else ''}")
            if entry.get("id"):
                _broken(path, entry, sink, lines, pad)
            continue
        cprov, crecord = child
        ckey = str(cprov.resolve())
        if ckey in seen:
            lines.append(f"{pad}    {entry['path']}: (see above, {cprov})")
            continue
        if entry.get("id") and crecord.get("id") != entry["id"]:
            rebuilt = (f"INPUT REBUILT: {entry['path']}: its record is now {crecord.get('id')}, "
                       f"the artifact was made from {entry['id']}")
            sink.append(f"{path}: {rebuilt}")
            lines.append(f"{pad}    !!! {rebuilt}")
        if len(facts) > 1:
            seen.add(ckey)
            head = _header(crecord, entry["path"], cprov, pad + "    ", sink)
            if dirty_line(crecord) and dirty_line(crecord) == dirty_line(record):
                head[1] = f"{pad}      {_DIRTY} (the same uncommitted changes as above)"
            lines += head
            own = {k: v for k, v in _facts(crecord).items() if k not in shared}
            lines += _fact_lines(own, pad + "      ")
            for sub in crecord.get("inputs", []):
                if sub.get("id") and load_record(sub["path"]) is None:
                    _broken(entry["path"], sub, sink, lines, pad + "    ")
                lines += audit_lines(sub["path"], max_depth, _depth + 3, seen, sink)
        else:
            lines += audit_lines(entry["path"], max_depth, _depth + 2, seen, sink)
    return lines


def _broken(path: Any, entry: Mapping[str, Any], sink: list[str], lines: list[str],
            pad: str) -> None:
    """An input made with a record (its entry names the record's id) whose record is gone
    now: the chain is broken there, a failed check (exit code 1), not a silent stop."""
    message = (f"BROKEN CHAIN: {entry['path']} was made with record {entry['id']}, but no "
               "record of it is found now (removed, or the audit cannot reach it)")
    sink.append(f"{path}: {message}")
    lines.append(f"{pad}    !!! {message}")


def audit_tree(path: str | os.PathLike[str], max_depth: int = 6, _depth: int = 0
               ) -> dict[str, Any]:
    """The chain as nested JSON: ``{"path", "record", "inputs": [...]}`` (for ``--json``)."""
    loaded = load_record(path)
    if loaded is None:
        return {"path": str(path), "record": None, "inputs": []}
    prov, record = loaded
    children = [] if _depth >= max_depth else [
        audit_tree(entry["path"], max_depth, _depth + 1) for entry in record.get("inputs", [])]
    return {"path": str(path), "provenance": str(prov), "dirty": bool(dirty_line(record)),
            "status": checks.run_status(record), "problems": checks.problems(prov, record),
            "record": record, "inputs": children}


def scan_lines(folders: Sequence[str | os.PathLike[str]]) -> tuple[list[str], list[str]]:
    """``(lines, problems)``: every record under ``folders`` (run ``provenance.json`` files and
    sidecars), one line each, with the checks of :mod:`sharpness.runs.audit_checks` on it: how to
    find orphaned records (a sidecar whose figure is gone), files replaced, inputs changed
    and interrupted runs across a whole campaign."""
    lines: list[str] = []
    found: list[str] = []
    digests: dict[Path, str | None] = {}
    for folder in folders:
        records = sorted({*Path(folder).rglob(PROVENANCE_NAME),
                          *Path(folder).rglob(f"*{SIDECAR_SUFFIX}")})
        for prov in records:
            try:
                record = read_json(prov)
            except (OSError, ValueError) as exc:
                found.append(f"{prov}: UNREADABLE: {exc}")
                lines.append(f"FAIL unreadable record {prov}: {exc}")
                continue
            bad = checks.problems(prov, record, digests)
            found += [f"{prov}: {p}" for p in bad]
            lines.append(f"{'FAIL' if bad else 'ok  '} {record.get('kind')} {record.get('id')} "
                         f"(status {checks.run_status(record)}): "
                         f"{record.get('artifact') or prov.parent}")
            lines += [f"       !!! {p}" for p in bad]
        if not records:
            lines.append(f"{folder}: no provenance records under it")
    return lines, found


def settings_yaml(path: str | os.PathLike[str]) -> str:
    """The resolved settings the record of ``path`` holds (its ``params``, and its ``seed`` when
    the params leave it out), as YAML under a comment naming the record: what the run used,
    after every default and override was applied, in the config's own language."""
    loaded = load_record(path)
    if loaded is None:
        raise FileNotFoundError(f"no provenance record for {path}")
    prov, record = loaded
    settings = dict(record.get("params") or {})
    if record.get("seed") is not None and "seed" not in settings:
        settings["seed"] = record["seed"]
    head = (f"# settings of {path}: {record.get('kind')} {record.get('id')}, "
            f"status {checks.run_status(record)} (record {prov})\n")
    return head + yaml.safe_dump(settings, sort_keys=True, default_flow_style=False,
                                 allow_unicode=True)


# -- diff ------------------------------------------------------------------------------------

def _dict_diff(a: Mapping[str, Any], b: Mapping[str, Any]) -> list[dict[str, Any]]:
    fa, fb = flatten(a), flatten(b)
    missing = "<unset>"
    return [{"key": k, "a": fa.get(k, missing), "b": fb.get(k, missing)}
            for k in sorted(set(fa) | set(fb)) if fa.get(k, missing) != fb.get(k, missing)]


def diff_records(a: Mapping[str, Any], b: Mapping[str, Any]) -> dict[str, Any]:
    """What differs between two records, part by part (empty parts left out)."""
    out: dict[str, Any] = {"a": a.get("id"), "b": b.get("id"), "same_id": a.get("id") == b.get(
        "id")}
    if a.get("kind") != b.get("kind"):
        out["kind"] = {"a": a.get("kind"), "b": b.get("kind")}
    params = _dict_diff(a.get("params", {}), b.get("params", {}))
    if params:
        out["params"] = params
    if a.get("seed") != b.get("seed"):
        out["seed"] = {"a": a.get("seed"), "b": b.get("seed")}
    ca, cb = a.get("code", {}), b.get("code", {})
    if ca.get("fingerprint") != cb.get("fingerprint") or ca.get("dirty") != cb.get("dirty"):
        fa, fb = ca.get("files", {}), cb.get("files", {})
        out["code"] = {
            "commit": {"a": ca.get("git_commit"), "b": cb.get("git_commit")},
            "dirty": {"a": ca.get("dirty"), "b": cb.get("dirty")},
            "files_changed": sorted(k for k in set(fa) & set(fb) if fa[k] != fb[k]),
            "files_only_a": sorted(set(fa) - set(fb)),
            "files_only_b": sorted(set(fb) - set(fa)),
        }
    packages = _dict_diff(a.get("packages", {}), b.get("packages", {}))
    if packages:
        out["packages"] = packages
    da = {d.get("name"): d.get("sha256") for d in a.get("data", [])}
    db = {d.get("name"): d.get("sha256") for d in b.get("data", [])}
    if da != db:
        out["data"] = [{"name": n, "a": da.get(n), "b": db.get(n)}
                       for n in sorted(set(da) | set(db), key=str) if da.get(n) != db.get(n)]
    inputs = _inputs_diff(a.get("inputs", []), b.get("inputs", []))
    if inputs:
        out["inputs"] = inputs
    return out


def _inputs_diff(ia: Sequence[Mapping[str, Any]], ib: Sequence[Mapping[str, Any]]
                 ) -> list[dict[str, Any]]:
    by_a = {e["path"]: e for e in ia}
    by_b = {e["path"]: e for e in ib}
    out = []
    for path in list(by_a) + [p for p in by_b if p not in by_a]:
        ea, eb = by_a.get(path), by_b.get(path)
        if ea is None or eb is None:
            out.append({"path": path, "only_in": "b" if ea is None else "a"})
            continue
        if ea.get("sha256") == eb.get("sha256") and ea.get("id") == eb.get("id"):
            continue
        item: dict[str, Any] = {"path": path, "sha256": {"a": ea.get("sha256"),
                                                         "b": eb.get("sha256")},
                                "id": {"a": ea.get("id"), "b": eb.get("id")}}
        out.append(item)
    return out


def diff_lines(diff: Mapping[str, Any], name_a: str, name_b: str) -> list[str]:
    """The diff as text: one section a differing part."""
    if diff["same_id"] and len(diff) == 3:
        return [f"same id {diff['a']}: same kind, params, seed, code, data and inputs"]
    lines = [f"a: {name_a}  id {diff['a']}", f"b: {name_b}  id {diff['b']}"]
    if "kind" in diff:
        lines.append(f"kind:     {diff['kind']['a']} -> {diff['kind']['b']}")
    for item in diff.get("params", []):
        lines.append(f"params:   {item['key']}: {_show(item['a'])} -> {_show(item['b'])}")
    if "seed" in diff:
        lines.append(f"seed:     {diff['seed']['a']} -> {diff['seed']['b']}")
    if "code" in diff:
        c = diff["code"]
        lines.append(f"code:     commit {str(c['commit']['a'])[:12]}"
                     f"{' (dirty)' if c['dirty']['a'] else ''} -> "
                     f"{str(c['commit']['b'])[:12]}{' (dirty)' if c['dirty']['b'] else ''}")
        for key, label in (("files_changed", "changed"), ("files_only_a", "only in a"),
                           ("files_only_b", "only in b")):
            if c[key]:
                lines.append(f"          {label}: {', '.join(c[key])}")
    for item in diff.get("packages", []):
        lines.append(f"package:  {item['key']}: {item['a']} -> {item['b']}")
    for item in diff.get("data", []):
        lines.append(f"data:     {item['name']}: sha256 {str(item['a'])[:12]} -> "
                     f"{str(item['b'])[:12]}")
    for item in diff.get("inputs", []):
        if "only_in" in item:
            lines.append(f"input:    {item['path']} only in {item['only_in']}")
            continue
        lines.append(f"input:    {item['path']}: sha256 {str(item['sha256']['a'])[:12]} -> "
                     f"{str(item['sha256']['b'])[:12]}, record {item['id']['a']} -> "
                     f"{item['id']['b']}")
    return lines
