"""A finished result that was removed: its job starts its runs over instead of resuming them.

The eos settings and the Grad-CAM groups declare, as their workflow output, a file they write
last (``sweep.json``, ``runs.json``), not their run folders, so a cut job (an allocation's
wall-time limit, a killed ``snakemake``) leaves its run folders in place and the next call
resumes each run from its checkpoint and reuses the runs that finished
(:func:`sharpness.train.train`). That must not happen when the finished result was removed on
purpose: Snakemake deletes a job's outputs before a forced rerun (``-R``/``--forcerun``, or a
rerun for changed params or code), and deleting the file by hand asks for it again.

The two are told apart by the folder's record: the result is sealed when it is written
(:func:`sharpness.runs.seal.seal`: its SHA-256 in the folder's ``cache_key.json``), so a
sealed name whose file is gone is a finished result that was removed, while a job cut before
its end never sealed its result. :func:`start_over_if_removed` then deletes the run folders
(and forgets the seal), so the job starts from scratch, as it did when the folders themselves
were the outputs.
"""

from __future__ import annotations

import logging
import os
import shutil
from collections.abc import Iterable
from pathlib import Path

from sharpness.runs.cache import read_key
from sharpness.runs.seal import FILES_FIELD, unseal

log = logging.getLogger(__name__)


def removed_result(directory: str | os.PathLike[str], name: str) -> bool:
    """Whether ``directory``'s record holds a hash of the file ``name`` (it was written and
    sealed: the job finished) while the file is gone (removed after the job finished)."""
    directory = Path(directory)
    files = (read_key(directory) or {}).get(FILES_FIELD, {})
    return isinstance(files, dict) and name in files and not (directory / name).exists()


def start_over_if_removed(directory: str | os.PathLike[str], name: str, stale: Iterable[str],
                          *, what: str) -> bool:
    """Delete the ``stale`` files and folders of ``directory`` (names inside it: the run
    folders) and forget ``name``'s seal when :func:`removed_result` says the finished result
    ``name`` was removed, and say so at WARNING; ``True`` when it did. Otherwise nothing is
    touched (a first run, or a cut one: its runs resume) and it returns ``False``."""
    directory = Path(directory)
    if not removed_result(directory, name):
        return False
    present = [n for n in stale if (directory / n).exists() or (directory / n).is_symlink()]
    log.warning("%s: %s was removed after it finished (a forced rerun, -R/--forcerun, or "
                "deleted by hand): starting over from scratch%s", what, directory / name,
                f" (removing {', '.join(present)})" if present else "")
    for n in present:
        target = directory / n
        if target.is_dir() and not target.is_symlink():
            shutil.rmtree(target)
        else:
            target.unlink()
    unseal(directory, name)
    return True
