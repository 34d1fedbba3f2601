"""The workflow configuration checked key by key before anything runs, with errors that name
the key.

:func:`check_config` checks the config as data, knowing no paper; the Snakefile and ``sharpness
config check`` call it through :func:`sharpness.jobs.check_workflow_config`, which then has
each paper check what its section expands to (so ``snakemake -n`` refuses a bad file too). It
raises :class:`~sharpness.errors.ConfigError` naming every problem it finds, each as ``config
key <dotted.path>: <reason>`` (every non-finite number and every schema error at once, an
unknown key with the nearest known one: "did you mean"):

0. (:func:`check_command_line`) no ``--config`` value that Snakemake read as text although
   it was meant as a number, a boolean or null: Snakemake parses a nested ``--config``
   value (``key={a: {b: 1}}``) with YAML's base loader, every leaf a string, so the error
   says how to pass it instead (a ``--configfile`` overlay);
1. every number is finite (YAML's ``.nan`` and ``.inf`` pass a JSON schema's ``minimum``);
2. the JSON schema (``workflow/config/config.schema.yaml``): types, ranges (with upper
   bounds where a larger value would run for years), known keys and optimizers, seeds
   non-negative, and every name you choose (a mapping key or entry that becomes a path
   component, a job wildcard or a command word) matching the schema's ``$defs/name``
   pattern, through ``jsonschema``.

What the sections expand to needs a file that passed these, and is checked by each paper's
plan module (:func:`sharpness.jobs.check_sections`: :mod:`sharpness.lesam.checks` and
:func:`sharpness.eos.config.check_settings`): every lesam run is built (base + group
overrides + optimizer entry + seed; overrides may not set what the group sets: the optimizer,
its hyper-parameters, the seed, ``init_from``; named optimizer entries and ``init_from`` must
exist) and validated as the engine will, every eos setting is merged with ``eos.defaults``
(each ablation variant checked against the schema's eos setting, each setting with learning
rates, each figure naming settings that exist), and the paper profile's lesam settings must
name their source.

Pure Python (no torch), so planning stays fast; this module imports nothing above the config.
The hyper-parameters are resolved once, by the lesam expansion
(:func:`sharpness.lesam.experiments.resolved_hparams`); the job files hold the resolved
values, and a run started from its signed job file validates it again only to guard what its
command line added (:func:`sharpness.train.validate_config` with ``resolved=True``).
The schema's ``default`` values document the code's defaults; they are not written into the
config (that would change the settings, and so the cache keys, of every run).
"""

from __future__ import annotations

import difflib
import re
from pathlib import Path
from typing import Any

import yaml
from jsonschema import Draft202012Validator
from jsonschema.exceptions import best_match

from sharpness.errors import ConfigError, key_path, nonfinite
from sharpness.optim.spec import optimizer_specs


def load_schema(path: str | Path) -> dict[str, Any]:
    """The schema file (YAML or JSON) as a dict (libyaml's loader when present: planning
    loads it on every invocation), with ``$defs/optimizer`` naming every optimizer the
    optimizer modules declare: the registry is the one list, so a new optimizer is its
    module and its config entry, never an edit here or in the schema."""
    schema = yaml.load(Path(path).read_text(),
                       Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    optimizer = schema.get("$defs", {}).get("optimizer")
    if optimizer is not None:
        optimizer["enum"] = sorted(optimizer_specs())
    return schema


def _validator(schema: dict[str, Any], ref: str | None = None) -> Any:
    if ref is not None:
        schema = {"$ref": ref, "$defs": schema["$defs"]}
    return Draft202012Validator(schema)


def schema_error(instance: Any, schema: dict[str, Any], ref: str | None = None
                 ) -> tuple[list[Any], str] | None:
    """The most relevant error of ``instance`` against ``schema`` (or its part ``ref``, e.g.
    ``"#/$defs/train"``) as ``(path inside instance, message)``; None when it is valid."""
    error = best_match(_validator(schema, ref).iter_errors(instance))
    return None if error is None else (list(error.absolute_path), _explain(error, schema))


def schema_errors(instance: Any, schema: dict[str, Any], ref: str | None = None
                  ) -> list[tuple[list[Any], str]]:
    """Every error of ``instance`` against ``schema``, the most relevant first (the one
    :func:`schema_error` gives), then the others by key, each the most relevant of its
    branch: a person fixes them all in one edit instead of one per run."""
    errors = list(_validator(schema, ref).iter_errors(instance))
    if not errors:
        return []
    found = [best_match([e]) for e in errors]
    first = best_match(errors)
    ordered = [first] + sorted((e for e in found if e is not first),
                               key=lambda e: key_path(list(e.absolute_path)))
    out: list[tuple[list[Any], str]] = []
    for error in ordered:
        item = (list(error.absolute_path), _explain(error, schema))
        if item not in out:
            out.append(item)
    return out


def _known_keys(node: Any, schema: dict[str, Any], depth: int = 0) -> set[str]:
    """The property names a subschema allows, following ``$ref`` and ``allOf``/``anyOf``/
    ``oneOf`` (what ``unevaluatedProperties`` sees), for the "did you mean" of a typo."""
    if not isinstance(node, dict) or depth > 8:
        return set()
    keys = set(node.get("properties", {}))
    ref = node.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        keys |= _known_keys(schema.get("$defs", {}).get(ref.rsplit("/", 1)[1]), schema,
                            depth + 1)
    for part in ("allOf", "anyOf", "oneOf"):
        for sub in node.get(part, []):
            keys |= _known_keys(sub, schema, depth + 1)
    return keys


def did_you_mean(word: str, known: Any) -> str:
    """``"; did you mean 'steps'?"`` for the known name nearest ``word`` (difflib's ratio at
    least 0.6), else ``"; known: a, b, ..."``; empty when nothing is known."""
    names = sorted(map(str, known))
    close = difflib.get_close_matches(word, names, n=1, cutoff=0.6)
    if close:
        return f"; did you mean {close[0]!r}?"
    return f"; known: {', '.join(names)}" if names else ""


#: why a name must match ``$defs/name`` (the pattern itself is defined once, in the schema)
NAME_RULE = ("a name becomes part of file paths, job wildcards and command words, so it is "
             "1 to 64 letters, digits, '_' or '.', starts with a letter or digit and holds no "
             "'..' (no '/', space, shell character or '-')")


def name_pattern(schema: dict[str, Any]) -> str:
    """The pattern every name in the config matches (the schema's ``$defs/name``)."""
    return schema["$defs"]["name"]["pattern"]


def _explain(error: Any, schema: dict[str, Any]) -> str:
    """The message of a schema error; a name that does not match ``$defs/name`` says so in
    words (a key of a mapping, from ``propertyNames``, is named as a key)."""
    names = schema.get("$defs", {}).get("name", {}).get("pattern")
    if error.validator == "pattern" and names is not None and error.validator_value == names:
        what = "the key" if "propertyNames" in error.schema_path else "the name"
        return f"{what} {error.instance!r} is not allowed: {NAME_RULE}"
    if error.validator in ("additionalProperties", "unevaluatedProperties") and isinstance(
            error.instance, dict):
        known = _known_keys(error.schema, schema)
        patterns = list(error.schema.get("patternProperties", {}))
        unknown = [k for k in error.instance if k not in known
                   and not any(re.search(p, str(k)) for p in patterns)]
        if unknown and known:
            return error.message + "".join(did_you_mean(str(k), known) for k in unknown[:1])
    if error.validator == "enum" and isinstance(error.instance, str):
        return error.message + did_you_mean(error.instance, error.validator_value).split(
            "; known")[0]
    return error.message


def check_schema(instance: Any, schema: dict[str, Any], where: str = "",
                 ref: str | None = None) -> None:
    """Raise :class:`ConfigError` naming the key (under ``where``) if ``instance`` does not
    match ``schema`` (or its part ``ref``)."""
    problems = [f"config key {key_path([*([where] if where else []), *path])}: {message}"
                for path, message in schema_errors(instance, schema, ref)]
    raise_all(problems)


def raise_all(problems: list[str]) -> None:
    """Raise one :class:`ConfigError` holding every problem: the first on the first line (as
    a single problem reads), the others below it."""
    if len(problems) == 1:
        raise ConfigError(problems[0])
    if problems:
        raise ConfigError(problems[0] + f"\n... and {len(problems) - 1} more problem(s) in "
                          "the config:\n" + "\n".join(f"  {p}" for p in problems[1:]))


def _typed(value: Any) -> Any:
    """A value Snakemake read as text (``yaml.BaseLoader``), read again as YAML reads it."""
    if isinstance(value, dict):
        return {key: _typed(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_typed(item) for item in value]
    if isinstance(value, str):
        try:
            return yaml.safe_load(value) if value.strip() else value
        except yaml.YAMLError:
            return value
    return value


def _retyped(value: Any, typed: Any, path: list[Any]) -> list[Any] | None:
    """The path of the first leaf whose text reads as something else in YAML (``'3'`` -> 3)."""
    if isinstance(value, dict):
        items: Any = value.items()
    elif isinstance(value, list):
        items = enumerate(value)
    else:
        return None if value == typed and type(value) is type(typed) else path
    for key, item in items:
        found = _retyped(item, typed[key], [*path, key])
        if found is not None:
            return found
    return None


def check_command_line(given: dict[str, Any]) -> None:
    """Refuse a ``--config KEY=VALUE`` whose VALUE is a mapping or a list holding a number, a
    boolean or null: Snakemake reads everything inside such a value as text (``3`` becomes
    ``'3'``), so the schema would blame the value, not the way it was passed. The error
    names the key and prints the ``--configfile`` overlay that says the same thing. A nested
    value of plain text (``data={imagenet: /data/imagenet}``) means what it says and passes;
    ``--config a.b=1`` never reaches the workflow (Snakemake refuses a dotted key itself)."""
    for key, value in given.items():
        if not isinstance(value, dict | list):
            continue
        typed = _typed(value)
        path = _retyped(value, typed, [key])
        if path is None:
            continue
        leaf, text = typed, value
        for part in path[1:]:
            leaf, text = leaf[part], text[part]
        overlay = yaml.safe_dump({key: typed}, sort_keys=False, default_flow_style=False)
        raise ConfigError(
            f"config key {key_path(path)}: given on the command line as --config "
            f"{key}=..., where Snakemake reads every value inside a nested mapping or list as "
            f"text (here {text!r}, not {leaf!r}). Pass nested settings in a YAML file "
            "instead, merged over the profile: put\n\n"
            + "".join(f"    {line}\n" for line in overlay.splitlines())
            + "\nin a file, e.g. my.yaml, and run `snakemake TARGETS ... --configfile my.yaml` "
            "(targets before --configfile)")


def check_config(config: dict[str, Any], schema: dict[str, Any] | str | Path) -> None:
    """Check the workflow config key by key (see the module docstring); ``ConfigError``
    naming every key with a problem. What the sections expand to is checked after this, by
    :func:`sharpness.jobs.check_workflow_config`."""
    if not isinstance(schema, dict):
        schema = load_schema(schema)
    problems = [f"config key {key_path(path)}: {number} is not a finite number"
                for path, number in nonfinite(config)]
    problems += [f"config key {key_path(path)}: {message}"
                 for path, message in schema_errors(config, schema)]
    raise_all(problems)
