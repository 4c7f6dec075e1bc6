"""Locked metadata tags of a run: compiler, runtime, hardware and workload groups.

Evidence from two runs is comparable only when the tags that were *not* deliberately changed are
equal. Each group is hashed (SHA-256 over its canonical JSON: sorted keys, no spaces, ASCII), and
the hashes are stored in the run record and verified when it is read, so a tag edited after the
run was written is caught.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import os
import platform
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from workbench import __version__
from workbench.errors import printable
from workbench.hw.loader import hardware_hash
from workbench.mapper import ModelMapping
from workbench.options import FUSION_RULES

__all__ = [
    "TAG_GROUPS",
    "CompilerTags",
    "HardwareTags",
    "RunTags",
    "RuntimeTags",
    "WorkloadTags",
    "build_tags",
    "canonical_json",
    "digest",
    "git_commit",
    "head_commit",
    "host_facts",
    "normalised_group",
    "reproducer_command",
]

#: The tag groups, in the order triage reports them.
TAG_GROUPS = ("compiler", "runtime", "hardware", "workload")


@dataclass(frozen=True, slots=True, kw_only=True)
class CompilerTags:
    """What the compiler (lowering, fusion, tiling search, quantization plan) was told.

    Attributes:
        workbench_version: Package version that mapped the model.
        git_commit: ``git rev-parse HEAD`` of the package checkout, or ``"unknown"``.
        fusion_enabled: Fusion rules that were on.
        fusion_disabled: Fusion rules that were switched off.
        search: Tiling search mode (``full`` or ``heuristic``).
        tiles: Forced tiles (``GLOB=MxNxK``).
        layout: Conv activation layout requested.
        layout_propagation: Whether layouts are kept across kernels.
        dtype: Model compute format override (None: each op's own).
        weight_dtype: Weight-only format, or None.
        dtype_overrides: ``(glob, dtype)`` format overrides.
    """

    workbench_version: str
    git_commit: str
    fusion_enabled: tuple[str, ...]
    fusion_disabled: tuple[str, ...]
    search: str
    tiles: tuple[str, ...]
    layout: str
    layout_propagation: bool
    dtype: str | None
    weight_dtype: str | None
    dtype_overrides: tuple[tuple[str, str], ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class RuntimeTags:
    """How the kernels were (or would be) launched.

    Attributes:
        backend: ``"predicted"`` (cost model only), ``"numpy"`` or ``"cupy"``.
        backend_versions: ``(package, version)`` pairs of the backend.
        launch: ``"eager"`` or ``"graph"``.
        barrier_per_layer: Whether a device-wide barrier follows every layer.
        chips: Chips the model is spread over.
        launch_host_s: Host time per eager launch the run was mapped with (its software
            stack's ``eager_launch_s``), seconds; None for graph launches or the profile's own
            ``kernel_launch_s`` (records written before it existed read as None).
        stack: The software stack the run was mapped with (``stacks/NAME.yaml``; ``""``: not
            stated, as in records written before the stack was a tag).
        step_overhead_s: The stack's host time per serving step outside its kernels, seconds
            (None: the hardware profile's own ``overheads.step_s``).
        attention_kernel: The fused-attention class the stack ships (None: the profile's).
        gqa_kv_sharing: Whether the stack's decode attention reads each K/V head once for its
            group of query heads.
    """

    backend: str
    backend_versions: tuple[tuple[str, str], ...]
    launch: str
    barrier_per_layer: bool
    chips: int
    launch_host_s: float | None = None
    stack: str = ""
    step_overhead_s: float | None = None
    attention_kernel: str | None = None
    gqa_kv_sharing: bool = True


@dataclass(frozen=True, slots=True, kw_only=True)
class HardwareTags:
    """The hardware profile and, for measured runs, the host.

    Attributes:
        profile: Hardware profile name.
        hardware_hash: SHA-256 of the profile's content (:func:`workbench.hw.hardware_hash`).
        host: ``(fact, value)`` pairs of the measuring host (empty for predicted runs).
    """

    profile: str
    hardware_hash: str
    host: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class WorkloadTags:
    """The workload slice.

    Attributes:
        model: Model name (preset or file).
        phase: prefill, decode, encode or inference.
        batch: Batch size.
        seq: Sequence (prompt) length, tokens (None for vision models).
        context: Cached tokens (decode), or None.
        dtype: The model's format (the MFU denominator's format).
        extra: Other ``(key, value)`` facts of the graph (image size, layout, tensor parallel).
    """

    model: str
    phase: str
    batch: int
    seq: int | None
    context: int | None
    dtype: str
    extra: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class RunTags:
    """All four tag groups of a run."""

    compiler: CompilerTags
    runtime: RuntimeTags
    hardware: HardwareTags
    workload: WorkloadTags

    def group(self, name: str) -> Any:
        """The tag group called ``name`` (one of :data:`TAG_GROUPS`)."""
        return getattr(self, name)


def normalised_group(tags: RunTags, name: str) -> Any:
    """Tag group ``name`` with explicit defaults spelled the default way (for comparisons).

    ``--dtype bf16`` on a bf16 model is the model's own format (``dtype`` None is read as the
    format the run used, ``workload.dtype``, which is compared here and not again); set-valued
    options (format overrides, forced tiles, fusion rules off) compare as sorted sets; the graph's
    ``tensor_parallel`` fact is ``runtime.chips`` (one change, in one group). The stored
    tags (and their hashes) are left as they were written.

    >>> from workbench.review import build_scenario
    >>> base, _ = build_scenario("eager-launch")
    >>> t = dataclasses.replace(base.tags.compiler, dtype=base.tags.workload.dtype)
    >>> tags = dataclasses.replace(base.tags, compiler=t)
    >>> normalised_group(tags, "compiler") == normalised_group(base.tags, "compiler")
    True
    """
    group = tags.group(name)
    if name == "workload":
        # NOTE: tensor parallel is runtime.chips and the run's format is compiler.dtype: each
        # change is compared once, in the group that makes it
        extra = tuple(kv for kv in group.extra if kv[0] != "tensor_parallel")
        return dataclasses.replace(group, extra=extra, dtype="")
    if name != "compiler":
        return group
    c: CompilerTags = group
    return dataclasses.replace(
        c,
        dtype=c.dtype if c.dtype is not None else tags.workload.dtype,
        fusion_disabled=tuple(sorted(set(c.fusion_disabled))),
        tiles=tuple(sorted(set(c.tiles))),
        dtype_overrides=tuple(sorted(set(c.dtype_overrides))),
    )


def canonical_json(data: Any) -> str:
    """Canonical JSON text: sorted keys, no spaces, ASCII only, no NaN.

    >>> canonical_json({"b": 1, "a": (1, 2)})
    '{"a":[1,2],"b":1}'
    """
    return json.dumps(
        data, sort_keys=True, separators=(",", ":"), ensure_ascii=True, allow_nan=False
    )


def digest(data: Any) -> str:
    """SHA-256 hex digest of ``data``'s canonical JSON (dataclasses become dicts)."""
    if dataclasses.is_dataclass(data) and not isinstance(data, type):
        data = dataclasses.asdict(data)
    return hashlib.sha256(canonical_json(data).encode("ascii")).hexdigest()


@functools.cache
def git_commit() -> str:
    """The package checkout's commit (``git rev-parse HEAD``) or ``"unknown"``; never fails."""
    return head_commit(Path(__file__).resolve().parent) or "unknown"


def head_commit(root: Path) -> str | None:
    """The commit checked out in the repository holding ``root``, or None.

    Fails soft: no git, no repository, a timeout or an answer that is not a commit give None.
    """
    try:
        out = subprocess.run(
            ["git", "-C", str(root), "rev-parse", "HEAD"],
            capture_output=True,
            text=True,
            timeout=5,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    text = out.stdout.strip()
    return text if out.returncode == 0 and re.fullmatch(r"[0-9a-f]{40}", text) else None


def host_facts() -> tuple[tuple[str, str], ...]:
    """Facts about this host that change measured times (platform, CPU count, NumPy)."""
    return (
        ("platform", platform.platform()),
        ("machine", platform.machine()),
        ("cpu_count", str(os.cpu_count())),
        ("numpy", np.__version__),
    )


def build_tags(
    mapping: ModelMapping,
    *,
    backend: str = "predicted",
    backend_versions: tuple[tuple[str, str], ...] = (),
    host: tuple[tuple[str, str], ...] = (),
    stack: str = "",
) -> RunTags:
    """The tags of a run of ``mapping``.

    Args:
        mapping: The model mapping the run is about.
        backend: ``"predicted"`` for a cost-model run, else the execution backend's name.
        backend_versions: ``(package, version)`` pairs of that backend.
        host: Host facts (measured runs only; see :func:`host_facts`).
        stack: The software stack's name (its figures are read from ``mapping.options``).

    Returns:
        The four tag groups; their text is escaped (:func:`workbench.errors.printable`), as a
        record's reader requires.
    """
    o = mapping.options
    meta = mapping.graph.meta_dict()
    seq = meta.get("seq")
    context = meta.get("context")
    return RunTags(
        compiler=CompilerTags(
            workbench_version=__version__,
            git_commit=git_commit(),
            fusion_enabled=tuple(r for r in FUSION_RULES if o.fusion_enabled(r)),
            fusion_disabled=tuple(sorted(o.disabled_fusion)),
            search=o.search,
            tiles=tuple(f"{t.pattern}={t.m}x{t.n}x{t.k}" for t in o.tiles),
            layout=o.layout,
            layout_propagation=o.layout_propagation,
            dtype=o.dtype,
            weight_dtype=o.weight_dtype,
            dtype_overrides=tuple(tuple(map(printable, p)) for p in o.dtype_overrides),  # type: ignore[misc]
        ),
        runtime=RuntimeTags(
            backend=backend,
            backend_versions=tuple((printable(k), printable(v)) for k, v in backend_versions),
            launch=o.launch,
            barrier_per_layer=o.barrier_per_layer,
            chips=o.chips,
            # NOTE: graph replay never pays it: a graph run is the same whatever the stack's figure
            launch_host_s=o.launch_host_s if o.launch == "eager" else None,
            stack=stack,
            step_overhead_s=o.step_overhead_s,
            attention_kernel=o.attention_kernel,
            gqa_kv_sharing=o.gqa_kv_sharing,
        ),
        hardware=HardwareTags(
            profile=printable(mapping.hardware.name),
            hardware_hash=hardware_hash(mapping.hardware),
            host=tuple((printable(k), printable(v)) for k, v in host),
        ),
        workload=WorkloadTags(
            model=printable(str(meta.get("model") or mapping.graph.name)),
            phase=mapping.phase,
            batch=int(str(meta.get("batch") or 1)),
            seq=int(str(seq)) if seq is not None else None,
            context=int(str(context)) if context is not None else None,
            dtype=mapping.dtype,
            extra=tuple(
                (printable(str(k)), printable(str(v)))
                for k, v in sorted(meta.items())
                if k not in ("model", "phase", "batch", "seq", "context", "dtype")
            ),
        ),
    )


def reproducer_command(tags: RunTags, record_path: str = "run.json") -> str:
    """The exact ``workbench run`` command line that maps this run again (shell-quoted).

    Every compiler and runtime option is spelled out (defaults included where they matter), so
    the command does not depend on a future default. A model that is not a preset is named as
    recorded (re-point ``--model`` at its ``--hf-config``/``--onnx`` file); the hardware profile
    is the recorded one, also embedded in the record.

    >>> from workbench.review import build_scenario
    >>> base, _ = build_scenario("eager-launch")
    >>> reproducer_command(base.tags).split()[:4]
    ['workbench', 'run', '--model', 'gpt2']
    """
    import shlex

    w, c, r = tags.workload, tags.compiler, tags.runtime
    argv = ["workbench", "run", "--model", w.model, "--hardware", tags.hardware.profile]
    if r.stack:  # NOTE: the stack's figures (step overhead, attention class) are the run's too
        argv += ["--stack", r.stack]
    if w.phase in ("prefill", "decode"):
        argv += ["--phase", w.phase, "--seq", str(w.seq or w.context or 1)]
        if w.context is not None and w.phase == "decode":
            argv += ["--context", str(w.context)]
    argv += ["--batch", str(w.batch), "--chips", str(r.chips)]
    if c.dtype:
        argv += ["--dtype", c.dtype]
    if c.weight_dtype:
        argv += ["--weight-dtype", c.weight_dtype]
    for glob, dtype in c.dtype_overrides:
        argv += ["--kernel-dtype", f"{glob}={dtype}"]
    for rule in c.fusion_disabled:
        argv += ["--no-fusion", rule]
    argv += ["--layout", c.layout]
    if not c.layout_propagation:
        argv.append("--no-layout-propagation")
    argv += ["--launch", r.launch, "--search", c.search]
    for t in c.tiles:
        argv += ["--tile", t]
    if r.barrier_per_layer:
        argv.append("--barrier-per-layer")
    if r.backend != "predicted":
        argv += ["--execute", "--backend", r.backend]
    argv += ["--record", record_path]
    return shlex.join(argv)
