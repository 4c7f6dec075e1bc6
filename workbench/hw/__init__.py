"""Accelerator descriptions: the schema, the loader and host calibration."""

from workbench.hw.schema import SCHEMA_VERSION, Hardware, MemoryLevel

__all__ = ["SCHEMA_VERSION", "Hardware", "MemoryLevel"]
