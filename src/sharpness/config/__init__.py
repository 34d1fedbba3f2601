"""The workflow's configuration in one place: loading and merging profiles (``profiles``),
checking one against the schema and across keys (``check``), the reference written from the
schema (``doc``). The ``seed_offset`` that moves every seed of a profile is applied by
:func:`sharpness.mappings.offset_seeds`, a leaf the claims registration reads too.

The Snakefile and the commands (``sharpness cost``, ``sharpness plan``) read a profile through
the same functions, so they see the same config. This ``__init__`` imports nothing: the
Snakefile and the library import the modules they use.
"""
