"""The files of a training-run folder (what each holds: :mod:`sharpness.train.engine`)."""

from __future__ import annotations

from sharpness.runs.provenance import PROVENANCE_NAME

CHECKPOINT = "checkpoint.pt"
METRICS = "metrics.jsonl"
TIMING = "timing.jsonl"
FINAL = "final.json"
MODEL = "model.pt"
CONFIG = "config.json"

#: What a run folder holds besides its key: removed when the key changes.
RUN_FILES = (FINAL, MODEL, CHECKPOINT, METRICS, TIMING, CONFIG, PROVENANCE_NAME)
