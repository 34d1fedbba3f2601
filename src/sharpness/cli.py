"""The ``sharpness`` command: one entry point whose subcommands the workflow rules call.

Subcommands live in :mod:`sharpness.commands`; every module there that defines
``register(subparsers)`` is picked up, so a new experiment adds a module and touches nothing
else.
"""

from __future__ import annotations

import argparse
import importlib
import os
import pkgutil
import signal
import sys
from collections.abc import Sequence

import sharpness
import sharpness.commands
from sharpness.config.targets import subfolder_hint
from sharpness.errors import SharpnessError
from sharpness.evidence.level import LEVELS, use_profile
from sharpness.runs.provenance import discard_artifact_record
from sharpness.runs.state import install_signal_handlers


def build_parser() -> argparse.ArgumentParser:
    """The argument parser with every discovered subcommand."""
    parser = argparse.ArgumentParser(
        prog="sharpness",
        description="Replication pipeline for three papers on sharpness (minorfirst, lesam, "
                    "eos). The workflow rules call these subcommands; so can you.")
    parser.add_argument("--version", action="version", version=sharpness.__version__)
    parser.add_argument("--profile", dest="drawn_under", choices=sorted(LEVELS), default=None,
                        help="the profile whose figures and tables this command draws: they "
                             "state its evidence level (the workflow gives it to every job)")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for info in sorted(pkgutil.iter_modules(sharpness.commands.__path__), key=lambda m: m.name):
        module = importlib.import_module(f"sharpness.commands.{info.name}")
        register = getattr(module, "register", None)
        if register is not None:
            register(subparsers)
    return parser


#: commands that hand every word after their name to another program (``sharpness build``
#: runs snakemake): argparse's REMAINDER refuses a leading option such as ``-n``
PASSTHROUGH = {"build"}


def main(argv: Sequence[str] | None = None) -> int:
    """Parse ``argv`` and run the chosen subcommand; returns the exit code."""
    parser = build_parser()
    words = list(sys.argv[1:] if argv is None else argv)
    if words[:1] and words[0] in PASSTHROUGH and words[1:2] not in (["-h"], ["--help"]):
        args = parser.parse_args(words[:1])
        args.words = words[1:]
    else:
        args = parser.parse_args(words)
    func = getattr(args, "func", None)
    if func is None:
        parser.print_help()
        return 2
    install_signal_handlers()  # SIGTERM: records say "interrupted" (sharpness.runs.state)
    use_profile(args.drawn_under)  # the evidence level its figures state (sharpness.evidence)
    try:
        code = int(func(args) or 0)
    except (SharpnessError, FileNotFoundError) as exc:
        _discard_stale_record(args)
        hint = subfolder_hint()
        if not isinstance(exc, SharpnessError) and not hint:
            raise
        print(f"sharpness {args.command}: error: {exc}"
              + (f"\n  {hint}" if hint else ""), file=sys.stderr)
        return 2
    except BrokenPipeError:  # the reader went away (`sharpness audit ... | head`): stop quietly
        _quiet_stdout()
        return 128 + signal.SIGPIPE
    except RecursionError:  # hostile input nested past every parser's own bound
        _discard_stale_record(args)
        print(f"sharpness {args.command}: error: an input is nested too deeply to read "
              "(hostile or damaged); nothing was written", file=sys.stderr)
        return 2
    except KeyboardInterrupt as exc:  # Ctrl-C or SIGTERM: the run resumes when started again
        _discard_stale_record(args)
        print(f"sharpness {args.command}: interrupted ({exc or 'Ctrl-C'}); run the same "
              "command again to resume from the last checkpoint", file=sys.stderr)
        return 128 + int(getattr(exc, "signum", signal.SIGINT))
    except BaseException:
        _discard_stale_record(args)
        raise
    if code != 0:
        _discard_stale_record(args)
    return code


def _quiet_stdout() -> None:
    """Point stdout at the null device, so that the flush at exit does not raise again into a
    closed pipe (the recipe of Python's signal documentation)."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())


def _discard_stale_record(args: argparse.Namespace) -> None:
    """A failed job leaves no record of its output file (Snakemake removes the output itself):
    a sidecar left from an earlier build would vouch for a file that is stale or gone."""
    out = getattr(args, "out", None)
    if isinstance(out, str) and out:
        removed = discard_artifact_record(out)
        if removed is not None:
            print(f"sharpness {args.command}: removed the stale record {removed}",
                  file=sys.stderr)


if __name__ == "__main__":
    sys.exit(main())
