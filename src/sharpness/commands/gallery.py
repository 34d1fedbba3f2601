"""``sharpness gallery``: the README's pictures, copied small from a run's figures.

Reads ``docs/gallery/gallery.yaml`` (which figures, in order, and what to see in each), writes
``docs/gallery/<paper>_<id>.png`` (at most ``--width`` pixels wide, palette-quantised to stay
under ``--max-kb``) and ``docs/gallery/manifest.json`` (each picture's provenance id, commit,
date and evidence level), then refreshes the README's ``gallery`` block.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from sharpness.commands import add_command, add_flags
from sharpness.io import atomic_write_text


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``gallery`` subcommand."""
    parser = add_command(
        subparsers, "gallery", "copy the gallery's figures, small, into docs/gallery and "
        "refresh the README's gallery block")
    parser.add_argument("--figures", default="figures",
                        help="the figures folder of a run (default: figures)")
    parser.add_argument("--out", default="docs/gallery",
                        help="the gallery folder holding gallery.yaml (default: docs/gallery)")
    parser.add_argument("--width", type=int, default=1200,
                        help="largest width of a picture in pixels (default: 1200)")
    parser.add_argument("--max-kb", type=int, default=150,
                        help="largest size of a picture in KB (default: 150)")
    add_flags(parser, readme="the file whose gallery block is refreshed ('none': no file)")
    parser.add_argument("--profile", default=None,
                        help="the profile of the run that drew the figures (default: the "
                             "profile its claims ledger recorded, FIGURES/claims.json)")
    parser.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    from sharpness.readme.blocks import replace
    from sharpness.readme.gallery import build_gallery, gallery_block

    out = Path(args.out)
    manifest = build_gallery(Path(args.figures), out, width=args.width, limit_kb=args.max_kb,
                             profile=args.profile)
    for entry in manifest:
        print(f"{out / entry['file']}\t{entry['kb']} KB\tevidence "
              f"{entry['evidence_level']}\t{entry['provenance_id']}")
    if args.readme != "none":
        readme = Path(args.readme)
        atomic_write_text(readme, replace(readme.read_text(), "gallery", gallery_block(out)))
    return 0
