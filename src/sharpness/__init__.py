"""Reference replication pipeline for three papers on sharpness in deep learning."""

__version__ = "0.1.0"
