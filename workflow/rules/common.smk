# Helpers shared by all rule files (data options, code fingerprints, wildcard constraints)
# and what the rules share, named once: the environment a job runs in, a
# drawing job's resources, a figure's and a table's outputs.
import functools
import os
import re
import shlex
import sys

from snakemake_interface_executor_plugins.settings import DeploymentMethod

from sharpness.runs.cache import code_fingerprint

# Rules call the `sharpness` command installed beside the Python running Snakemake, so
# `.venv/bin/snakemake ...` works without activating the environment first. With
# --use-conda, each job runs in envs/environment.yaml instead (the pinned stack, this package
# installed by environment.post-deploy.sh), so its own `sharpness` must come first.
# The folder is one shell word whatever it holds (quoted; braces doubled, as Snakemake formats
# the prefix).
# A variant's jobs find its record (its name and differences, named on every figure) through
# the environment (sharpness.config.variant).
_variant_env = f"export {VARIANT_ENV}={VARIANT_RECORD}; " if VARIANT is not None else ""
if DeploymentMethod.CONDA not in workflow.deployment_settings.deployment_method:
    _bin = shlex.quote(os.path.dirname(sys.executable)).replace("{", "{{").replace("}", "}}")
    shell.prefix(f'export PATH={_bin}:"$PATH"; {_variant_env}')
elif _variant_env:
    shell.prefix(_variant_env)


#: every job's conda environment (the pinned stack with this package; used with --use-conda)
ENV = "../../envs/environment.yaml"
#: the profile every figure and table job draws under: each states its evidence level
#: (`sharpness --profile P ...`, sharpness.evidence.level)
PROFILE = config.get("profile", "quick")
#: the resources of a job that draws one figure or table from finished numbers
DRAWING = {"mem_mb": 1000, "runtime": 10}


def one_of(names):
    """A wildcard constraint that matches exactly these names ("NONE" when there are none,
    so an empty list matches nothing)."""
    return "|".join(map(re.escape, names)) or "NONE"


# `sharpness data prepare` options from the `data` section, one list item per shell word
# (`{params.data_args:q}` quotes each, so a folder name with spaces stays one argument).
DATA_ARGS = (
    ["--root", str(config["data"]["root"])]
    + (["--mirror", str(config["data"]["mirror"])] if config["data"].get("mirror") else [])
    + ([] if config["data"].get("download", True) else ["--no-download"])
)


@functools.cache
def code(cli, *modules):
    """Code fingerprint of what a rule's command runs, for its `params: code=`.

    `cli` is the `sharpness` subcommand's module (`sharpness.commands.<cli>`, counted with its
    top-level imports: each action imports its library inside its function); `modules` are
    the library modules that action runs, followed through every `sharpness` import. Editing
    any of those files (committed or not) changes the param, so Snakemake reruns exactly the
    jobs whose command runs it, and what depends on them (sharpness.runs.cache)."""
    return code_fingerprint(*modules, shallow=(f"sharpness.commands.{cli}", "sharpness.cli"))


def provenance_labels(path):
    """Report labels for a figure or table: its id and the provenance id read at report time,
    once its files were checked against the hashes its record holds (an edited file stops
    the report naming it: sharpness.runs.seal.report_provenance)."""

    def labels(wildcards):
        from sharpness.runs.seal import report_provenance

        target = path.format(**wildcards)
        stem = target.rsplit(".", 1)[0]
        return {"item": os.path.basename(stem), "provenance": report_provenance(target)}

    return labels


def paper_report(path, paper, item):
    """Mark a figure or table for `snakemake --report`: caption, paper category, provenance id.

    Snakemake cannot resolve wildcards in a caption path, so a wildcard item ("{fig}") gets
    the generic caption `workflow/report/item.rst`, which prints the job's `caption` param;
    such rules set that param to `caption_text(paper, "fig")`."""
    wildcard = "{" in item
    return report(
        path,
        caption="../report/item.rst" if wildcard else f"../report/{paper}/{item}.rst",
        category=paper,
        labels=provenance_labels(path),
    )


def drawn(paper, item):
    """A figure's outputs: the PDF (marked for the report), its PNG and its CSV."""
    stem = f"figures/{paper}/{item}"
    return {"pdf": paper_report(f"{stem}.pdf", paper, item), "png": f"{stem}.png",
            "csv": f"{stem}.csv"}


def tabled(paper, item):
    """A table's outputs: the Markdown (marked for the report), its LaTeX and its CSV."""
    stem = f"figures/{paper}/{item}"
    return {"md": paper_report(f"{stem}.md", paper, item), "tex": f"{stem}.tex",
            "csv": f"{stem}.csv"}


def caption_text(paper, wildcard):
    """The text of `workflow/report/<paper>/<value of wildcard>.rst`, for `paper_report`."""

    def text(wildcards):
        name = getattr(wildcards, wildcard)
        with open(os.path.join(workflow.basedir, "workflow", "report", paper, f"{name}.rst")) as h:
            return h.read()

    return text


def paper_targets(paper):
    """The final outputs of one paper (every target lives under figures/<paper>/)."""
    return [t for t in map(str, ALL_TARGETS) if t.startswith(f"figures/{paper}/")]


@functools.cache
def _gpu_mem_table(path):
    """The campaign's per-job GPU memory map (sharpness.planning.campaign.MemoryMap), read once."""
    import json

    try:
        with open(path) as handle:
            return json.load(handle)
    except (OSError, ValueError) as err:
        raise ValueError(f"plan.gpu_mem_file {path}: not a readable memory map ({err})") from None


def job_gpu_mem(rule, wildcard=None):
    """A GPU rule's `gpu_mem_mb` resource: the memory (MB) its job reserves in the campaign's
    gpu_mem_mb pool, from the map `sharpness campaign` writes and the config key
    `plan.gpu_mem_file` names (each job its own measured shape's peak with slack, its rule's
    value where the shape was not measured); 0 without that key (no pool: nothing packed).
    ``wildcard`` names the rule's wildcard whose value is the job's id; a rule with one job and
    no wildcard takes that job's."""

    def mb(wildcards):
        path = (config.get("plan") or {}).get("gpu_mem_file")
        if not path:
            return 0
        table = _gpu_mem_table(path)
        job = getattr(wildcards, wildcard) if wildcard else PLAN.ids(rule)[0]
        return int(table["jobs"].get(f"{rule}/{job}", table["rules"].get(rule, 0)))

    return mb
