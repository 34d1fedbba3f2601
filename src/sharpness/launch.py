"""How a training job is launched: one process, or ``torchrun`` for a multi-GPU run.

Pure Python (no torch import) so that Snakemake rule files can call it at parse time. A
training config with ``gpus: N`` (N > 1) runs as N processes under
``torchrun --standalone --nproc-per-node N`` (one node; see
:mod:`sharpness.train.distributed`), and its job asks the scheduler for N GPUs
(``resources: gpu=N``, which the SLURM profile turns into ``--gpus=N``).
"""

from __future__ import annotations

from typing import Any


def processes(cfg: dict[str, Any]) -> int:
    """Processes of the run: the config's ``gpus`` (default 1)."""
    n = cfg.get("gpus", 1)
    if not isinstance(n, int) or isinstance(n, bool) or n < 1:
        raise ValueError(f"train config key 'gpus': must be a positive int, got {n!r}")
    return n


def gpus_requested(cfg: dict[str, Any]) -> int:
    """GPUs the job asks the scheduler for: ``gpus`` unless the run is pinned to the CPU."""
    return 0 if cfg.get("device") == "cpu" else processes(cfg)


def launch_words(cfg: dict[str, Any]) -> list[str]:
    """What goes in front of ``sharpness train ...`` in the rule's shell command, one shell
    word a list item (the rule quotes each with ``{params.launch:q}``; an empty list adds
    nothing)."""
    n = processes(cfg)
    if n == 1:
        return []
    return ["torchrun", "--standalone", "--nproc-per-node", str(n), "--no-python"]


def cpus(cfg: dict[str, Any]) -> int:
    """CPU cores of the job: one per process plus its DataLoader workers."""
    return processes(cfg) * (1 + int(cfg.get("loader_workers", 0) or 0))


def mem_mb(cfg: dict[str, Any], base: int = 4000) -> int:
    """Memory of the job (MB): ``base`` for one process without workers; each further
    process ``base`` more, each DataLoader worker 1,000 more."""
    workers = int(cfg.get("loader_workers", 0) or 0)
    return base * processes(cfg) + 1000 * workers * processes(cfg)
