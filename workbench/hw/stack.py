"""Software stacks as data (``stacks/*.yaml``): what a serving or training stack does.

A stack (TensorRT-LLM by version, vLLM, gpt-fast, NeMo/Megatron-LM, PyTorch eager or compiled,
JAX/MaxText, DeepSpeed, a kernel library) is a profile of its own, loaded strictly like a hardware
profile (duplicate keys, unknown fields and bad values refused in one line naming the file and
the field). Every figure says where it comes from, as exactly one of:

* ``source``: a publication, a repository file at a commit, a vendor page;
* ``fitted: true`` with ``rows``: solved from those calibration rows of the published corpus by
  :mod:`workbench.fidelity.fits` (leave-one-source-out cross-validation re-solves it without the
  held-out publication); the ``value`` written here is that fit, and a golden test fails when it
  no longer reproduces it;
* ``assumption``: a stated assumption (e.g. "none published: the hardware profile's figure").

A corpus row names its stack, and every row of a stack is mapped with the same figures
(:meth:`Stack.map_options`); no option is set per row.

>>> load_stack("tensorrt-llm-0.6").gqa_kv_sharing.value
False
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Literal

from pydantic import Field, ValidationError, model_validator

from workbench._files import read_text_bounded
from workbench.errors import HardwareError, WorkbenchError
from workbench.hw._schema_base import _Model
from workbench.hw.loader import _format_validation, _parse_yaml
from workbench.hw.schema import Hardware
from workbench.options import FUSION_RULES, MapOptions

__all__ = [
    "DEFAULT_STACK",
    "MIN_FRACTION",
    "ROW_ID",
    "Stack",
    "StackError",
    "decode_hardware",
    "list_stacks",
    "load_stack",
    "patched_stacks",
    "prefill_all_logits",
    "stacks_dir",
    "training_figures",
    "with_step_overhead",
]

#: The stack a corpus row or ``workbench map`` uses when none is named: torch.compile with CUDA
#: graphs, whose figures are the hardware profile's own (it changes nothing a profile says) except
#: the host time of a kernel launched outside a graph (``--launch eager``: Inductor's launcher).
DEFAULT_STACK = "pytorch-compile"
_NAME = re.compile(r"^[a-z0-9][a-z0-9.+-]*$")
#: A corpus row id (``workbench/fidelity/schema.py``'s pattern, at most 200 characters): never a
#: path. That each names a row of the published corpus is checked where the corpus is known
#: (:func:`workbench.fidelity.fits.check_stack_rows`; hw/ sits below fidelity/).
ROW_ID = re.compile(r"^[a-z0-9][a-z0-9._-]{0,199}$")
#: Smallest fraction of a hardware rate a stack may state: as the hardware schema's ``_fraction``
#: fields, a smaller one is a typo (1e-300) that turns every time into an overflow.
MIN_FRACTION = 1e-3
_MAX_BYTES = 1 << 16


class StackError(HardwareError):
    """A stack file is malformed, or a stack name is unknown."""


class Figure(_Model):
    """Where one figure of a stack comes from (exactly one of source, fitted, assumption)."""

    source: str | None = Field(
        default=None, min_length=10, description="Publication, file at a commit or URL."
    )
    fitted: bool = Field(
        default=False,
        description="Solved by workbench/fidelity/fits.py from `rows` (calibration rows).",
    )
    rows: tuple[str, ...] = Field(
        default=(),
        max_length=16,
        description="Corpus row ids a fitted figure is solved from, preferred first.",
    )
    assumption: str | None = Field(
        default=None, min_length=10, description="The stated assumption, when nothing is published."
    )

    @model_validator(mode="after")
    def _one_origin(self) -> Figure:
        given = [self.source is not None, self.fitted, self.assumption is not None]
        if sum(given) != 1:
            raise ValueError("give exactly one of source, fitted: true (with rows) or assumption")
        if self.fitted != bool(self.rows):
            raise ValueError("a fitted figure names its calibration rows (rows), and only it")
        bad = next((r for r in self.rows if not ROW_ID.match(r)), None)
        if bad is not None:
            raise ValueError(f"rows: {bad[:80]!r} is no corpus row id ({ROW_ID.pattern})")
        if len(set(self.rows)) != len(self.rows):
            raise ValueError("rows: a row is named twice")
        return self


class Seconds(Figure):
    """A time per step or per request, seconds (None: the hardware profile's ``overheads``)."""

    value: float | None = Field(
        ge=0.0, le=1.0, description="Seconds; host time of a step or request is us to ms."
    )


class Fraction(Figure):
    """A fraction of a hardware rate, in [0.001, 1] (None: the profile's own)."""

    value: float | None = Field(
        ge=MIN_FRACTION, le=1.0, description="Fraction of the rate, in [0.001, 1] (no unit)."
    )


class Flag(Figure):
    """A yes/no property of the stack."""

    value: bool = Field(description="True or false.")


class AttentionClass(Figure):
    """The fused-attention implementation class (workbench/cost/attention_class.py)."""

    value: Literal["generic", "fa2", "fa3", "serial"] | None = Field(
        description="generic, fa2, fa3, serial; None: the profile's software.attention_kernel."
    )


class Format(Figure):
    """A number format (None: the GEMMs' format)."""

    value: Literal["fp16", "bf16", "fp32"] | None = Field(
        description="Format the context (prefill) fused attention runs in when the GEMMs run "
        "FP8 (None: FP8 too); decode attention reads the K/V cache in its stored format."
    )


class Logits(Figure):
    """Which prompt positions a prefill computes logits for."""

    value: Literal["last", "all"] = Field(
        description="last: the LM head runs on each sequence's last position only (the hidden "
        "states are gathered first); all: on every position, as a plain forward does."
    )


class Recompute(Figure):
    """Activation recomputation the stack applies by default in training."""

    value: Literal["none", "selective", "full"] = Field(description="none, selective or full.")


class Fusions(Figure):
    """Fusion rules (:data:`workbench.options.FUSION_RULES`) the stack does not apply."""

    value: tuple[str, ...] = Field(
        description="Rule names switched off for every kernel of the stack (empty: all apply)."
    )

    @model_validator(mode="after")
    def _known_rules(self) -> Fusions:
        unknown = [r for r in self.value if r not in FUSION_RULES]
        if unknown:
            raise ValueError(f"unknown fusion rule(s) {unknown} (known: {', '.join(FUSION_RULES)})")
        return self


class SelectivePolicy(Figure):
    """What the stack's selective activation checkpointing re-runs in the backward."""

    value: Literal["every_other_gemm", "attention_core"] = Field(
        description="every_other_gemm: every second GEMM of a layer and every non-matrix op "
        "(torchtitan's per-op policy); attention_core: the attention's scores, softmax, dropout "
        "and context GEMMs (Megatron-LM selective recomputation, arXiv:2205.05198)."
    )


class Reserve(Figure):
    """A share of one chip's off-chip memory the stack keeps from the model, in [0, 0.5)."""

    value: float = Field(
        ge=0.0,
        lt=0.5,
        description="Fraction of the chip's off-chip capacity (no unit): 0.1 = 10% held back.",
    )


class Slowdown(Figure):
    """A fractional slowdown, in [0, 1]."""

    value: float = Field(ge=0.0, le=1.0, description="Fraction: 0.2 = 20% longer.")


class Stack(_Model):
    """One software stack (``stacks/<name>.yaml``)."""

    schema_version: Literal[1] = Field(description="Stack schema version; this code reads 1.")
    name: str = Field(pattern=_NAME.pattern, description="The file's stem, e.g. vllm.")
    description: str = Field(min_length=10, description="What the stack is, with its version.")
    step_overhead_s: Seconds = Field(
        description="Host time per step outside its kernels (an LLM prefill or decode step: "
        "scheduler, sampling, a generation loop; a CNN inference run: one forward), seconds; "
        "paid by every step."
    )
    request_overhead_s: Seconds = Field(
        description="Host time once per request (tokenisation, enqueue, the first step's "
        "set-up) outside the steps, seconds; paid once by a prefill, generate or serving run."
    )
    attention_kernel: AttentionClass = Field(description="Fused-attention implementation class.")
    fp8_attention_dtype: Format = Field(
        description="Format of the context (prefill) fused attention when the GEMMs run FP8 "
        "(e.g. TensorRT-LLM v0.5 engines built with --use_gpt_attention_plugin float16)."
    )
    gqa_kv_sharing: Flag = Field(
        description="The decode attention kernel reads each K/V head once per GQA group "
        "(False: once per query head, as TensorRT-LLM's MMHA before v0.7)."
    )
    cuda_graphs: Flag = Field(
        description="Kernel launches replayed as a captured graph (False: a host launch each)."
    )
    eager_launch_s: Seconds | None = Field(
        default=None,
        description="Host time per kernel launched outside a captured graph, seconds: the "
        "framework's dispatch plus the driver's submission (paid with cuda_graphs false, or "
        "under --launch eager). None: the hardware profile's overheads.kernel_launch_s, the "
        "driver's submission alone, as a C++ runtime pays.",
    )
    decode_bandwidth_fraction: Fraction | None = Field(
        default=None,
        description="Achieved fraction of off-chip bandwidth in decode where published "
        "(None: the profile's sustained fraction).",
    )
    prefill_logits: Logits | None = Field(
        default=None,
        description="Prompt positions an inference prefill computes logits for (None: all, "
        "as a plain forward does; last: the serving runtimes that sample the first new token "
        "gather each sequence's last hidden state before the LM head).",
    )
    comm_overlap: Flag = Field(
        description="Training: tensor-parallel collectives overlapped with GEMMs by default."
    )
    recompute: Recompute = Field(description="Training: default activation recomputation.")
    disabled_fusion: Fusions | None = Field(
        default=None,
        description="Fusion rules the stack does not apply (None: every rule, as the mapper "
        "plans; e.g. eager PyTorch runs each operator as its own kernel).",
    )
    selective_recompute: SelectivePolicy | None = Field(
        default=None,
        description="Training: what the stack's selective activation checkpointing re-runs, "
        "for rows whose source ran it (None: the stack has no selective policy).",
    )
    overlap_slowdown: Slowdown | None = Field(
        default=None,
        description="Training: how much slower compute kernels run while an overlapped "
        "collective runs beside them (SMs and memory shared), fraction (None: 0, no slowdown).",
    )
    training_efficiency: Fraction | None = Field(
        default=None,
        description="Training: fraction of its kernels' mapped rate a training step of the "
        "stack sustains (host gaps between eager kernels, the allocator, the sharding hooks "
        "the per-kernel model does not see), in [0.001, 1]; every forward, backward and "
        "recomputed kernel takes 1/value of its mapped time (None: 1, the kernels as mapped).",
    )
    memory_reserve_fraction: Reserve | None = Field(
        default=None,
        description="Serving: share of one chip's off-chip memory the stack does not give the "
        "model's weights, KV cache and activations (its memory fraction's complement: the CUDA "
        "context, allocator, workspace, other processes). None: the stack states none, and "
        "no reserve is counted.",
    )
    sources: tuple[str, ...] = Field(min_length=1, description="Where the figures come from.")

    def map_options(self, options: MapOptions | None = None) -> MapOptions:
        """``options`` (default: none) with this stack's mapping figures in force.

        Sets the step overhead, K/V sharing, attention class, launch mode, host time per eager
        launch and the fusion rules the stack does not apply; a figure of None leaves the
        profile's own.
        """
        from dataclasses import replace

        base = options or MapOptions()
        off = self.disabled_fusion.value if self.disabled_fusion is not None else ()
        return replace(
            base,
            step_overhead_s=self.step_overhead_s.value,
            gqa_kv_sharing=self.gqa_kv_sharing.value,
            attention_kernel=self.attention_kernel.value or base.attention_kernel,
            launch="graph" if self.cuda_graphs.value else "eager",
            disabled_fusion=tuple(dict.fromkeys((*base.disabled_fusion, *off))),
            launch_host_s=self.eager_launch_s.value if self.eager_launch_s else None,
        )


def training_figures(stack: Stack) -> tuple[float, float]:
    """``(overlap_slowdown, training_efficiency)`` of a training step of ``stack``.

    A figure the stack does not state (or a fitted one left unfitted, None) takes its neutral
    value: no slowdown under overlapped collectives, efficiency 1.

    >>> training_figures(load_stack("nccl"))
    (0.0, 1.0)
    """
    slow = stack.overlap_slowdown.value if stack.overlap_slowdown is not None else 0.0
    fig = stack.training_efficiency
    eff = fig.value if fig is not None and fig.value is not None else 1.0
    return slow, eff


def prefill_all_logits(stack: Stack) -> bool:
    """Whether an inference prefill of ``stack`` runs its LM head on every prompt position.

    False where the stack publishes ``prefill_logits: last`` (the runtime gathers each
    sequence's last hidden state before the LM head, so the head is a ``batch x hidden`` by
    ``hidden x vocab`` GEMM instead of ``batch x seq`` rows); True otherwise.

    >>> prefill_all_logits(load_stack("tensorrt-llm-0.5")), prefill_all_logits(load_stack())
    (False, True)
    """
    fig = stack.prefill_logits
    return fig is None or fig.value == "all"


def decode_hardware(stack: Stack, hw: Hardware) -> Hardware:
    """``hw`` as a decode step of ``stack`` sees it: its achieved off-chip bandwidth fraction.

    Where the stack publishes ``decode_bandwidth_fraction``, it replaces the off-chip level's
    ``sustained_fraction`` (a paged-attention stack that reads its KV blocks below copy
    bandwidth); otherwise ``hw`` unchanged.
    """
    fig = stack.decode_bandwidth_fraction
    if fig is None or fig.value is None:
        return hw
    level = hw.offchip.model_copy(update={"sustained_fraction": fig.value})
    return hw.model_copy(update={"memory": (*hw.memory[:-1], level)})


def with_step_overhead(stack: Stack, seconds: float | None) -> Stack:
    """``stack`` with its step overhead's value replaced (a fit being solved or applied)."""
    step = stack.step_overhead_s.model_copy(update={"value": seconds})
    return stack.model_copy(update={"step_overhead_s": step})


def stacks_dir() -> Path:
    """The folder of shipped stacks: ``workbench/_stacks`` in a wheel, ``<repo>/stacks``."""
    package = Path(__file__).resolve().parent.parent
    installed = package / "_stacks"
    return installed if installed.is_dir() else package.parent / "stacks"


def list_stacks() -> list[str]:
    """Names of the shipped stacks, sorted.

    >>> "vllm" in list_stacks()
    True
    """
    d = stacks_dir()
    return sorted(f.stem for f in d.glob("*.yaml") if f.is_file()) if d.is_dir() else []


#: Stacks replaced for the duration of :func:`patched_stacks` (the fits of one fold).
_PATCHED: dict[str, Stack] = {}


@contextmanager
def patched_stacks(stacks: Mapping[str, Stack]) -> Iterator[None]:
    """:func:`load_stack` answers with ``stacks`` (by name) until the block exits."""
    saved = dict(_PATCHED)
    _PATCHED.update(stacks)
    try:
        yield
    finally:
        _PATCHED.clear()
        _PATCHED.update(saved)


def load_stack(name: str | None = None) -> Stack:
    """The stack ``name`` (default :data:`DEFAULT_STACK`) from ``stacks/``.

    Args:
        name: A stack's name (a file stem, never a path).

    Returns:
        The validated :class:`Stack`.

    Raises:
        StackError: An unknown name or a bad file, in one line.
    """
    name = name or DEFAULT_STACK
    if name in _PATCHED:
        return _PATCHED[name]
    if not _NAME.match(name) or name not in list_stacks():
        raise StackError(f"stack {name!r} is not a known stack (known: {', '.join(list_stacks())})")
    return _load_file(stacks_dir() / f"{name}.yaml")


@functools.lru_cache(maxsize=64)
def _load_file(path: Path) -> Stack:
    where = str(path)
    try:
        text = read_text_bounded(path, _MAX_BYTES, what="stack file")
    except WorkbenchError as exc:
        raise StackError(str(exc)) from None
    return parse_stack(text, where, expect=path.stem)


def parse_stack(text: str, where: str = "stack", expect: str | None = None) -> Stack:
    """Validate one stack file's YAML text.

    Args:
        text: The YAML document.
        where: Name used in error messages.
        expect: The name the file must carry (its stem), if known.

    Raises:
        StackError: One line naming the file and the field.
    """
    try:
        data = _parse_yaml(text, where)
    except HardwareError as exc:
        raise StackError(str(exc).replace("hardware fields", "stack fields")) from None
    try:
        stack = Stack.model_validate(data)
    except ValidationError as exc:
        raise StackError(_format_validation(exc, where)) from None
    if expect is not None and stack.name != expect:
        raise StackError(f"{where}: name: {stack.name!r} differs from the file's name {expect!r}")
    return stack
