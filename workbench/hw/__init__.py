"""Accelerator descriptions: the schema, the loader and host calibration."""

from workbench.hw.loader import (
    hardware_dirs,
    hardware_hash,
    json_schema,
    list_hardware,
    load_hardware,
)
from workbench.hw.schema import SCHEMA_VERSION, Hardware, MemoryLevel

__all__ = [
    "SCHEMA_VERSION",
    "Hardware",
    "MemoryLevel",
    "hardware_dirs",
    "hardware_hash",
    "json_schema",
    "list_hardware",
    "load_hardware",
]
