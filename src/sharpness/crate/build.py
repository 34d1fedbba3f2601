"""A build's Workflow Run RO-Crate (Provenance Run Crate 0.5 over RO-Crate 1.1).

The crate holds the workflow (the ``Snakefile`` as the Workflow RO-Crate main entity, language
Snakemake with the version that ran, its rule files, configs, profile and pinned environment),
the figures, tables and ledger with their SHA-256, each job's record, the registration the
ledger was built under, and each claim as a ``Claim`` that points to the files its verdict
reads. Every job is a ``CreateAction`` (command, start, end, status, the files it read and
wrote) of a tool (the ``sharpness`` subcommand it ran), orchestrated by Snakemake as the
profile asks: a ``ControlAction`` per job, one ``OrganizeAction`` for the engine, one
``CreateAction`` for the whole run, every ``CreateAction`` mentioned by the root and done by
whoever ran the build (:func:`sharpness.crate.describe.agent_of`). Everything is read from the
build's records (:mod:`sharpness.crate.records`), none of it from the config. A record's
command is kept as text, never run.
"""

from __future__ import annotations

import hashlib
import os
import re
import shlex
import shutil
import tempfile
from io import BytesIO
from pathlib import Path
from typing import Any

from rocrate.model import ContextEntity, File
from rocrate.rocrate import ROCrate

from sharpness.config.variant import RECORD as VARIANT_RECORD
from sharpness.config.variant import checkout_of
from sharpness.crate.describe import (
    agent_of,
    as_list,
    compact,
    encoding_format,
    package_id,
    readme,
)
from sharpness.crate.records import Build, Job, read_build, refuse_link
from sharpness.errors import SharpnessError
from sharpness.runs.provenance import file_sha256

#: the profiles the crate declares on its root (the Workflow RO-Crate's goes on its descriptor)
PROFILES = {"https://w3id.org/ro/wfrun/process/0.5": "Process Run Crate",
            "https://w3id.org/ro/wfrun/workflow/0.5": "Workflow Run Crate",
            "https://w3id.org/ro/wfrun/provenance/0.5": "Provenance Run Crate",
            "https://w3id.org/workflowhub/workflow-ro-crate/1.0": "Workflow RO-Crate"}
#: the workflow's own files, relative to the build (globs), copied as they are now
WORKFLOW_FILES = ("workflow/rules/*.smk", "workflow/config/*.yaml", "workflow/report/**/*.rst",
                  "profiles/*/config.yaml", "envs/requirements.txt", "envs/environment.yaml")
#: the folders that hold the workflow's files (a link among them may lead only into them)
WORKFLOW_FOLDERS = ("workflow", "envs", "profiles")
#: a run's output larger than this is named with its SHA-256 but not copied (checkpoints)
MAX_COPIED_BYTES = 2 * 2**20
#: the terms the crate uses beyond the RO-Crate 1.1 context (the later contexts define them)
TERMS = {"sha256": "http://schema.org/sha256"}
STATUS = {"ok": "CompletedActionStatus", "running": "ActiveActionStatus"}
LICENSE = "https://spdx.org/licenses/MIT"


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", text).strip("-") or "x"


def _file(crate: ROCrate, root: Path, rel: str, follow: bool = False, **props: Any) -> File:
    """The crate's entity of the build's file ``rel`` (added once, with its SHA-256); one
    reached through a link is refused unless ``follow`` (a link the caller has checked)."""
    found = crate.dereference(rel)
    if found is not None:
        return found
    if not follow:
        refuse_link(root, rel, "a file of the crate")
    path = root / rel
    props = {"name": rel, "sha256": file_sha256(path), "contentSize": path.stat().st_size,
             "encodingFormat": encoding_format(rel), **props}
    return crate.add_file(path, dest_path=rel, properties=props)


def _inside(root: Path, rel: str) -> bool:
    """Whether the build's file ``rel`` (a path a record names: untrusted) lies inside the
    build, links followed: only such a file is copied into the crate, under its own name."""
    if os.path.isabs(rel) or ".." in Path(rel).parts:
        return False
    return (root / rel).resolve().is_relative_to(root.resolve())


def _named(crate: ROCrate, rel: str, sha: str | None, why: str) -> ContextEntity:
    """A file the crate names by its SHA-256 without holding it."""
    ident = f"#not-included/{_slug(rel)}"
    found = crate.dereference(ident)
    if found is not None:
        return found
    return crate.add(ContextEntity(crate, ident, properties={
        "@type": "CreativeWork", "name": rel, "description": why,
        **({"sha256": sha} if sha else {})}))


class _Writer:
    """Builds one crate from one build; holds the entity of every file and job added."""

    def __init__(self, build: Build, crate: ROCrate, max_bytes: int) -> None:
        self.build, self.crate, self.root, self.max_bytes = build, crate, build.root, max_bytes
        self.tools: dict[str, ContextEntity] = {}
        self.packages: dict[str, ContextEntity] = {}

    def output(self, job: Job, rel: str, sha: str) -> Any:
        path = self.root / rel
        if not os.path.isabs(rel):
            refuse_link(self.root, rel, f"an output of {job.record_path}")
        if not _inside(self.root, rel):
            return _named(self.crate, rel, sha, "written outside the build (not copied)")
        if not path.is_file():
            return _named(self.crate, rel, sha, "written by the build, no longer on its disk")
        if job.folder and path.stat().st_size > self.max_bytes:
            return _named(self.crate, rel, sha, f"not copied ({path.stat().st_size} bytes); "
                                                "the SHA-256 its record holds")
        entity = _file(self.crate, self.root, rel)
        if entity["sha256"] != sha:
            raise SharpnessError(
                f"{rel}: its SHA-256 {entity['sha256'][:12]} is not the {sha[:12]} that "
                f"{job.record_path} recorded (edited or rebuilt after its record); "
                f"`sharpness audit {rel}` shows the chain, rebuild before packing a crate")
        return entity

    def input(self, entry: dict[str, Any]) -> Any:
        rel = entry["path"]
        if entry.get("folder") and self.crate.dereference(rel.rstrip("/") + "/") is not None:
            return self.crate.dereference(rel.rstrip("/") + "/")
        if self.crate.dereference(rel) is not None:
            return self.crate.dereference(rel)
        return _named(self.crate, rel, entry.get("sha256"), "read by a job, outside the build")

    def package(self, name: str, version: Any) -> ContextEntity:
        """A package a record pins, by its PyPI release page (id and ``url``)."""
        version = str(version) if version else None
        ident = package_id(name, version)
        if ident not in self.packages:
            self.packages[ident] = self.crate.add(ContextEntity(self.crate, ident, properties={
                "@type": "SoftwareApplication", "name": name,
                **({"version": version} if version else {}),
                **({"url": ident} if ident.startswith("https://") else {
                    "description": "this workflow's own package (its code is the commit "
                                   "each job's version names); on no registry"})}))
        return self.packages[ident]

    def tool(self, job: Job) -> ContextEntity:
        """The ``sharpness`` subcommand (or program) the job ran, with the packages its
        record pins."""
        words = job.command
        name = os.path.basename(words[0]) if words else job.kind
        if name == "sharpness":
            name = " ".join(["sharpness", *[w for w in words[1:3] if not w.startswith("-")]])
        ident = f"#tool-{_slug(name)}"
        if ident not in self.tools:
            code = job.record.get("code") or {}
            version = ((job.record.get("packages") or {}).get("sharpness")
                       or code.get("package_version") or code.get("git_commit"))
            self.tools[ident] = self.crate.add(ContextEntity(self.crate, ident, properties={
                "@type": "SoftwareApplication", "name": name,
                **({"version": str(version)} if version else {})}))
        tool = self.tools[ident]
        for pkg, version in sorted((job.record.get("packages") or {}).items()):
            if version and self.package(pkg, version) not in tool.get("softwareRequirements", []):
                tool.append_to("softwareRequirements", self.package(pkg, version))
        return tool

    def outputs(self, job: Job) -> list[Any]:
        """The job's record and the files it wrote, in the crate (a run: its folder)."""
        results = [self.output(job, rel, sha) for rel, sha in sorted(job.outputs.items())]
        record = _file(self.crate, self.root, job.record_path,
                       description=f"provenance record {job.id} ({job.kind})")
        if not job.folder:
            return results
        folder = self.crate.add_dataset(dest_path=job.folder + "/",
                                        properties={"name": f"run {job.folder}"})
        folder["hasPart"] = _one([record, *[r for r in results if isinstance(r, File)]])
        return [folder]

    def job(self, job: Job, results: list[Any], agent: ContextEntity) -> ContextEntity:
        """The job's ``CreateAction`` (every job's outputs already in the crate, so that an
        input made by another job is that job's entity)."""
        record = self.crate.dereference(job.record_path)
        code = job.record.get("code") or {}
        props: dict[str, Any] = {
            "name": f"{job.kind} {job.subject}",
            "description": "command: " + shlex.join(job.command) + _device(job.record),
            "actionStatus": "http://schema.org/" + STATUS.get(str(job.record.get("status")),
                                                              "FailedActionStatus"),
            "identifier": job.id, "subjectOf": record, "agent": agent,
            **({"startTime": job.record["started"]} if job.record.get("started") else {}),
            **({"endTime": job.record["ended"]} if job.record.get("ended") else {}),
            **({"error": f"status {job.record.get('status')}"}
               if job.record.get("status") not in STATUS else {}),
            **({"version": code["git_commit"]} if code.get("git_commit") else {})}
        return self.crate.add_action(
            self.tool(job), identifier=f"#job-{_slug(job.record_path)}",
            object=_one([self.input(e) for e in job.inputs]), result=_one(results),
            properties=props)


def _device(record: dict[str, Any]) -> str:
    """Where the job ran, as its record says: host, CUDA device or CPU, Python, torch."""
    device = record.get("device") if isinstance(record.get("device"), dict) else {}
    torch = (record.get("packages") or {}).get("torch")
    parts = [f"host {device['host']}" if device.get("host") else "",
             f"CUDA {device['cuda']}" if device.get("cuda") else
             f"CPU {device['cpu']}" if device.get("cpu") else "",
             f"python {device['python']}" if device.get("python") else "",
             f"torch {torch}" if torch else ""]
    return "; ran on " + ", ".join(p for p in parts if p) if any(parts) else ""


def _in_workflow(root: Path, rel: str) -> bool:
    """Whether the workflow's file ``rel`` is one of the workflow's own files once links are
    followed (the checkout's committed ``profiles/default -> ../workflow/profiles/default``):
    a link is followed only into :data:`WORKFLOW_FOLDERS` of this build, never out of them."""
    real = (root / rel).resolve()
    return any(real.is_relative_to(root.resolve() / folder) for folder in WORKFLOW_FOLDERS)


def _workflow(crate: ROCrate, root: Path, snakemake: str | None, commit: str | None) -> Any:
    """The Snakefile as the main entity, its rule files, configs and environment as parts
    (the Snakefile and each rule file at the build's commit: their ``version``)."""
    if not (root / "Snakefile").is_file():
        raise SharpnessError(f"{root}/Snakefile: not found; --root is the folder the build "
                             "ran in (the one holding the Snakefile, figures/ and results/)")
    refuse_link(root, "Snakefile", "the workflow's Snakefile")
    workflow = crate.add_workflow(
        root / "Snakefile", dest_path="Snakefile", main=True, lang="snakemake",
        lang_version=snakemake, properties={
            "@type": ["File", "SoftwareSourceCode", "ComputationalWorkflow", "HowTo"],
            "name": "sharpness replication workflow", "sha256": file_sha256(root / "Snakefile"),
            "encodingFormat": encoding_format("Snakefile"),
            **({"version": commit} if commit else {})})
    for pattern in WORKFLOW_FILES:
        for path in sorted(root.glob(pattern)):
            rel = path.relative_to(root).as_posix()
            _file(crate, root, rel, _in_workflow(root, rel),
                  **({"@type": ["File", "SoftwareSourceCode"],
                     "isPartOf": workflow, **({"version": commit} if commit else {})}
                     if rel.endswith(".smk") else {}))
    return workflow


def _claims(crate: ROCrate, build: Build) -> None:
    """Each row of the ledger as a ``Claim``: its verdict, and the files its verdict read."""
    if not build.claims or not build.claims_path:
        return
    ledger = crate.dereference(build.claims_path.rsplit("/", 1)[0] + "/CLAIMS.md")
    for row in build.claims.get("claims") or []:
        if not isinstance(row, dict) or not row.get("id"):
            raise SharpnessError(f"{build.claims_path}: a claim without an id: {row!r}")
        reads = []
        for item in filter(None, str(row.get("items") or "").split(";")):
            for suffix in (".csv", ".pdf", ".md", ".provenance.json"):
                found = crate.dereference(f"figures/{item}{suffix}")
                if found is not None:
                    reads.append(found)
        crate.add(ContextEntity(crate, f"#claim-{_slug(str(row['id']))}", properties={
            "@type": "Claim", "name": str(row["id"]), "text": str(row.get("claim") or ""),
            "creativeWorkStatus": str(row.get("verdict") or ""),
            "description": f"{row.get('paper')}: {row.get('predicate')}; value: "
                           f"{row.get('value')}; level: {row.get('level')}",
            "isBasedOn": _one(reads), **({"appearance": ledger} if ledger is not None else {})}))


def _environment(build: Build) -> tuple[str | None, str | None]:
    """The commit the jobs ran (the one most records name) and the Snakemake version."""
    commits = [str((j.record.get("code") or {}).get("git_commit")) for j in build.jobs
               if (j.record.get("code") or {}).get("git_commit")]
    snakemake = {str((j.record.get("packages") or {}).get("snakemake")) for j in build.jobs
                 if (j.record.get("packages") or {}).get("snakemake")}
    commit = max(set(commits), key=commits.count) if commits else None
    return commit, (sorted(snakemake)[-1] if snakemake else None)


def crate_of(root: str | os.PathLike[str], name: str | None = None,
             max_bytes: int = MAX_COPIED_BYTES, agent: str | None = None,
             agent_id: str | None = None) -> ROCrate:
    """The RO-Crate of the build at ``root`` (not written); a run's output over ``max_bytes``
    is named with its SHA-256, not copied (a figure's or table's files always are). ``agent``
    (a name) and ``agent_id`` (an ORCID) say who ran the build (default: git's user.name)."""
    build = read_build(root)
    crate = ROCrate(version="1.1", gen_preview=False)
    crate.metadata.extra_terms.update(TERMS)
    commit, snakemake = _environment(build)
    workflow = _workflow(crate, checkout_of(build.root), snakemake, commit)
    if (build.root / VARIANT_RECORD).is_file():  # a variant's build: its settings' differences
        refuse_link(build.root, VARIANT_RECORD, "the variant's record")
        _file(crate, build.root, VARIANT_RECORD, encodingFormat="application/json",
              description="this build is a variant: its name and its settings' differences "
                          "from its profile")
    person = agent_of(crate, build.root, agent, agent_id)
    writer = _Writer(build, crate, max_bytes)
    made = [writer.outputs(job) for job in build.jobs]
    actions = [writer.job(job, results, person)
               for job, results in zip(build.jobs, made, strict=True)]
    if (build.registration_file and _inside(build.root, build.registration_file)
            and (build.root / build.registration_file).is_file()):
        registration = _file(crate, build.root, build.registration_file,
                             description="the registration the ledger was built under")
        crate.dereference(build.ledger.subject)["isBasedOn"] = registration
    _claims(crate, build)
    workflow["hasPart"] = _one(list(writer.tools.values()))
    run = _orchestration(crate, workflow, actions, writer, snakemake, person)
    crate.name = name or f"sharpness build {build.root.resolve().name}"
    crate.description = ("A build of the sharpness replication workflow: its figures, tables, "
                         "claims ledger, each job's provenance record and what ran.")
    crate.root_dataset["author"] = person
    crate.root_dataset["mentions"] = [run, *actions]
    crate.license = crate.add(ContextEntity(crate, LICENSE, properties={
        "@type": "CreativeWork", "name": "MIT License", "identifier": "MIT"}))
    ended = max((a.get("endTime") or "" for a in actions), default="")
    if ended:
        crate.datePublished = ended
    for ident, label in PROFILES.items():
        crate.root_dataset.append_to("conformsTo", crate.add(ContextEntity(
            crate, ident, properties={"@type": "CreativeWork", "name": label,
                                      "version": ident.rsplit("/", 1)[-1]})))
    _readme(crate, build, commit, person)
    compact(crate)
    return crate


def _readme(crate: ROCrate, build: Build, commit: str | None, person: ContextEntity) -> None:
    """The crate's own ``README.md`` (about the crate, Markdown), counts from the build."""
    verdicts: dict[str, int] = {}
    for row in (build.claims or {}).get("claims") or []:
        verdict = str(row.get("verdict") or "none") if isinstance(row, dict) else "none"
        verdicts[verdict] = verdicts.get(verdict, 0) + 1
    lines = [f"- workflow: `Snakefile` at commit {commit or 'unknown'}",
             f"- run by: {person['name']}",
             f"- jobs: {len(build.jobs)}, each a `CreateAction` read from its signed "
             "provenance record",
             "- claims: " + (", ".join(f"{n} {v}" for v, n in sorted(verdicts.items()))
                             or "none (no ledger in this build)")]
    data = readme(crate, lines).encode()
    crate.add_file(BytesIO(data), dest_path="README.md", properties={
        "name": "README.md", "about": crate.root_dataset, "encodingFormat": "text/markdown",
        "sha256": hashlib.sha256(data).hexdigest(), "contentSize": len(data)})


def _orchestration(crate: ROCrate, workflow: Any, actions: list[ContextEntity],
                   writer: _Writer, snakemake: str | None, agent: ContextEntity
                   ) -> ContextEntity:
    """A step per tool, a ``ControlAction`` per job, the engine's ``OrganizeAction`` and the
    run's ``CreateAction`` (its result: every figure, table and ledger file), returned."""
    steps = {}
    for position, (ident, tool) in enumerate(sorted(writer.tools.items())):
        steps[ident] = crate.add(ContextEntity(crate, f"#step-{ident[len('#tool-'):]}",
                                               properties={"@type": "HowToStep",
                                                           "position": str(position),
                                                           "name": tool["name"]}))
        steps[ident]["workExample"] = tool
    workflow["step"] = _one(list(steps.values()))
    controls = [crate.add(ContextEntity(crate, f"#control-{a.id.lstrip('#')}", properties={
        "@type": "ControlAction", "name": f"orchestrate {a['name']}",
        "instrument": steps[a["instrument"].id], "object": a})) for a in actions]
    made = [e for a in actions for e in as_list(a.get("result"))
            if isinstance(e, File) and e.id.startswith("figures/")]
    times = [a.get(k) for a in actions for k in ("startTime", "endTime") if a.get(k)]
    ok = all("Completed" in str(a["actionStatus"]) for a in actions)
    run = crate.add_action(workflow, identifier="#workflow-run", result=_one(made), properties={
        "name": "the build's run of the workflow", "agent": agent,
        "description": "Snakemake's run of the Snakefile, from the first job's start to the "
                       "last job's end; its results are the figures, tables and ledger",
        "actionStatus": "http://schema.org/" + ("CompletedActionStatus" if ok
                                                else "FailedActionStatus"),
        **({"startTime": min(times), "endTime": max(times)} if times else {})})
    engine = writer.package("snakemake", snakemake)
    crate.add(ContextEntity(crate, "#orchestration", properties={
        "@type": "OrganizeAction", "name": "Snakemake's run of the jobs", "agent": agent,
        "instrument": engine, "result": run, "object": _one(controls)}))
    return run


def _one(values: list[Any]) -> Any:
    """A list of one as its single value (RO-Crate 1.1's compact form); others as they are."""
    return values[0] if len(values) == 1 else values


def write_crate(root: str | os.PathLike[str], out: str | os.PathLike[str],
                max_bytes: int = MAX_COPIED_BYTES, agent: str | None = None,
                agent_id: str | None = None) -> Path:
    """Write the build's crate to the zip ``out`` (replaced whole, never left half written)."""
    crate = crate_of(root, max_bytes=max_bytes, agent=agent, agent_id=agent_id)
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=out.parent, prefix=".crate-") as tmp:
        crate.write(Path(tmp) / "crate")
        # zipped from the folder so that each run folder is an entry of its own (a Dataset
        # the crate names must be in its payload)
        Path(shutil.make_archive(str(Path(tmp) / "crate"), "zip", Path(tmp) / "crate")
             ).replace(out)
    return out
