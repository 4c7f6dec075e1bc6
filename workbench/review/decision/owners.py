"""Owners: which role owns each mechanism class, with its responsibility and closure artifact.

The table is a YAML file validated by Pydantic (``extra="forbid"``); the default is
``workbench/review/data/owners.yaml``. Every mechanism class in
:data:`~workbench.review.diagnosis.first_failing.MECHANISMS` must have exactly one owner.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from workbench.review.decision._config import DATA_DIR, load_yaml_model
from workbench.review.diagnosis.first_failing import MECHANISMS

__all__ = ["DEFAULT_OWNERS", "OwnerRole", "OwnershipTable", "load_owners"]

DEFAULT_OWNERS = DATA_DIR / "owners.yaml"


class OwnerRole(BaseModel):
    """One role in the ownership table."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    role: str = Field(min_length=1, description="Role name, e.g. 'ML compiler engineer'.")
    responsibility: str = Field(min_length=1, description="What the role is primarily for.")
    closure_artifact: str = Field(min_length=1, description="What the role hands in to close.")
    mechanisms: tuple[str, ...] = Field(
        description="Mechanism classes this role owns (keys of workbench.review.MECHANISMS)."
    )

    @model_validator(mode="after")
    def _known(self) -> OwnerRole:
        for m in self.mechanisms:
            if m not in MECHANISMS:
                raise ValueError(
                    f"mechanisms: unknown mechanism {m!r} (known: {', '.join(MECHANISMS)})"
                )
        return self


class OwnershipTable(BaseModel):
    """The ownership table: roles and the mechanism classes each owns."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    schema_version: Literal[1] = Field(description="File format version (1).")
    roles: tuple[OwnerRole, ...] = Field(min_length=1, description="The roles.")

    @model_validator(mode="after")
    def _one_owner_each(self) -> OwnershipTable:
        seen: dict[str, str] = {}
        for r in self.roles:
            for m in r.mechanisms:
                if m in seen:
                    raise ValueError(f"roles: mechanism {m!r} has two owners ({seen[m]}, {r.role})")
                seen[m] = r.role
        missing = [m for m in MECHANISMS if m not in seen]
        if missing:
            raise ValueError(f"roles: no owner for mechanism {missing[0]!r}")
        return self

    def owner_for(self, mechanism: str) -> OwnerRole:
        """The role that owns ``mechanism``."""
        return next(r for r in self.roles if mechanism in r.mechanisms)


def load_owners(path: str | Path | None = None) -> OwnershipTable:
    """Load an ownership table (default: the built-in one).

    Raises:
        ConfigError: One line naming the file and the field.
    """
    return load_yaml_model(path or DEFAULT_OWNERS, OwnershipTable)
