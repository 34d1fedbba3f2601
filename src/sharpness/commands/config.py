"""``sharpness config check FILE...``: check config files as plain data before Snakemake sees them;
``sharpness config doc``: write the configuration reference from the schema.

Snakemake evaluates the Python in a yte config file (``__use_yte__: true``) as it loads it,
before any code of this project runs, so a config from elsewhere is checked here first: each
file is read with a safe loader (:mod:`sharpness.config.plain`: no yte template, YAML tag or
repeated key, the key named), then the files are merged as the workflow merges them (over
``workflow/config/quick.yaml`` unless one is a whole profile) and the result is checked
against the schema and as the runs it expands to
(:func:`sharpness.jobs.check_workflow_config`). Nothing in a file runs.
``--plain`` checks files that are not workflow configs (a Snakemake profile's
``config.yaml``) for plain data only. ``doc`` writes ``workflow/config/README.md`` from the
schema (or, with ``--check``, says whether the committed file is current).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from sharpness.config.profiles import DEFAULT_PROFILE
from sharpness.errors import ConfigError
from sharpness.io import atomic_write_text

SCHEMA = "workflow/config/config.schema.yaml"
README = "workflow/config/README.md"


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``config`` subcommand and its ``check`` and ``doc``."""
    parser = subparsers.add_parser(
        "config", help="check config files as plain data, without running anything in them; "
                       "write the configuration reference")
    actions = parser.add_subparsers(dest="config_command", metavar="ACTION", required=True)
    check = actions.add_parser(
        "check", help="read config files with a safe loader (no yte templates, no YAML tags), "
                      "merge them as the workflow does and check them against the schema")
    check.add_argument("files", nargs="+", metavar="FILE",
                       help="config files, in the order given to snakemake --configfile")
    check.add_argument("--base", default=DEFAULT_PROFILE,
                       help=f"the profile the files are merged over (default {DEFAULT_PROFILE}; "
                            "'none' for none; a whole profile among FILE replaces it)")
    check.add_argument("--schema", default=SCHEMA, help=f"the JSON schema (default {SCHEMA})")
    check.add_argument("--plain", action="store_true",
                       help="check only that each file is plain data (for a Snakemake "
                            "profile's config.yaml, which is not a workflow config)")
    check.set_defaults(func=run_check)
    doc = actions.add_parser(
        "doc", help="write the configuration reference (Markdown) from the config schema")
    doc.add_argument("--schema", default=SCHEMA, help=f"the JSON schema (default {SCHEMA})")
    doc.add_argument("--out", default=README, help=f"the Markdown file (default {README})")
    doc.add_argument("--check", action="store_true",
                     help="write nothing; exit 1 if --out differs from the schema's text or a "
                          "key has no description")
    doc.set_defaults(func=run_doc)


def run_check(args: argparse.Namespace) -> int:
    """Read every file as plain data, then (unless ``--plain``) check their merge; a problem
    is a :class:`~sharpness.errors.ConfigError` naming the file or the key."""
    # lazy: jsonschema and the experiment modules; every `sharpness` start builds this parser
    from sharpness.config.plain import read_plain_config
    from sharpness.config.profiles import compose, is_whole_profile
    from sharpness.config.targets import refuse_misplaced
    from sharpness.jobs import check_workflow_config

    refuse_misplaced(["--configfile", *args.files])  # a figure given as a config file
    layers = [read_plain_config(name) for name in args.files]
    if args.plain:
        print(f"plain data: {', '.join(args.files)}")
        return 0
    base = None if args.base == "none" else read_plain_config(args.base)
    check_workflow_config(compose(layers, base), args.schema)
    merged = ("" if base is None or any(is_whole_profile(layer) for layer in layers)
              else f" merged over {args.base}")
    print(f"plain data, valid against {args.schema}{merged}: {', '.join(args.files)}")
    return 0


def run_doc(args: argparse.Namespace) -> int:
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
            print(f"{out} is out of date: run `sharpness config doc`", file=sys.stderr)
            return 1
        return 0
    atomic_write_text(out, text)
    print(f"wrote {out}")
    return 0
