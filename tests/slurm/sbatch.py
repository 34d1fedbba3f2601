"""What the SLURM executor plugin would submit for each job of a dry run.

A dry run (`snakemake -n --workflow-profile workflow/profiles/slurm`) prints every job with its
evaluated `resources:` and `threads:`; this module reads those blocks back and hands each job to
the plugin's own sbatch builder (`get_submit_command` + `set_gres_string`, the two calls its
`run_job` makes), so the tests check the real mapping of the installed plugin version rather
than a copy of it.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field

from snakemake_executor_plugin_slurm.submit_string import get_submit_command
from snakemake_executor_plugin_slurm.utils import set_gres_string

_RULE = re.compile(r"^(?:local)?rule (\w+):\s*$")
_RESOURCES = re.compile(r"^\s+resources:\s*(.*)$")
_THREADS = re.compile(r"^\s+threads:\s*(\d+)\s*$")


class Resources(dict):
    """The job's resources with the two access styles the plugin uses (`.get` and `.name`)."""

    def __getattr__(self, name: str) -> object:
        try:
            return self[name]
        except KeyError as err:
            raise AttributeError(name) from err


@dataclass
class DryRunJob:
    """One job as the dry run printed it: its rule, threads and evaluated resources."""

    rule: str
    threads: int = 1
    resources: Resources = field(default_factory=Resources)


def _value(text: str) -> object:
    """An integer where the dry run printed one (mem_mb=500), else the text (tmpdir=/tmp)."""
    return int(text) if re.fullmatch(r"-?\d+", text) else text


def parse_dry_run(output: str) -> list[DryRunJob]:
    """The jobs of a `snakemake -n` output, in the order printed."""
    jobs: list[DryRunJob] = []
    for line in output.splitlines():
        if match := _RULE.match(line):
            jobs.append(DryRunJob(rule=match.group(1)))
        elif jobs and (match := _THREADS.match(line)):
            jobs[-1].threads = int(match.group(1))
        elif jobs and (match := _RESOURCES.match(line)):
            for item in match.group(1).split(", "):
                key, _, value = item.partition("=")
                jobs[-1].resources[key.strip()] = _value(value.strip())
    return jobs


def sbatch_call(job: DryRunJob) -> str:
    """The sbatch command line the plugin builds for ``job`` (no account, default partition)."""
    params = {
        "run_uuid": "run-uuid",
        "slurm_logfile": f".snakemake/slurm_logs/rule_{job.rule}/%j.log",
        "comment_str": f"rule_{job.rule}",
        "account": "",
        "partition": "",
        "workdir": ".",
    }
    return get_submit_command(job, params) + set_gres_string(job)


def sbatch_options(call: str) -> dict[str, str]:
    """The options of an sbatch command line as {flag: value} (`--a=b` and `--a b` alike)."""
    words = shlex.split(call)[1:]
    options: dict[str, str] = {}
    i = 0
    while i < len(words):
        word = words[i]
        if "=" in word:
            flag, _, value = word.partition("=")
            options[flag] = value
        elif i + 1 < len(words) and not words[i + 1].startswith("-"):
            options[word] = words[i + 1]
            i += 1
        else:
            options[word] = ""
        i += 1
    return options
