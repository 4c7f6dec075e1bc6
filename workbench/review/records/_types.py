"""Run-record types: one run's locked tags and its per-kernel and per-model results.

:mod:`workbench.review.records.store` reads and writes them as JSON (and re-exports every name
here).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from workbench._doc import pick
from workbench.errors import WorkbenchError, printable
from workbench.mapper import ModelMapping
from workbench.review.records._consistency import consistency_problems
from workbench.review.records.tags import (
    RunTags,
    build_tags,
    canonical_json,
    reproducer_command,
)

__all__ = [
    "RECORD_KIND",
    "SCHEMA_VERSION",
    "KernelResult",
    "Measurement",
    "ModelResult",
    "RecordError",
    "RunRecord",
    "record_from_mapping",
]

SCHEMA_VERSION = 3
RECORD_KIND = "workbench.run_record"


class RecordError(WorkbenchError):
    """A run record file is missing, truncated, corrupt, foreign, newer or tampered with."""


@dataclass(frozen=True, slots=True, kw_only=True)
class KernelResult:
    """One kernel's mechanism and time (SI units: bytes, seconds, FLOPs).

    Attributes:
        name, ops, kind, layer_type, engine, dtype, layout: As in the mapping sheet.
        fusion: Fusion rules applied.
        tile: Tile ``MxNxK``; ``stages`` pipeline stages.
        sram_bytes, sram_capacity_bytes: Tile SRAM use and capacity per core, bytes.
        spill_bytes: Bytes spilled because the tile overflows SRAM.
        traffic: ``(level, bytes)`` moved per memory level.
        bottleneck: Bottleneck class; ``evidence`` the sentence that proves it.
        flops, model_flops: All FLOPs and multiply-add FLOPs.
        predicted_s, compute_s, stall_s, launch_s, sync_s: Predicted time and its parts, s.
        barriers: Grid-wide barriers (kernel + schedule).
        measured_s: Measured wall time on this host (see the record's measurement), or None.
        engine_reason: Why that engine; ``notes`` decisions worth showing.
    """

    name: str
    ops: tuple[str, ...]
    kind: str
    layer_type: str
    engine: str
    dtype: str
    layout: str
    fusion: tuple[str, ...]
    tile: str
    stages: int
    sram_bytes: int
    sram_capacity_bytes: int
    spill_bytes: float
    traffic: tuple[tuple[str, float], ...]
    bottleneck: str
    evidence: str
    flops: int
    model_flops: int
    predicted_s: float
    compute_s: float
    stall_s: float
    launch_s: float
    sync_s: float
    barriers: int
    measured_s: float | None = None
    engine_reason: str = ""
    notes: tuple[str, ...] = ()

    @property
    def fits(self) -> bool:
        """Whether the tile fits the per-core SRAM."""
        return self.sram_bytes <= self.sram_capacity_bytes

    def traffic_at(self, level: str) -> float:
        """Bytes moved at ``level`` (0 if absent)."""
        return next((b for n, b in self.traffic if n == level), 0.0)


@dataclass(frozen=True, slots=True, kw_only=True)
class ModelResult:
    """Model-level results.

    Attributes:
        time_s: Predicted time of one step, seconds.
        mfu: Model FLOPs utilisation, 0..1 (:mod:`workbench.cost.utilisation`).
        tokens_per_s: Tokens (or images) per second.
        model_flops: Model FLOPs of one step.
        peak_flops: MFU denominator, FLOP/s: the peak of the model's format, fixed per model.
        offchip_level: Name of the off-chip memory level.
        stall_fraction_by_layer_type: ``(layer type, fraction)`` pairs, 0..1.
        time_by_layer_type: ``(layer type, seconds)`` pairs.
        measured_time_s: Sum of measured kernel times, or None.
        latency: ``(percentile name, seconds)`` pairs (p50_s, p95_s, p99_s) when simulated.
        quality_error: Relative output error against a float64 reference, when measured.
        hfu: Hardware FLOPs utilisation, 0..1, >= ``mfu``: engine-seconds of the FLOPs executed
            (padding, recompute, other engines and formats at their own peaks) / ``time_s``
            (None in version-1 records; version 1-2 records counted padded GEMM work only).
        time_interval_s: ``(low, high)`` 95 % interval of the step time over measured
            repeats, seconds; empty when not measured over repeats.
        mbu: Model bandwidth utilisation: off-chip bytes moved per step / (``time_s`` x the
            sustained off-chip bandwidth, B/s), 0..1 (None before version 3, or unknown: a
            trace that moved the predicted bytes faster than the sustained rate).
        kernel_count: How many kernels the run had (None before version 3): ``kernels`` must
            list exactly that many, each name once.
        step_overhead_s: Time of the step outside its kernels, seconds (None before version 3):
            ``time_s`` = the kernels' predicted times + this, for predicted runs.
        step_times_s: For a trace, each steady-state step's time in step order, seconds (empty
            for predicted runs and records written before it existed): what a paired per-step
            comparison of two measured runs reads (:func:`workbench.evidence.compare_steps`).
    """

    time_s: float
    mfu: float
    tokens_per_s: float
    model_flops: int
    peak_flops: float
    offchip_level: str
    stall_fraction_by_layer_type: tuple[tuple[str, float], ...]
    time_by_layer_type: tuple[tuple[str, float], ...]
    measured_time_s: float | None = None
    latency: tuple[tuple[str, float], ...] = ()
    quality_error: float | None = None
    hfu: float | None = None
    time_interval_s: tuple[float, ...] = ()
    mbu: float | None = None
    kernel_count: int | None = None
    step_overhead_s: float | None = None
    step_times_s: tuple[float, ...] = ()

    def stall(self) -> dict[str, float]:
        """Stall fraction by layer type as a dict."""
        return dict(self.stall_fraction_by_layer_type)


@dataclass(frozen=True, slots=True, kw_only=True)
class Measurement:
    """How kernels were measured on this host.

    Attributes:
        method: One line: what ran, on which backend, how it was scaled.
        backend: Backend name.
        kernels: Names of the kernels measured.
        shapes: ``(kernel, shape actually run)`` pairs.
        repeats: Timed repetitions per kernel (the minimum is kept).
        wall_s: Total wall time spent measuring, seconds.
        category_steps_s: For a trace, ``(category, seconds per steady-state step)``: the kernel
            time of each category that every steady step launched (durations summed over
            streams), so a category's change can be judged against its own step-to-step noise;
            empty for kernels timed on this host and in records written before the field.
        rank_steps_s: For a job folder (``run --from-trace DIR``), ``(rank, step s, collective
            wait s, own work s)`` per rank, medians over the job's steady steps; else empty.
        stragglers: For a job folder, ``(rank, category, seconds lost per step)`` of each rank
            that drives the job's step (:mod:`workbench.evidence.stragglers`); else empty.
        window_rule: For a trace, how each step's window was drawn on the GPU timeline
            (:attr:`workbench.evidence.MeasuredRun.window_rule`); empty for kernels timed on
            this host and in records written before the field.
        warnings: For a trace, the reader's warnings about it (a last step left out of the
            steps, GPU activities outside every step...), one line each, as ``workbench trace``
            prints them.
    """

    method: str
    backend: str
    kernels: tuple[str, ...]
    shapes: tuple[tuple[str, str], ...]
    repeats: int
    wall_s: float
    category_steps_s: tuple[tuple[str, tuple[float, ...]], ...] = ()
    rank_steps_s: tuple[tuple[int, float, float, float], ...] = ()
    stragglers: tuple[tuple[int, str, float], ...] = ()
    window_rule: str = ""
    warnings: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class RunRecord:
    """One run: locked tags, per-kernel and per-model results, how it was measured.

    Attributes:
        schema_version: File format version.
        tags: The four locked tag groups.
        kernels: Per-kernel results in execution order.
        model: Model-level results.
        measurement: How kernels were measured (None: predicted only).
        hardware_profile: Canonical JSON of the hardware profile the run used ("" in version-1
            records); it hashes to ``tags.hardware.hardware_hash``.
        command: The exact command line that reproduces the run.
    """

    schema_version: int
    tags: RunTags
    kernels: tuple[KernelResult, ...]
    model: ModelResult
    measurement: Measurement | None = None
    hardware_profile: str = ""
    command: str = ""

    def kernel(self, name: str) -> KernelResult:
        """The kernel called ``name``."""
        for k in self.kernels:
            if k.name == name:
                return k
        raise KeyError(name)

    @property
    def label(self) -> str:
        """One line naming the slice, e.g. ``gpt2 prefill b1 s1024 on h100-sxm``."""
        w = self.tags.workload
        if w.model == "unknown" and w.phase == "unknown":  # NOTE: a trace read without --model
            return printable(f"measured trace (no model given) on {self.tags.hardware.profile}")
        size = f" s{w.seq}" if w.seq else ""
        size += f" c{w.context}" if w.context and w.phase == "decode" else ""
        text = f"{w.model} {w.phase} b{w.batch}{size} on {self.tags.hardware.profile}"
        return printable(text)  # NOTE: a record built by hand may hold any text


def _kernel_result(k: Any, measured: dict[str, float]) -> KernelResult:
    kern, t, c = k.kernel, k.tiling, k.cost
    return KernelResult(
        **pick(kern, "name", "ops", "kind", "layer_type", "engine", "dtype", "layout", "fusion"),
        tile=t.shape if kern.kind != "collective" else "",
        stages=t.stages,
        sram_bytes=int(t.sram_bytes),
        sram_capacity_bytes=int(t.sram_capacity_bytes),
        spill_bytes=float(t.spill_bytes),
        traffic=tuple((n, float(b)) for n, b in c.traffic),
        bottleneck=c.bottleneck,
        evidence=c.evidence,
        flops=int(kern.flops),
        model_flops=int(kern.matmul_flops),
        predicted_s=c.total_s,
        compute_s=c.compute_s,
        stall_s=c.stall_s,
        launch_s=c.launch_s,
        sync_s=c.sync_s,
        barriers=int(kern.barriers + t.barriers),
        measured_s=measured.get(kern.name),
        engine_reason=kern.engine_reason,
        notes=kern.notes,
    )


def record_from_mapping(
    mapping: ModelMapping,
    *,
    measurement: Measurement | None = None,
    measured: dict[str, float] | None = None,
    backend_versions: tuple[tuple[str, str], ...] = (),
    host: tuple[tuple[str, str], ...] = (),
    latency: dict[str, float] | None = None,
    quality_error: float | None = None,
    command: str | None = None,
    stack: str = "",
) -> RunRecord:
    """Build the run record of a mapping (and, optionally, what was measured).

    Args:
        mapping: The model mapping.
        measurement: How kernels were measured (None for a predicted-only run).
        measured: Measured seconds per kernel name.
        backend_versions: ``(package, version)`` of the measuring backend.
        host: Host facts of the measuring host.
        latency: Latency percentiles, seconds (``p50_s``, ``p95_s``, ``p99_s``), if simulated.
        quality_error: Relative output error, if measured.
        command: The reproducer command (default: the ``workbench run`` line the tags spell).
        stack: The software stack the mapping was made with (``""``: not stated).

    Returns:
        The :class:`RunRecord`.

    Raises:
        RecordError: The record would contradict itself
            (:mod:`workbench.review.records._consistency`), e.g. ``options.chips`` above the
            model's attention heads.
    """
    measured = measured or {}
    backend = measurement.backend if measurement else "predicted"
    tags = build_tags(
        mapping, backend=backend, backend_versions=backend_versions, host=host, stack=stack
    )
    model = ModelResult(
        time_s=mapping.time_s,
        mfu=mapping.mfu,
        tokens_per_s=mapping.tokens_per_s,
        model_flops=int(mapping.model_flops),
        peak_flops=float(mapping.peak_flops),
        offchip_level=mapping.hardware.offchip.name,
        stall_fraction_by_layer_type=tuple(mapping.stall_fraction_by_layer_type().items()),
        time_by_layer_type=tuple((k, v) for k, v in mapping.time_by_layer_type().items() if v),
        measured_time_s=sum(measured.values()) if measured else None,
        latency=tuple(sorted((latency or {}).items())),
        quality_error=quality_error,
        hfu=mapping.hfu,
        mbu=mapping.mbu,
        kernel_count=len(mapping.kernels),
        step_overhead_s=mapping.step_overhead_s,
    )
    kernels = tuple(_kernel_result(k, measured) for k in mapping.kernels)
    record = RunRecord(
        schema_version=SCHEMA_VERSION,
        tags=tags,
        kernels=kernels,
        model=model,
        measurement=measurement,
        hardware_profile=canonical_json(mapping.hardware.model_dump(mode="json")),
        command=command or reproducer_command(tags),
    )
    # NOTE: never write a record that reading would refuse (e.g. more chips than heads)
    problems = consistency_problems(record)
    if problems:
        raise RecordError(f"run record of {record.label}: {problems[0]}")
    return record
