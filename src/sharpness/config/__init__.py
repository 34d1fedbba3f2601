"""The workflow's configuration in one place: loading and merging profiles (``profiles``),
checking one against the schema and across keys (``check``), the reference written from the
schema (``doc``) and the ``seed_offset`` that moves every seed of a profile (``seeds``).

The Snakefile and the commands (``sharpness cost``, ``sharpness plan``) read a profile through
the same functions, so they see the same config. This ``__init__`` imports nothing: the
Snakefile and the library import the modules they use.
"""
