"""Owners: which role owns each mechanism class, with its responsibility and closure artifact.

A custom table is a YAML file validated by Pydantic (``extra="forbid"``) that lists the
mechanisms under each role. The built-in table is assembled from the roles' text
(``decision/data/roles.yaml``) and each mechanism's ``owner`` in the mechanism table
(:data:`workbench.review.diagnosis.table.TABLE`), so a mechanism's owner is written once. Every
mechanism class must have exactly one owner.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from workbench.review.decision._config import DATA_DIR, ConfigError, load_yaml_model
from workbench.review.diagnosis import table

__all__ = [
    "DEFAULT_ROLES",
    "OwnerRole",
    "OwnershipTable",
    "RoleText",
    "RolesFile",
    "builtin_owners",
    "load_owners",
]

#: The built-in roles (their mechanisms come from the mechanism table).
DEFAULT_ROLES = DATA_DIR / "roles.yaml"


def _names() -> tuple[str, ...]:
    """Mechanism names of the table as it is now (read at call time)."""
    return tuple(m.name for m in table.TABLE)


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
            if m not in _names():
                raise ValueError(
                    f"mechanisms: unknown mechanism {m!r} (known: {', '.join(_names())})"
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
        missing = [m for m in _names() if m not in seen]
        if missing:
            raise ValueError(f"roles: no owner for mechanism {missing[0]!r}")
        return self

    def owner_for(self, mechanism: str) -> OwnerRole:
        """The role that owns ``mechanism``."""
        return next(r for r in self.roles if mechanism in r.mechanisms)


class RoleText(BaseModel):
    """One role of the built-in roles file: its text, without mechanisms."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    role: str = Field(min_length=1, description="Role name, e.g. 'ML compiler engineer'.")
    responsibility: str = Field(min_length=1, description="What the role is primarily for.")
    closure_artifact: str = Field(min_length=1, description="What the role hands in to close.")


class RolesFile(BaseModel):
    """The built-in roles file."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    schema_version: Literal[1] = Field(description="File format version (1).")
    roles: tuple[RoleText, ...] = Field(min_length=1, description="The roles.")


def builtin_owners(path: str | Path = DEFAULT_ROLES) -> OwnershipTable:
    """The built-in ownership table: the roles file, each role owning its table mechanisms.

    Raises:
        ConfigError: The roles file is malformed, or a mechanism names a role it lacks.
    """
    roles = load_yaml_model(path, RolesFile).roles
    known = {r.role for r in roles}
    stray = next((m for m in table.TABLE if m.owner not in known), None)
    if stray is not None:
        raise ConfigError(f"{path}: roles: no role {stray.owner!r} (owner of {stray.name!r})")
    return OwnershipTable(
        schema_version=1,
        roles=tuple(
            OwnerRole(
                **r.model_dump(), mechanisms=tuple(m.name for m in table.TABLE if m.owner == r.role)
            )
            for r in roles
        ),
    )


def load_owners(path: str | Path | None = None) -> OwnershipTable:
    """Load an ownership table (default: the built-in one, from the mechanism table).

    Raises:
        ConfigError: One line naming the file and the field.
    """
    return builtin_owners() if path is None else load_yaml_model(path, OwnershipTable)
