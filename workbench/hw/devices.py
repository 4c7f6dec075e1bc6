"""Which shipped hardware profile a trace's GPU name means: data, not code.

The table is ``workbench/hw/data/device_profiles.yaml`` (a regular expression per profile, matched
case-insensitively, the first match wins), read once by the strict YAML loader and validated here:
an unknown field, a pattern that does not compile or a profile that is not shipped is one
:class:`~workbench.errors.HardwareError` line naming the file and the entry.
"""

from __future__ import annotations

import functools
import re
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from workbench._files import read_text_bounded
from workbench.errors import HardwareError
from workbench.hw.loader import _format_validation, _parse_yaml, builtin_dir

__all__ = [
    "DEVICE_PROFILES_FILE",
    "DeviceProfile",
    "DeviceProfiles",
    "load_device_profiles",
    "profile_for_device",
]

#: ``(compiled pattern, profile name)`` pairs, in the order they are tried.
Table = tuple[tuple[re.Pattern[str], str], ...]
#: The shipped table of GPU names -> profiles.
DEVICE_PROFILES_FILE = Path(__file__).resolve().parent / "data" / "device_profiles.yaml"


class DeviceProfile(BaseModel):
    """One GPU-name pattern and the shipped profile it selects."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    pattern: str = Field(
        min_length=1, description="Python regular expression, searched case-insensitively."
    )
    profile: str = Field(min_length=1, description="A shipped profile: hardware/<profile>.yaml.")

    @field_validator("pattern")
    @classmethod
    def _compiles(cls, value: str) -> str:
        try:
            re.compile(value, re.I)
        except re.error as exc:
            raise ValueError(f"not a regular expression ({exc})") from None
        return value

    @field_validator("profile")
    @classmethod
    def _shipped(cls, value: str) -> str:
        if not (builtin_dir() / f"{value}.yaml").is_file():
            raise ValueError(f"{value!r} is not a shipped hardware profile")
        return value


class DeviceProfiles(BaseModel):
    """The table: patterns in the order they are tried."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    schema_version: Literal[1] = Field(description="Format version of this file.")
    devices: tuple[DeviceProfile, ...] = Field(
        min_length=1, description="GPU-name patterns, first match wins."
    )


def load_device_profiles(path: Path = DEVICE_PROFILES_FILE) -> Table:
    """The table at ``path`` as ``(compiled pattern, profile)`` pairs, in order.

    Raises:
        HardwareError: One line naming the file (and the entry's field path).
    """
    where = str(path)
    data = _parse_yaml(read_text_bounded(path, 1 << 20, what="device table"), where)
    try:
        table = DeviceProfiles.model_validate(data)
    except ValidationError as exc:
        raise HardwareError(_format_validation(exc, where)) from None
    return tuple((re.compile(d.pattern, re.I), d.profile) for d in table.devices)


@functools.cache
def _shipped() -> Table:
    return load_device_profiles()


def profile_for_device(device: str) -> str | None:
    """The shipped profile for a trace's GPU name, or None when none fits.

    >>> profile_for_device("Tesla V100-SXM2-16GB"), profile_for_device("NVIDIA A100-PG509-200")
    ('v100-sxm2', 'a100-80gb')
    """
    for pattern, name in _shipped():
        if pattern.search(device):
            return name
    return None
