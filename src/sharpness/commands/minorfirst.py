"""``sharpness minorfirst run|plot ID``: compute a minorfirst figure's numbers, then draw them.

``minorfirst run ID --config-file FILE`` reads the figure's config section from the file the
workflow's plan wrote for the job (:mod:`sharpness.minorfirst.jobs`) and records the file's
path and SHA-256 in the run's ``provenance.json`` (``config_file``); by hand, ``--params JSON``
gives the section instead (neither: the figure's defaults).
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from sharpness.io import atomic_save_npz, atomic_write_json
from sharpness.runs.lock import run_lock
from sharpness.runs.run_record import RunRecord
from sharpness.runs.seal import read_verified


def _ids() -> list[str]:
    from sharpness.minorfirst.compute import COMPUTE

    return [*COMPUTE, "cnn_synthetic"]


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``minorfirst run`` and ``minorfirst plot``."""
    parser = subparsers.add_parser("minorfirst", help="minorfirst paper: diagonal-network figures")
    sub = parser.add_subparsers(dest="action", required=True)
    run_p = sub.add_parser("run", help="compute one figure's numbers into a run directory")
    run_p.add_argument("figure", help="figure id, e.g. l2_regimes")
    given = run_p.add_mutually_exclusive_group()
    given.add_argument("--config-file", metavar="FILE",
                       help="the job's config file (JSON: the figure's config section), as the "
                            "workflow's plan wrote it")
    given.add_argument("--params", default="{}",
                       help="JSON object: the figure's config section (by hand)")
    run_p.add_argument("--out", required=True, help="run directory (data.npz, summary.json)")
    run_p.add_argument("--threads", type=int, default=1, help="torch threads (cnn_synthetic)")
    run_p.set_defaults(func=_run)
    plot_p = sub.add_parser("plot", help="draw one figure from its run directory")
    plot_p.add_argument("figure", help="figure id, e.g. l2_regimes")
    plot_p.add_argument("--run", required=True, help="the run directory `minorfirst run` wrote")
    plot_p.add_argument("--out", required=True, help="figure path (.pdf; .png, .csv beside)")
    plot_p.set_defaults(func=_plot)


def _run(args: argparse.Namespace) -> int:
    if args.figure not in _ids():
        raise SystemExit(f"unknown minorfirst figure {args.figure!r}; known: {_ids()}")
    from sharpness.jobs.files import job_settings

    params, source = job_settings(args.config_file, args.params, "a JSON object")
    out = Path(args.out)
    with run_lock(out, what="minorfirst run"), \
            RunRecord(out, params=params, seed=params.get("seed")) as record:
        if source is not None:  # the file the job read its settings from
            record.update(config_file=source)
        if args.figure == "cnn_synthetic":
            from sharpness.minorfirst.cnn import compute_cnn_synthetic

            arrays, summary = compute_cnn_synthetic(params, threads=args.threads)
        else:
            from sharpness.minorfirst.compute import COMPUTE

            arrays, summary = COMPUTE[args.figure](params)
        atomic_save_npz(out / "data.npz", **{k: np.asarray(v) for k, v in arrays.items()})
        atomic_write_json(out / "summary.json", summary)
        record.update(summary=summary)
        record.outputs("data.npz", "summary.json")  # the plot job checks them against these
    return 0


def _arrays(path: Path) -> dict[str, np.ndarray]:
    with np.load(path, allow_pickle=False) as f:
        return {k: f[k] for k in f.files}


def _plot(args: argparse.Namespace) -> int:
    from sharpness.minorfirst.plots import PLOTS

    run = Path(args.run)
    what = f"minorfirst plot {args.figure}"
    # the run's record (its settings: the caption states them) and its files, each checked
    # against what the run recorded before a number is drawn from it
    params = read_verified(run / "provenance.json", what=what)["params"]
    arrays = read_verified(run / "data.npz", _arrays, what=what)
    summary = read_verified(run / "summary.json", what=what)
    PLOTS[args.figure](arrays, summary, params, args.out, inputs=[run])
    return 0
