# The named input and parameter functions of the paper files, in one place (Snakemake's own
# advice, so that the files of the papers hold only their steps). Each takes the job's
# wildcards and reads the job's entry in the build's plan (PLAN: sharpness.jobs, built once by
# the Snakefile) when the job is planned; a step names the function it reads.


# --- minorfirst (minorfirst.smk) ----------------------------------------------------------
def minorfirst_settings(wildcards):
    """The figure's own section of the config, as JSON (a change reruns only that figure)."""
    return as_json(section("minorfirst", wildcards.fig))


# --- minorfirst Grad-CAM (gradcam.smk) ----------------------------------------------------
def gradcam_data(wildcards):
    """The prepared data set a training job reads (none for embedded ones)."""
    return GRADCAM_DATA[wildcards.dataset]


def gradcam_maps_args(wildcards, input):
    """`KEY=FOLDER` of each data set's maps, in the config's order."""
    return [f"{key}={os.path.dirname(path)}"
            for key, path in zip(GRADCAM_DATASETS, input.maps)]


# --- every paper -------------------------------------------------------------------------
def planned(rule, wildcard):
    """A job's inputs as the plan lists them (sharpness.jobs): ``config``, the file its
    settings are in (when it reads one), and ``inputs``, the rest."""

    def inputs(wildcards):
        job = PLAN.job(rule, getattr(wildcards, wildcard))
        named = {"inputs": [p for p in job.inputs if p != job.config_file]}
        if job.config_file is not None:
            named["config"] = job.config_file
        return named

    return inputs


# --- lesam (lesam.smk) --------------------------------------------------------------------
def lesam_run_inputs(wildcards):
    """A training run's inputs from the plan (the runs it starts from, its data, the ImageNet
    check, its config file); a missing user-provided data set stops the plan here, with what
    to put where (only when the run is asked for)."""
    problem = lesam_steps.user_data_problem(config["data"], lesam_run(wildcards))
    if problem:
        raise FileNotFoundError(f"lesam run {wildcards.run}: {problem}")
    return planned("lesam_train", "run")(wildcards)


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


# --- eos (eos.smk) ------------------------------------------------------------------------
def eos_setting_data(wildcards):
    """The prepared data sets the setting reads (none for synthetic data)."""
    return setting_data_inputs(EOS_SETTINGS[wildcards.setting])


def eos_setting_gpu(wildcards):
    return setting_gpu(EOS_SETTINGS[wildcards.setting])


def eos_setting_json(wildcards):
    return as_json(EOS_SETTINGS[wildcards.setting])


def eos_figure_inputs(wildcards):
    """What a figure is drawn from: the toy's numbers for fig_diagonal, else the sweep of
    every setting the figure lists."""
    if wildcards.fig == "fig_diagonal":
        return rules.eos_toy.output
    return figure_sweeps(EOS, wildcards.fig, EOS_RES)


def eos_dropped(wildcards):
    """The settings the profile dropped, which a network figure names (JSON)."""
    return "{}" if wildcards.fig == "fig_diagonal" else as_json(dropped_settings(EOS))
