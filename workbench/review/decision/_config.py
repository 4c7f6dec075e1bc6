"""Loading the review's YAML files (ownership table, guardrails) strictly, one-line errors."""

from __future__ import annotations

from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from workbench.errors import HardwareError, WorkbenchError
from workbench.hw.loader import _format_validation, _parse_yaml

__all__ = ["DATA_DIR", "ConfigError", "load_yaml_model"]

DATA_DIR = Path(__file__).resolve().parent / "data"

M = TypeVar("M", bound=BaseModel)


class ConfigError(WorkbenchError):
    """An ownership table or guardrails file is malformed."""


def load_yaml_model(path: str | Path, model: type[M]) -> M:
    """Read ``path`` (strict YAML: duplicate keys rejected) and validate it as ``model``.

    Raises:
        ConfigError: One line naming the file and the field path.
    """
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"{path}: no such file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read ({type(exc).__name__})") from None
    try:
        data: Any = _parse_yaml(text, str(path))
    except HardwareError as exc:
        raise ConfigError(str(exc).replace("hardware fields", "fields")) from None
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(_format_validation(exc, str(path))) from None
