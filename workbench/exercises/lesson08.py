"""Lesson 08, attention and bandwidth bottlenecks: tables and self-checks.

Prefill against decode, the KV cache growing with context, and fused against unfused attention,
all computed by the mapper on a hardware profile.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from workbench.errors import WorkbenchError
from workbench.exercises._check import CheckResult, compare
from workbench.exercises._claims import BOTTLENECK_SYNONYMS, Claim
from workbench.exercises._moves import ControlMove, phrase_move
from workbench.exercises._shared import hardware, mapping
from workbench.exercises._text import LessonText
from workbench.mapper import ModelMapping
from workbench.models import build_graph
from workbench.models.presets import PRESETS
from workbench.options import MapOptions
from workbench.platform.fit import fit_check, kv_bytes_per_token, setting_refusal
from workbench.report.charts import roofline_points

__all__ = [
    "EXPLORER",
    "WidgetMove",
    "check_decode_bottleneck",
    "check_kv_bytes",
    "explorer_claim",
    "explorer_moves",
    "fit_claim",
    "fused_attention_table",
    "gqa_claim",
    "kv_claim",
    "kv_crossover",
    "kv_growth_table",
    "kv_takeaway_claim",
    "phase_claim",
    "phase_table",
    "pitfall_claim",
    "question_claim",
    "roofline_move_table",
    "takeaway_claim",
    "widget_claim",
    "widget_move_table",
    "widget_moves",
]

_TEXT = LessonText("lesson08")

#: The explorer's controls as lesson 08 builds it (every fusion rule on).
EXPLORER: dict[str, object] = {
    "model": "llama2-7b",
    "hardware": "h100-sxm",
    "phase": "decode",
    "batch": 8,
    "seq": 2048,
    "flash_attention": True,
}


def phase_table(model: str, hardware_name: str, *, seq: int = 2048, batch: int = 1) -> pd.DataFrame:
    """Prefill of ``seq`` tokens against one decode step at context ``seq``.

    Returns:
        Rows ``prefill``/``decode``: time_ms, tokens, us_per_token, mfu, attention_share (of the
        step time), attention_bottleneck (the first layer's sdpa kernel class).
    """
    rows = []
    for phase in ("prefill", "decode"):
        m = mapping(model, hardware_name, phase=phase, batch=batch, seq=seq)
        attn = m.kernel("layers.0.attn.sdpa").cost
        by_type = m.time_by_layer_type()
        rows.append(
            {
                "phase": phase,
                "time_ms": round(m.time_s * 1e3, 3),
                "tokens": m.items_per_step,
                "us_per_token": round(m.time_s / m.items_per_step * 1e6, 2),
                "mfu": round(m.mfu, 3),
                "attention_share": round(by_type.get("attention", 0.0) / m.time_s, 3),
                "attention_bottleneck": attn.bottleneck,
            }
        )
    return pd.DataFrame(rows).set_index("phase")


def kv_growth_table(
    model: str, hardware_name: str, *, contexts: tuple[int, ...] = (512, 2048, 4096), batch: int = 8
) -> pd.DataFrame:
    """KV-cache size and decode step time as the context grows (bf16 cache).

    Returns:
        One row per context: kv_gib (whole batch, GiB = 2**30 bytes: a capacity), decode_ms,
        sdpa_ms (all layers' attention kernels), sdpa_share.
    """
    rows = []
    for ctx in contexts:
        m = mapping(model, hardware_name, phase="decode", batch=batch, seq=ctx)
        sdpa = sum(k.cost.total_s for k in m.kernels if k.kernel.kind == "attention")
        rows.append(
            {
                "context": ctx,
                "kv_gib": round(kv_bytes_per_token(model) * ctx * batch / 2**30, 3),
                "decode_ms": round(m.time_s * 1e3, 3),
                "sdpa_ms": round(sdpa * 1e3, 3),
                "sdpa_share": round(sdpa / m.time_s, 3),
            }
        )
    frame = pd.DataFrame(rows).set_index("context")
    frame.attrs["batch"] = batch  # NOTE: kv_claim's crossover needs the batch the rows hold
    return frame


def fused_attention_table(model: str, hardware_name: str, *, seq: int = 4096) -> pd.DataFrame:
    """Prefill attention with the flash_attention fusion on and off.

    Returns:
        Rows ``fused``/``unfused``: attention_ms (all layers), attention_hbm_gb, step_ms.
    """
    rows = []
    for label, opts in (
        ("fused", None),
        ("unfused", MapOptions(disabled_fusion=("flash_attention",))),
    ):
        m = mapping(model, hardware_name, phase="prefill", seq=seq, options=opts)
        att = [
            k
            for k in m.kernels
            if k.kernel.layer_type == "attention"
            and k.kernel.kind in ("attention", "gemm", "row")
            and "proj" not in k.kernel.name
        ]
        level = hardware(hardware_name).offchip.name
        rows.append(
            {
                "attention": label,
                "attention_ms": round(sum(k.cost.total_s for k in att) * 1e3, 3),
                "attention_hbm_gb": round(sum(k.cost.bytes_at(level) for k in att) / 1e9, 3),
                "step_ms": round(m.time_s * 1e3, 3),
            }
        )
    return pd.DataFrame(rows).set_index("attention")


def phase_claim(table: pd.DataFrame) -> Claim:
    """Prefill against decode, read from :func:`phase_table`.

    Returns:
        Markdown: time per token in each phase and whether the attention kernel's class flips.
    """
    pre, dec = table.loc["prefill"], table.loc["decode"]
    return _TEXT.claim(
        "phase",
        tokens=pre["tokens"],
        time_ms=pre["time_ms"],
        us_prefill=pre["us_per_token"],
        us_decode=dec["us_per_token"],
        ratio=dec["us_per_token"] / pre["us_per_token"],
        a=pre["attention_bottleneck"],
        b=dec["attention_bottleneck"],
    )


def kv_crossover(model: str, batch: int) -> int:
    """The first context (tokens) at which ``batch`` sequences' bf16 KV cache outweighs the weights.

    ``floor(weight bytes / (KV bytes per token x batch)) + 1``: at batch 8, Llama-2-7B's
    13.48 GB of weights against 512 KiB a token a sequence cross at 3,214 tokens.

    >>> kv_crossover("llama2-7b", 8)
    3214
    """
    weights = build_graph(model).params * 2
    return weights // (kv_bytes_per_token(model) * batch) + 1


def kv_claim(table: pd.DataFrame, model: str = "llama2-7b") -> Claim:
    """Where the KV cache overtakes the weights and attention the decode step.

    Read from a :func:`kv_growth_table` frame (at its batch). The crossover is computed
    (:func:`kv_crossover`), not read off the table's sampled contexts (issue 32: "from 4,095
    tokens", the first row past it, where batch 8 crosses at 3,214); attention's share is only
    known at the sampled contexts, so it is stated there.

    Returns:
        Markdown: the context from which the cache outweighs the weights and the first sampled
        context at which attention holds over half of the step (or that neither happens).
    """
    batch = int(table.attrs.get("batch", 0))
    if batch < 1:
        raise WorkbenchError("kv_claim: the table carries no batch (use kv_growth_table)")
    weights = build_graph(model).params * 2 / 2**30  # bf16 weights, GiB
    cross = kv_crossover(model, batch)
    heavier = [c for c in table.index if table.loc[c, "kv_gib"] > weights]
    slower = [c for c in table.index if table.loc[c, "sdpa_share"] > 0.5]
    return _TEXT.claim(
        "kv",
        batch=batch,
        cross=cross if cross <= table.index.max() else None,
        heavier=heavier[0] if heavier else None,
        heavier_gib=table.loc[heavier[0], "kv_gib"] if heavier else None,
        weights=weights,
        longest=table.index.max(),
        slower=slower[0] if slower else None,
        slower_share=table.loc[slower[0], "sdpa_share"] if slower else None,
    )


def gqa_claim(model: str = "llama2-7b", other: str = "llama3-8b") -> Claim:
    """How much smaller grouped-query attention makes the KV cache per token."""
    a, b = kv_bytes_per_token(model), kv_bytes_per_token(other)
    cfg_a, cfg_b = PRESETS[model], PRESETS[other]
    return _TEXT.claim(
        "gqa",
        other=other,
        other_heads=cfg_b.kv_heads,
        model=model,
        model_heads=cfg_a.kv_heads,
        ratio=a / b,
        other_kib=b / 1024,
        model_kib=a / 1024,
    )


def fit_claim(model: str, hardware_name: str, *, batch: int, context: int) -> Claim:
    """Whether ``batch`` sequences of ``context`` tokens fit beside the weights on one chip."""
    f = fit_check(model, hardware(hardware_name), batch=batch, context=context)
    return _TEXT.claim(
        "fit",
        batch=batch,
        context=context,
        fits=f.fits,
        model=model,
        hardware=hardware_name,
        weights=f.weights_bytes / 2**30,
        kv=f.kv_bytes / 2**30,
        activations=f.activation_bytes / 2**30,
        capacity=f.capacity_bytes / 2**30,
    )


def roofline_move_table(
    model: str,
    hardware_name: str,
    *,
    settings: tuple[tuple[int, int], ...] = ((8, 512), (8, 8192), (64, 2048)),
    kernels: tuple[str, ...] = ("layers.0.attn.sdpa", "layers.0.mlp.up_proj"),
) -> pd.DataFrame:
    """Where decode kernels sit on the roofline at several (batch, context) settings.

    Args:
        model: Preset name.
        hardware_name: Hardware profile name.
        settings: ``(batch, context)`` pairs, tokens.
        kernels: Kernel names.

    Returns:
        Rows indexed by ``(kernel, batch, context)`` with ``intensity`` (FLOP/byte off-chip, as
        the explorer's roofline plots it), ``achieved_tflops`` (1e12 FLOP/s) and ``time_us``.
    """
    rows = []
    for batch, ctx in settings:
        pts = {
            p["kernel"]: p
            for p in roofline_points(
                mapping(model, hardware_name, phase="decode", batch=batch, seq=ctx)
            )
        }
        for k in kernels:
            p = pts[k]
            rows.append(
                {
                    "kernel": k.removeprefix("layers.0."),
                    "batch": batch,
                    "context": ctx,
                    "intensity": float(f"{p['intensity']:.3g}"),
                    "achieved_tflops": float(f"{p['achieved_flops_per_s'] / 1e12:.3g}"),
                    "time_us": round(p["time_s"] * 1e6, 1),
                }
            )
    return pd.DataFrame(rows).set_index(["kernel", "batch", "context"])


def _moves(a: float, b: float, spec: str = ".2g") -> str:
    """Where a roofline point goes as its intensity goes from ``a`` to ``b`` (10 %: put)."""
    r = b / a
    return _TEXT.render("moves", put=0.9 <= r <= 1.1, ratio=r, spec=spec)


@dataclass(frozen=True, slots=True)
class WidgetMove:
    """One instruction a lesson gives for the explorer: move ``slider`` from ``start`` to ``end``.

    Attributes:
        slider: ``seq`` (context, tokens) or ``batch`` (sequences).
        start: Where the drag starts.
        end: Where it ends: the farthest power of two towards the wanted end that the explorer
            accepts for the model (its context length and one chip's memory,
            :func:`workbench.platform.fit.setting_refusal`).
        batch: The batch held while ``seq`` moves (or the batch itself).
        seq: The context held while ``batch`` moves (or the context itself).
    """

    slider: str
    start: int
    end: int
    batch: int
    seq: int

    def settings(self) -> tuple[tuple[int, int], tuple[int, int]]:
        """The two ``(batch, context)`` settings the move goes between."""
        if self.slider == "seq":
            return (self.batch, self.start), (self.batch, self.end)
        return (self.start, self.seq), (self.end, self.seq)


def _farthest(model: str, hardware_name: str, slider: str, start: int, want: int, held: int) -> int:
    """The largest power of two in ``(start, want]`` the explorer accepts, else a refusal."""
    hwo = hardware(hardware_name)
    ends = [2**i for i in range(20) if start < 2**i <= want]
    for end in reversed(ends):
        batch, seq = (held, end) if slider == "seq" else (end, held)
        if not setting_refusal(model, hwo, phase="decode", batch=batch, seq=seq):
            return end
    batch, seq = (held, start * 2) if slider == "seq" else (start * 2, held)
    why = setting_refusal(model, hwo, phase="decode", batch=batch, seq=seq)
    raise WorkbenchError(
        f"no {slider} drag from {start} is reachable for {model} on {hardware_name}: {why}"
    )


def widget_moves(
    model: str, hardware_name: str, *, batch: int = 8
) -> tuple[WidgetMove, WidgetMove]:
    """The two drags the roofline sentence instructs, clipped to what the explorer accepts.

    The sentence asks for context 512 -> 8,192 at ``batch`` and batch 1 -> 64 at context 2,048;
    a model with a shorter context, or a chip that cannot hold the KV cache, gets the farthest
    reachable end instead, so every instruction is one the widget carries out.
    """
    seq_end = _farthest(model, hardware_name, "seq", 512, 8192, batch)
    batch_end = _farthest(model, hardware_name, "batch", 1, 64, 2048)
    return (
        WidgetMove("seq", 512, seq_end, batch, 512),
        WidgetMove("batch", 1, batch_end, 1, 2048),
    )


def widget_claim(model: str, hardware_name: str, *, batch: int = 8) -> Claim:
    """What the explorer's roofline does when you drag context and batch in decode.

    Args:
        model: Preset name.
        hardware_name: Hardware profile name.
        batch: The batch the seq drag happens at.

    Returns:
        Markdown sentences computed from :func:`roofline_move_table` at exactly the settings of
        :func:`widget_moves` (each accepted by the explorer's own check).
    """
    seq_move, batch_move = widget_moves(model, hardware_name, batch=batch)
    (s0, s1), (b0, b1) = seq_move.settings(), batch_move.settings()
    t = roofline_move_table(model, hardware_name, settings=tuple(dict.fromkeys((s0, s1, b0, b1))))
    a = t.loc["attn.sdpa"]
    g = t.loc["mlp.up_proj"]
    seq_a = _moves(a.loc[s0, "intensity"], a.loc[s1, "intensity"])
    seq_g = _moves(g.loc[s0, "intensity"], g.loc[s1, "intensity"])
    grow = a.loc[s1, "time_us"] / a.loc[s0, "time_us"]
    b_a = _moves(a.loc[b0, "intensity"], a.loc[b1, "intensity"])
    b_g = _moves(g.loc[b0, "intensity"], g.loc[b1, "intensity"])
    return _TEXT.claim(
        "widget",
        seq_start=seq_move.start,
        seq_end=seq_move.end,
        batch=batch,
        seq_attention=seq_a,
        intensity=a.loc[s1, "intensity"],
        grow=grow,
        seq_gemm=seq_g,
        batch_end=batch_move.end,
        batch_seq=batch_move.seq,
        batch_gemm=b_g,
        batch_attention=b_a,
    )


def check_kv_bytes(
    answer: float, *, model: str, context: int, batch: int, strict: bool | None = None
) -> CheckResult:
    """Check the bf16 KV-cache bytes of ``batch`` sequences of ``context`` tokens."""
    expected = kv_bytes_per_token(model) * context * batch
    return compare(
        "kv_bytes",
        answer,
        expected,
        hint=_TEXT.render("kv_bytes_hint"),
        # NOTE: the count, not the library call that does it (kv_bytes_per_token), so the
        # student still computes it (issue 20).
        hint2=_TEXT.render("kv_bytes_hint2"),
        strict=strict,
    )


def check_decode_bottleneck(
    answer: str, *, model: str, hardware_name: str, context: int, strict: bool | None = None
) -> CheckResult:
    """Check the bottleneck class of the first decode attention kernel at ``context``.

    The setting must be one the explorer accepts (the model's context length, one chip's
    memory): an exercise never asks about a step the widget would refuse.
    """
    why = setting_refusal(model, hardware(hardware_name), phase="decode", batch=1, seq=context)
    if why:
        raise WorkbenchError(f"check_decode_bottleneck: {why}")
    m = mapping(model, hardware_name, phase="decode", batch=1, seq=context)
    expected = m.kernel("layers.0.attn.sdpa").cost.bottleneck
    return _TEXT.check(
        "decode_bottleneck",
        "decode_bottleneck",
        answer,
        expected,
        synonyms=BOTTLENECK_SYNONYMS,
        strict=strict,
    )


def takeaway_claim(
    model: str, hardware_name: str, *, seq: int = 2048, long_seq: int = 4096
) -> Claim:
    """The lesson's takeaways that state a direction, computed (not typed).

    Args:
        model: Preset name.
        hardware_name: Hardware profile name.
        seq: Prompt and context length of the prefill/decode comparison, tokens.
        long_seq: The long prompt of the fused-attention comparison, tokens.

    Returns:
        Markdown bullets: ``up_proj``'s class in prefill and in decode, and what switching fused
        attention off costs a long prompt in off-chip bytes and time.
    """
    cls = {
        phase: mapping(model, hardware_name, phase=phase, seq=seq)
        .kernel("layers.0.mlp.up_proj")
        .cost.bottleneck.split(":")[0]
        for phase in ("prefill", "decode")
    }
    first = _TEXT.render("takeaway_classes", prefill=cls["prefill"], decode=cls["decode"], seq=seq)
    t = fused_attention_table(model, hardware_name, seq=long_seq)
    fused, unfused = t.loc["fused"], t.loc["unfused"]
    if fused["attention_hbm_gb"] <= 0 or fused["attention_ms"] <= 0:
        return Claim(first)
    bytes_x = unfused["attention_hbm_gb"] / fused["attention_hbm_gb"]
    time_x = unfused["attention_ms"] / fused["attention_ms"]
    second = _TEXT.render("takeaway_fused", seq=long_seq, bytes_ratio=bytes_x, time_ratio=time_x)
    return Claim(first + "\n" + second)


def widget_move_table(model: str, hardware_name: str, *, batch: int = 8) -> pd.DataFrame:
    """:func:`roofline_move_table` at exactly the settings of :func:`widget_moves`."""
    seq_move, batch_move = widget_moves(model, hardware_name, batch=batch)
    settings = (*seq_move.settings(), *batch_move.settings())
    return roofline_move_table(model, hardware_name, settings=tuple(dict.fromkeys(settings)))


def explorer_moves() -> tuple[ControlMove, ...]:
    """Lesson 08's other explorer instructions, as data, each from :data:`EXPLORER`.

    Switch to prefill; untick ``flash_attention`` there; then two pushes the explorer refuses
    (a context past the model's positions, a batch whose KV cache does not fit): the refusal,
    and its reason on screen, is what they teach.
    """
    prefill = {**EXPLORER, "phase": "prefill"}

    def move(
        state: dict[str, object], control: str, end: object, refused: bool = False
    ) -> ControlMove:
        setting = tuple((k, v) for k, v in state.items() if k != control)
        return ControlMove(widget="MappingExplorer", control=control, start=state[control],
                           end=end, setting=setting, refused=refused)  # fmt: skip

    return (
        move(EXPLORER, "phase", "prefill"),
        move(prefill, "flash_attention", False),
        move(EXPLORER, "seq", 4096, refused=True),
        move(EXPLORER, "batch", 128, refused=True),
    )


def _explorer_mapping(state: dict[str, object]) -> tuple[str, ModelMapping | None]:
    """``(refusal, mapping)`` of the explorer at ``state``, as the explorer computes them."""
    model, hardware_name, phase = str(state["model"]), str(state["hardware"]), str(state["phase"])
    batch, seq = int(str(state["batch"])), int(str(state["seq"]))
    why = setting_refusal(model, hardware(hardware_name), phase=phase, batch=batch, seq=seq)
    if why:
        return why, None
    off = () if state.get("flash_attention", True) else ("flash_attention",)
    opts = MapOptions(disabled_fusion=off)
    return "", mapping(model, hardware_name, phase=phase, batch=batch, seq=seq, options=opts)


def _attention_bytes(m: ModelMapping) -> float:
    """Off-chip bytes of the attention kernels other than the projections, bytes."""
    level = m.hardware.offchip.name
    return sum(
        k.cost.bytes_at(level)
        for k in m.kernels
        if k.kernel.layer_type == "attention" and "proj" not in k.kernel.name
    )


def _phase_line(head: str, state: dict[str, object], a: ModelMapping, b: ModelMapping) -> str:
    p0, p1 = (
        next(p for p in roofline_points(m) if p["kernel"] == "layers.0.attn.sdpa") for m in (a, b)
    )
    return _TEXT.render(
        "phase_move",
        head=head,
        batch=state["batch"],
        seq=int(str(state["seq"])),
        ms_before=a.time_s * 1e3,
        tokens_before=a.items_per_step,
        ms_after=b.time_s * 1e3,
        tokens_after=b.items_per_step,
        where=_moves(p0["intensity"], p1["intensity"], ",.3g"),
        intensity=p1["intensity"],
        class_before=p0["bottleneck"],
        class_after=p1["bottleneck"],
    )


def explorer_claim() -> Claim:
    """What each of :func:`explorer_moves` does, computed with the explorer's own check and map.

    Returns:
        Markdown bullets: the step and attention's roofline point before and after the phase
        switch; the attention kernels' off-chip bytes and the step with ``flash_attention`` off;
        the refusal line the explorer shows for each push.
    """
    lines = []
    for mv in explorer_moves():
        _, before = _explorer_mapping(mv.state())
        why, after = _explorer_mapping(mv.state(after=True))
        head = f"- {phrase_move(mv)}"
        if before is None or after is None:
            lines.append(_TEXT.render("refused", head=head, why=why))
        elif mv.control == "phase":
            lines.append(_phase_line(head, mv.state(), before, after))
        else:
            b0, b1 = _attention_bytes(before), _attention_bytes(after)
            lines.append(
                _TEXT.render(
                    "fusion_move",
                    head=head,
                    gb_before=b0 / 1e9,
                    gb_after=b1 / 1e9,
                    ratio=b1 / b0,
                    ms_before=before.time_s * 1e3,
                    ms_after=after.time_s * 1e3,
                )
            )
    return Claim("\n".join(lines))


def question_claim(table: pd.DataFrame, short: int, long: int) -> Claim:
    """The senior-engineer question, its figures read from :func:`kv_growth_table`.

    Args:
        table: A :func:`kv_growth_table` frame with rows ``short`` and ``long``.
        short: The old context limit's cached tokens.
        long: The new one's.
    """
    a, b = table.loc[short], table.loc[long]
    return _TEXT.claim(
        "question",
        short_ms=a["decode_ms"],
        long_ms=b["decode_ms"],
        ratio=b["decode_ms"] / a["decode_ms"],
        short=short,
        long=long,
    )


def kv_takeaway_claim(table: pd.DataFrame, model: str, other: str) -> Claim:
    """The KV-cache takeaway, from :func:`kv_growth_table` and the two models' configurations.

    Returns:
        A Markdown bullet: how the cache grows between the table's first and last context, where
        it overtakes the weights and half the decode step (:func:`kv_claim`), and what
        grouped-query attention does to it (:func:`gqa_claim`).
    """
    lo, hi = table.index.min(), table.index.max()
    grow = table.loc[hi, "kv_gib"] / table.loc[lo, "kv_gib"]
    return _TEXT.claim(
        "kv_takeaway",
        lo=lo,
        hi=hi,
        grow=grow,
        tokens=hi / lo,
        kv=kv_claim(table, model).text,
        gqa=gqa_claim(model, other).text,
    )


def pitfall_claim(
    model: str, hardware_name: str, phases: pd.DataFrame, *, batch: int = 64, context: int = 4096
) -> Claim:
    """The lesson's pitfalls, each with the figure that makes it one.

    Args:
        model: Preset name.
        hardware_name: Hardware profile name.
        phases: A :func:`phase_table` frame.
        batch: Sequences of the memory-sizing pitfall.
        context: Their context, tokens.

    Returns:
        Markdown bullets: time per token in decode against prefill; the KV cache against the
        weights at ``batch`` x ``context``; what batch 1 -> the farthest accepted batch does to
        ``up_proj``'s and attention's intensity (:func:`widget_move_table`).
    """
    per = phases.loc["decode", "us_per_token"] / phases.loc["prefill", "us_per_token"]
    f = fit_check(model, hardware(hardware_name), batch=batch, context=context)
    _, batch_move = widget_moves(model, hardware_name)
    t = widget_move_table(model, hardware_name)
    (b0, s0), (b1, s1) = batch_move.settings()
    g = t.loc["mlp.up_proj"]
    a = t.loc["attn.sdpa"]
    gx = g.loc[(b1, s1), "intensity"] / g.loc[(b0, s0), "intensity"]
    ax = a.loc[(b1, s1), "intensity"] / a.loc[(b0, s0), "intensity"]
    return _TEXT.claim(
        "pitfall",
        per_token=per,
        batch=batch,
        context=context,
        kv_gib=f.kv_bytes / 2**30,
        kv_ratio=f.kv_bytes / f.weights_bytes,
        b0=b0,
        b1=b1,
        gemm_ratio=gx,
        attention_ratio=ax,
    )
