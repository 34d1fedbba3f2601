# The named input and parameter functions of the paper files, in one place (Snakemake's own
# advice, so that the files of the papers hold only their steps). Each takes the job's
# wildcards and reads what the paper's file expanded from the config (LESAM_RUNS,
# EOS_SETTINGS, ...) when the job is planned; a step names the function it reads.


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


# --- lesam (lesam.smk) --------------------------------------------------------------------
def lesam_run_inputs(wildcards):
    """The runs a training run starts from, its data and the ImageNet check (a missing
    user-provided data set stops the plan here, with what to put where)."""
    return lesam_steps.run_inputs(LESAM, wildcards.run, config["data"])


def lesam_run(wildcards):
    """The training run's own config."""
    return LESAM_RUNS[wildcards.run]["config"]


def lesam_probe(wildcards):
    """The config of a GLMC long-tail run or a signal probe (their ids never meet: GLMC runs
    are named lt<factor>-...)."""
    return (LESAM_GLMC.get(wildcards.run) or LESAM_SIGNAL[wildcards.run])["config"]


def lesam_probe_data(wildcards):
    """The prepared data set a GLMC run or a signal probe reads."""
    return lesam_steps.data_inputs(lesam_probe(wildcards))


def lesam_probe_gpu(wildcards):
    return lesam_steps.gpu(lesam_probe(wildcards))


def lesam_eval_runs(wildcards):
    """Every trained run of the groups the evaluated item reads."""
    return lesam_steps.eval_runs(LESAM, wildcards.what)


def lesam_eval_gpu(wildcards):
    """The cost and domain-generalisation evaluations train or time on the device."""
    return lesam_steps.gpu(LESAM["base"]) if wildcards.what in ("cost", "domain_gen") else 0


def lesam_build_runs(wildcards):
    """A file of each run folder the table or figure draws (its record says which run)."""
    return lesam_steps.build_runs(LESAM, wildcards.item)


def lesam_build_evaluation(wildcards):
    """The evaluation file the table or figure draws, if any."""
    return lesam_steps.build_evaluation(wildcards.item)


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
