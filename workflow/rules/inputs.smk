# The named input and parameter functions of the paper files, in one place (Snakemake's own
# advice, so that the files of the papers hold only their steps). Each takes the job's
# wildcards and reads the job's entry in the build's plan (PLAN: sharpness.jobs, built once by
# the Snakefile) when the job is planned; a step names the function it reads.


# --- lesam (lesam.smk) --------------------------------------------------------------------
def lesam_run_inputs(wildcards):
    """A training run's inputs from the plan (the runs it starts from, its data, the ImageNet
    check, its config file); a missing user-provided data set stops the plan here, with what
    to put where (only when the run is asked for)."""
    problem = lesam_steps.user_data_problem(config["data"], lesam_run(wildcards))
    if problem:
        raise FileNotFoundError(f"lesam run {wildcards.run}: {problem}")
    return plan_inputs("lesam_train", "run")(wildcards)


def lesam_run(wildcards):
    """The training run's own config (what its file holds)."""
    return PLAN.job("lesam_train", wildcards.run).config


def lesam_probe_gpu(wildcards):
    """GPUs of a GLMC run or a signal probe (their ids never meet: GLMC runs are named
    lt<factor>-...)."""
    jobs = PLAN.of_rule("lesam_glmc")
    job = jobs.get(wildcards.run) or PLAN.job("lesam_signal", wildcards.run)
    return lesam_steps.gpu(job.config["config"])


def lesam_eval_gpu(wildcards):
    """The cost and domain-generalisation evaluations train or time on the device."""
    return lesam_steps.gpu(LESAM["base"]) if wildcards.what in ("cost", "domain_gen") else 0


# --- jobs from the plan (every paper's rules) ----------------------------------------------
def plan_inputs(rule, wildcard=None):
    """A rule's inputs from the plan (sharpness.jobs): ``config`` (the job's config file, when
    it reads one) and ``data`` (everything else it reads: prepared data sets, upstream
    outputs), for `unpack()`. ``wildcard`` names the rule's wildcard whose value is the job's
    id; a rule with one job and no wildcard takes that job."""

    def inputs(wildcards):
        if wildcard is None:
            (job,) = PLAN.of_rule(rule).values()
        else:
            job = PLAN.job(rule, getattr(wildcards, wildcard))
        named = {"data": [p for p in job.inputs if p != job.config_file]}
        if job.config_file is not None:
            named["config"] = job.config_file
        return named

    return inputs


# --- eos (eos.smk) ------------------------------------------------------------------------
def eos_setting_gpu(wildcards):
    """GPUs the setting's sweep asks for: 0 when it is pinned to the CPU, else 1."""
    return setting_gpu(PLAN.job("eos_setting", wildcards.setting).config)
