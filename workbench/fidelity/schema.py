"""The published-measurement corpus as data: one Pydantic model per row, loaded strictly.

A row is one published, *measured* figure (a GEMM rate, an attention kernel's FLOP/s, a decode
latency, a serving throughput, a training MFU), the configuration it was measured at, where it
comes from, and how the workbench reproduces it. Rows live in ``data/published.yaml``; the
loader rejects duplicate keys, unknown fields and bad values with one line naming the row and
the field.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Field, ValidationError, field_validator, model_validator

from workbench._files import read_text_bounded
from workbench.errors import WorkbenchError
from workbench.fidelity._input import CorpusError, StrictModel, check_data
from workbench.fidelity.schema_kinds import CollectiveSetup, EncoderSetup
from workbench.hw._yaml import StrictYamlError, load_strict
from workbench.hw.stack import DEFAULT_STACK, list_stacks

__all__ = [
    "CATEGORIES",
    "MAX_CORPUS_FILE_BYTES",
    "UNITS",
    "AttentionSetup",
    "CollectiveSetup",
    "Corpus",
    "CorpusError",
    "DecoderArch",
    "EncoderSetup",
    "GemmSetup",
    "ModelSetup",
    "PublishedRow",
    "RatioSetup",
    "RunSpec",
    "StreamSetup",
    "TrainingSetup",
    "load_corpus",
]

#: The categories of the corpus, in report order.
CATEGORIES = (
    "gemm",
    "attention",
    "llm_decode",
    "llm_prefill_ttft",
    "serving_throughput",
    "cnn",
    "training",
    "collective",
    "encoder",
    "ratio",
)

#: Unit -> (metric, factor to SI). Time metrics are seconds; rates per second; MFU a fraction.
UNITS: dict[str, tuple[str, float]] = {
    "s": ("time", 1.0),
    "ms": ("time", 1e-3),
    "us": ("time", 1e-6),
    "TFLOP/s": ("flops_per_s", 1e12),
    "TB/s": ("bytes_per_s", 1e12),
    "GB/s": ("bytes_per_s", 1e9),
    "tokens/s": ("items_per_s", 1.0),
    "tokens/s/chip": ("items_per_s", 1.0),
    "images/s": ("items_per_s", 1.0),
    "sequences/s": ("items_per_s", 1.0),
    "MFU%": ("mfu", 1e-2),
    "x": ("ratio", 1.0),
}

_SOURCE_KEY = re.compile(r"^[a-z0-9][a-z0-9-]*$")
_PROFILE_NAME = re.compile(r"^[a-z0-9][a-z0-9.+_-]*$")


def _known(name: str) -> str:
    """``name`` if it is a hardware profile's name (never a path a data file could point at)."""
    from workbench.hw.loader import list_hardware

    if not _PROFILE_NAME.match(name) or name not in list_hardware():
        raise ValueError(f"hardware {name!r} is not a known profile (see: workbench hardware)")
    return name


def _known_stack_name(name: str) -> str:
    """``name`` if it is a shipped stack's name (stacks/*.yaml; never a path)."""
    if not _PROFILE_NAME.match(name) or name not in list_stacks():
        raise ValueError(f"stack {name!r} is not a known stack (see stacks/*.yaml)")
    return name


class _Model(StrictModel):
    """Frozen, extra fields refused, booleans never read as numbers."""


class GemmSetup(_Model):
    """One matrix multiply C[m, n] = A[m, k] @ B[k, n]."""

    kind: Literal["gemm"] = Field(description="Reproduced as one Linear op through the mapper.")
    m: int = Field(gt=0, description="Rows of A and C.")
    n: int = Field(gt=0, description="Columns of B and C.")
    k: int = Field(gt=0, description="Reduction length.")
    dtype: str = Field(description="Operand format (e.g. bf16).")
    out_dtype: str | None = Field(
        default=None,
        description="Format the benchmark writes C in when wider than the operands (e.g. an "
        "FP8 GEMM writing fp16); None: the operand format.",
    )
    software: str = Field(description="Library measured (e.g. cuBLAS via torch.mm).")


class AttentionSetup(_Model):
    """One fused attention forward pass (FlashAttention-style benchmark)."""

    kind: Literal["attention"] = Field(description="Reproduced as one Attention op.")
    batch: int = Field(gt=0, description="Sequences.")
    heads: int = Field(gt=0, description="Query heads.")
    kv_heads: int = Field(gt=0, description="Key/value heads (= heads for MHA).")
    seq: int = Field(gt=0, description="Query and key length, tokens.")
    head_dim: int = Field(gt=0, description="Head width, elements.")
    causal: bool = Field(description="Causal mask.")
    dtype: str = Field(description="Operand format.")
    software: str = Field(description="Kernel measured (FA2, FA3, cuDNN, Triton, ...).")
    flop_convention: Literal["dense", "causal_half"] = Field(
        description="How the source counts FLOPs: 4*b*h*s^2*d ('dense'), halved when causal."
    )
    passes: Literal["forward", "forward_backward"] = Field(
        default="forward",
        description="forward: the forward kernel alone; forward_backward: forward + backward, "
        "counted as flash-attention's benchmarks count it (3.5 x the forward FLOPs: the "
        "backward's five block GEMMs against the forward's two).",
    )


class StreamSetup(_Model):
    """A STREAM-style copy: read one array, write another (off-chip bandwidth)."""

    kind: Literal["stream"] = Field(description="Reproduced as one identity Elementwise op.")
    elements: int = Field(gt=0, description="Elements per array.")
    dtype: str = Field(description="Element format.")
    software: str = Field(description="Benchmark measured (e.g. BabelStream).")


class DecoderArch(_Model):
    """A decoder that is not a preset, given by its published architecture."""

    name: str = Field(description="Model name.")
    hidden: int = Field(gt=0, description="Model width d, elements.")
    layers: int = Field(gt=0, description="Blocks L.")
    heads: int = Field(gt=0, description="Query heads.")
    kv_heads: int = Field(default=0, ge=0, description="Key/value heads (0: = heads).")
    head_dim: int = Field(default=0, ge=0, description="Head width (0: hidden // heads).")
    ffn: int = Field(gt=0, description="MLP intermediate width (per branch for SwiGLU).")
    vocab: int = Field(gt=0, description="Vocabulary size.")
    activation: Literal["swiglu", "gelu", "relu"] = Field(description="MLP activation.")
    max_seq: int = Field(default=8192, gt=0, description="Longest sequence, tokens.")


class TrainingSetup(_Model):
    """How a training row was parallelised and scheduled (its paper's configuration)."""

    pipeline_parallel: int = Field(default=1, ge=1, le=4096, description="Pipeline stages p.")
    data_parallel: int = Field(ge=1, le=1_000_000, description="Model replicas d.")
    micro_batch: int = Field(ge=1, le=65536, description="Sequences per micro-batch per replica.")
    global_batch: int = Field(ge=1, le=10_000_000, description="Sequences per optimizer step.")
    interleave: int = Field(
        default=1, ge=1, le=64, description="Model chunks per pipeline chip v (1: plain 1F1B)."
    )
    sequence_parallel: bool = Field(
        default=False, description="Norms and dropout split over the tensor-parallel chips."
    )
    tp_overlap: bool = Field(
        default=False, description="Tensor-parallel collectives overlapped with the GEMMs."
    )
    pp_overlap: bool = Field(
        default=False, description="Pipeline sends/receives asynchronous (off the critical path)."
    )
    dp_overlap: bool = Field(
        description="Gradient reduction overlapped with the last micro-batch's backward."
    )
    dp_sharding: Literal["none", "optimizer", "full"] = Field(
        default="none",
        description="none: gradient all-reduce; optimizer: ZeRO-1 (reduce-scatter + all-gather, "
        "optimizer states sharded); full: FSDP (parameters sharded too).",
    )
    grad_dtype: Literal["fp32", "bf16", "fp16"] = Field(
        default="fp32", description="Format the gradients are reduced in."
    )
    attention: Literal["fused", "unfused"] = Field(
        default="fused",
        description="fused: a FlashAttention-style kernel; unfused: scores materialised (QK^T, "
        "scale-mask-softmax, dropout, PV), as Megatron-LM ran it before FlashAttention (2022).",
    )
    selective_recompute: bool = Field(
        default=False,
        description="The source ran its stack's selective activation checkpointing (what it "
        "re-runs is the stack's selective_recompute figure); cite where the source says so.",
    )
    flop_count: Literal["model", "hardware"] = Field(
        default="model",
        description="What the source's utilisation counts: model FLOPs (PaLM MFU) or hardware "
        "FLOPs with the rematerialised forward (Megatron-LM SC'21 equation 3).",
    )


#: Fields that a model row's kind does not read (workbench/fidelity/reproduce.py): setting one
#: would change nothing, so it is refused rather than silently ignored.
_IGNORED: dict[str, frozenset[str]] = {
    "cnn": frozenset(
        (
            "arch",
            "seq",
            "output_len",
            "weight_dtype",
            "tensor_parallel",
            "recompute",
        )
    ),
    "training": frozenset(("output_len", "weight_dtype")),
    "llm": frozenset(("recompute",)),
}


class ModelSetup(_Model):
    """A whole model: a decode step, a prefill, a static-batch serving run, training or a CNN."""

    kind: Literal["decode", "prefill", "generate", "serving", "training", "cnn"] = Field(
        description=(
            "decode: one step (latency per step, or batch / step time for a tokens/s unit); "
            "prefill: time to first token; "
            "generate: prefill + output_len-1 decode steps (end-to-end latency); serving: "
            "static batch, output tokens/s; training: MFU; cnn: images/s, or one batch's "
            "latency for a time unit."
        )
    )
    model: str | None = Field(default=None, description="Preset name (workbench.list_models()).")
    arch: DecoderArch | None = Field(default=None, description="Architecture when not a preset.")
    batch: int = Field(
        gt=0, description="Sequences (or images) per step per replica (training: per micro-batch)."
    )
    seq: int = Field(default=1, gt=0, description="Prompt / training sequence length, tokens.")
    output_len: int = Field(default=0, ge=0, description="Generated tokens (generate, serving).")
    dtype: str = Field(description="Activation (and weight) format.")
    weight_dtype: str | None = Field(default=None, description="Weight-only format, if any.")
    chips: int = Field(default=1, gt=0, description="Chips in the measurement.")
    tensor_parallel: int = Field(default=1, gt=0, description="Chips one replica is split over.")
    recompute: float = Field(
        default=0.0,
        ge=0.0,
        le=1.0,
        description="Training: forward passes recomputed during the backward (activation "
        "rematerialisation), as a fraction of one forward (1 = full remat); only where the "
        "source's MFU counts model FLOPs without it.",
    )
    training: TrainingSetup | None = Field(
        default=None, description="Training: the parallel configuration (required for training)."
    )
    software: str = Field(description="Software stack measured (TensorRT-LLM, Megatron, ...).")

    @model_validator(mode="after")
    def _one_model(self) -> ModelSetup:
        if (self.model is None) == (self.arch is None):
            raise ValueError("give exactly one of 'model' (a preset) and 'arch'")
        if (self.kind == "training") != (self.training is not None):
            raise ValueError("'training' is required for kind training and allowed only there")
        t = self.training
        if t is not None:
            used = self.tensor_parallel * t.pipeline_parallel * t.data_parallel
            if used != self.chips:
                raise ValueError(
                    f"chips {self.chips} != tensor_parallel x pipeline_parallel x data_parallel "
                    f"= {used}"
                )
            if t.global_batch % (t.data_parallel * t.micro_batch):
                raise ValueError("global_batch must be a multiple of data_parallel x micro_batch")
            if self.batch != t.micro_batch:
                raise ValueError("batch must equal training.micro_batch")
        if self.kind in ("generate", "serving") and self.output_len < 1:
            raise ValueError(f"kind {self.kind!r} needs output_len >= 1")
        if self.tensor_parallel > self.chips:
            raise ValueError(
                f"tensor_parallel {self.tensor_parallel} splits a replica over more chips than "
                f"the measurement's {self.chips}"
            )
        ignored = sorted(self.model_fields_set & _IGNORED.get(self.kind, _IGNORED["llm"]))
        if ignored:
            raise ValueError(f"kind {self.kind!r} does not use {', '.join(ignored)}")
        return self


RunSetup = Annotated[
    GemmSetup | AttentionSetup | StreamSetup | ModelSetup | CollectiveSetup | EncoderSetup,
    Field(discriminator="kind"),
]


class RunSpec(_Model):
    """One of the two runs of a ratio row: its hardware, setup and the metric compared."""

    hardware: str = Field(description="Hardware profile name of this run (hardware/*.yaml).")
    setup: RunSetup = Field(description="Configuration of this run.")

    _known_hardware = field_validator("hardware")(classmethod(lambda cls, v: _known(v)))
    unit: Literal[tuple(k for k in UNITS if k != "x")] = Field(  # type: ignore[valid-type]
        description="Unit of the metric whose ratio the source reports (e.g. tokens/s)."
    )


class RatioSetup(_Model):
    """A measured ratio of two runs (a speedup), reproduced as the ratio of two predictions."""

    kind: Literal["ratio"] = Field(description="numerator metric / denominator metric.")
    numerator: RunSpec = Field(description="The run on top of the ratio.")
    denominator: RunSpec = Field(description="The run below it.")

    @model_validator(mode="after")
    def _same_metric(self) -> RatioSetup:
        if UNITS[self.numerator.unit][0] != UNITS[self.denominator.unit][0]:
            raise ValueError("numerator and denominator must measure the same metric")
        return self


Setup = Annotated[
    GemmSetup
    | AttentionSetup
    | StreamSetup
    | ModelSetup
    | CollectiveSetup
    | EncoderSetup
    | RatioSetup,
    Field(discriminator="kind"),
]


class PublishedRow(_Model):
    """One published measurement and how the workbench reproduces it."""

    id: str = Field(pattern=r"^[a-z0-9][a-z0-9._-]*$", description="Unique row id.")
    category: Literal[CATEGORIES] = Field(description="Corpus category.")  # type: ignore[valid-type]
    split: Literal["calibration", "heldout"] = Field(
        description="calibration: profile figures may be fitted to it; heldout: never."
    )
    source: str = Field(
        min_length=10, description="Exact source: paper + table/figure, file at a commit, URL."
    )
    source_key: str = Field(
        description="Short key of the independent source (rows sharing it count as one)."
    )
    source_tag: Literal["V", "S", "D", "R"] = Field(
        description="V verified primary, S secondary copy, D derived, R recalled (reference tags)."
    )
    hardware: str = Field(description="Hardware profile name (hardware/*.yaml).")
    stack: str = Field(
        default=DEFAULT_STACK,
        description="Software stack measured: a stacks/*.yaml name (e.g. vllm, nccl), whose "
        "figures every row of that stack is mapped with; a source that names none gets "
        f"{DEFAULT_STACK!r} (workbench.hw.stack.DEFAULT_STACK).",
    )
    setup: Setup = Field(description="Configuration measured, and so reproduced.")

    _known_hardware = field_validator("hardware")(classmethod(lambda cls, v: _known(v)))
    _known_stack = field_validator("stack")(classmethod(lambda cls, v: _known_stack_name(v)))
    measured: float = Field(gt=0, description="The published figure, in `unit`.")
    unit: Literal[tuple(UNITS)] = Field(description="Unit of `measured`.")  # type: ignore[valid-type]
    expected_bottleneck: Literal["compute", "bandwidth", "overhead", "interconnect"] = Field(
        description="Bottleneck class the measurement is known (or argued) to have."
    )
    approximation: str = Field(
        min_length=10, description="How the workbench reproduces the row, in words."
    )
    note: str = Field(default="", description="Anything else a reader should know.")

    @model_validator(mode="after")
    def _checks(self) -> PublishedRow:
        if not _SOURCE_KEY.match(self.source_key):
            raise ValueError(f"source_key {self.source_key!r}: lowercase letters, digits and -")
        if self.measured != self.measured or self.measured in (float("inf"),):
            raise ValueError("measured must be finite")
        return self

    @property
    def metric(self) -> str:
        """``time``, ``flops_per_s``, ``items_per_s`` or ``mfu``."""
        return UNITS[self.unit][0]

    @property
    def measured_si(self) -> float:
        """The measured figure in SI base units (seconds, FLOP/s, items/s, fraction)."""
        return self.measured * UNITS[self.unit][1]


class Corpus(_Model):
    """The whole corpus file."""

    schema_version: Literal[1] = Field(description="Corpus schema version; this code reads 1.")
    rows: tuple[PublishedRow, ...] = Field(min_length=1, description="The measurements.")

    @model_validator(mode="after")
    def _unique(self) -> Corpus:
        seen: set[str] = set()
        for row in self.rows:
            if row.id in seen:
                raise ValueError(f"duplicate row id {row.id!r}")
            seen.add(row.id)
        return self

    @property
    def sources(self) -> tuple[str, ...]:
        """Independent source keys, sorted."""
        return tuple(sorted({r.source_key for r in self.rows}))


#: The corpus that ships with the package, and the folder of its further row files.
DEFAULT_PATH = Path(__file__).with_name("data") / "published.yaml"
EXTRA_DIR = DEFAULT_PATH.with_name("published.d")
#: Largest corpus file read, bytes (4 MiB; the shipped files are ~100 KiB each). Only regular
#: files are read: a named pipe, a device (a link to ``/dev/zero``) or a folder named ``*.yaml``
#: is refused at once, in one line naming it.
MAX_CORPUS_FILE_BYTES = 4 << 20


def _where(loc: tuple[int | str, ...], data: Any) -> str:
    """``row <id>: field.path`` for a validation error location."""
    parts = list(loc)
    head = ""
    if len(parts) >= 2 and parts[0] == "rows" and isinstance(parts[1], int):
        idx = parts[1]
        rows = data.get("rows") if isinstance(data, dict) else None
        rid = (
            rows[idx].get("id") if isinstance(rows, list) and isinstance(rows[idx], dict) else None
        )
        head = f"row {rid!r}" if rid else f"rows[{idx}]"
        parts = parts[2:]
    kinds = (
        "gemm",
        "attention",
        "stream",
        "decode",
        "prefill",
        "generate",
        "serving",
        "training",
        "cnn",
        "collective",
        "encoder",
        "ratio",
    )
    names = [str(p) for p in parts if not (isinstance(p, str) and p in kinds)]
    names = [n for n in names if not n.endswith("Setup")]
    field = ".".join(names)
    return ": ".join(x for x in (head, field) if x)


def parse_corpus(text: str, where: str = "corpus") -> Corpus:
    """Validate corpus YAML text.

    Args:
        text: The YAML document.
        where: Name used in error messages (a file path).

    Returns:
        The corpus.

    Raises:
        CorpusError: One line naming the file, the row and the field.
    """
    try:
        data = load_strict(text)
        check_data(data)
    except (CorpusError, StrictYamlError) as exc:
        raise CorpusError(f"{where}: {exc}") from None
    if not isinstance(data, dict):
        raise CorpusError(f"{where}: top level must be a mapping with schema_version and rows")
    try:
        return Corpus.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        msg = str(err.get("ctx", {}).get("error") or err["msg"]).replace("Value error, ", "")
        loc = _where(tuple(err["loc"]), data)
        more = f" (+{exc.error_count() - 1} more)" if exc.error_count() > 1 else ""
        text_loc = f"{loc}: " if loc else ""
        raise CorpusError(f"{where}: {text_loc}{msg}{more}".replace("\n", " ")) from None


def load_corpus(path: Path | str | None = None) -> Corpus:
    """Load and validate a corpus file (default: the one shipped in ``data/``).

    The shipped corpus is ``data/published.yaml`` plus every ``data/published.d/*.yaml`` (same
    schema), in name order; row ids must be unique across the files. Each file must be a regular
    file of at most :data:`MAX_CORPUS_FILE_BYTES` (4 MiB).

    Args:
        path: A YAML file; ``None`` for the shipped corpus.

    Returns:
        The corpus.

    Raises:
        CorpusError: Unreadable file or invalid content, in one line.
    """
    if path is not None:
        return _load_one(Path(path))
    files = (DEFAULT_PATH, *sorted(EXTRA_DIR.glob("*.yaml")))
    parts = [_load_one(p) for p in files]
    seen: dict[str, Path] = {}
    for file, part in zip(files, parts, strict=True):
        for r in part.rows:
            if seen.setdefault(r.id, file) != file:
                raise CorpusError(f"{file}: row {r.id}: duplicate row id (also in {seen[r.id]})")
    rows = tuple(r for c in parts for r in c.rows)
    try:
        return Corpus(schema_version=1, rows=rows)
    except ValidationError as exc:
        msg = str(exc.errors()[0]["msg"]).replace("Value error, ", "")
        raise CorpusError(f"{EXTRA_DIR}: {msg}") from None


def _load_one(p: Path) -> Corpus:
    try:
        text = read_text_bounded(p, MAX_CORPUS_FILE_BYTES, what="corpus file")
    except WorkbenchError as exc:
        raise CorpusError(str(exc)) from None
    return parse_corpus(text, str(p))
