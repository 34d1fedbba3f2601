# Entry point: load and validate the configuration, include one rule file per paper, and
# define `all` over every figure and table built so far.
#
#   snakemake --cores all                                         # quick profile (default)
#   snakemake --cores all --configfile workflow/config/paper.yaml # paper scale
#   snakemake figures/minorfirst/slice_l1_gd.pdf                  # one figure, only what it needs

from snakemake.utils import min_version, validate

min_version("9.0")


configfile: "workflow/config/quick.yaml"


validate(config, "workflow/config/config.schema.yaml")


report: "workflow/report/workflow.rst"

# Each rule file appends the final outputs it owns; `all` asks for every one of them.
ALL_TARGETS = []


include: "workflow/rules/common.smk"
include: "workflow/rules/data.smk"
include: "workflow/rules/minorfirst.smk"
include: "workflow/rules/gradcam.smk"
include: "workflow/rules/lesam.smk"
include: "workflow/rules/eos.smk"
include: "workflow/rules/bridges.smk"


rule all:
    default_target: True
    input:
        ALL_TARGETS,
