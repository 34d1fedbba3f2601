"""Config files read as plain data: YAML's safe constructors, no tag, no template, bounded aliases.

Snakemake reads a ``--configfile`` (and a profile's ``config.yaml``) through yte, which runs
the Python in a file that starts with ``__use_yte__: true``: ``__definitions__`` and
``__variables__`` execute statements, and every key or value starting with ``?`` is an
expression (``?if``, ``?for``, ``?<expr>``). A config is data, so this module reads it with
PyYAML's safe loader and refuses, naming the file and the key:

* a yte construct (:data:`TEMPLATE_KEYS`, a key or a text value starting with ``?``), whether
  or not the file turns yte on: such a file means code, and another tool may run it;
* any explicit YAML tag (``!!python/object``, ``!!binary``, ``!custom``...): a config holds
  mappings, lists, text, numbers, booleans and null, nothing a tag would make;
* a file whose aliases (``*name``) expand to more than :data:`MAX_NODES` values: a few lines
  of aliases can stand for billions ("billion laughs"), and a merged config is copied and
  walked many times (the paper profile's aliases, a shared list of sources, are fine);
* a key given twice in one mapping, which YAML would resolve silently to the last one;
* a file larger than :data:`MAX_BYTES`, nested deeper than :data:`MAX_DEPTH` levels (the
  parser recurses once a level: 400 levels ended in a ``RecursionError``), or holding an
  integer of more than 4,300 digits (Python refuses to convert it): each is the command's own
  one-line error, never a traceback.

Nothing in a file is executed or imported while it is read. ``sharpness config check`` and
every reader of config files (the Snakefile's re-read of ``--configfile``, ``sharpness cost``
and ``sharpness plan``) go through :func:`read_plain_config`.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from sharpness.errors import ConfigError, key_path

#: keys with which yte runs code (``__use_yte__`` turns yte on for the whole file)
TEMPLATE_KEYS = ("__use_yte__", "__definitions__", "__variables__")
#: values a config may hold once its aliases are expanded (the paper profile holds ~5,000)
MAX_NODES = 1_000_000
#: the deepest a config may nest (the schema's deepest key is a handful of levels down)
MAX_DEPTH = 64
#: the largest config file read (the paper profile is about 30 KB)
MAX_BYTES = 16 * 2**20
#: what every refusal of a template ends with
CHECK_HINT = ("Check a config from elsewhere with `sharpness config check FILE` before "
              "passing it to snakemake.")


class _Refused(Exception):
    """What the loader refused, and where (a key path), before the file name is known."""

    def __init__(self, path: list[Any], reason: str) -> None:
        super().__init__(reason)
        self.path, self.reason = path, reason


class _PlainLoader(yaml.SafeLoader):
    """The safe loader, refusing tags and repeated keys with the key path."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self.paths: list[list[Any]] = []

    def compose_node(self, parent: Any, index: Any) -> Any:
        base = self.paths[-1] if self.paths else []
        if parent is None:
            path: list[Any] = []
        elif isinstance(parent, yaml.SequenceNode):
            path = [*base, index]
        elif isinstance(index, yaml.ScalarNode):
            path = [*base, index.value]
        else:
            path = [*base, "(a key)"]
        if len(self.paths) >= MAX_DEPTH:
            raise _Refused(path[:8] + ["..."], f"nested deeper than {MAX_DEPTH} levels: not a "
                                               "config (refused before the parser recursed)")
        event = self.peek_event()
        tag = getattr(event, "tag", None)
        if tag is not None:
            raise _Refused(path, f"the YAML tag {tag} is not allowed: a config holds only "
                                 "mappings, lists, text, numbers, booleans and null")
        self.paths.append(path)
        try:
            return super().compose_node(parent, index)
        finally:
            self.paths.pop()

    def construct_mapping(self, node: Any, deep: bool = False) -> Any:
        seen: set[Any] = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=True)
            if isinstance(key, list | dict):
                raise _Refused([], f"a key that is a {type(key).__name__} is not allowed "
                                   f"(line {key_node.start_mark.line + 1})")
            if key in seen:
                raise _Refused([key], f"the key {key!r} is given twice in one mapping "
                                      f"(line {key_node.start_mark.line + 1})")
            seen.add(key)
        return super().construct_mapping(node, deep=deep)


def template_construct(value: Any, path: tuple[Any, ...] = ()) -> tuple[list[Any], str] | None:
    """The first yte construct inside ``value`` as ``(key path, what)``; None when there is
    none. A yte key, or a key or text value starting with ``?``, is one."""
    if isinstance(value, Mapping):
        for key, item in value.items():
            if key in TEMPLATE_KEYS or (isinstance(key, str) and key.startswith("?")):
                return [*path, key], f"the key {key!r} is a yte template (code), not data"
            found = template_construct(item, (*path, key))
            if found is not None:
                return found
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found = template_construct(item, (*path, index))
            if found is not None:
                return found
    elif isinstance(value, str) and value.startswith("?"):
        return list(path), f"the value {value[:60]!r} is a yte expression (code), not data"
    return None


def _expanded_size(value: Any, limit: int) -> int:
    """How many values ``value`` holds with its aliases expanded, counting stopped past
    ``limit`` (so a billion laughs costs ``limit`` steps)."""
    count, stack = 0, [value]
    while stack and count <= limit:
        item = stack.pop()
        count += 1
        if isinstance(item, Mapping):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return count


def _parse(text: str, source: str) -> Any:
    """``text`` through the plain loader (no template check yet)."""
    loader = _PlainLoader(text)
    try:
        data = loader.get_single_data()
        if _expanded_size(data, MAX_NODES) > MAX_NODES:
            raise ConfigError(f"config file {source!r} holds more than {MAX_NODES:,} values "
                              "once its aliases (*name) are expanded: not a config")
        return data
    except _Refused as refused:
        raise ConfigError(f"config file {source!r}, key {key_path(refused.path)}: "
                          f"{refused.reason}") from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"config file {source!r} is not valid YAML: {exc}") from None
    except RecursionError:
        raise ConfigError(f"config file {source!r} nests too deeply to read: not a "
                          "config") from None
    except ValueError as exc:  # an integer past Python's 4,300-digit conversion limit
        raise ConfigError(f"config file {source!r} holds a value that cannot be read: "
                          f"{str(exc).split(';')[0]}") from None
    finally:
        loader.dispose()


def load_plain(text: str, source: str) -> Any:
    """``text`` (YAML or JSON) as plain data; :class:`ConfigError` naming ``source`` and the
    key at a tag, an alias, a repeated key, a yte construct or a YAML syntax error."""
    data = _parse(text, source)
    refuse_templates(data, f"config file {source!r}")
    return data


def refuse_templates(data: Any, where: str, loaded_by_snakemake: bool = False) -> None:
    """Raise :class:`ConfigError` naming ``where`` and the key of the first yte construct in
    ``data``. ``loaded_by_snakemake``: Snakemake has read the file already, so the message
    says whether yte ran it then (it does when the file sets ``__use_yte__: true``)."""
    found = template_construct(data)
    if found is None:
        return
    path, what = found
    message = f"{where}, key {key_path(path)}: {what}; config files are read as plain data"
    if loaded_by_snakemake:
        ran = isinstance(data, Mapping) and data.get("__use_yte__") is True
        message += (". Snakemake evaluates a file with `__use_yte__: true` itself when it "
                    "loads it, before this workflow's code runs: its code has run once; the "
                    "workflow stops here and runs nothing of it again" if ran else
                    ". Snakemake did not evaluate it (no `__use_yte__: true`); the workflow "
                    "stops here")
    raise ConfigError(f"{message}. {CHECK_HINT}")


def read_plain_config(name: str | Path, loaded_by_snakemake: bool = False) -> dict[str, Any]:
    """One config file as a mapping of plain data (see the module docstring); a missing file,
    another YAML type or anything refused is a :class:`ConfigError` naming the file."""
    path = Path(name)
    if not path.is_file():
        raise ConfigError(f"config file {str(name)!r} not found")
    if path.stat().st_size > MAX_BYTES:
        raise ConfigError(f"config file {str(name)!r} is {path.stat().st_size:,} bytes, more "
                          f"than the {MAX_BYTES:,} a config may have: not read")
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(f"config file {str(name)!r} is not UTF-8 text: {exc}") from None
    loaded = _parse(text, str(name))
    refuse_templates(loaded, f"config file {str(name)!r}", loaded_by_snakemake)
    loaded = {} if loaded is None else loaded
    if not isinstance(loaded, dict):
        raise ConfigError(f"config file {str(name)!r} is not a mapping")
    return loaded
