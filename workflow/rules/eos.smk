# Paper `eos` (paper 003): norm vs sharpness at the edge of stability. Rules are added by the eos issue.
