"""The plan of a build: every job the profile runs, computed once from the resolved config.

A :class:`Plan` lists each :class:`Job` with a stable id (its rule and the wildcard value
that names it), its resolved config (defaults filled, hyper-parameters resolved once), the
file that config is written to, its inputs and its outputs. :func:`build_plan` builds it from
the config the workflow resolved (profile, overlays, ``--config``, seed offset applied), once
per process and config; the Snakefile writes the job files (:meth:`Plan.write`) and the
rules take each job's config file, inputs and outputs from it, and ``sharpness config
check`` and ``sharpness jobs`` read the same object. Each paper states its own jobs in one
pure module (:data:`PROVIDERS`: ``<module>.jobs(config) -> list[Job]``), where its run list
and output layout live, and there too what its section must be as it expands (an optional
``<module>.check(config, schema)``, run by :func:`check_sections`; :func:`check_workflow_config`
checks a config key by key and then section by section). Pure Python: importing this package
never imports torch.
"""

from __future__ import annotations

import copy
import importlib
import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sharpness.jobs.files import write_files

#: each paper section's job list: ``(config section, module whose jobs(config) lists them
#: and whose check(config, schema), where it has one, checks the section as it expands)``
PROVIDERS: tuple[tuple[str, str], ...] = (
    ("minorfirst", "sharpness.minorfirst.jobs"),
    ("gradcam", "sharpness.gradcam.jobs"),
    ("lesam", "sharpness.lesam.jobs"),
    ("eos", "sharpness.eos.jobs"),
    ("bridges", "sharpness.bridges.jobs"),
)


@dataclass(frozen=True)
class Job:
    """One job of the build.

    ``rule`` is the Snakemake rule that runs it and ``id`` the value of that rule's wildcard
    (unique within the rule); ``config`` is what ``config_file`` holds (None: the job reads
    no file, e.g. a job whose settings are its inputs); ``inputs`` and ``outputs`` are paths
    relative to the build folder."""

    rule: str
    id: str
    config: Any = None
    config_file: str | None = None
    inputs: tuple[str, ...] = ()
    outputs: tuple[str, ...] = ()
    label: str = ""

    @property
    def key(self) -> str:
        """``rule/id``: the job's name in listings."""
        return f"{self.rule}/{self.id}"


@dataclass
class Plan:
    """Every job of a build, by rule and id (in the order the papers list them)."""

    jobs: list[Job] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._index: dict[str, dict[str, Job]] = {}
        for job in self.jobs:
            ids = self._index.setdefault(job.rule, {})
            if job.id in ids:
                raise ValueError(f"two jobs named {job.key} in the plan")
            ids[job.id] = job

    def __iter__(self) -> Iterator[Job]:
        return iter(self.jobs)

    def __len__(self) -> int:
        return len(self.jobs)

    def rules(self) -> list[str]:
        """The rules with at least one job, in plan order."""
        return list(self._index)

    def ids(self, rule: str) -> list[str]:
        """The ids of ``rule``'s jobs (empty when it has none)."""
        return list(self._index.get(rule, {}))

    def of_rule(self, rule: str) -> Mapping[str, Job]:
        """``{id: job}`` of ``rule``'s jobs."""
        return self._index.get(rule, {})

    def job(self, rule: str, id: str) -> Job:
        """The job ``rule/id`` (``KeyError`` naming the rule's ids when absent)."""
        try:
            return self._index[rule][id]
        except KeyError:
            known = ", ".join(self.ids(rule)) or "none"
            raise KeyError(f"no job {rule}/{id} in the plan (its jobs: {known})") from None

    def files(self) -> dict[str, Any]:
        """``{config file: content}`` of every job that reads one."""
        out: dict[str, Any] = {}
        for job in self.jobs:
            if job.config_file is None:
                continue
            if job.config_file in out and out[job.config_file] != job.config:
                raise ValueError(f"two contents for {job.config_file} in the plan")
            out[job.config_file] = job.config
        return out

    def write(self, root: str | Path = ".") -> list[str]:
        """Write every job's config file under ``root`` (unchanged files untouched); the
        paths written."""
        return write_files(self.files(), root)

    def outputs(self) -> list[str]:
        """Every output of every job."""
        return [o for job in self.jobs for o in job.outputs]


def _key(config: Mapping[str, Any]) -> str:
    """The config as the cache's key, which :func:`_build` reads back: keys in the config's
    own order (not sorted), since order means something there (the ablation factors and
    their variants are drawn in the order the profile lists them)."""
    return json.dumps(config, default=str, separators=(",", ":"))


#: the plans built in this process, by their config's canonical JSON (a few at most)
_BUILT: dict[str, Plan] = {}


def build_plan(config: Mapping[str, Any]) -> Plan:
    """The plan of the resolved ``config`` (built once per process and config: the workflow,
    the checks and the listings that ask for it again get the same object). The papers list
    their jobs in the config's own order."""
    key = _key(config)
    if key not in _BUILT:
        frozen = copy.deepcopy(dict(config))
        jobs: list[Job] = []
        for section, module in PROVIDERS:
            if frozen.get(section):
                jobs += importlib.import_module(module).jobs(frozen)
        if len(_BUILT) >= 8:
            _BUILT.pop(next(iter(_BUILT)))
        _BUILT[key] = Plan(jobs)
    return _BUILT[key]


def check_workflow_config(config: dict[str, Any], schema: dict[str, Any] | str | Path) -> None:
    """The workflow config as the build will run it, ``ConfigError`` naming the key: every
    key against the schema and every number finite
    (:func:`sharpness.config.check.check_config`, which knows no paper), then what each
    paper's section expands to (:func:`check_sections`). What the Snakefile and ``sharpness
    config check`` call."""
    from sharpness.config.check import check_config, load_schema  # lazy: jsonschema

    loaded = schema if isinstance(schema, dict) else load_schema(schema)
    check_config(config, loaded)
    check_sections(config, loaded)


def check_sections(config: Mapping[str, Any], schema: Mapping[str, Any]) -> None:
    """Check each paper section of ``config`` as it expands (its runs and settings), through
    its provider's ``check(config, schema)`` (``schema``: the workflow's, loaded), in
    :data:`PROVIDERS` order; ``ConfigError`` names the key. What the schema checks, key by
    key, has passed before this (:func:`sharpness.config.check.check_config`)."""
    for section, module in PROVIDERS:
        if config.get(section):
            check = getattr(importlib.import_module(module), "check", None)
            if check is not None:
                check(config, schema)
