"""Links that lead out of a data folder: reported, left alone, never acted through.

A data folder may come from elsewhere. A link inside it (``data/mnist/MNIST -> ~/papers``)
makes every path below the link name a file of another folder, so deleting a rejected copy,
unpacking a member or writing a file there would delete or overwrite that folder's files of the
same names. Preparing a data set therefore looks for such links first: a link whose target
(links followed) lies outside the data folder is logged and left as it is, and any path the
preparation would delete or write that is reached through one stops it with
:class:`~sharpness.errors.DataError`, naming the link, before anything is touched. The data
folder itself may be a link (a data set kept elsewhere and linked in is common): "outside" is
judged against the folder's resolved location. Reading through a link changes nothing and
stays allowed.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from sharpness.errors import DataError


def _leads_out(link: Path, base: Path) -> bool:
    """Whether the link ``link`` names a place outside ``base`` (a resolved folder)."""
    return not Path(os.path.realpath(link)).is_relative_to(base)


def outward_link(folder: Path, relative: str | os.PathLike[str]) -> Path | None:
    """The first link on the way from ``folder`` to ``folder/relative`` (the last component
    included) that leads outside ``folder``; ``None`` when there is none."""
    base = Path(os.path.realpath(folder))
    path = folder
    for part in Path(relative).parts:
        path = path / part
        if path.is_symlink() and _leads_out(path, base):
            return path
        if not path.exists():
            return None
    return None


def outward_links(folder: Path) -> list[Path]:
    """Every link inside ``folder`` (not followed) whose target lies outside it."""
    if not folder.is_dir():
        return []
    base = Path(os.path.realpath(folder))
    found = []
    for parent, dirs, files in os.walk(folder):  # os.walk never descends into a linked folder
        for name in (*dirs, *files):
            path = Path(parent) / name
            if path.is_symlink() and _leads_out(path, base):
                found.append(path)
    return sorted(found)


def refuse_outward(folder: Path, relatives: Iterable[str | os.PathLike[str]],
                   what: str) -> None:
    """Stop with :class:`DataError` when any ``folder/relative`` is reached through a link
    that leads out of ``folder``: ``what`` (delete, write) would act on another folder."""
    links = sorted({link for rel in relatives if (link := outward_link(folder, rel))})
    if links:
        named = ", ".join(f"{link} -> {os.path.realpath(link)}" for link in links)
        raise DataError(
            f"{folder}: {named} is a link leading out of the data folder; preparing the data "
            f"set would {what} through it, in another folder, so nothing was deleted or "
            "written. Remove the link (`rm` on the link alone) or replace it with the data "
            "set's verified files.")
