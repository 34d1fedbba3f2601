"""``sharpness key``: this machine's record-signing key, and its public key to hand over.

Prints where the signing key is (``SHARPNESS_SIGNING_KEY``, else
``~/.config/sharpness/signing_key``; made on first use, mode 0600) and its public key;
``--out FILE`` writes the public key to a file, never under ``results/`` or ``figures/``, to
hand over beside the results (not inside them): whoever receives them keeps it outside their
own output trees and lists it in ``SHARPNESS_TRUSTED_KEYS`` to verify every record with
``sharpness audit`` (:mod:`sharpness.runs.signing`).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from sharpness.commands import add_command


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``key`` subcommand."""
    parser = add_command(subparsers, "key", "print the record-signing key's path and public "
                         "key (made on first use); --out writes the public key to a file",
                         func=_run)
    parser.add_argument("--out", help="write the public key (one hex line) to this file")


def _run(args: argparse.Namespace) -> int:
    from sharpness.io import atomic_write_text
    from sharpness.runs.signing import (
        TRUST_ENV,
        SigningKeyRefused,
        key_path,
        output_tree_of,
        own_public_key,
    )

    tree = output_tree_of(Path(args.out)) if args.out else None
    if tree is not None:
        raise SigningKeyRefused(
            f"--out {args.out} is inside {tree}: a receiver must never trust a key from a "
            "folder its writers can replace. Write it elsewhere and hand it over beside the "
            "results (e.g. --out my-public-key.txt).")
    public = own_public_key(create=True)
    print(f"signing key: {key_path()} (private: keep it there, never under results/ or "
          f"figures/)\npublic key:  {public}")
    if args.out:
        atomic_write_text(args.out, f"{public}\n")
        print(f"{args.out}: the public key; a receiver of the results lists this file in "
              f"{TRUST_ENV} to verify them")
    return 0
