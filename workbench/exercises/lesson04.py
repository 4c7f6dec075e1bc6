"""Lesson 04, fusion boundaries and what they save: tables and self-checks."""

from __future__ import annotations

import itertools
import math

import pandas as pd

from workbench.exercises._check import STEP_TIME, CheckResult
from workbench.exercises._claims import Claim
from workbench.exercises._shared import forced_tile, mapping, mapping_summary
from workbench.exercises._text import LessonText
from workbench.exercises._widget_steps import ExplorerSetting, ExplorerStep, explorer_walk
from workbench.ir import Attention, bytes_for
from workbench.models import build_graph
from workbench.options import FUSION_RULES, MapOptions

__all__ = [
    "attention_traffic",
    "boundary_claim",
    "check_fusion_effect",
    "check_fusion_savings",
    "check_score_matrix_bytes",
    "compute_bound_claim",
    "epilogue_claim",
    "explorer_steps",
    "flash_claim",
    "fusion_claim",
    "fusion_savings",
    "mapping_summary",
    "overlap_claim",
    "seq_claim",
    "spill_claim",
    "takeaway_claim",
    "traffic_claim",
]

_TEXT = LessonText("lesson04")


def _offchip_bytes(
    model: str, hardware_name: str, phase: str, seq: int, batch: int, off: tuple[str, ...]
) -> tuple[float, float]:
    options = MapOptions(disabled_fusion=off)
    mp = mapping(model, hardware_name, phase=phase, seq=seq, batch=batch, options=options)
    return mp.total.bytes_at(mp.hardware.offchip.name), mp.time_s


def fusion_savings(
    model: str = "llama2-7b",
    hardware_name: str = "h100-sxm",
    *,
    phase: str = "prefill",
    seq: int = 2048,
    batch: int = 1,
) -> pd.DataFrame:
    """What each fusion rule saves: off-chip bytes and time with the rule switched off.

    Args:
        model: Preset name.
        hardware_name: Hardware profile name.
        phase: ``"prefill"`` or ``"decode"``.
        seq: Prompt (prefill) or context (decode) length, tokens.
        batch: Sequences per step.

    Returns:
        A frame indexed by rule with ``bytes_saved`` (off-chip bytes the rule avoids per step),
        ``time_saved_us`` (microseconds, rounded to 0.1) and ``time_saved_pct`` (percent of
        the fully fused step, rounded to 0.1).
    """
    base_bytes, base_time = _offchip_bytes(model, hardware_name, phase, seq, batch, ())
    rows = []
    for rule in FUSION_RULES:
        off_bytes, off_time = _offchip_bytes(model, hardware_name, phase, seq, batch, (rule,))
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
    seqs: tuple[int, ...],
    model: str = "llama2-7b",
    hardware_name: str = "h100-sxm",
    *,
    batch: int = 1,
) -> pd.DataFrame:
    """Off-chip traffic of one layer's attention, fused (flash) vs unfused, as prefill grows.

    Args:
        seqs: Prompt lengths (tokens).
        model: Preset name.
        hardware_name: Hardware profile name.
        batch: Sequences per step.

    Returns:
        A frame indexed by ``seq`` with ``fused_mb`` and ``unfused_mb`` (off-chip MB, 1e6 bytes,
        of layer 0's attention kernels, rounded to 0.1) and ``ratio`` (unfused over fused).
    """
    rows = []
    for seq in seqs:
        per = []
        for off in ((), ("flash_attention",)):
            mp = mapping(
                model, hardware_name, seq=seq, batch=batch, options=MapOptions(disabled_fusion=off)
            )
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
        _TEXT.render(
            "fusion_part",
            rule=r,
            gb=saving.loc[r, "bytes_saved"] / 1e9,
            pct=saving.loc[r, "time_saved_pct"],
        )
        for r in saving.index
    ]
    return _TEXT.claim("fusion", parts="; ".join(parts), idle=idle)


def _growth_word(exponent: float) -> str:
    """``about linearly`` / ``about quadratically`` / ``as seq^e`` for a log-log slope."""
    if abs(exponent - 1) < 0.25:
        shape = "linear"
    elif abs(exponent - 2) < 0.25:
        shape = "quadratic"
    else:
        shape = "other"
    return _TEXT.render("growth", shape=shape, exponent=exponent)


def traffic_claim(table: pd.DataFrame) -> Claim:
    """How fused and unfused attention traffic grow with the sequence (:func:`attention_traffic`).

    The growth of each column is its log-log slope between the shortest and the longest
    sequence (1: linear, 2: quadratic); the words follow the slopes.

    Returns:
        Markdown: the ratio at the shortest and the longest sequence, its growth against the
        sequence's, and the growth exponent of the fused and the unfused traffic.
    """
    lo, hi = table.index.min(), table.index.max()
    r_lo, r_hi = table.loc[lo, "ratio"], table.loc[hi, "ratio"]
    span = math.log(hi / lo)
    e_f = math.log(table.loc[hi, "fused_mb"] / table.loc[lo, "fused_mb"]) / span
    e_u = math.log(table.loc[hi, "unfused_mb"] / table.loc[lo, "unfused_mb"]) / span
    return _TEXT.claim(
        "traffic",
        lo=lo,
        hi=hi,
        seq_ratio=hi / lo,
        grows=r_hi > r_lo,
        ratio_lo=r_lo,
        ratio_hi=r_hi,
        ratio_growth=r_hi / r_lo,
        fused_growth=_growth_word(e_f),
        fused_exponent=e_f,
        unfused_growth=_growth_word(e_u),
        unfused_exponent=e_u,
    )


def _rule_pct(model: str, hardware_name: str, phase: str, seq: int, rule: str) -> float:
    """Percent of the fully fused step that switching ``rule`` off adds (negative: it saves)."""
    on = mapping(model, hardware_name, phase=phase, seq=seq)
    off = mapping(
        model, hardware_name, phase=phase, seq=seq, options=MapOptions(disabled_fusion=(rule,))
    )
    return 100 * (off.time_s - on.time_s) / on.time_s if on.time_s else 0.0


def explorer_steps(
    model: str = "llama2-7b",
    hardware_name: str = "h100-sxm",
    *,
    seqs: tuple[int, int] = (2048, 4096),
) -> tuple[ExplorerStep, ...]:
    """The live-widget section's instructions as data, in the order the lesson gives them.

    From the explorer as the lesson builds it (``model`` on ``hardware_name``, a ``seqs[0]``-token
    prefill, every rule ticked): untick and re-tick ``gemm_epilogue``; untick
    ``flash_attention``; drag **seq** to ``seqs[1]``; tick ``flash_attention`` again.

    Returns:
        The steps, each accepted by the explorer's own refusal check.
    """
    start = ExplorerSetting(model=model, hardware=hardware_name, phase="prefill", seq=seqs[0])
    return explorer_walk(
        start,
        [
            ("gemm_epilogue", False),
            ("gemm_epilogue", True),
            ("flash_attention", False),
            ("seq", seqs[1]),
            ("flash_attention", True),
        ],
    )


def epilogue_claim(
    model: str = "llama2-7b", hardware_name: str = "h100-sxm", *, seq: int = 2048
) -> Claim:
    """Steps 1-2 of :func:`explorer_steps`: what unticking ``gemm_epilogue`` does to the sheet.

    Returns:
        Markdown: the kernel count per prefill step with the rule on and off, layer 0's new
        kernels and their bottleneck classes, and the count after ticking it again.
    """
    off_step, on_step = explorer_steps(model, hardware_name, seqs=(seq, 2 * seq))[:2]
    on, off = off_step.before.mapping(), off_step.after.mapping()
    names = {k.kernel.name for k in on.kernels}
    new = [k for k in off.kernels if k.kernel.name not in names]
    layer0 = [k for k in new if k.kernel.name.startswith("layers.0.")]
    classes = sorted({k.cost.bottleneck for k in new})
    say = off_step.instruction
    return _TEXT.claim(
        "epilogue",
        untick=say[:1].upper() + say[1:],
        seq=seq,
        kernels_on=len(on.kernels),
        kernels_off=len(off.kernels),
        new=[k.kernel.name.removeprefix("layers.0.") for k in layer0],
        classes=classes,
        tick=on_step.instruction,
        kernels_back=len(on_step.after.mapping().kernels),
    )


def flash_claim(
    model: str = "llama2-7b", hardware_name: str = "h100-sxm", *, seq: int = 2048
) -> Claim:
    """Step 3 of :func:`explorer_steps`: unticking ``flash_attention``, points and bars.

    Returns:
        Markdown: the attention layers' off-chip intensity (FLOP/byte, over all their kernels)
        and time per step, fused and unfused, in a ``seq``-token prefill.
    """
    step = explorer_steps(model, hardware_name, seqs=(seq, 2 * seq))[2]
    out = {}
    for label, m in (("fused", step.before.mapping()), ("unfused", step.after.mapping())):
        ks = [k for k in m.kernels if k.kernel.layer_type == "attention"]
        flops = sum(k.kernel.flops for k in ks)
        moved = sum(k.cost.bytes_at(m.hardware.offchip.name) for k in ks)
        out[label] = (flops / moved if moved else 0.0, sum(k.cost.total_s for k in ks))
    (i_f, t_f), (i_u, t_u) = out["fused"], out["unfused"]
    return _TEXT.claim(
        "flash",
        instruction=step.instruction,
        seq=seq,
        intensity_fused=i_f,
        intensity_unfused=i_u,
        left=i_u < i_f,
        ms_fused=t_f * 1e3,
        ms_unfused=t_u * 1e3,
        time_ratio=t_u / t_f,
    )


def seq_claim(
    model: str = "llama2-7b",
    hardware_name: str = "h100-sxm",
    *,
    seqs: tuple[int, int] = (2048, 4096),
) -> Claim:
    """Steps 3-5 of :func:`explorer_steps`: the cost of no fused attention at two lengths.

    Returns:
        Markdown: the step's slowdown without ``flash_attention`` at ``seqs[0]`` (step 3) and
        at ``seqs[1]`` (step 5, ticking it again), with the direction read from the numbers.
    """
    steps = explorer_steps(model, hardware_name, seqs=seqs)
    untick, drag, tick = steps[2], steps[3], steps[4]
    pa = 100 * (untick.after.mapping().time_s / untick.before.mapping().time_s - 1)
    pb = 100 * (tick.before.mapping().time_s / tick.after.mapping().time_s - 1)
    return _TEXT.claim(
        "seq",
        drag=drag.instruction,
        tick=tick.instruction,
        pct_b=pb,
        seq_b=seqs[1],
        pct_a=pa,
        seq_a=seqs[0],
        larger=pb > pa,
    )


def takeaway_claim(
    model: str = "llama2-7b",
    hardware_name: str = "h100-sxm",
    *,
    seqs: tuple[int, ...] = (512, 2048, 4096),
    decode_seq: int = 2048,
) -> Claim:
    """How fused attention's value moves with the prompt length, and in decode, computed.

    Returns:
        Markdown bullet: the slowdown without ``flash_attention`` (percent of the step) in
        prefill at each length and in one decode step, with the directions read from the numbers.
    """
    pre = [_rule_pct(model, hardware_name, "prefill", s, "flash_attention") for s in seqs]
    dec = _rule_pct(model, hardware_name, "decode", decode_seq, "flash_attention")
    points = ", ".join(
        _TEXT.render("takeaway_point", pct=p, seq=s) for s, p in zip(seqs, pre, strict=True)
    )
    return _TEXT.claim(
        "takeaway",
        model=model,
        hardware_name=hardware_name,
        points=points,
        rising=all(y > x for x, y in itertools.pairwise(pre)),
        decode_seq=decode_seq,
        decode_pct=dec,
        where="far_less" if dec < min(pre) / 2 else ("less" if dec < min(pre) else "more"),
    )


def boundary_claim(
    table: pd.DataFrame,
    model: str = "llama2-7b",
    hardware_name: str = "h100-sxm",
    *,
    seq: int = 2048,
    rule: str = "gemm_epilogue",
) -> Claim:
    """What a kernel boundary costs: a write and a read of the intermediate, less cache hits.

    Args:
        table: A :func:`fusion_savings` frame for the same model, hardware and prefill ``seq``.
        model: Preset name.
        hardware_name: Hardware profile name.
        seq: Prompt length, tokens.
        rule: The fusion rule whose boundaries are priced.

    Returns:
        Markdown bullet: the intermediates ``rule`` keeps on chip and their bytes written and
        read back (``kernel.saved_bytes``: 2 x each intermediate), the off-chip bytes the
        mapping actually adds with the rule off (``table``), and the re-reads the shared cache
        serves (the unfused kernels' ``cached_input_bytes``), in GB.
    """
    on = mapping(model, hardware_name, phase="prefill", seq=seq)
    off = mapping(
        model, hardware_name, phase="prefill", seq=seq, options=MapOptions(disabled_fusion=(rule,))
    )
    fused = [k for k in on.kernels if rule in k.kernel.fusion]
    both = sum(k.kernel.saved_bytes for k in fused)
    grew = float(table.loc[rule, "bytes_saved"])
    names = {k.kernel.name for k in on.kernels}
    cached = sum(k.kernel.cached_input_bytes for k in off.kernels if k.kernel.name not in names)
    if not both:
        return _TEXT.claim("boundary_none", rule=rule)
    if cached and abs(both - cached - grew) <= 0.005 * both:
        case = "cached"  # the re-reads the cache serves account for the difference
    elif abs(both - grew) <= 0.005 * both:
        case = "offchip"
    else:
        case = "apart"
    return _TEXT.claim(
        "boundary",
        rule=rule,
        kernels=len(fused),
        both_gb=both / 1e9,
        grew_gb=grew / 1e9,
        grew_share=grew / both,
        case=case,
        cached_gb=cached / 1e9,
        apart_gb=(both - grew) / 1e9,
    )


def overlap_claim(
    table: pd.DataFrame,
    model: str = "llama2-7b",
    hardware_name: str = "h100-sxm",
    *,
    phase: str = "prefill",
    seq: int = 2048,
) -> Claim:
    """Whether the rules' savings add up: every rule off against the sum of the rows.

    Args:
        table: A :func:`fusion_savings` frame for the same model, hardware, phase and seq.
        model: Preset name.
        hardware_name: Hardware profile name.
        phase: ``"prefill"`` or ``"decode"``.
        seq: Prompt (prefill) or context (decode) length, tokens.

    Returns:
        Markdown bullet: the off-chip bytes every rule off adds against the sum of the rows (GB).
    """
    base, _ = _offchip_bytes(model, hardware_name, phase, seq, 1, ())
    off, _ = _offchip_bytes(model, hardware_name, phase, seq, 1, tuple(FUSION_RULES))
    together, rows = off - base, float(table["bytes_saved"].sum())
    return _TEXT.claim(
        "overlap",
        together_gb=together / 1e9,
        rows_gb=rows / 1e9,
        equal=bool(rows) and abs(together / rows - 1) < 0.005,
        less=together < rows,
    )


def compute_bound_claim(
    model: str = "llama2-7b",
    hardware_name: str = "h100-sxm",
    *,
    seq: int = 2048,
    kernel: str = "o_proj",
) -> Claim:
    """Bytes on a compute-bound kernel: ``kernel`` with and without its fused epilogue.

    Returns:
        Markdown bullet: layer 0's ``kernel`` (prefill) off-chip bytes and time with the
        ``gemm_epilogue`` on and off, its class, and the class of the kernels the rule removes.
    """
    name = (
        f"layers.0.attn.{kernel}"
        if kernel in ("q_proj", "k_proj", "v_proj", "o_proj")
        else (f"layers.0.mlp.{kernel}")
    )
    on = mapping(model, hardware_name, phase="prefill", seq=seq)
    off = mapping(
        model,
        hardware_name,
        phase="prefill",
        seq=seq,
        options=MapOptions(disabled_fusion=("gemm_epilogue",)),
    )
    level = on.hardware.offchip.name
    k_on, k_off = on.kernel(name), off.kernel(name)
    db = k_on.cost.bytes_at(level) - k_off.cost.bytes_at(level)
    dt = k_on.cost.total_s / k_off.cost.total_s - 1 if k_off.cost.total_s else 0.0
    cls = k_on.cost.bottleneck
    same = abs(dt) < 0.005
    names = {k.kernel.name for k in on.kernels}
    removed = sorted({k.cost.bottleneck for k in off.kernels if k.kernel.name not in names})
    return _TEXT.claim(
        "compute_bound",
        kernel=kernel,
        bottleneck=cls,
        mb=abs(db) / 1e6,
        more=db > 0,
        same=same,
        change=abs(dt),
        longer=dt > 0,
        compute=cls == "compute",
        removed=removed,
    )


def spill_claim(
    model: str = "llama2-7b",
    hardware_name: str = "h100-sxm",
    *,
    seq: int = 2048,
    kernel: str = "layers.0.mlp.up_proj",
    tile: tuple[int, int, int] = (512, 256, 128),
) -> Claim:
    """A fused GEMM forced past its SRAM: the spill bytes the mapper charges and the time.

    Args:
        model: Preset name.
        hardware_name: Hardware profile name.
        seq: Prompt length (tokens), prefill.
        kernel: A GEMM kernel that carries a fused epilogue.
        tile: ``(tile_m, tile_n, tile_k)`` forced on it (no split-K).

    Returns:
        Markdown bullet: SRAM the tile needs against capacity (KiB), spill traffic (MB) and the
        kernel's time against the searched tile's (µs), with the words read from the numbers.
    """
    base, k = forced_tile(model, hardware_name, kernel, tile, seq=seq)
    t = k.tiling
    over = t.sram_bytes > t.sram_capacity_bytes
    ratio = k.cost.total_s / base.cost.total_s if base.cost.total_s else 0.0
    return _TEXT.claim(
        "spill",
        over=over,
        kernel=kernel,
        fused=list(base.kernel.fusion),
        shape=t.shape,
        sram_kib=t.sram_bytes / 1024,
        capacity_kib=t.sram_capacity_bytes / 1024,
        spill_mb=t.spill_bytes / 1e6,
        ratio=ratio,
        slower=ratio > 1.005,
        faster=ratio < 0.995,
        forced_us=k.cost.total_s * 1e6,
        searched_us=base.cost.total_s * 1e6,
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
    return _TEXT.check(
        "score_matrix", f"score_matrix_bytes[{model},seq={seq}]", answer, expected, strict=strict
    )


def check_fusion_savings(
    answer: float,
    *,
    rule: str,
    model: str = "llama2-7b",
    hardware_name: str = "h100-sxm",
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
        hardware_name: Hardware profile name.
        phase: ``"prefill"`` or ``"decode"``.
        seq: Prompt (prefill) or context (decode) length, tokens.
        batch: Sequences per step.
        strict: Raise on a wrong answer.

    Returns:
        The check result; expected is the mapping's off-chip bytes with ``rule`` disabled minus
        those with every rule on.
    """
    base, _ = _offchip_bytes(model, hardware_name, phase, seq, batch, ())
    off, _ = _offchip_bytes(model, hardware_name, phase, seq, batch, (rule,))
    return _TEXT.check(
        "fusion_savings", f"fusion_savings[{rule}]", answer, off - base, rel_tol=1e-3, strict=strict
    )


def check_fusion_effect(
    answer: object,
    *,
    rule: str,
    model: str = "llama2-7b",
    hardware_name: str = "h100-sxm",
    phase: str = "decode",
    seq: int = 2048,
    strict: bool | None = None,
) -> CheckResult:
    """A prediction: with fusion ``rule`` switched off, is the step faster, slower or the same?

    The hints name both costs of switching a rule off, launches and bytes (issue 32: in
    decode, flash_attention's slowdown is its extra kernels' launches, not the score bytes,
    which one query per sequence keeps small); the second hint gives both figures.
    """
    on = mapping(model, hardware_name, phase=phase, seq=seq)
    off = mapping(
        model, hardware_name, phase=phase, seq=seq, options=MapOptions(disabled_fusion=(rule,))
    )
    level = on.hardware.offchip.name
    return STEP_TIME.check(
        f"without {rule} ({model} {phase})",
        answer,
        on.time_s,
        off.time_s,
        hint=_TEXT.render("fusion_effect_hint", phase=phase),
        hint2=_TEXT.render(
            "fusion_effect_hint2",
            rule=rule,
            kernels=len(off.kernels) - len(on.kernels),
            mb=(off.total.bytes_at(level) - on.total.bytes_at(level)) / 1e6,
            level=level,
        ),
        strict=strict,
    )
