"""The budget table sums Snakemake benchmark files per paper."""

from __future__ import annotations

from sharpness.budget import collect, markdown

HEADER = "s\th:m:s\tmax_rss\tmax_vms\tmax_uss\tmax_pss\tio_in\tio_out\tmean_load\tcpu_time\n"


def test_collect_sums_per_paper(tmp_path):
    for paper, job, wall, rss in (("eos", "a", 10.0, 300), ("eos", "b", 5.5, 900),
                                  ("lesam", "c", 2.0, 100)):
        (tmp_path / paper).mkdir(exist_ok=True)
        (tmp_path / paper / f"{job}.tsv").write_text(
            HEADER + f"{wall}\t0:00:10\t{rss}\t1\t1\t1\t0\t0\t90\t{wall / 2}\n")
    eos, lesam = collect(tmp_path)
    assert (eos.paper, eos.jobs, eos.wall_s, eos.max_rss_mb) == ("eos", 2, 15.5, 900)
    assert eos.slowest_job == "eos/a" and lesam.cpu_s == 1.0
    table = markdown([eos, lesam])
    assert "| **all** | 3 | 18 |" in table
