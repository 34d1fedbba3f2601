"""Subcommands of ``sharpness``; each module defines ``register(subparsers)``."""
