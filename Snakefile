# Entry point: load and validate the configuration, include one rule file per paper, and
# define `all` over every figure and table built so far.
#
#   snakemake --cores all                                         # quick profile (default)
#   snakemake --cores all --configfile workflow/config/paper.yaml # paper scale
#   snakemake figures/minorfirst/l1_maxmargin.pdf                 # one figure, only what it needs
#   snakemake --cores all eos_all                                  # one paper (minorfirst|lesam|eos|bridges)_all

import os
import sys

from snakemake.utils import min_version

min_version("9.0")


configfile: "workflow/config/quick.yaml"


# A --configfile that is a whole profile (it names its `profile` and its `data`, as paper.yaml
# does) replaces the default quick.yaml instead of being merged over it; files that only
# change some settings are merged over the last profile (sharpness.config.profiles, the rule
# `sharpness cost` and `sharpness plan` read a profile by).
# Each file is read again as plain data (sharpness.config.plain), never through Snakemake's
# loader, which evaluates yte templates: a file holding one (`__use_yte__`, `?`-expressions,
# `__definitions__`), a YAML tag or a repeated key stops the workflow here, the key named.
# Snakemake itself has already evaluated a file with `__use_yte__: true` before this line:
# check configs from elsewhere with `sharpness config check FILE` first (docs/security.md).
from sharpness.config.plain import read_plain_config, refuse_templates
from sharpness.config.profiles import compose, is_whole_profile

_given = [read_plain_config(f, loaded_by_snakemake=True)
          for f in workflow.config_settings.configfiles]
refuse_templates(config, "the config (with --config)")
if any(is_whole_profile(c) for c in _given):
    _merged = compose(_given, overrides=dict(workflow.config_settings.config or {}))
    config.clear()
    config.update(_merged)


# Bad input stops here, while the workflow plans (`snakemake -n` too), with the key named:
# a nested --config value that Snakemake read as text (the error shows the --configfile
# overlay to use instead), the schema (names, ranges and their upper bounds), no NaN or
# infinity (sharpness.config.check), and every lesam run and eos setting as it will run (each
# paper's check, through sharpness.jobs; the schema's defaults document the code's, they are
# not filled in).
from sharpness.config.check import check_command_line
from sharpness.jobs import check_workflow_config

check_command_line(dict(workflow.config_settings.config or {}))
check_workflow_config(config, os.path.join(workflow.basedir, "workflow/config/config.schema.yaml"))

# Your own settings beside the default: a config that changes any setting of its profile (a
# --configfile merged over it, a --config value, a seed_offset) is a variant and builds in
# variants/<name>/ (its own results/, figures/, logs/ and .snakemake/), never over the default
# build; every figure, caption and ledger of it names it and its differences
# (sharpness.config.variant; `sharpness diff` compares a variant's figure with the default's).
from sharpness.config.variant import ENV as VARIANT_ENV, RECORD as VARIANT_RECORD
from sharpness.config.variant import rebase, variant_of_files, write_record

VARIANT = variant_of_files(
    workflow.config_settings.configfiles, _given, config,
    read_plain_config(os.path.join(workflow.basedir, "workflow/config/quick.yaml")))
if VARIANT is not None:
    for _key in ("root", "mirror", "imagenet"):  # data stays where it is, shared with the default
        if _key in config["data"]:
            config["data"][_key] = rebase(config["data"][_key], VARIANT.folder)
    if config.get("plan"):  # a plan's record stays where `sharpness plan` wrote it
        config["plan"]["file"] = rebase(config["plan"]["file"], VARIANT.folder)
    # the report reads every config file again, from the variant's folder
    workflow.configfiles[:] = [os.path.abspath(f) for f in workflow.configfiles]
    workflow.workdir(VARIANT.folder)
    write_record(VARIANT)
    config["variant"] = VARIANT.name  # the report's front page names it
    os.environ[VARIANT_ENV] = VARIANT_RECORD
    print(f"{VARIANT.summary()}\n  builds in {VARIANT.folder}/ (the default build is left as "
          "it is)", file=sys.stderr)

# A second look with fresh seeds: the top-level `seed_offset` moves every seed the profile
# names, once, before any rule reads the config (sharpness.mappings).
from sharpness.mappings import offset_seeds

offset_seeds(config)

# The plan: every job of the build, with its id, resolved config, inputs and outputs, built
# once from the config resolved above (sharpness.jobs; `sharpness jobs` lists the same). The
# rules take their ids, files, inputs and outputs from PLAN, and a job's command line names
# its file, never its whole config. The files are written below, once no link is planted
# where they go.
from sharpness.jobs import build_plan

PLAN = build_plan(config)

# Job logs and benchmark timings are written in place by the shell and Snakemake, and the
# run and figure folders hold the files jobs write: a link planted among them would be written
# through, so planning stops naming every link there (sharpness.io.refuse_links).
from sharpness.io import refuse_links

refuse_links(*(d for d in ("logs", "benchmarks/results", "results", "figures")
               if os.path.isdir(d)))

# Each job's config file, written now that no link is planted where it goes (an unchanged
# file is not touched, so a changed setting reruns exactly the jobs whose file changed).
PLAN.write()

# When Snakemake refuses to plan because another invocation's job is running
# (IncompleteFilesException, or its lock), the message ends with the run folders being
# written now and by which live process, and says to wait before --rerun-incomplete
# (sharpness.runs.lockinfo; `sharpness locks` prints the same list).
from snakemake.logging import logger as snakemake_logger

from sharpness.runs.lockinfo import RefusalNote

if not any(isinstance(h, RefusalNote) for h in snakemake_logger.handlers):
    snakemake_logger.addHandler(RefusalNote(["results", config["data"]["root"]]))

# A job running longer than a few seconds gets a heartbeat on the console: how long it has
# run, its log's path and the log's last line (sharpness.runs.console; SHARPNESS_HEARTBEAT_S
# sets the interval, 0 turns it off).
from sharpness.runs.console import JobWatch

if not any(isinstance(h, JobWatch) for h in snakemake_logger.handlers):
    snakemake_logger.addHandler(JobWatch())


report: "workflow/report/workflow.rst"

# Each rule file appends the final outputs it owns; `all` asks for every one of them.
ALL_TARGETS = []


include: "workflow/rules/common.smk"
include: "workflow/rules/inputs.smk"
include: "workflow/rules/data.smk"
include: "workflow/rules/minorfirst.smk"
include: "workflow/rules/gradcam.smk"
include: "workflow/rules/lesam.smk"
include: "workflow/rules/eos.smk"
include: "workflow/rules/bridges.smk"
include: "workflow/rules/claims.smk"
include: "workflow/rules/crate.smk"


# When this invocation started: the closing screen lists the figures and tables written since.
import time

BUILD_STARTED = time.time()

# The last screen: what the build made and what to do next (kept in logs/end_screen.txt), or
# which job failed and how to resume (sharpness.crate.screen).
onsuccess:
    import sys

    from sharpness.crate.screen import finished, show

    show(finished(".", sys.argv, started=BUILD_STARTED,
                  variant=VARIANT.folder if VARIANT is not None else None))


onerror:
    import sys

    from sharpness.crate.screen import failed

    print(failed(log, sys.argv, variant=VARIANT.folder if VARIANT is not None else None))


rule all:
    default_target: True
    input:
        ALL_TARGETS,
    message:
        f"all: every figure and table of the profile, its ledger and crate ({len(ALL_TARGETS)} targets)"


# One target per paper, e.g. `snakemake --cores 2 eos_all`: only that paper's items and what
# they need (the budget script times each of them).
rule minorfirst_all:
    input:
        paper_targets("minorfirst"),
    message:
        "minorfirst_all: every figure and table of paper minorfirst"


rule lesam_all:
    input:
        paper_targets("lesam"),
    message:
        "lesam_all: every figure and table of paper lesam"


rule eos_all:
    input:
        paper_targets("eos"),
    message:
        "eos_all: every figure and table of paper eos"


rule bridges_all:
    input:
        paper_targets("bridges"),
    message:
        "bridges_all: every figure and table of paper bridges"


# A mistyped target stops here with the nearest figure, table or rule names (Snakemake's own
# MissingRuleException names none): sharpness.config.targets.
import sys

from sharpness.config.targets import from_snakefile

from_snakefile(sys.argv, PROFILE_ITEMS + ALL_TARGETS, [r.name for r in workflow.rules])
