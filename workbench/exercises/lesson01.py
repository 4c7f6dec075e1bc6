"""Lesson 01, operators to FLOPs and bytes: tables and self-checks.

The lesson builds single operators from :mod:`workbench.ir` and whole models from
:mod:`workbench.models`; these helpers tabulate what the IR computes and check the exercises.
"""

from __future__ import annotations

import pandas as pd

from workbench.exercises._check import CheckResult, compare
from workbench.exercises._claims import Claim
from workbench.exercises._shared import hardware
from workbench.hw import list_hardware
from workbench.ir import Attention, Linear, Op
from workbench.models import build_graph

__all__ = [
    "check_linear_flops",
    "check_linear_intensity",
    "check_param_count",
    "decode_claim",
    "gemm_shapes_table",
    "operator_table",
]


def operator_table(*ops: Op, **named: Op) -> pd.DataFrame:
    """One row per operator: FLOPs, compulsory bytes and arithmetic intensity.

    Args:
        *ops: IR operators (``Linear``, ``Attention``, ``Conv2d``...), labelled by their name.
        **named: More operators, labelled by the keyword (``prefill=op_a, decode=op_b``).

    Returns:
        A frame indexed by label with columns ``kind``, ``flops`` (FLOP), ``bytes_read`` and
        ``bytes_written`` (bytes), ``intensity`` (FLOP per byte moved, rounded to 0.01).

    >>> op = Linear(name="fc", inputs=("x",), tokens=(4,), in_features=8, out_features=8)
    >>> int(operator_table(op).loc["fc", "flops"])
    512
    """
    labelled = [(op.name, op) for op in ops] + list(named.items())
    rows = [
        {
            "op": label,
            "kind": op.kind,
            "flops": op.flops,
            "bytes_read": op.bytes_read,
            "bytes_written": op.bytes_written,
            "intensity": round(op.flops / (op.bytes_read + op.bytes_written), 2),
        }
        for label, op in labelled
    ]
    return pd.DataFrame(rows).set_index("op")


def gemm_shapes_table(
    model: str = "llama2-7b", *, phase: str = "prefill", seq: int = 2048, batch: int = 1
) -> pd.DataFrame:
    """The GEMMs of one transformer block as ``(M, K, N)``, read from the library's graph.

    Projections are ``x[M, K] @ W[K, N]`` with ``M = batch x tokens``; attention is two batched
    GEMMs per (sequence, head): scores ``Q[q, d] @ K^T[d, kv]`` and output ``P[q, kv] @ V[kv, d]``.

    Args:
        model: Preset name.
        phase: ``"prefill"`` or ``"decode"``.
        seq: Prompt (prefill) or context (decode) length, tokens.
        batch: Sequences.

    Returns:
        A frame indexed by GEMM with ``count`` (independent GEMMs of that shape), ``M``, ``K``,
        ``N`` (elements) and ``flops`` (``2 x count x M x K x N``, FLOP, dense: the IR's
        attention operator also counts the softmax and the causal mask's skipped half).
    """
    graph = build_graph(model, phase=phase, batch=batch, seq=seq)
    rows = []
    for op in graph.ops:
        if not op.name.startswith("layers.0."):
            continue
        name = op.name.removeprefix("layers.0.")
        if isinstance(op, Linear):
            m = 1
            for t in op.tokens:
                m *= t
            shapes = [(name, 1, m, op.in_features, op.out_features)]
        elif isinstance(op, Attention):
            c = op.batch * op.heads
            shapes = [
                (f"{name} (Q K^T)", c, op.q_len, op.head_dim, op.kv_len),
                (f"{name} (P V)", c, op.q_len, op.kv_len, op.head_dim),
            ]
        else:
            continue
        for label, count, m, k, n in shapes:
            rows.append(
                {"gemm": label, "count": count, "M": m, "K": k, "N": n,
                 "flops": 2 * count * m * k * n}
            )  # fmt: skip
    return pd.DataFrame(rows).set_index("gemm")


def decode_claim(hidden: int = 4096, dtype: str = "bf16") -> Claim:
    """A one-token projection's intensity against the lowest ridge point of every profile.

    Returns:
        Markdown: the prefill (2048 tokens) and decode (1 token) intensity of a
        ``hidden x hidden`` projection, and the lowest ridge among the profiles with ``dtype``.
    """
    pre = _linear(2048, hidden, hidden, dtype)
    dec = _linear(1, hidden, hidden, dtype)
    ip = pre.flops / (pre.bytes_read + pre.bytes_written)
    idec = dec.flops / (dec.bytes_read + dec.bytes_written)
    ridges = {}
    for name in list_hardware():
        try:
            ridges[name] = hardware(name).ridge_point(dtype)
        except Exception:  # a profile without the format has no ridge for it
            continue
    low = min((r for r in ridges.values() if r > 0), default=0.0)
    lowest = min(ridges, key=lambda n: ridges[n] if ridges[n] > 0 else float("inf"))
    below = "below" if idec < low else "not below"
    return Claim(
        f"The projection's intensity falls from {ip:.0f} FLOP/byte in prefill to {idec:.2g} in "
        f"decode: the weight is read to serve one token. The lowest {dtype} ridge of any profile "
        f"in `workbench.hw` is {low:.3g} FLOP/byte (`{lowest}`), so decode is {below} every "
        "ridge: memory-bound on every accelerator here."
    )


def _linear(tokens: int, in_features: int, out_features: int, dtype: str) -> Linear:
    return Linear(
        name="linear",
        inputs=("x",),
        tokens=(tokens,),
        in_features=in_features,
        out_features=out_features,
        dtype=dtype,
    )


def check_linear_flops(
    answer: float,
    *,
    tokens: int,
    in_features: int,
    out_features: int,
    strict: bool | None = None,
) -> CheckResult:
    """Check the FLOPs of a bias-free Linear layer (a multiply-add counts 2 FLOPs).

    Args:
        answer: The learner's FLOP count.
        tokens: Rows of the input (M).
        in_features: K.
        out_features: N.
        strict: Raise on a wrong answer.

    Returns:
        The check result; the expected value is ``Linear(...).flops``.
    """
    expected = _linear(tokens, in_features, out_features, "bf16").flops
    return compare(
        "linear_flops",
        answer,
        expected,
        hint="every output element needs K multiplies and K adds",
        hint2="M x N outputs, each a K-long dot product; a multiply-add is 2 FLOPs",
        strict=strict,
    )


def check_linear_intensity(
    answer: float,
    *,
    tokens: int,
    in_features: int,
    out_features: int,
    dtype: str = "bf16",
    strict: bool | None = None,
) -> CheckResult:
    """Check the arithmetic intensity (FLOP per byte) of a Linear layer, within 1 %.

    Args:
        answer: The learner's intensity (FLOP/byte).
        tokens: Rows of the input (M).
        in_features: K.
        out_features: N.
        dtype: Format of activations and weights.
        strict: Raise on a wrong answer.

    Returns:
        The check result; expected is FLOPs over compulsory bytes (input, weight, output once).
    """
    op = _linear(tokens, in_features, out_features, dtype)
    expected = op.flops / (op.bytes_read + op.bytes_written)
    return compare(
        "linear_intensity",
        answer,
        expected,
        rel_tol=0.01,
        hint="bytes = (M*K + K*N + M*N) elements times the bytes per element",
        hint2="FLOPs = 2*M*K*N; bf16 is 2 bytes per element; every tensor moves once",
        strict=strict,
    )


def check_param_count(
    answer: float, *, model: str = "llama2-7b", strict: bool | None = None
) -> CheckResult:
    """Check a preset model's parameter count against the library's graph.

    Args:
        answer: The learner's count (parameters).
        model: Preset name.
        strict: Raise on a wrong answer.

    Returns:
        The check result; expected is ``build_graph(model).params``.
    """
    expected = build_graph(model).params
    return compare(
        f"param_count[{model}]",
        answer,
        expected,
        hint="embedding + output head + per layer (4 attention projections, 3 MLP matrices, "
        "2 norm weights) + the final norm",
        hint2="vocab*hidden twice (embedding and head), per layer 4*hidden^2 + 3*hidden*ffn + "
        "2*hidden, times layers, + hidden",
        strict=strict,
    )
