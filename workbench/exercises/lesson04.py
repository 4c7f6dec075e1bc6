"""Lesson 04, fusion boundaries and what they save: tables and self-checks."""

from __future__ import annotations

import pandas as pd

from workbench.exercises._check import CheckResult, check_direction, compare
from workbench.exercises._claims import Claim, join_names
from workbench.exercises._shared import mapping, mapping_summary
from workbench.ir import Attention, bytes_for
from workbench.models import build_graph
from workbench.options import FUSION_RULES, MapOptions

__all__ = [
    "attention_traffic",
    "check_fusion_effect",
    "check_fusion_savings",
    "check_score_matrix_bytes",
    "flash_claim",
    "fusion_claim",
    "fusion_savings",
    "mapping_summary",
    "traffic_claim",
]


def _offchip_bytes(
    model: str, hw: str, phase: str, seq: int, batch: int, off: tuple[str, ...]
) -> tuple[float, float]:
    options = MapOptions(disabled_fusion=off)
    mp = mapping(model, hw, phase=phase, seq=seq, batch=batch, options=options)
    return mp.total.bytes_at(mp.hardware.offchip.name), mp.time_s


def fusion_savings(
    model: str = "llama2-7b",
    hw: str = "h100-sxm",
    *,
    phase: str = "prefill",
    seq: int = 2048,
    batch: int = 1,
) -> pd.DataFrame:
    """What each fusion rule saves: off-chip bytes and time with the rule switched off.

    Args:
        model: Preset name.
        hw: Hardware profile.
        phase: ``"prefill"`` or ``"decode"``.
        seq: Prompt (prefill) or context (decode) length, tokens.
        batch: Sequences per step.

    Returns:
        A frame indexed by rule with ``bytes_saved`` (off-chip bytes the rule avoids per step),
        ``time_saved_us`` (microseconds, rounded to 0.1) and ``time_saved_pct`` (percent of
        the fully fused step, rounded to 0.1).
    """
    base_bytes, base_time = _offchip_bytes(model, hw, phase, seq, batch, ())
    rows = []
    for rule in FUSION_RULES:
        off_bytes, off_time = _offchip_bytes(model, hw, phase, seq, batch, (rule,))
        rows.append(
            {
                "rule": rule,
                "bytes_saved": int(off_bytes - base_bytes),
                "time_saved_us": round((off_time - base_time) * 1e6, 1),
                "time_saved_pct": round(100 * (off_time - base_time) / base_time, 1),
            }
        )
    return pd.DataFrame(rows).set_index("rule")


def attention_traffic(
    seqs: tuple[int, ...], model: str = "llama2-7b", hw: str = "h100-sxm", *, batch: int = 1
) -> pd.DataFrame:
    """Off-chip traffic of one layer's attention, fused (flash) vs unfused, as prefill grows.

    Args:
        seqs: Prompt lengths (tokens).
        model: Preset name.
        hw: Hardware profile.
        batch: Sequences per step.

    Returns:
        A frame indexed by ``seq`` with ``fused_mb`` and ``unfused_mb`` (off-chip MB, 1e6 bytes,
        of layer 0's attention kernels, rounded to 0.1) and ``ratio`` (unfused over fused).
    """
    rows = []
    for seq in seqs:
        per = []
        for off in ((), ("flash_attention",)):
            mp = mapping(model, hw, seq=seq, batch=batch, options=MapOptions(disabled_fusion=off))
            level = mp.hardware.offchip.name
            per.append(
                sum(
                    km.cost.bytes_at(level)
                    for km in mp.kernels
                    if km.kernel.name.startswith("layers.0.attn.sdpa")
                )
            )
        rows.append(
            {
                "seq": seq,
                "fused_mb": round(per[0] / 1e6, 1),
                "unfused_mb": round(per[1] / 1e6, 1),
                "ratio": round(per[1] / per[0], 2),
            }
        )
    return pd.DataFrame(rows).set_index("seq")


def fusion_claim(table: pd.DataFrame) -> Claim:
    """Which rules save what, from a :func:`fusion_savings` frame.

    Returns:
        Markdown: the rules that save bytes (GB, share of the step) and those that save nothing
        in this graph.
    """
    saving = table[table["bytes_saved"] > 0].sort_values("bytes_saved", ascending=False)
    idle = [str(r) for r in table.index if table.loc[r, "bytes_saved"] <= 0]
    parts = [
        f"`{r}` saves {saving.loc[r, 'bytes_saved'] / 1e9:.3g} GB "
        f"({saving.loc[r, 'time_saved_pct']:g} % of the step)"
        for r in saving.index
    ]
    text = "Here " + "; ".join(parts) + "." if parts else "No rule saves anything here."
    if idle:
        text += (
            f" {join_names(idle)} save nothing in this graph: switching one off leaves no "
            "intermediate for it to keep on chip (the GEMM epilogue already absorbs the "
            "elementwise ops next to a GEMM)."
        )
    return Claim(text)


def flash_claim(model: str = "llama2-7b", hw: str = "h100-sxm", *, seq: int = 2048) -> Claim:
    """What unticking ``flash_attention`` does to the explorer's attention points and bars.

    Returns:
        Markdown: the attention layers' off-chip intensity (FLOP/byte, time-weighted over their
        kernels) and time per step, fused and unfused, in a ``seq``-token prefill.
    """
    out = {}
    for label, opts in (("fused", MapOptions()),
                        ("unfused", MapOptions(disabled_fusion=("flash_attention",)))):  # fmt: skip
        m = mapping(model, hw, phase="prefill", seq=seq, options=opts)
        ks = [k for k in m.kernels if k.kernel.layer_type == "attention"]
        flops = sum(k.kernel.flops for k in ks)
        moved = sum(k.cost.bytes_at(m.hardware.offchip.name) for k in ks)
        out[label] = (flops / moved if moved else 0.0, sum(k.cost.total_s for k in ks))
    (i_f, t_f), (i_u, t_u) = out["fused"], out["unfused"]
    where = "left" if i_u < i_f else "right"
    return Claim(
        f"Untick `flash_attention` in a {seq}-token prefill: the attention layers' intensity "
        f"goes from {i_f:.3g} to {i_u:.3g} FLOP/byte (their points move {where}) and their time "
        f"per step from {t_f * 1e3:.3g} to {t_u * 1e3:.3g} ms (the attention bar grows "
        f"x{t_u / t_f:.2g})."
    )


def traffic_claim(table: pd.DataFrame) -> Claim:
    """How the unfused/fused traffic ratio grows with the sequence, from :func:`attention_traffic`.

    Returns:
        Markdown: the ratio at the shortest and the longest sequence and its growth against the
        sequence's.
    """
    lo, hi = table.index.min(), table.index.max()
    r_lo, r_hi = table.loc[lo, "ratio"], table.loc[hi, "ratio"]
    return Claim(
        f"From {lo} to {hi} tokens (x{hi / lo:g}) the unfused/fused traffic ratio grows from "
        f"{r_lo:g} to {r_hi:g} (x{r_hi / r_lo:.3g}): the fused kernel's bytes grow with the "
        "sequence, the unfused score and probability matrices with its square."
    )


def check_score_matrix_bytes(
    answer: int,
    *,
    model: str = "llama2-7b",
    seq: int = 2048,
    batch: int = 1,
    strict: bool | None = None,
) -> CheckResult:
    """Check the size of one layer's attention score matrix (all heads), in bytes.

    Args:
        answer: The learner's size (bytes).
        model: Preset name.
        seq: Prompt length (tokens).
        batch: Sequences.
        strict: Raise on a wrong answer.

    Returns:
        The check result; expected is batch x heads x q_len x kv_len elements of the
        activation format, from the graph's layer-0 Attention op (the full square: an unfused
        kernel stores every score, masked or not).
    """
    op = build_graph(model, seq=seq, batch=batch).op("layers.0.attn.sdpa")
    assert isinstance(op, Attention)
    expected = bytes_for(op.batch * op.heads * op.q_len * op.kv_len, op.dtype)
    return compare(
        f"score_matrix_bytes[{model},seq={seq}]",
        answer,
        expected,
        hint="one score per (batch, head, query, key), each in the activation format",
        hint2="batch * heads * seq * seq * 2 bytes (bf16)",
        strict=strict,
    )


def check_fusion_savings(
    answer: float,
    *,
    rule: str,
    model: str = "llama2-7b",
    hw: str = "h100-sxm",
    phase: str = "prefill",
    seq: int = 2048,
    batch: int = 1,
    strict: bool | None = None,
) -> CheckResult:
    """Check the off-chip bytes one fusion rule saves per step, within 0.1 %.

    Args:
        answer: The learner's saving (bytes).
        rule: A name in ``FUSION_RULES``.
        model: Preset name.
        hw: Hardware profile.
        phase: ``"prefill"`` or ``"decode"``.
        seq: Prompt (prefill) or context (decode) length, tokens.
        batch: Sequences per step.
        strict: Raise on a wrong answer.

    Returns:
        The check result; expected is the mapping's off-chip bytes with ``rule`` disabled minus
        those with every rule on.
    """
    base, _ = _offchip_bytes(model, hw, phase, seq, batch, ())
    off, _ = _offchip_bytes(model, hw, phase, seq, batch, (rule,))
    return compare(
        f"fusion_savings[{rule}]",
        answer,
        off - base,
        rel_tol=1e-3,
        hint="map twice (rule on, rule off) and subtract total.bytes_at('hbm')",
        hint2="bytes with the rule off minus bytes with it on (MapOptions(fusion=...)); the "
        "result is positive",
        strict=strict,
    )


def check_fusion_effect(
    answer: object,
    *,
    rule: str,
    model: str = "llama2-7b",
    hw: str = "h100-sxm",
    phase: str = "decode",
    seq: int = 2048,
    strict: bool | None = None,
) -> CheckResult:
    """A prediction: with fusion ``rule`` switched off, is the step faster, slower or the same?"""
    on = mapping(model, hw, phase=phase, seq=seq)
    off = mapping(model, hw, phase=phase, seq=seq, options=MapOptions(disabled_fusion=(rule,)))
    return check_direction(
        f"without {rule} ({model} {phase})",
        answer,
        on.time_s,
        off.time_s,
        hint="what does the rule keep on chip, and does this model have anything for it to fuse?",
        strict=strict,
    )
