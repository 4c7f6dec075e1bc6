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
    return pd.DataFrame(rows).set_index("context")


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
    a, b = pre["attention_bottleneck"], dec["attention_bottleneck"]
    flip = f"flips from **{a}** to **{b}**" if a != b else f"stays **{a}**"
    return Claim(
        f"Prefill produces {pre['tokens']} tokens in {pre['time_ms']:g} ms "
        f"({pre['us_per_token']:g} µs per token); decode pays for the same weights and the whole "
        f"cache to produce one ({dec['us_per_token']:g} µs per token, "
        f"x{dec['us_per_token'] / pre['us_per_token']:.0f}). The attention kernel's class {flip}."
    )


def kv_claim(table: pd.DataFrame, model: str = "llama2-7b") -> Claim:
    """Where the KV cache overtakes the weights and attention the decode step.

    Read from a :func:`kv_growth_table` frame (at its batch).

    Returns:
        Markdown: the first context at which the cache outweighs the weights and the first at
        which attention holds over half of the step (or that neither happens in the table).
    """
    weights = build_graph(model).params * 2 / 2**30  # bf16 weights, GiB
    heavier = [c for c in table.index if table.loc[c, "kv_gib"] > weights]
    slower = [c for c in table.index if table.loc[c, "sdpa_share"] > 0.5]
    mem = (
        f"from {heavier[0]} tokens the cache ({table.loc[heavier[0], 'kv_gib']:g} GiB) outweighs "
        f"the weights ({weights:.3g} GiB)"
        if heavier
        else f"the cache stays below the weights ({weights:.3g} GiB) up to {table.index.max()}"
    )
    step = (
        f"from {slower[0]} tokens attention takes {table.loc[slower[0], 'sdpa_share']:.0%} of "
        "the decode step"
        if slower
        else "attention stays under half of the decode step"
    )
    return Claim(f"In this batch, {mem}, and {step}.")


def gqa_claim(model: str = "llama2-7b", other: str = "llama3-8b") -> Claim:
    """How much smaller grouped-query attention makes the KV cache per token."""
    a, b = kv_bytes_per_token(model), kv_bytes_per_token(other)
    cfg_a, cfg_b = PRESETS[model], PRESETS[other]
    return Claim(
        f"`{other}` keeps {cfg_b.kv_heads} KV heads where `{model}` keeps {cfg_a.kv_heads}, so its "
        f"cache per token is x{a / b:.3g} smaller ({b / 1024:g} KiB against {a / 1024:g} KiB)."
    )


def fit_claim(model: str, hardware_name: str, *, batch: int, context: int) -> Claim:
    """Whether ``batch`` sequences of ``context`` tokens fit beside the weights on one chip."""
    f = fit_check(model, hardware(hardware_name), batch=batch, context=context)
    verdict = "fit" if f.fits else "do **not** fit"
    return Claim(
        f"{batch} sequences of {context} tokens {verdict} beside `{model}`'s weights on one "
        f"`{hardware_name}`: weights {f.weights_bytes / 2**30:.3g} GiB + KV cache "
        f"{f.kv_bytes / 2**30:.3g} "
        f"GiB + activations {f.activation_bytes / 2**30:.3g} GiB against "
        f"{f.capacity_bytes / 2**30:.3g} GiB."
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


def _moves(a: float, b: float) -> str:
    r = b / a
    if 0.9 <= r <= 1.1:
        return "stays put"
    return f"moves {'right' if r > 1 else 'left'} (x{r:.2g})"


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
    return Claim(
        f"Drag **seq** from {seq_move.start:,} to {seq_move.end:,} at batch {batch}: the "
        f"attention point {seq_a} on the roofline (intensity {a.loc[s1, 'intensity']:g} "
        "FLOP/byte: every cached token brings its FLOPs and its bytes), but its time grows "
        f"x{grow:.3g} (watch the time-by-layer-type bars); the `up_proj` point {seq_g}. "
        f"Raise **batch** from 1 to {batch_move.end} at seq {batch_move.seq:,}: `up_proj` {b_g} "
        f"(more tokens share each weight read), attention {b_a} (each sequence reads its own "
        "cache)."
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
        hint="2 (K and V) x layers x kv_heads x "
        "head_dim x 2 bytes per token, times tokens and sequences",
        # NOTE: the count, not the library call that does it (kv_bytes_per_token), so the
        # student still computes it (issue 20).
        hint2="count one token first (K and V, in every layer, for every KV head, head_dim "
        "values each), then every cached token of every sequence; answer in bytes, not GiB",
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
    return compare(
        "decode_bottleneck",
        answer,
        expected,
        hint="one query per sequence reads the whole KV cache: what limits it?",
        hint2="one of compute, bandwidth:hbm, bandwidth:l2, overhead; read the attention row's "
        "bottleneck in the decode mapping",
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
    same = cls["prefill"] == cls["decode"]
    first = (
        f"- The same weights (`up_proj`) are {cls['prefill']}-bound in a {seq:,}-token prefill "
        f"and {cls['decode']}-bound in decode"
        + (": one class for both here." if same else ": plan for both.")
    )
    t = fused_attention_table(model, hardware_name, seq=long_seq)
    fused, unfused = t.loc["fused"], t.loc["unfused"]
    if fused["attention_hbm_gb"] <= 0 or fused["attention_ms"] <= 0:
        return Claim(first)
    bytes_x = unfused["attention_hbm_gb"] / fused["attention_hbm_gb"]
    time_x = unfused["attention_ms"] / fused["attention_ms"]
    second = (
        f"- Fused attention keeps the score matrix on chip: without it a {long_seq:,}-token "
        f"prompt's attention moves x{bytes_x:.3g} the off-chip bytes and takes x{time_x:.3g} the "
        "time."
    )
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
    r = p1["intensity"] / p0["intensity"]
    where = "stays put" if 0.9 <= r <= 1.1 else f"moves {'right' if r > 1 else 'left'} (x{r:,.3g})"
    return (
        f"{head} (batch {state['batch']}, seq {int(str(state['seq'])):,}): the step goes from "
        f"{a.time_s * 1e3:.3g} ms for {a.items_per_step:,} tokens to {b.time_s * 1e3:.3g} ms for "
        f"{b.items_per_step:,}; attention's point {where} (to {p1['intensity']:.3g} FLOP/byte) "
        f"and its class goes from **{p0['bottleneck']}** to **{p1['bottleneck']}**."
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
            lines.append(f"{head}: no step time; the explorer says why: *{why}*.")
        elif mv.control == "phase":
            lines.append(_phase_line(head, mv.state(), before, after))
        else:
            b0, b1 = _attention_bytes(before), _attention_bytes(after)
            lines.append(
                f"{head} (in prefill): attention's off-chip bytes go from {b0 / 1e9:.3g} GB to "
                f"{b1 / 1e9:.3g} GB (x{b1 / b0:.3g}) and the step from "
                f"{before.time_s * 1e3:.3g} ms to {after.time_s * 1e3:.3g} ms."
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
    return Claim(
        f'*"Your decode step went from {a["decode_ms"]:g} ms to {b["decode_ms"]:g} ms '
        f"(x{b['decode_ms'] / a['decode_ms']:.2f}) when the product team raised the context "
        f"limit from {short:,} to {long:,} cached tokens. Which kernel got slower, what limits "
        'it, and what would you change first?"*'
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
    return Claim(
        f"- The KV cache is per sequence and per token: from {lo:,} to {hi:,} tokens it grows "
        f"x{grow:.3g} (x{hi / lo:.3g} the tokens). {kv_claim(table, model).text} "
        f"{gqa_claim(model, other).text}"
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
    return Claim(
        f"- Quoting one tokens-per-second figure without saying prefill or decode: here a "
        f"decode token costs x{per:.0f} a prefill token.\n"
        f"- Sizing memory for weights only: {batch} sequences of {context:,} tokens hold a KV "
        f"cache of {f.kv_bytes / 2**30:.3g} GiB, x{f.kv_bytes / f.weights_bytes:.3g} the "
        f"weights.\n"
        f"- Assuming batching helps attention the way it helps GEMMs: batch {b0} -> {b1} moves "
        f"`up_proj`'s intensity x{gx:.3g} and attention's x{ax:.3g} (every sequence reads its "
        "own cache)."
    )
