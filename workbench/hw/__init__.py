"""Accelerator descriptions and software stacks: the schemas, the loaders, host calibration."""

from workbench.hw.loader import (
    hardware_dirs,
    hardware_hash,
    json_schema,
    list_hardware,
    load_hardware,
)
from workbench.hw.schema import SCHEMA_VERSION, Hardware, MemoryLevel
from workbench.hw.stack import DEFAULT_STACK, Stack, list_stacks, load_stack

__all__ = [
    "DEFAULT_STACK",
    "SCHEMA_VERSION",
    "Hardware",
    "MemoryLevel",
    "Stack",
    "hardware_dirs",
    "hardware_hash",
    "json_schema",
    "list_hardware",
    "list_stacks",
    "load_hardware",
    "load_stack",
]
