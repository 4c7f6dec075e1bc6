"""Practice scenarios: a baseline and a candidate run with one injected regression each.

Every scenario is a data file (``scenarios/data/NN-name.yaml``, validated by
:class:`ScenarioFile`) of :class:`~workbench.options.MapOptions` overrides on a preset model, so
it is reproducible and the comparator (the baseline) is stable. ``expected_mechanism`` and
``expected_owner`` are what triage must find; the README written next to the records describes
the injected change, never the answer.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from workbench._doc import pick
from workbench._files import write_text_safely
from workbench.errors import WorkbenchError
from workbench.hw.loader import load_hardware
from workbench.hw.stack import load_stack
from workbench.mapper import ModelMapping, map_model
from workbench.models import build_graph
from workbench.options import MapOptions, TileOverride
from workbench.review.decision._config import ConfigError, load_yaml_model
from workbench.review.records.store import RunRecord, record_from_mapping, save_record

__all__ = [
    "SCENARIOS",
    "Scenario",
    "ScenarioFile",
    "build_scenario",
    "get_scenario",
    "load_scenarios",
    "scenario_mappings",
    "write_scenario",
]


@dataclass(frozen=True, slots=True, kw_only=True)
class Scenario:
    """One injected regression.

    Attributes:
        name: Short name (CLI argument).
        title: One line.
        story: What changed, as the release notes would say it (not the answer).
        model, phase, batch, seq, context, hardware: The workload slice and profile.
        baseline: Options of the baseline run.
        candidate: Options of the candidate run.
        changed: The tag group the change belongs to (pass as ``--changed``).
        expected_mechanism: The mechanism class triage must name.
        expected_owner: The owner role triage must name (default ownership table).
    """

    name: str
    title: str
    story: str
    model: str
    phase: str
    batch: int
    seq: int
    context: int | None
    hardware: str
    baseline: MapOptions
    candidate: MapOptions
    changed: str
    expected_mechanism: str
    expected_owner: str


#: The folder of scenario files, one YAML file each, read in file-name order.
DATA_DIR = Path(__file__).resolve().parent / "data"


class OptionsSpec(BaseModel):
    """The options a scenario side sets (every other :class:`MapOptions` field: its default)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    disabled_fusion: tuple[str, ...] = Field((), description="Fusion rules turned off.")
    tiles: tuple[TileSpec, ...] = Field((), description="Forced tiles (fnmatch glob, m, n, k).")
    dtype_overrides: dict[str, str] = Field({}, description="Kernel glob -> format.")
    barrier_per_layer: bool = Field(False, description="A device-wide barrier after each layer.")
    layout_propagation: bool = Field(True, description="Propagate the matrix engine's layout.")
    launch: Literal["graph", "eager"] | None = Field(None, description="Launch mode override.")
    launch_host: Literal["stack"] | None = Field(
        None, description="'stack': each eager launch pays the default stack's host time (s)."
    )

    def options(self) -> MapOptions:
        """The :class:`MapOptions` these fields stand for."""
        host = load_stack().map_options().launch_host_s if self.launch_host else None
        fields: dict[str, object] = {
            "disabled_fusion": self.disabled_fusion,
            "tiles": tuple(
                TileOverride(pattern=t.pattern, m=t.m, n=t.n, k=t.k) for t in self.tiles
            ),
            "dtype_overrides": tuple(self.dtype_overrides.items()),
            "barrier_per_layer": self.barrier_per_layer,
            "layout_propagation": self.layout_propagation,
        }
        if self.launch is not None:
            fields["launch"] = self.launch
        if host is not None:
            fields["launch_host_s"] = host
        return MapOptions(**fields)  # type: ignore[arg-type]


class TileSpec(BaseModel):
    """One forced tile of a scenario side."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    pattern: str = Field(min_length=1, description="Kernel-name glob.")
    m: int = Field(gt=0, description="Tile rows (query tile for attention).")
    n: int = Field(gt=0, description="Tile columns (key/value tile for attention).")
    k: int = Field(gt=0, description="Tile depth.")


class ScenarioFile(BaseModel):
    """One scenario file (``scenarios/data/NN-name.yaml``)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    schema_version: Literal[1] = Field(description="File format version (1).")
    name: str = Field(pattern=r"^[a-z0-9][a-z0-9-]*$", description="Short name (CLI argument).")
    title: str = Field(min_length=1, description="One line.")
    story: str = Field(min_length=1, description="What changed, as release notes say it.")
    model: str = Field(min_length=1, description="Preset model name.")
    phase: Literal["prefill", "decode", "inference"] = Field(description="Workload phase.")
    batch: int = Field(gt=0, description="Batch size.")
    seq: int = Field(ge=0, description="Sequence length, tokens (0 for a CNN).")
    context: int | None = Field(None, gt=0, description="Decode context, tokens.")
    hardware: str = Field(min_length=1, description="Hardware profile name.")
    changed: Literal["compiler", "runtime", "hardware", "workload"] = Field(
        description="The tag group the change belongs to (pass as --changed)."
    )
    baseline: OptionsSpec = Field(description="Options of the baseline run.")
    candidate: OptionsSpec = Field(description="Options of the candidate run.")
    expected_mechanism: str | None = Field(description="What triage must find (None: nothing).")
    expected_owner: str | None = Field(description="The owner triage must name.")

    def scenario(self) -> Scenario:
        """The :class:`Scenario` this file describes."""
        workload = ("model", "phase", "batch", "seq", "context", "hardware", "changed")
        return Scenario(
            **pick(self, "name", "title", "story", *workload),
            baseline=self.baseline.options(),
            candidate=self.candidate.options(),
            expected_mechanism=self.expected_mechanism or "",
            expected_owner=self.expected_owner or "",
        )


def load_scenarios(folder: Path = DATA_DIR) -> dict[str, Scenario]:
    """Every scenario file in ``folder``, by name, in file-name order.

    Raises:
        ConfigError: A file is malformed (one line naming the file and the field), or two
            files share a name.
    """
    out: dict[str, Scenario] = {}
    for path in sorted(folder.glob("*.yaml")):
        s = load_yaml_model(path, ScenarioFile).scenario()
        if s.name in out:
            raise ConfigError(f"{path}: name: {s.name!r} already used by another scenario")
        out[s.name] = s
    return out


SCENARIOS: dict[str, Scenario] = load_scenarios()


def get_scenario(name: str) -> Scenario:
    """The scenario called ``name``."""
    try:
        return SCENARIOS[name]
    except KeyError:
        raise WorkbenchError(
            f"scenario {name!r}: unknown (known: {', '.join(SCENARIOS)})"
        ) from None


def scenario_mappings(name: str) -> tuple[ModelMapping, ModelMapping]:
    """Map the scenario's baseline and candidate; returns the two mappings."""
    s = get_scenario(name)
    hw = load_hardware(s.hardware)
    if s.phase == "inference":
        graph = build_graph(s.model, batch=s.batch)
    else:
        graph = build_graph(s.model, s.phase, batch=s.batch, seq=s.seq, context=s.context)
    return map_model(graph, hw, s.baseline), map_model(graph, hw, s.candidate)


def build_scenario(name: str) -> tuple[RunRecord, RunRecord]:
    """Map the scenario's baseline and candidate; returns their run records."""
    base, cand = scenario_mappings(name)
    return record_from_mapping(base), record_from_mapping(cand)


def readme_text(s: Scenario) -> str:
    """The README of a scenario folder: the injected change and how to triage it."""
    return (
        f"# Scenario {s.name}: {s.title}\n\n{s.story}\n\n"
        f"- workload: {s.model} {s.phase}, batch {s.batch}"
        + (f", context {s.context}" if s.context else f", seq {s.seq}" if s.seq else "")
        + f" on {s.hardware}\n- the change belongs to the **{s.changed}** tag group\n\n"
        "Find the first failing execution mechanism and its owner:\n\n"
        f"    workbench triage baseline.json candidate.json --changed {s.changed}\n"
    )


def write_scenario(name: str, out: str | Path) -> tuple[Path, Path, Path]:
    """Write ``baseline.json``, ``candidate.json`` and ``README.md`` into folder ``out``.

    Returns:
        The three paths.
    """
    s = get_scenario(name)
    folder = Path(out)
    if folder.exists() and not folder.is_dir():
        raise WorkbenchError(f"--out {folder}: exists and is not a folder")
    folder.mkdir(parents=True, exist_ok=True)
    base, cand = build_scenario(name)
    paths = (folder / "baseline.json", folder / "candidate.json", folder / "README.md")
    save_record(base, paths[0])
    save_record(cand, paths[1])
    write_text_safely(paths[2], readme_text(s), what="--out")
    return paths
