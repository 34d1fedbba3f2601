"""Where a profile's registration lives: one file per profile and seed offset.

Kept apart from :mod:`sharpness.claims.registration` (which imports the ledger) so that the
workflow can name the file the claims rule reads without importing the claims code.
"""

from __future__ import annotations

from pathlib import Path

from sharpness.config.variant import in_checkout

#: the folder the registrations are committed in, relative to the checkout
FOLDER = Path("docs/registration")


def registration_path(profile: str, folder: str | Path = FOLDER, seed_offset: int = 0) -> Path:
    """``docs/registration/<profile>.json``, or ``<profile>-seed<N>.json`` for the run of the
    profile whose every seed is moved by ``seed_offset`` N (a second look with fresh seeds is
    registered before its run like the first)."""
    name = profile if not seed_offset else f"{profile}-seed{int(seed_offset)}"
    return Path(folder) / f"{name}.json"


def existing_registration(profile: str, seed_offset: int = 0,
                          folder: str | Path = FOLDER) -> Path | None:
    """The registration a run of ``profile`` with ``seed_offset`` is built under: its own file,
    else the profile's (the ledger then names the seeds as a deviation), else None. From a
    variant's build folder (``variants/<name>``) the checkout's registrations are found
    (:func:`sharpness.config.variant.in_checkout`): a variant's ledger is compared with the
    profile's registration, every changed setting a listed deviation."""
    for path in (registration_path(profile, folder, seed_offset), registration_path(profile, folder)):
        path = in_checkout(path)
        if path.is_file():
            return path
    return None
