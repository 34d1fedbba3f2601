# The claims ledger: the last rule of `all`. It reads every figure's and table's
# CSV (and provenance sidecar) and writes figures/CLAIMS.md, claims.csv and claims.json: one
# row per claim of the three papers and per catalog check, with a verdict computed from the
# numbers (`sharpness claims build`). Included after every paper's rule file, so that
# ALL_TARGETS is complete here.

# A GPU-budget plan (`sharpness plan`, config `plan:`) limits `all` to its targets, and the
# ledger records which plan settled each verdict. (Not the build's PLAN of jobs, which the
# rules' input functions read when Snakemake plans: that name stays the Snakefile's.)
BUDGET_PLAN = config.get("plan") or {}
# every item of the profile, before a plan limits `all`: the targets a command line may name
PROFILE_ITEMS = [str(t) for t in ALL_TARGETS]
if BUDGET_PLAN:
    _unknown = sorted(set(BUDGET_PLAN["targets"]) - {str(t) for t in ALL_TARGETS}
                      - {"figures/CLAIMS.md"}
                      - {str(t).rsplit(".", 1)[0] + ".csv" for t in ALL_TARGETS})
    if _unknown:
        raise ValueError(f"config plan.targets: not outputs of this profile: {_unknown}")
    ALL_TARGETS[:] = [t for t in BUDGET_PLAN["targets"] if t != "figures/CLAIMS.md"]

CLAIMS_INPUTS = [str(t) for t in ALL_TARGETS]
# every file the ledger reads is an input: each item's CSV too (beside its PDF or table), so a
# CSV rebuilt reruns the ledger; the build checks each CSV against its sidecar's hash
CLAIMS_INPUTS += sorted({t.rsplit(".", 1)[0] + ".csv" for t in CLAIMS_INPUTS
                         if t.endswith((".pdf", ".md"))} - set(CLAIMS_INPUTS))

# the registration the ledger is built under (docs/registration/PROFILE[-seedN].json, committed
# before the run): an input, so a registration written later rebuilds the ledger against it
from sharpness.claims.registration_files import existing_registration

SEED_OFFSET = int(config.get("seed_offset", 0) or 0)
REGISTRATION = existing_registration(config.get("profile", "quick"), SEED_OFFSET)


rule claims:
    input:
        CLAIMS_INPUTS,
        plan=[BUDGET_PLAN["file"]] if BUDGET_PLAN else [],
        registration=[str(REGISTRATION)] if REGISTRATION else [],
    output:
        md=report("figures/CLAIMS.md", caption="../report/claims.rst", category="claims",
                  labels={"item": "CLAIMS", "provenance": "ledger"}),
        csv="figures/claims.csv",
        json="figures/claims.json",
    message:
        "claims: the claims ledger from every figure and table ({output.md})"
    log: "logs/claims.log"
    benchmark: "benchmarks/results/claims.tsv"
    resources: **DRAWING
    conda: ENV
    params:
        code=code("claims", "sharpness.claims.ledger"),
        profile=config.get("profile", "quick"),
        figures=lambda wildcards, output: os.path.dirname(output.md),
        plan=["--plan", BUDGET_PLAN["file"]] if BUDGET_PLAN else [],
        seed_offset=SEED_OFFSET,
        # what would settle each inconclusive row, priced by the planner (it times steps on
        # this CPU for the evidence profile); the quick profile is the smoke test: no prices
        price=[] if config.get("profile", "quick") == "quick" else ["--price"],
    shell:
        "sharpness claims build --figures {params.figures:q} --profile {params.profile:q}"
        " --seed-offset {params.seed_offset:q} --out {output.md:q} {params.price:q} {params.plan:q} > {log:q} 2>&1"


ALL_TARGETS.append("figures/CLAIMS.md")
