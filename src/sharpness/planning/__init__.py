"""Spending a GPU budget where it settles claims.

* :mod:`sharpness.planning.select`: the budgeted choice of claims (greedy set-union knapsack,
  checked against brute force).
* :mod:`sharpness.planning.power`: the runs each predicate reads and the seeds that reach a
  stated power at the paper's effect and a measured seed spread (``reads.yaml``).
* :mod:`sharpness.planning.claims_plan`: claims -> runs -> GPU-hours -> a plan, written as a
  record (JSON) and a config overlay for ``snakemake --configfile``.
* :mod:`sharpness.planning.prices`: each run's GPU-hours with their basis, and at its step
  caps (a full-batch eos run is priced at its expected steps, :mod:`sharpness.cost.eos_steps`).
* :mod:`sharpness.planning.sequential`: sequential seeds, a group-sequential paired t test
  with an alpha-spending function.
* :mod:`sharpness.planning.driver`: the loop that runs Snakemake for the current seeds, reads
  the ledger row, decides, and extends.
* :mod:`sharpness.planning.ledger`: the plan in the ledger (provenance, GPU-hours per claim,
  sequential verdicts).
* :mod:`sharpness.planning.offline`: the data sets and pretrained weight files a profile's or
  a plan's runs read (``sharpness data bundle``, the campaign's preflight).
"""

#: the alpha-spending functions of the group-sequential test (O'Brien-Fleming-like, Pocock)
SPENDING = ("obf", "pocock")
#: the default power a claim is planned for (here, not in :mod:`.power`: the CLI's parser
#: shows it, and importing :mod:`.power` imports scipy.stats, about 0.5 CPU-s a process)
DEFAULT_POWER = 0.8
#: what a profile's total includes, in words: the README's profile price and the planner's
#: whole-profile total (both :func:`sharpness.cost.total_row`, each run once) say it beside
#: the number (here, not in :mod:`sharpness.cost`: the README generator imports no torch)
PROFILE_TOTAL = ("every training run of the profile once, at its configured seeds; "
                 "post-hoc analyses not included")
