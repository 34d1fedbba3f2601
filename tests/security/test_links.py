"""No write follows a link: each kind of writer of the pipeline, with a link planted where it
writes that points at a file outside, leaves that file as it was (docs/security.md, "Links
where the pipeline writes")."""

from __future__ import annotations

import pytest

from sharpness.io import (
    LinkRefused,
    append_jsonl,
    atomic_write_json,
    atomic_write_text,
    links_under,
    read_json,
    refuse_links,
)
from tests.pipeline.helpers import copy_workflow, snakemake

VICTIM = "a file outside the project that must never change\n"


@pytest.fixture
def victim(tmp_path):
    path = tmp_path / "outside" / "victim.txt"
    path.parent.mkdir()
    path.write_text(VICTIM)
    return path


@pytest.mark.parametrize("write", [
    lambda p: atomic_write_json(p, {"final_test_acc": 0.5}),
    lambda p: atomic_write_text(p, "a,b\n1,2\n"),
])
def test_an_atomic_writer_replaces_a_link_and_never_writes_through_it(tmp_path, victim, write):
    """JSON and CSV/text results go through a `mkstemp` file and `os.replace`, which puts the
    new file where the link was: the link's target is untouched."""
    target = tmp_path / "results" / "final.json"
    target.parent.mkdir()
    target.symlink_to(victim)
    write(target)
    assert victim.read_text() == VICTIM
    assert not target.is_symlink() and target.stat().st_size > 0


def test_an_appended_stream_refuses_a_link(tmp_path, victim):
    """`metrics.jsonl` is appended in place: a link there is refused, not appended through."""
    target = tmp_path / "run" / "metrics.jsonl"
    target.parent.mkdir()
    target.symlink_to(victim)
    with pytest.raises(LinkRefused, match="metrics.jsonl is a link"):
        append_jsonl(target, {"step": 1})
    assert victim.read_text() == VICTIM
    plain = tmp_path / "run" / "other.jsonl"
    append_jsonl(plain, {"step": 1})
    assert read_json(plain) == {"step": 1}


def test_links_where_snakemake_writes_are_found_and_named(tmp_path, victim):
    """Benchmark timings and job logs are written in place by Snakemake and the shell: every
    link among them is found (a linked folder too) and the refusal names each."""
    bench = tmp_path / "benchmarks" / "results" / "eos"
    bench.mkdir(parents=True)
    (bench / "toy.tsv").symlink_to(victim)
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "eos").symlink_to(victim.parent)
    (bench / "real.tsv").write_text("s\n1\n")
    found = links_under(tmp_path / "benchmarks" / "results", tmp_path / "logs")
    assert found == sorted([bench / "toy.tsv", tmp_path / "logs" / "eos"])
    with pytest.raises(LinkRefused, match="toy.tsv -> .*victim.txt"):
        refuse_links(tmp_path / "benchmarks" / "results", tmp_path / "logs")
    refuse_links(tmp_path / "outside")  # no link there: passes


@pytest.mark.workflow
def test_a_link_in_benchmarks_results_stops_the_workflow_before_any_job(tmp_path, repo,
                                                                         bin_dir, victim):
    """The attack as a real invocation: `benchmarks/results/eos/toy.tsv` links to a file
    outside; Snakemake stops at planning naming it, runs nothing, and the file is kept."""
    work = copy_workflow(repo, tmp_path)
    bench = work / "benchmarks" / "results" / "eos"
    bench.mkdir(parents=True)
    (bench / "toy.tsv").symlink_to(victim)
    done = snakemake(bin_dir, work, "--cores", "1", "figures/eos/fig_toy.pdf", check=False,
                     timeout=300)
    assert done.returncode != 0
    assert "toy.tsv ->" in done.stdout + done.stderr
    assert victim.read_text() == VICTIM
    assert not (work / "results").exists()
