"""Lesson 01, operators to FLOPs and bytes: tables and self-checks.

The lesson builds single operators from :mod:`workbench.ir` and whole models from
:mod:`workbench.models`; these helpers tabulate what the IR computes and check the exercises.
"""

from __future__ import annotations

import itertools

import pandas as pd

from workbench.exercises._check import CheckResult, compare
from workbench.exercises._claims import Claim
from workbench.exercises._shared import hardware, mapping
from workbench.hw import list_hardware
from workbench.ir import Attention, Conv2d, Linear, Op, bytes_for
from workbench.models import build_graph

__all__ = [
    "batch_attention_claim",
    "check_linear_flops",
    "check_linear_intensity",
    "check_param_count",
    "crossover_tokens",
    "decode_claim",
    "gemm_shapes_table",
    "matmul_share_claim",
    "operator_table",
    "pitfall_claim",
    "prefill_claim",
    "token_claim",
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


def _intensity(op: Op) -> float:
    """FLOPs per compulsory byte of one operator (0 for an operator that moves nothing)."""
    moved = op.bytes_read + op.bytes_written
    return op.flops / moved if moved else 0.0


def _num(v: float) -> str:
    """An intensity for a sentence: thousands separated above 100, three digits below."""
    return f"{v:,.0f}" if v >= 100 else f"{v:.3g}"


def _span(lo: float, hi: float) -> str:
    return _num(lo) if _num(lo) == _num(hi) else f"{_num(lo)} to {_num(hi)}"


def crossover_tokens(hidden: int, ridge: float, dtype: str = "bf16") -> int | None:
    """Fewest tokens at which a ``hidden x hidden`` projection's intensity reaches ``ridge``.

    Intensity rises monotonically with the token count (more tokens share one weight read), so
    a bisection over 1..2^20 tokens finds the threshold; None when it is never reached.
    """
    lo, hi = 1, 1 << 20
    if _intensity(_linear(hi, hidden, hidden, dtype)) < ridge:
        return None
    while lo < hi:
        mid = (lo + hi) // 2
        if _intensity(_linear(mid, hidden, hidden, dtype)) >= ridge:
            hi = mid
        else:
            lo = mid + 1
    return lo


def matmul_share_claim(model: str = "llama2-7b", *, seq: int = 2048) -> Claim:
    """The share of a prefill step's FLOPs that are matrix multiplies, from the graph.

    Returns:
        Markdown: ``matmul_flops`` over ``flops`` of the whole graph (percent), worded by size.
    """
    graph = build_graph(model, phase="prefill", seq=seq)
    share = sum(op.matmul_flops for op in graph.ops) / graph.flops if graph.flops else 0.0
    word = "almost every" if share >= 0.95 else ("most" if share > 0.5 else "a minority of")
    return Claim(
        f"In a {seq:,}-token prefill of `{model}`, {share:.2%} of the graph's FLOPs are matrix "
        f"multiplies: {word} FLOP of this transformer is a GEMM."
    )


def token_claim(
    hidden: int = 4096,
    tokens: tuple[int, ...] = (1, 16, 2048),
    *,
    hardware_name: str = "h100-sxm",
    dtype: str = "bf16",
) -> Claim:
    """How a projection's intensity moves with the tokens sharing its weight, against a ridge.

    Returns:
        Markdown bullet: the intensity (FLOP/byte) at each token count, the direction read from
        them, ``hardware_name``'s ridge and the token count from which the projection is above it.
    """
    vals = [_intensity(_linear(t, hidden, hidden, dtype)) for t in tokens]
    rising = all(b > a for a, b in itertools.pairwise(vals))
    verb = "grows" if rising else "does not grow"
    ridge = hardware(hardware_name).ridge_point(dtype)
    cross = crossover_tokens(hidden, ridge, dtype)
    side = [("above" if v >= ridge else "below") for v in vals]
    pts = ", ".join(
        f"{_num(v)} at {t:,} token{'s' * (t != 1)} ({sd})"
        for t, v, sd in zip(tokens, vals, side, strict=True)
    )
    where = (
        f"it reaches the ridge from {cross:,} tokens sharing one weight read"
        if cross
        else "it never reaches the ridge"
    )
    return Claim(
        f"- A {hidden}x{hidden} projection's intensity {verb} with the tokens that share one read "
        f"of its weight: {pts} FLOP/byte against `{hardware_name}`'s {dtype} ridge of "
        f"{ridge:.0f}; {where}."
        + (
            " A long prefill or a large batch is compute-heavy, single-stream decode traffic-heavy."
            if side[0] == "below" and side[-1] == "above"
            else ""
        )
    )


def batch_attention_claim(
    model: str = "llama2-7b", *, seq: int = 2048, batches: tuple[int, int] = (1, 8)
) -> Claim:
    """Decode attention's intensity at two batch sizes, with the direction read from them.

    Returns:
        Markdown: layer 0's decode attention intensity (FLOP/byte) and bytes read at each batch.
    """
    ops = [build_graph(model, phase="decode", seq=seq, batch=b).op("layers.0.attn.sdpa")
           for b in batches]  # fmt: skip
    (a, b), (ia, ib) = batches, [_intensity(op) for op in ops]
    ratio = ib / ia if ia else 0.0
    verb = "does not raise" if abs(ratio - 1) < 0.01 else ("raises" if ratio > 1 else "lowers")
    return Claim(
        f"Decode attention of `{model}` ({seq:,} tokens cached) at batch {a}: {ia:.3g} FLOP/byte, "
        f"reading {ops[0].bytes_read / 1e6:.3g} MB; at batch {b}: {ib:.3g} FLOP/byte, reading "
        f"{ops[1].bytes_read / 1e6:.3g} MB (x{ops[1].bytes_read / ops[0].bytes_read:.3g}): "
        f"batching {verb} its intensity (x{ratio:.2f}), because every sequence reads its own "
        "KV cache."
    )


def prefill_claim(
    model: str = "llama2-7b", hardware_name: str = "h100-sxm", *, seq: int = 2048
) -> Claim:
    """Where layer 0's projection GEMMs sit against the ridge in decode and in prefill.

    Returns:
        Markdown: the GEMMs' intensity range (FLOP/byte) per phase and their side of
        ``hardware_name``'s bf16 ridge.
    """
    ridge = hardware(hardware_name).ridge_point("bf16")
    parts = []
    for phase in ("decode", "prefill"):
        graph = build_graph(model, phase=phase, seq=seq)
        vals = [_intensity(op) for op in graph.ops
                if isinstance(op, Linear) and op.name.startswith("layers.0.")]  # fmt: skip
        lo, hi = min(vals), max(vals)
        side = "above" if lo >= ridge else ("below" if hi < ridge else "on both sides of")
        parts.append((phase, lo, hi, side))
    (_, dlo, dhi, dside), (_, plo, phi, pside) = parts
    return Claim(
        f"Switch **phase** to prefill ({seq:,} tokens): layer 0's projection GEMMs go from "
        f"{_span(dlo, dhi)} FLOP/byte ({dside} the ridge) to {_span(plo, phi)} ({pside} "
        f"`{hardware_name}`'s ridge of {ridge:.0f}); lesson 02 tabulates which kernels are "
        "compute-bound."
    )


def pitfall_claim(
    model: str = "llama2-7b", hardware_name: str = "h100-sxm", *, seq: int = 2048
) -> Claim:
    """The counting pitfalls, measured on the library's operators and mapping.

    Returns:
        A Markdown list: FLOPs over MACs of the ResNet-50 stem; the mapped HBM bytes of layer 0's
        ``up_proj`` over its compulsory bytes; GPT-2's tied head (parameters it owns, weight
        bytes it reads); and dense attention FLOPs over the IR's causal count in prefill.
    """
    stem = Conv2d(
        name="stem", inputs=("image",), batch=1, in_channels=3, height=224, width=224,
        out_channels=64, kernel_h=7, kernel_w=7, stride=2, padding=3,
    )  # fmt: skip
    per_mac = stem.flops / stem.macs
    graph = build_graph(model, phase="prefill", seq=seq)
    up = graph.op("layers.0.mlp.up_proj")
    mp = mapping(model, hardware_name, phase="prefill", seq=seq)
    moved = mp.kernel("layers.0.mlp.up_proj").cost.bytes_at(mp.hardware.offchip.name)
    floor = up.bytes_read + up.bytes_written
    more = "more than" if moved > floor * 1.001 else "no more than"
    gpt2 = build_graph("gpt2", seq=512)
    head, emb = gpt2.op("lm_head"), gpt2.op("embed_tokens")
    head_w = bytes_for(emb.params, head.dtype)
    att = graph.op("layers.0.attn.sdpa")
    assert isinstance(att, Attention)
    dense = 4 * att.batch * att.heads * att.q_len * att.kv_len * att.head_dim
    over = dense / att.flops
    return Claim(
        f"- Counting a multiply-add as one FLOP (MACs): the ResNet-50 stem does "
        f"{stem.flops / 1e6:.4g} MFLOP = {per_mac:g} x its {stem.macs / 1e6:.4g} M MACs, so MACs "
        f"{'halve' if per_mac == 2 else 'change'} every count; papers on CNNs often quote MACs, "
        "and the IR's `Conv2d.macs` gives that figure.\n"
        f"- Compulsory bytes are a floor: mapped on `{hardware_name}`, layer 0's `up_proj` "
        f"({seq:,}-token "
        f"prefill) moves {moved / 1e6:.4g} MB of HBM traffic, x{moved / floor:.3g} its "
        f"{floor / 1e6:.4g} MB compulsory bytes ({more} the floor: tiles re-read operands). "
        "Lesson 03 shows how tiling decides the real traffic.\n"
        f"- Tied embeddings: GPT-2's `lm_head` owns {head.params:,} parameters (the "
        f"{emb.params / 1e6:.4g} M of the embedding are counted once) yet reads "
        f"{head_w / 1e6:.4g} MB of that weight per step ({head.bytes_read / 1e6:.4g} MB in all).\n"
        f"- The causal mask: a dense count of prefill attention (4 x batch x heads x q x kv x d) "
        f"gives {dense / 1e9:.4g} GFLOP per layer, x{over:.3g} the IR's {att.flops / 1e9:.4g} "
        "(the masked half is skipped; softmax adds a little back)."
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
