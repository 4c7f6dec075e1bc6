"""Corpus row kinds beyond single kernels and decoders: collectives and encoders.

A ``collective`` row is one point of an nccl-tests style sweep (``all_reduce_perf``,
``all_gather_perf``, ``reduce_scatter_perf``): the message size, the ranks, and the bus bandwidth
the benchmark printed. An ``encoder`` row is a BERT-family forward pass (inference latency or
sequences per second). Both are validated as strictly as the other setups (``extra="forbid"``).
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from workbench.fidelity._input import StrictModel

__all__ = ["BUS_FACTOR", "CollectiveSetup", "EncoderSetup"]

#: nccl-tests' bus-bandwidth correction per collective: busbw = algbw x factor(n)
#: (NVIDIA/nccl-tests doc/PERFORMANCE.md, "Bus bandwidth").
BUS_FACTOR = {
    "all_reduce": lambda n: 2.0 * (n - 1) / n,
    "all_gather": lambda n: (n - 1) / n,
    "reduce_scatter": lambda n: (n - 1) / n,
}


class _Model(StrictModel):
    """Frozen, extra fields refused, booleans never read as numbers."""


class CollectiveSetup(_Model):
    """One collective call over the chips of one node, as nccl-tests measures it."""

    kind: Literal["collective"] = Field(
        description="Reproduced with workbench/cost/collective.py (all_reduce_s, all_gather_s)."
    )
    op: Literal["all_reduce", "all_gather", "reduce_scatter"] = Field(
        description="The collective measured."
    )
    message_bytes: int = Field(
        gt=0,
        le=2**40,
        description="nccl-tests' 'size' column, bytes: the buffer each rank holds for "
        "all-reduce, the whole (gathered) buffer for all-gather and reduce-scatter.",
    )
    ranks: int = Field(ge=2, le=72, description="Chips taking part (one node's fabric).")
    dtype: str = Field(description="Element format reduced (nccl-tests default: float).")
    software: str = Field(description="Benchmark and library measured (e.g. nccl-tests 2.x).")


class EncoderSetup(_Model):
    """A BERT-family encoder's forward pass over a batch of sequences (inference)."""

    kind: Literal["encoder"] = Field(
        description="Reproduced as workbench.models.encoder_graph through the mapper."
    )
    model: Literal["bert-base", "bert-large"] = Field(description="Encoder preset.")
    batch: int = Field(gt=0, le=65536, description="Sequences per forward pass.")
    seq: int = Field(gt=0, le=512, description="Tokens per sequence (BERT's 512 positions).")
    dtype: str = Field(description="Activation and weight format.")
    software: str = Field(description="Inference stack measured (e.g. TensorRT 10 plugins).")
