#!/usr/bin/env bash
# Run by Snakemake inside the new conda environment (--use-conda), in the workflow folder:
# install this package, editable (the rules' code fingerprints read this checkout's source),
# without dependencies (environment.yaml already holds the pinned stack).
set -euo pipefail
if ! grep -q '^name = "sharpness"' pyproject.toml 2>/dev/null; then
    echo "environment.post-deploy.sh: run snakemake from the repository root (no pyproject.toml of sharpness in $PWD)" >&2
    exit 1
fi
python -m pip install --no-deps -e .
