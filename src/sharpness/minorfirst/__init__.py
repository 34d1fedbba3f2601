"""Per-figure computations and plots of the ``minorfirst`` paper (SAM on diagonal networks)."""
