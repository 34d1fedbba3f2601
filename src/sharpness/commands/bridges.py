"""``sharpness bridges ...``: the figures that bridge the papers (LE-SAM on diagonal nets, SAM at EoS).

::

    sharpness bridges lesam-diagonal run  --config-file FILE --out RUN_DIR
    sharpness bridges lesam-diagonal plot --run RUN_DIR --out figures/bridges/lesam_diagonal.pdf
    sharpness bridges sam-eos run  --config-file FILE --data-root DIR --out RUN_DIR [--threads N]
    sharpness bridges sam-eos plot --run RUN_DIR --out figures/bridges/sam_eos.pdf

``FILE`` is the run's config file the workflow's plan writes (its ``bridges.<bridge>`` section,
:mod:`sharpness.bridges.jobs`); the run records its path and SHA-256 in its provenance
(``config_file``). ``--params JSON`` gives the same settings inline, for use by hand (the
workflow never uses it); with neither, the defaults run. ``--data-root`` (sam-eos) is the data
folder, as every data-reading job spells it; it replaces the settings' ``data_root``.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from sharpness.commands import add_flags
from sharpness.io import atomic_save_npz, atomic_write_json
from sharpness.jobs.files import job_settings
from sharpness.runs.lock import run_lock
from sharpness.runs.run_record import RunRecord
from sharpness.runs.seal import read_verified


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``bridges lesam-diagonal run|plot`` and ``bridges sam-eos run|plot``."""
    parser = subparsers.add_parser("bridges", help="bridges between the papers")
    sub = parser.add_subparsers(dest="figure", required=True)
    for name, run, plot in (("lesam-diagonal", _lesam_run, _lesam_plot),
                            ("sam-eos", _eos_run, _eos_plot)):
        fig_p = sub.add_parser(name, help=f"figure bridges/{name.replace('-', '_')}")
        act = fig_p.add_subparsers(dest="action", required=True)
        run_p = act.add_parser("run", help="compute and write arrays.npz + summary.json")
        given = run_p.add_mutually_exclusive_group()
        given.add_argument("--config-file", metavar="PATH",
                           help="the run's config file as the workflow writes it (its path "
                                "and SHA-256 go into the run's provenance)")
        given.add_argument("--params", default="{}", help="JSON object of settings")
        if name == "sam-eos":
            run_p.add_argument("--data-root", default=None,
                               help="data folder (config data.root); replaces data_root")
        add_flags(run_p, out="run directory", threads=True)
        run_p.set_defaults(func=run)
        plot_p = act.add_parser("plot", help="draw the figure from a run directory")
        plot_p.add_argument("--run", required=True, help="run directory written by `run`")
        plot_p.add_argument("--out", required=True, help="figure path (.pdf; .png too)")
        plot_p.set_defaults(func=plot)


def _arrays(path: Path) -> dict[str, np.ndarray]:
    with np.load(path, allow_pickle=False) as z:
        return {k: z[k] for k in z.files}


def _load(run: Path) -> tuple[dict[str, np.ndarray], dict, dict]:
    """The run's arrays, summary and settings, each checked against what the run recorded
    (:func:`sharpness.runs.seal.read_verified`) before a number is drawn from it."""
    what = "bridges plot"
    params = read_verified(run / "provenance.json", what=what)["params"]
    arrays = read_verified(run / "arrays.npz", _arrays, what=what)
    summary = read_verified(run / "summary.json", what=what)
    return arrays, summary, params


def _settings(args: argparse.Namespace) -> tuple[dict, dict[str, str] | None]:
    """A run's settings and the file they came from (path and SHA-256; ``None`` for
    ``--params``)."""
    # a Namespace made in code may lack config_file
    return job_settings(getattr(args, "config_file", None), args.params)


def _lesam_run(args: argparse.Namespace) -> int:
    from sharpness.bridges.lesam_diagonal import LesamDiagonalParams, compute

    raw, source = _settings(args)
    params = LesamDiagonalParams.from_dict(raw)
    out = Path(args.out)
    with run_lock(out, what="bridges run"), \
            RunRecord(out, params=params.to_dict(), seed=None) as record:
        if source is not None:  # the file the job read its settings from
            record.update(config_file=source)
        arrays, summary = compute(params)
        atomic_save_npz(out / "arrays.npz", **arrays)
        atomic_write_json(out / "summary.json", summary)
        record.update(maps={k: v["counts"] for k, v in summary["maps"].items()})
        record.outputs("arrays.npz", "summary.json")  # the plot job checks them
    return 0


def _lesam_plot(args: argparse.Namespace) -> int:
    from sharpness.bridges.lesam_diagonal import LesamDiagonalParams
    from sharpness.bridges.lesam_diagonal_plot import plot

    run = Path(args.run)
    arrays, summary, params = _load(run)
    plot(arrays, summary, LesamDiagonalParams.from_dict(params), args.out, inputs=[run])
    return 0


def _eos_run(args: argparse.Namespace) -> int:
    from sharpness.bridges.sam_eos import SamEosParams, run_sweep

    raw, source = _settings(args)
    if getattr(args, "data_root", None) is not None:
        raw = {**raw, "data_root": args.data_root}
    params = SamEosParams.from_dict(raw)
    with run_lock(args.out, what="bridges run"):
        run_sweep(params, Path(args.out), threads=args.threads, config_file=source)
    return 0


def _eos_plot(args: argparse.Namespace) -> int:
    from sharpness.bridges.sam_eos_plot import plot

    plot(Path(args.run), args.out)
    return 0
