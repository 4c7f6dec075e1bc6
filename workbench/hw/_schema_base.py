"""The strict base of every hardware-schema model, and the dtype-map check they share."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationInfo, field_validator

from workbench.hw._strict import check_value
from workbench.ir.dtypes import DTYPES, canonical

__all__: list[str] = []


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

    @field_validator("*", mode="before")
    @classmethod
    def _no_coercion(cls, value: Any, info: ValidationInfo) -> Any:
        field = cls.model_fields.get(info.field_name or "")
        if field is not None:
            check_value(value, field.annotation, info.field_name or "")
        return value


def _dtype_map(value: dict[str, float]) -> dict[str, float]:
    if not value:
        raise ValueError("needs at least one dtype")
    out: dict[str, float] = {}
    for key, v in value.items():
        if key not in DTYPES and canonical(key, where="") not in DTYPES:
            raise ValueError(f"unknown dtype {key!r}")
        if v <= 0:
            raise ValueError(f"{key}: must be > 0")
        out[canonical(key)] = v
    return out
