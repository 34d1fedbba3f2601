"""The budget table joins Snakemake benchmark files and `/usr/bin/time -v` reports per paper."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from sharpness.cli import main
from sharpness.cost.budget import BEGIN, END, collect, markdown, parse_time_v, replace_block
from sharpness.errors import SharpnessError

HEADER = "s\th:m:s\tmax_rss\tmax_vms\tmax_uss\tmax_pss\tio_in\tio_out\tmean_load\tcpu_time\n"

TIME_V = """\tCommand being timed: "snakemake --cores 2 eos_all"
\tUser time (seconds): 1019.85
\tSystem time (seconds): 84.85
\tPercent of CPU this job got: 182%
\tElapsed (wall clock) time (h:mm:ss or m:ss): 10:07.09
\tMaximum resident set size (kbytes): 1185020
\tExit status: 0
"""


def _benchmarks(root):
    for paper, job, wall, rss in (("eos", "a", 10.0, 300), ("eos", "b", 5.5, 900),
                                  ("lesam", "c", 2.0, 100)):
        (root / paper).mkdir(parents=True, exist_ok=True)
        (root / paper / f"{job}.tsv").write_text(
            HEADER + f"{wall}\t0:00:10\t{rss}\t1\t1\t1\t0\t0\t90\t{wall / 2}\n")


def test_collect_sums_per_paper(tmp_path):
    _benchmarks(tmp_path)
    eos, lesam = collect(tmp_path)
    assert (eos.paper, eos.jobs, eos.wall_s, eos.max_rss_mb) == ("eos", 2, 15.5, 900)
    assert eos.slowest_job == "eos/a" and lesam.jobs == 1
    table = markdown([eos, lesam])
    assert "| **all** | 3 | 18 | 900 |" in table


def test_parse_time_v_reads_wall_cpu_and_memory(tmp_path):
    report = tmp_path / "eos.txt"
    report.write_text(TIME_V)
    t = parse_time_v(report)
    assert t.wall_s == pytest.approx(607.09)
    assert t.cpu_s == pytest.approx(1104.70)
    assert t.max_rss_mb == pytest.approx(1157.25, abs=0.01)
    assert t.exit_status == 0
    report.write_text("Elapsed (wall clock) time (h:mm:ss or m:ss): 1:02:03\n")
    with pytest.raises(SharpnessError, match="User time"):
        parse_time_v(report)


@pytest.mark.skipif(not os.path.exists("/usr/bin/time"), reason="GNU time is not installed")
def test_parse_time_v_reads_a_real_report(tmp_path):
    out = tmp_path / "t.txt"
    subprocess.run(["/usr/bin/time", "-v", "-o", str(out), sys.executable, "-c",
                    "x = bytearray(200 * 2**20)"], check=True)
    t = parse_time_v(out)
    assert t.max_rss_mb > 200 and t.wall_s > 0 and t.exit_status == 0


def test_table_with_timings_and_readme_block(tmp_path, capsys):
    _benchmarks(tmp_path / "bench")
    (tmp_path / "eos.txt").write_text(TIME_V)
    readme = tmp_path / "README.md"
    readme.write_text(f"intro\n{BEGIN}\nold table\n{END}\noutro\n")
    rc = main(["budget", "--root", str(tmp_path / "bench"), "--timing",
               f"eos={tmp_path / 'eos.txt'}", "--preamble", "Measured here.",
               "--readme", str(readme)])
    assert rc == 0
    text = readme.read_text()
    assert "old table" not in text and text.startswith("intro\n") and text.endswith("outro\n")
    assert "Measured here." in text
    assert "| eos | 10:07 | 1105 | 1157 | 0 | 2 | 16 | 900 | eos/a (10) |" in text
    # lesam has benchmark files but no timing: its timing cells stay empty, not invented
    assert "| lesam |  |  |  |  | 1 | 2 | 100 | lesam/c (2) |" in text
    assert "| **all** | **10:07** |" in text
    assert "| eos | 10:07" in capsys.readouterr().out


def test_whole_run_timing_fills_the_total_row(tmp_path):
    """`--timing all=FILE` (one `snakemake` run of everything) is the total row's wall time,
    not a paper row and not a sum; the papers keep their benchmark-file columns."""
    _benchmarks(tmp_path / "bench")
    (tmp_path / "all.txt").write_text(TIME_V)
    table = markdown(collect(tmp_path / "bench"), {"all": parse_time_v(tmp_path / "all.txt")})
    assert "| **all** | **10:07** | 1105 | 1157 | 0 | 3 |" in table
    assert "| eos |  |  |  |  | 2 | 16 | 900 | eos/a (10) |" in table
    assert table.count("| all ") == 0


def test_errors_name_what_is_wrong(tmp_path, capsys):
    bench = str(tmp_path / "bench")
    _benchmarks(tmp_path / "bench")
    for argv, message in ((["--root", str(tmp_path / "none")], "no benchmark files"),
                          (["--root", bench, "--timing", "eos"], "PAPER=FILE"),
                          (["--root", bench, "--timing", "eos=/nope.txt"], "no such file")):
        assert main(["budget", *argv]) == 2
        assert message in capsys.readouterr().err
    with pytest.raises(SharpnessError, match="budget markers"):
        replace_block("no markers here", "table")


def test_collect_names_a_top_level_rule_by_its_file(tmp_path):
    """A rule of all papers (the claims ledger) writes benchmarks/results/claims.tsv: its row
    is 'claims', not the file name."""
    _benchmarks(tmp_path)
    (tmp_path / "claims.tsv").write_text(HEADER + "1.5\t0:00:01\t125\t1\t1\t1\t0\t0\t90\t1\n")
    papers = {b.paper: b for b in collect(tmp_path)}
    assert set(papers) == {"claims", "eos", "lesam"}
    assert papers["claims"].slowest_job == "claims"


def test_parts_group_jobs_by_glob_first_match_wins(tmp_path):
    """eos/a and eos/b go to the first part whose glob matches; lesam/c to the catch-all;
    the cores-busy line is CPU time over wall time of the whole run."""
    from sharpness.cost.budget import Timing, collect_parts, parts_markdown, read_parts

    _benchmarks(tmp_path / "bench")
    spec = tmp_path / "parts.yaml"
    spec.write_text("- {label: only a, globs: ['eos/a']}\n- {label: eos, globs: ['eos/*']}\n")
    parts = collect_parts(tmp_path / "bench", read_parts(spec))
    assert [(p.label, p.jobs, p.wall_s) for p in parts] == [
        ("only a", 1, 10.0), ("eos", 1, 5.5), ("everything else", 1, 2.0)]
    table = parts_markdown(parts, Timing(wall_s=100.0, cpu_s=150.0, max_rss_mb=1, exit_status=0))
    assert table.index("| only a |") < table.index("| eos |")  # largest part first
    assert "Cores busy on average: 1.50 of 2" in table and "about 900 CPU-s" in table
    bad = tmp_path / "bad.yaml"
    bad.write_text("- {label: no globs}\n")
    with pytest.raises(SharpnessError, match="entry 0 needs a 'label' and a list of 'globs'"):
        read_parts(bad)


def test_quick_parts_file_covers_the_quick_profile():
    """The committed groups parse, and their globs name the quick profile's job kinds."""
    from pathlib import Path

    from sharpness.cost.budget import read_parts

    groups = read_parts(Path(__file__).parents[1] / "benchmarks/quick_parts.yaml")
    assert groups[-1][1] == ["*"]  # a last catch-all: every job lands in a named part
    globs = [g for _, gs in groups for g in gs]
    assert "eos/setting_abl*" in globs and globs.index("eos/setting_abl*") < \
        globs.index("eos/setting_*")  # ablations are counted apart from the main settings


def test_minutes_round_to_the_second_before_splitting():
    from sharpness.cost.budget import minutes

    assert minutes(239.6) == "4:00"
    assert minutes(59.4) == "0:59"
    assert minutes(6311.2) == "105:11"
