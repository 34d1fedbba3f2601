"""The claims rule lists every file the ledger reads: each item's CSV is an input
beside its PDF or table, so a rebuilt CSV reruns the ledger."""

from __future__ import annotations

import re

import pytest

from tests.pipeline.helpers import copy_workflow, snakemake

pytestmark = pytest.mark.workflow  # plans the workflow


def test_the_claims_rule_lists_every_csv_it_reads(tmp_path, repo, bin_dir):
    workdir = copy_workflow(repo, tmp_path, messages=False)  # dry runs then print the inputs
    proc = snakemake(bin_dir, workdir, "-n", "figures/CLAIMS.md")
    block = proc.stdout[proc.stdout.index("rule claims:"):]
    line = re.search(r"^\s+input: (.*)$", block, re.M)
    assert line, block[:2000]
    inputs = [p.strip() for p in line.group(1).split(",")]
    items = [p for p in inputs if p.endswith((".pdf", ".md"))]
    assert items and all(p.startswith("figures/") for p in items)
    missing = [p.rsplit(".", 1)[0] + ".csv" for p in items
               if p.rsplit(".", 1)[0] + ".csv" not in inputs]
    assert missing == [], f"read by the ledger, not inputs of its rule: {missing}"
