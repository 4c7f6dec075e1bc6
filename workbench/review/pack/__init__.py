"""The review pack's content (rendering lives in :mod:`workbench.report`)."""
