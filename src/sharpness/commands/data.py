"""``sharpness data``: prepare (resolve and verify) a data set, list the registry, or carry
the data sets and pretrained weights a profile or plan needs to a machine without network
(``bundle`` there, ``unbundle`` here: :mod:`sharpness.data.bundle`)."""

from __future__ import annotations

import argparse
import logging
from dataclasses import replace
from pathlib import Path

from sharpness.data import DATASETS, get_spec, resolve
from sharpness.data.fetch import STAMP
from sharpness.io import atomic_write_json
from sharpness.runs.environment import now_iso
from sharpness.runs.provenance import file_sha256, write_artifact_provenance

PAPER = "workflow/config/paper.yaml"


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``data prepare``, ``list``, ``bundle`` and ``unbundle``."""
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
    _register_bundle(sub)


def _register_bundle(sub: argparse._SubParsersAction) -> None:
    """Add ``data bundle`` and ``data unbundle``."""
    pack = sub.add_parser(
        "bundle", help="one archive of the data sets and weights a profile or plan needs",
        description="Write one tar of every data set (verified copies) and pretrained weight "
        "file the runs of a profile (or of a plan's targets) read, with a manifest of each "
        "file's size and SHA-256, for `sharpness data unbundle` on a machine without network.")
    pack.add_argument("--out", required=True, help="the archive (.tar; .tar.gz compresses)")
    pack.add_argument("--configfile", action="append", default=[], metavar="FILE",
                      help=f"the profile (default: the plan's, else {PAPER})")
    pack.add_argument("--plan", default=None, metavar="PLAN.yaml",
                      help="only the runs of this plan's targets (`sharpness plan --out`)")
    pack.add_argument("--dataset", action="append", default=[], metavar="NAME",
                      help="a data set to add by name (alone: only these, no profile)")
    pack.add_argument("--root", default=None, help="the data root (default: config data.root)")
    pack.add_argument("--mirror", default=None, help="a folder with ready copies "
                                                     "(default: config data.mirror)")
    pack.add_argument("--no-download", dest="download", action="store_false",
                      help="never download: fail unless a local or mirrored copy verifies")
    pack.set_defaults(func=_bundle)
    unpack = sub.add_parser(
        "unbundle", help="unpack a data bundle here, every file checked first",
        description="Unpack a `sharpness data bundle` archive: data sets under --root, weight "
        "files into the torch hub cache; nothing is moved into place until every file matches "
        "the manifest and every data set its registry pins.")
    unpack.add_argument("archive", help="the bundle")
    unpack.add_argument("--root", default="data", help="the data root (default: data)")
    unpack.add_argument("--weights-dir", default=None,
                        help="where weight files go (default: $TORCH_HOME/hub/checkpoints)")
    unpack.add_argument("--max-gb", type=float, default=None,
                        help="the most it may unpack to, in GiB (default 64)")
    unpack.set_defaults(func=_unbundle)


def _bundle(args: argparse.Namespace) -> int:
    from sharpness.config.profiles import load_profile
    from sharpness.data.bundle import describe, write_bundle  # lazy: the library it runs
    from sharpness.planning.offline import Needs, needs_of, plan_targets, planned_jobs

    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(message)s")
    plan = Path(args.plan) if args.plan else None
    files = args.configfile or (plan_targets(plan)[0] if plan else [] if args.dataset
                                else [PAPER])
    needs = needs_of(planned_jobs(files, plan)) if files else Needs((), ())
    data = (load_profile(files, None).get("data") or {}) if files else {}
    datasets = [*needs.datasets, *args.dataset]
    manifest = write_bundle(
        Path(args.out), datasets, needs.weights, Path(args.root or data.get("root") or "data"),
        mirror=Path(m) if (m := args.mirror or data.get("mirror")) else None,
        download=args.download and bool(data.get("download", True)),
        user_paths={"imagenet": data["imagenet"]} if data.get("imagenet") else None)
    print(f"{args.out}: {describe(manifest)}; carry it to the machine and run `sharpness data "
          f"unbundle {args.out}` there")
    return 0


def _unbundle(args: argparse.Namespace) -> int:
    from sharpness.data.bundle import BUNDLE_LIMITS, describe, read_bundle  # lazy: library

    limits = BUNDLE_LIMITS if args.max_gb is None else \
        replace(BUNDLE_LIMITS, total_bytes=int(args.max_gb * 2**30))
    manifest = read_bundle(Path(args.archive), Path(args.root),
                           Path(args.weights_dir) if args.weights_dir else None, limits)
    print(f"{args.archive}: unpacked and verified: {describe(manifest)}; data under "
          f"{args.root}/")
    return 0


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
