"""``sharpness config-doc``: write the configuration reference (workflow/config/README.md)
from the JSON schema, or check that the committed file is up to date."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from sharpness.errors import ConfigError
from sharpness.io import atomic_write_text

SCHEMA = "workflow/config/config.schema.yaml"
README = "workflow/config/README.md"


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``config-doc`` subcommand."""
    parser = subparsers.add_parser(
        "config-doc", help="write the configuration reference (Markdown) from the config schema")
    parser.add_argument("--schema", default=SCHEMA, help=f"the JSON schema (default {SCHEMA})")
    parser.add_argument("--out", default=README, help=f"the Markdown file (default {README})")
    parser.add_argument("--check", action="store_true",
                        help="write nothing; exit 1 if --out differs from the schema's text or "
                             "a key has no description")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Write (or check) the reference; keys without a description are an error either way."""
    from sharpness.config.check import load_schema
    from sharpness.config.doc import render, undescribed

    schema = load_schema(args.schema)
    missing = undescribed(schema)
    if missing:
        raise ConfigError(f"{args.schema}: key(s) without a description: {', '.join(missing)}")
    text = render(schema)
    out = Path(args.out)
    if args.check:
        if not out.is_file() or out.read_text() != text:
            print(f"{out} is out of date: run `sharpness config-doc`", file=sys.stderr)
            return 1
        return 0
    atomic_write_text(out, text)
    print(f"wrote {out}")
    return 0
