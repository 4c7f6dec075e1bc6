"""Subcommands of the ``workbench`` CLI, one module each (see :mod:`workbench.cli`)."""
