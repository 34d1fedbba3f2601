"""The configuration reference (``workflow/config/README.md``) written from the JSON schema.

The schema is the one source: every key has a ``description`` (and a ``default`` where the
code has one). :func:`render` turns it into Markdown, one table per section and one per shared
definition (training settings, eos setting, ...), which ``sharpness config doc`` writes and
the test suite compares with the committed file. :func:`undescribed` lists the keys without a
description, so a new key cannot land undocumented.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

#: shared definitions documented once, in their own section (others are inlined)
SECTIONS = {
    "train": "Training settings",
    "eos_setting": "eos setting",
    "mf_item": "minorfirst figure settings",
    "lesam_optimizer_entry": "lesam optimizer entry",
    "lesam_overrides": "lesam overrides",
    "lesam_item": "lesam table or figure",
}
#: keywords whose ``properties`` are constraints on keys described elsewhere, not keys
CONSTRAINTS = ("if", "then", "else", "allOf", "anyOf", "not")

HEADER = """\
# Configuration reference

Written by `sharpness config doc` from `workflow/config/config.schema.yaml`; do not edit by
hand (the test suite checks that this file equals the command's output). Every setting of
`quick.yaml` (the default) and `paper.yaml` is a key below. Snakemake checks the whole
configuration while it plans (`snakemake -n` included): a NaN, an infinity, a negative seed,
an unknown key or optimizer, or a bad value stops it with the key and the reason, e.g.

    ConfigError: config key minorfirst.l1_maxmargin.h: nan is not a finite number

`<name>` in a key stands for a name you choose (a group, a setting, an optimizer). A default
is the value the code uses when the key is left out.
"""

#: the rules on names and bounds, under the header (the pattern is read from the schema)
NAMES = """\
## Names and bounds

A name you choose (every `<name>` key below, and each value of type [name](#names-and-bounds):
an optimizer label, a setting or group that another key refers to) becomes part of file
paths, job wildcards and command words, so it is data, never a path or code: 1 to 64 letters,
digits, `_` and `.`, starting with a letter or digit, without `..` (the pattern `{pattern}`).
A name that does not match stops the workflow while it plans, naming its key; so does a `/`, a
space, a shell character or a `-` (which separates the parts of a lesam run id).

Every count of work (epochs, steps, sizes, samples, points, seeds) has an upper bound, shown
as `<=` in the type and as "at most" in the description: generous, ten times the paper
profile's largest value or more, but finite, so that a typo cannot start a run that lasts
years.
"""


def _ref_name(node: dict[str, Any]) -> str | None:
    ref = node.get("$ref", "")
    return ref.rsplit("/", 1)[-1] if ref.startswith("#/$defs/") else None


def _anchor(name: str) -> str:
    return SECTIONS[name].lower().replace(" ", "-")


def type_text(node: dict[str, Any], defs: dict[str, Any]) -> str:
    """A short type: ``integer >= 0``, ``list of number``, ``one of: a, b``, a link to a
    documented definition."""
    name = _ref_name(node)
    if name in SECTIONS:
        return f"[{SECTIONS[name]}](#{_anchor(name)})"
    if name == "name":
        return "[name](#names-and-bounds)"
    if name is not None:
        return type_text({**defs[name], **{k: v for k, v in node.items() if k != "$ref"}}, defs)
    if "enum" in node:
        return "one of: " + ", ".join(json.dumps(v) if not isinstance(v, str) else v
                                      for v in node["enum"])
    if "oneOf" in node:
        return " or ".join(type_text(n, defs) for n in node["oneOf"])
    kinds = node.get("type", "any")
    kinds = [kinds] if isinstance(kinds, str) else list(kinds)
    text = " or ".join("list" if k == "array" else "mapping" if k == "object" else k
                       for k in kinds)
    if "array" in kinds and isinstance(node.get("items"), dict):
        inner = type_text(node["items"], defs)
        text = text.replace("list", f"list of ({inner})" if " " in inner else f"list of {inner}")
    for key, sign in (("minimum", ">="), ("exclusiveMinimum", ">"), ("maximum", "<="),
                      ("exclusiveMaximum", "<")):
        if key in node:
            text += f", {sign} {node[key]}"
    if "array" in kinds and "maxItems" in node and node["maxItems"] != node.get("minItems"):
        text += f", at most {node['maxItems']} items"
    if "object" in kinds and "maxProperties" in node:
        text += f", at most {node['maxProperties']} entries"
    return text


def _children(node: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    """The documented keys under ``node``: its properties, ``<name>`` for a mapping of named
    entries, ``[]`` for list items that are mappings."""
    yield from (node.get("properties") or {}).items()
    extra = node.get("additionalProperties")
    if isinstance(extra, dict) and (extra.get("properties") or _ref_name(extra) in SECTIONS):
        yield "<name>", extra
    items = node.get("items")
    if isinstance(items, dict) and items.get("properties"):
        yield "[]", items


def rows(node: dict[str, Any], defs: dict[str, Any], prefix: str = ""
         ) -> Iterator[tuple[str, str, str, str]]:
    """``(key, type, default, description)`` of every key under ``node``, depth first;
    documented definitions are linked, not expanded."""
    required = set(node.get("required", []))
    for key, child in _children(node):
        path = f"{prefix}[]" if key == "[]" else (f"{prefix}.{key}" if prefix else key)
        default = json.dumps(child["default"]) if "default" in child else ""
        description = child.get("description", "")
        if key in ("<name>", "[]") and not description:
            description = node.get("description", "")
        if _ref_name(child) in SECTIONS and child.get("required"):
            description += f" (requires {', '.join(child['required'])})"
        kind = type_text(child, defs) + (", required" if key in required else "")
        yield path, kind, default, " ".join(description.split())
        ref = _ref_name(child)
        if ref in SECTIONS:  # linked; only keys added beside the reference are listed here
            yield from rows({"properties": child.get("properties", {})}, defs, path)
        else:
            yield from rows({**defs.get(ref, {}), **child} if ref else child, defs, path)


def _table(lines: list[str], entries: Iterator[tuple[str, str, str, str]]) -> None:
    lines += ["| key | type | default | description |", "|---|---|---|---|"]
    for key, kind, default, description in entries:
        cells = [f"`{key}`", kind, f"`{default}`" if default else "", description]
        lines.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    lines.append("")


def render(schema: dict[str, Any]) -> str:
    """The Markdown reference of ``schema``."""
    defs = schema.get("$defs", {})
    lines = [HEADER]
    if "name" in defs:
        lines.append(NAMES.format(pattern=defs["name"]["pattern"]))
    for section, node in schema["properties"].items():
        lines += [f"## `{section}`", "", " ".join(node.get("description", "").split()), ""]
        required = ", ".join(f"`{k}`" for k in schema.get("required", []))
        if section in schema.get("required", []):
            lines += [f"Required (the required top-level keys: {required}).", ""]
        entries = list(rows(node, defs, section))
        if entries:
            _table(lines, iter(entries))
        else:
            lines += [f"Type: {type_text(node, defs)}.", ""]
    lines += ["## Shared definitions", ""]
    for name, title in SECTIONS.items():
        node = defs[name]
        target = defs.get(_ref_name(node), {}) if _ref_name(node) else {}
        lines += [f"### {title}", "", " ".join(node.get("description", "").split()), ""]
        if _ref_name(node) in SECTIONS:
            lines += [f"The keys of [{SECTIONS[_ref_name(node)]}](#{_anchor(_ref_name(node))}).",
                      ""]
            continue
        entries = list(rows({**target, **node}, defs))
        for alt in node.get("oneOf", []):
            entries += list(rows(alt, defs))
        if entries:
            _table(lines, iter(entries))
    return "\n".join(lines).rstrip() + "\n"


def properties(node: Any, path: str = "") -> Iterator[tuple[str, Any]]:
    """Every ``(path, subschema)`` under a ``properties`` mapping anywhere in the schema
    (``$defs`` included), except constraint fragments (``if``/``then``/``allOf``...)."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key in CONSTRAINTS:
                continue
            if key == "properties" and isinstance(value, dict):
                for name, child in value.items():
                    yield f"{path}.{name}" if path else name, child
                    yield from properties(child, f"{path}.{name}" if path else name)
            else:
                step = path if key in ("items", "additionalProperties", "oneOf") else (
                    f"{path}.{key}" if path else key)
                yield from properties(value, step)
    elif isinstance(node, list):
        for item in node:
            yield from properties(item, path)


def undescribed(schema: dict[str, Any]) -> list[str]:
    """Keys of ``schema`` without a ``description``."""
    return [path for path, child in properties(schema)
            if not (isinstance(child, dict) and child.get("description"))]
