"""Lesson 04, fusion boundaries and what they save: tables and self-checks."""

from __future__ import annotations

import itertools
import math

import pandas as pd

from workbench.exercises._check import CheckResult, check_direction, compare
from workbench.exercises._claims import Claim, join_names
from workbench.exercises._shared import mapping, mapping_summary
from workbench.exercises._widget_steps import ExplorerSetting, ExplorerStep, explorer_walk
from workbench.ir import Attention, bytes_for
from workbench.models import build_graph
from workbench.options import FUSION_RULES, MapOptions, TileOverride

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


def _growth_word(exponent: float) -> str:
    """``about linearly`` / ``about quadratically`` / ``as seq^e`` for a log-log slope."""
    if abs(exponent - 1) < 0.25:
        return "about linearly"
    if abs(exponent - 2) < 0.25:
        return "about quadratically"
    return f"as seq^{exponent:.2g}"


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
    verb = "grows" if r_hi > r_lo else "does not grow"
    return Claim(
        f"From {lo} to {hi} tokens (x{hi / lo:g}) the unfused/fused traffic ratio {verb} from "
        f"{r_lo:g} to {r_hi:g} (x{r_hi / r_lo:.3g}): the fused kernel's bytes grow "
        f"{_growth_word(e_f)} (exponent {e_f:.2f}), the unfused kernels' {_growth_word(e_u)} "
        f"(exponent {e_u:.2f})."
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
    shown = join_names(k.kernel.name.removeprefix("layers.0.") for k in layer0)
    back = len(on_step.after.mapping().kernels)
    say = off_step.instruction
    return Claim(
        f"{say[0].upper()}{say[1:]} in the widget below and look at the sheet: a "
        f"{seq}-token prefill goes from {len(on.kernels)} to {len(off.kernels)} kernels; in "
        f"layer 0 the new ones are {shown} (class {', '.join(f'**{c}**' for c in classes)}), "
        f"the elementwise work the GEMMs' epilogues had absorbed. Then {on_step.instruction} "
        f"again ({back} kernels)."
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
    where = "left" if i_u < i_f else "right"
    return Claim(
        f"Then {step.instruction} in the {seq}-token prefill: the attention layers' intensity "
        f"goes from {i_f:.3g} to {i_u:.3g} FLOP/byte (their points move {where}) and their time "
        f"per step from {t_f * 1e3:.3g} to {t_u * 1e3:.3g} ms (the attention bar grows "
        f"x{t_u / t_f:.2g})."
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
    word = "larger" if pb > pa else "smaller"
    return Claim(
        f"Then {drag.instruction} with `flash_attention` still unticked, and {tick.instruction} "
        f"again: without it the step is {pb:.1f} % slower at {seqs[1]:,} tokens, against "
        f"{pa:.1f} % at {seqs[0]:,}: a {word} effect."
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
    rising = all(y > x for x, y in itertools.pairwise(pre))
    trend = "grows with the prompt" if rising else "does not grow steadily with the prompt"
    where = "far less" if dec < min(pre) / 2 else ("less" if dec < min(pre) else "as much or more")
    points = ", ".join(f"{p:.1f} % at {s:,}" for s, p in zip(seqs, pre, strict=True))
    return Claim(
        f"- Without `flash_attention` a prefill step of `{model}` on `{hardware_name}` is "
        "slower by "
        f"{points} tokens: fused attention's value {trend}. In decode ({decode_seq:,} tokens "
        f"cached) it is worth {dec:.1f} %, {where}: one query row's traffic is the KV cache, "
        "fused or not."
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
        return Claim(
            f"- `{rule}` records no intermediate bytes in `kernel.saved_bytes` here: price it by "
            "switching it off (the savings table)."
        )
    if cached and abs(both - cached - grew) <= 0.005 * both:
        rest = (
            f"the other {cached / 1e9:.3g} GB are re-reads the cache serves (the producer has "
            "just written the intermediate and it fits), so a boundary costs its write plus "
            "the read that misses the cache"
        )
    elif abs(both - grew) <= 0.005 * both:
        rest = "every re-read goes off chip, so a boundary costs exactly its write and its read"
    else:
        rest = f"{(both - grew) / 1e9:.3g} GB apart from the write-and-read count"
    return Claim(
        f"- A kernel boundary costs a write and a read of the intermediate: `{rule}` keeps the "
        f"intermediates of {len(fused)} kernels on chip, {both / 1e9:.3g} GB that would be "
        f"written and read back across the boundaries (`kernel.saved_bytes`). Mapped with the "
        f"rule off, off-chip traffic grows {grew / 1e9:.3g} GB ({grew / both:.0%} of that): {rest}."
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
    if rows and abs(together / rows - 1) < 0.005:
        verdict = (
            "equal to the sum of the rows: in this graph no two rules compete for the same "
            "ops. Rows add up only when that holds, so map with the rules off together "
            "before adding them"
        )
    else:
        rel = "less" if together < rows else "more"
        verdict = f"{rel} than the sum of the rows: the rules overlap, so the rows do not add up"
    return Claim(
        f"- Adding the rows: every rule off costs {together / 1e9:.3g} GB here, the rows sum to "
        f"{rows / 1e9:.3g} GB, {verdict}."
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
    timing = (
        "takes the same time" if same else f"takes {abs(dt):.1%} {'longer' if dt > 0 else 'less'}"
    )
    if same and cls == "compute":
        lesson = (
            "bytes added to or taken from a compute-bound kernel do not change its time; the "
            f"rule's saving is the removed kernels' time, and they are **{'/'.join(removed)}**"
        )
    elif same:
        lesson = "the bytes it adds are too few to show in its time"
    else:
        lesson = "its time moves with its bytes here"
    return Claim(
        f"- Fusion and compute-bound kernels: with the epilogue fused, prefill's `{kernel}` "
        f"(**{cls}**) moves {abs(db) / 1e6:.3g} MB {'more' if db > 0 else 'less'} (it reads the "
        f"residual in its epilogue) and {timing}: {lesson}."
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
    base = mapping(model, hardware_name, phase="prefill", seq=seq).kernel(kernel)
    forced = TileOverride(pattern=kernel, m=tile[0], n=tile[1], k=tile[2], split_k=1)
    k = mapping(
        model, hardware_name, phase="prefill", seq=seq, options=MapOptions(tiles=(forced,))
    ).kernel(kernel)
    t = k.tiling
    over = t.sram_bytes > t.sram_capacity_bytes
    ratio = k.cost.total_s / base.cost.total_s if base.cost.total_s else 0.0
    fits = "more than" if over else "within"
    spills = (
        f"the mapper charges {t.spill_bytes / 1e6:.4g} MB of spill traffic"
        if t.spill_bytes > 0
        else "nothing spills"
    )
    speed = "slower" if ratio > 1.005 else ("faster" if ratio < 0.995 else "as fast")
    fused = join_names(base.kernel.fusion) if base.kernel.fusion else "no rule"
    return Claim(
        f"- {'Fusing past an SRAM limit' if over else 'A fused tile within SRAM'}: `{kernel}` "
        f"(fused: {fused}) forced to a {t.shape} tile "
        f"needs {t.sram_bytes / 1024:.0f} KiB of SRAM, {fits} the "
        f"{t.sram_capacity_bytes / 1024:.0f} KiB per core; {spills}, and the kernel is "
        f"x{ratio:.2f} the searched tile's time "
        f"({speed}: {k.cost.total_s * 1e6:.1f} against {base.cost.total_s * 1e6:.1f} µs)."
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
        hint2="an unfused kernel stores the whole square, masked or not: how many (query, key) "
        "pairs does one head of one sequence see, and how many heads and sequences are there?",
        strict=strict,
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
    return compare(
        f"fusion_savings[{rule}]",
        answer,
        off - base,
        rel_tol=1e-3,
        hint="compare two mappings that differ only in this rule, at the off-chip level",
        hint2="switch the rule off with MapOptions(disabled_fusion=(rule,)); the saving is the "
        "intermediate the rule keeps on chip (written out once and read back without it), so a "
        "rule that saves bytes gives a positive difference",
        strict=strict,
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
    """A prediction: with fusion ``rule`` switched off, is the step faster, slower or the same?"""
    on = mapping(model, hardware_name, phase=phase, seq=seq)
    off = mapping(
        model, hardware_name, phase=phase, seq=seq, options=MapOptions(disabled_fusion=(rule,))
    )
    return check_direction(
        f"without {rule} ({model} {phase})",
        answer,
        on.time_s,
        off.time_s,
        hint="what does the rule keep on chip, and does this model have anything for it to fuse?",
        strict=strict,
    )
