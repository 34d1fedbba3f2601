# Paper `lesam` (paper 002): Loss-Equated SAM. Rules are added by the lesam issue.
