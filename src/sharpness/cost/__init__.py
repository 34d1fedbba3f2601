"""The price of a profile before it starts: runs, optimizer steps and GPU-hours per item.

:func:`plan_jobs` prices the training jobs of a workflow config's plan
(:func:`sharpness.jobs.build_plan`, the plan the Snakefile's rules read; no run list is
expanded here), one priced job per training, each from its plan job's own config and naming
that job (``plan_job``), with its number of optimizer steps, the examples one step
sees and the forward+backward passes it makes (1 for SGD/GD, 2 for the SAM family, more for
Eigen-SAM's power iterations; GLMC's two mixed batches double them). :func:`price` turns them into GPU-hours in one of two ways:

``measured``
    a short timing of each distinct (model, input shape, per-device batch) on the current
    device: a few warm-up and timed SGD steps (forward, backward, update; channels_last on
    CUDA), once in fp32 and once under bf16 autocast, so a pass costs what this device makes
    it cost in each precision;
``analytic``
    without a GPU: the forward FLOPs of one example counted by
    ``torch.utils.flop_counter.FlopCounterMode`` on a meta-device copy of the model (no memory,
    no compute), times 3 for forward+backward, divided by a stated sustained throughput per
    precision (``--tflops fp32=20,bf16=40``). This is an **estimate**, and every price says so
    with the rate it used.

A shape a GPU has measured (``measured.yaml`` beside this module: GPU, commit, seconds per
step) is priced from that measurement in either method, and its price names the GPU and the
commit.

Every table prices both precisions: fp32, as the official codes train and the paper profile
runs, and bf16 autocast, the speed option (``bf16: true``).

What is priced: the training runs (and the full-batch sweeps and gradient flows of the eos
paper) that items need; evaluation passes (test set per epoch) are added at forward cost.
Post-hoc analyses (PGD, Hessian spectra, Grad-CAM) and the CPU-only theory items are not.
Runs shared by several items (the CIFAR-10 ResNet-18 runs feed four lesam items) appear in
each item's row and once in the total. Full-batch runs stop at their loss goal, usually long
before ``max_steps``: an eos run whose data set x model x loss has measured step counts is
priced at its expected steps (:mod:`sharpness.cost.eos_steps`), its price at the caps
(``max_steps``, the flow's ``max_evals``) printed beside it as ``(≤ Y at the step cap)``; a
full-batch run without such counts is priced at its caps, an upper bound marked ``≤``.
"""

from sharpness.cost.plan import (
    BACKWARD_FACTOR,
    DATA_SHAPES,
    DEFAULT_TFLOPS,
    FP32_FRACTION,
    FP32_SOURCE,
    LANCZOS_ITERS,
    METHOD_PASSES,
    PASSES,
    TFLOPS_SOURCE,
    Job,
    bridges_jobs,
    eos_jobs,
    gradcam_jobs,
    lesam_jobs,
    passes_per_step,
    plan_jobs,
)
from sharpness.cost.price import (
    MEASURED,
    Priced,
    Row,
    default_rates,
    forward_flops,
    hours_text,
    iter_items,
    measure_pass_seconds,
    measured_throughputs,
    parse_tflops,
    price,
    rates_text,
    render,
    render_precisions,
    table,
    total_row,
)

__all__ = ["BACKWARD_FACTOR", "DATA_SHAPES", "DEFAULT_TFLOPS", "FP32_FRACTION", "FP32_SOURCE",
           "MEASURED",
           "LANCZOS_ITERS", "METHOD_PASSES", "PASSES",
           "TFLOPS_SOURCE", "Job", "Priced", "Row", "bridges_jobs", "default_rates", "eos_jobs",
           "forward_flops", "gradcam_jobs", "hours_text", "iter_items", "lesam_jobs", "measure_pass_seconds",
           "measured_throughputs", "parse_tflops", "passes_per_step", "plan_jobs", "price",
           "rates_text", "render", "render_precisions", "table", "total_row"]
