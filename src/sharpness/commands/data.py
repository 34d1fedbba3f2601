"""``sharpness data``: prepare (resolve and verify) a data set, or list the registry."""

from __future__ import annotations

import argparse
import logging

from sharpness.data import DATASETS, get_spec, resolve
from sharpness.data.fetch import STAMP
from sharpness.io import atomic_write_json
from sharpness.runs.environment import now_iso
from sharpness.runs.provenance import file_sha256, write_artifact_provenance


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``data prepare`` and ``data list``."""
    parser = subparsers.add_parser("data", help="prepare or list data sets")
    sub = parser.add_subparsers(dest="action", required=True)
    prep = sub.add_parser("prepare", help="find a verified copy (local, mirror, download)")
    # only sets with a copy on disk (files or folders); a built stand-in has none to prepare
    prep.add_argument("name", choices=sorted(n for n, s in DATASETS.items()
                                             if s.files or s.required_dirs),
                      help="the data set (see `sharpness data list`)")
    prep.add_argument("--root", default="data",
                      help="folder holding data/<name>/ copies (default: data)")
    prep.add_argument("--mirror", default=None, help="folder with ready copies")
    prep.add_argument("--no-download", dest="download", action="store_false",
                      help="never download: fail unless a local or mirrored copy verifies")
    prep.add_argument("--user-path", default=None, help="folder of a user-provided set")
    prep.add_argument("--out", required=True, help="JSON record of the verified copy")
    prep.set_defaults(func=_prepare)
    lst = sub.add_parser("list", help="list the registry")
    lst.set_defaults(func=_list)


def _prepare(args: argparse.Namespace) -> int:
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(message)s")
    spec = get_spec(args.name)
    folder = resolve(args.name, args.root, mirror=args.mirror, download=args.download,
                     user_path=args.user_path)
    files = {f.path: file_sha256(folder / f.path) for f in spec.files
             if (folder / f.path).is_file()}
    atomic_write_json(args.out, {"name": spec.name, "title": spec.title, "folder": str(folder),
                                 "sha256": files, "verified_stamp": (folder / STAMP).exists(),
                                 "licence": spec.licence, "citation": spec.citation,
                                 "prepared": now_iso()})
    write_artifact_provenance(args.out, kind="data", params={"dataset": spec.name},
                              data=[{"name": spec.name, "sha256": files}])
    print(f"{spec.name}: verified copy in {folder}")
    return 0


def _list(args: argparse.Namespace) -> int:
    for spec in DATASETS.values():
        kind = "user-provided" if spec.user_provided else spec.source
        print(f"{spec.name:18s} {spec.title}  [{kind}; {spec.licence}]")
    return 0
