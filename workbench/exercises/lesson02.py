"""Lesson 02, the hardware model and the roofline: tables and self-checks."""

from __future__ import annotations

import itertools

import pandas as pd

from workbench._format import fmt_capacity
from workbench.exercises._check import CheckResult, compare, normalize_text
from workbench.exercises._claims import BOTTLENECK_SYNONYMS, Claim, join_names
from workbench.exercises._shared import hardware, mapping, mapping_summary
from workbench.exercises._widget_steps import ExplorerSetting, ExplorerStep, explorer_walk
from workbench.hw import list_hardware
from workbench.hw.schema import Hardware
from workbench.mapper import KernelMapping, ModelMapping, map_model
from workbench.models import build_graph
from workbench.options import MapOptions, TileOverride
from workbench.report.sheet import sheet_frame

__all__ = [
    "EXPLORER",
    "PROFILES",
    "bound_table",
    "check_bottleneck",
    "check_decode_floor",
    "check_ridge_point",
    "efficiency_pitfall_claim",
    "engine_table",
    "explorer_claim",
    "explorer_steps",
    "hardware_table",
    "launch_pitfall_claim",
    "level_pitfall_claim",
    "mapping_summary",
    "memory_table",
    "peak_claim",
    "peak_pitfall_claim",
    "phase_claim",
    "pitfall_claim",
    "ridge_claim",
    "takeaway_claim",
]

#: The explorer as the lesson builds it (``MappingExplorer(model=..., ...)`` in the notebook).
EXPLORER = ExplorerSetting(model="llama2-7b", hardware="h100-sxm", phase="prefill", seq=2048)
#: The profiles the widget section switches to, in order (in decode), ending back on the start's.
PROFILES = ("a100-80gb", "mi300x", "h100-sxm")


def hardware_table(names: tuple[str, ...] | None = None, *, dtype: str = "bf16") -> pd.DataFrame:
    """Peak compute, off-chip bandwidth and ridge point of hardware profiles.

    Args:
        names: Profile names (default: every profile).
        dtype: Format whose peak FLOP/s is used.

    Returns:
        A frame indexed by profile with ``peak_tflops`` (1e12 FLOP/s; ``peak_tops`` for integer
        formats), ``offchip`` (level name),
        ``offchip_tb_per_s`` (1e12 bytes/s), ``ridge_flop_per_byte`` (FLOP/byte, 4 significant
        digits) and ``sram_kib`` (per-core tiling SRAM, KiB). A profile without ``dtype`` shows
        ``"n/a"`` for its peak and ridge.
    """
    peak_col = "peak_tops" if dtype.startswith("int") else "peak_tflops"
    rows = []
    for name in names or tuple(list_hardware()):
        hw = hardware(name)
        try:
            peak: float | None = hw.peak_flops(dtype)
        except Exception:  # a profile without this format: shown as n/a, not 0
            peak = None
        rows.append(
            {
                "hardware": name,
                peak_col: float(f"{peak / 1e12:.4g}") if peak else "n/a",
                "offchip": hw.offchip.name,
                "offchip_tb_per_s": float(f"{hw.offchip.bandwidth_bytes_per_s / 1e12:.4g}"),
                "ridge_flop_per_byte": float(f"{hw.ridge_point(dtype):.4g}") if peak else "n/a",
                "sram_kib": round(hw.sram.capacity_bytes / 1024),
            }
        )
    return pd.DataFrame(rows).set_index("hardware")


def engine_table(hardware_name: str = "h100-sxm") -> pd.DataFrame:
    """The matrix engine of a profile: cores, native tile, clock and peak per format.

    Returns:
        A frame indexed by format with ``peak_tflops`` (1e12 FLOP/s; TOPS for integer formats,
        labelled in ``unit``) and the engine's cores, native tile and clock (GHz) on every row.
    """
    e = hardware(hardware_name).matrix_engine
    rows = [
        {
            "format": f,
            "peak": float(f"{v / 1e12:.4g}"),
            "unit": "TOPS" if f.startswith("int") else "TFLOP/s",
            "cores": e.cores,
            "native_tile": f"{e.native_tile_m}x{e.native_tile_n}x{e.native_tile_k}",
            "clock_ghz": round(e.clock_hz / 1e9, 3),
        }
        for f, v in e.peak_flops_per_s.items()
    ]
    return pd.DataFrame(rows).set_index("format")


def memory_table(hardware_name: str = "h100-sxm") -> pd.DataFrame:
    """The memory levels of a profile, innermost first.

    Args:
        hardware_name: Profile name.

    Returns:
        A frame indexed by level with ``kind``, ``scope``, ``capacity`` (binary units, per
        ``scope``), ``bandwidth_tb_per_s`` (1e12 bytes/s) and ``energy_pj_per_byte``
        (picojoules per byte).
    """
    rows = [
        {
            "level": level.name,
            "kind": level.kind,
            "scope": level.scope,
            "capacity": fmt_capacity(level.capacity_bytes),
            "bandwidth_tb_per_s": float(f"{level.bandwidth_bytes_per_s / 1e12:.4g}"),
            "energy_pj_per_byte": level.energy_pj_per_byte,
        }
        for level in hardware(hardware_name).memory
    ]
    return pd.DataFrame(rows).set_index("level")


def bound_table(
    model: str = "llama2-7b",
    hardware_name: str = "h100-sxm",
    *,
    phase: str = "prefill",
    seq: int = 2048,
) -> pd.DataFrame:
    """Layer 0's kernels of a model: intensity, time and bottleneck class.

    Args:
        model: Preset name.
        hardware_name: Hardware profile name.
        phase: ``"prefill"`` or ``"decode"``.
        seq: Prompt (prefill) or context (decode) length, tokens.

    Returns:
        A frame indexed by kernel with ``intensity`` (FLOP/byte off-chip), ``time_us``
        (microseconds, rounded to 0.1) and ``bottleneck``.
    """
    frame = sheet_frame(mapping(model, hardware_name, phase=phase, seq=seq))
    layer0 = frame[frame["kernel"].str.startswith("layers.0.")]
    out = pd.DataFrame(
        {
            "kernel": layer0["kernel"].str.removeprefix("layers.0."),
            "intensity": layer0["intensity"].astype(float).round(1),
            "time_us": (layer0["time_s"].astype(float) * 1e6).round(1),
            "bottleneck": layer0["bottleneck"],
        }
    )
    return out.set_index("kernel")


def ridge_claim(names: tuple[str, ...] = ("a100-80gb", "h100-sxm", "h200")) -> Claim:
    """How the bf16 ridge point moves from one profile to the next, from the profiles' numbers.

    Args:
        names: Profiles in generation order.

    Returns:
        One Markdown sentence per step: ridge before and after (FLOP/byte) and the growth of
        peak compute and off-chip bandwidth that explains it.
    """
    parts = []
    for a, b in itertools.pairwise(names):
        ha, hb = hardware(a), hardware(b)
        ra, rb = ha.ridge_point("bf16"), hb.ridge_point("bf16")
        fc = hb.peak_flops("bf16") / ha.peak_flops("bf16")
        fb = hb.offchip.bandwidth_bytes_per_s / ha.offchip.bandwidth_bytes_per_s
        verb = "rises" if rb > ra else "falls"
        parts.append(
            f"from `{a}` to `{b}` the ridge {verb} from {ra:.0f} to {rb:.0f} FLOP/byte "
            f"(peak compute x{fc:.2f}, off-chip bandwidth x{fb:.2f})"
        )
    return Claim("The ridge moves with the ratio of the two peaks: " + "; ".join(parts) + ".")


def phase_claim(
    model: str = "llama2-7b", hardware_name: str = "h100-sxm", *, seq: int = 2048
) -> Claim:
    """What limits layer 0's kernels in prefill and in decode, read from :func:`bound_table`.

    Args:
        model: Preset name.
        hardware_name: Hardware profile name.
        seq: Prompt (prefill) or context (decode) length, tokens.

    Returns:
        A Markdown list: per phase, the kernels of each bottleneck class with their intensity
        range (FLOP/byte), and a sentence on the norms (same class in both phases or not).
    """
    lines = [
        f"The bf16 ridge of `{hardware_name}` is "
        f"{hardware(hardware_name).ridge_point('bf16'):.0f} FLOP/byte."
    ]
    norm_class: dict[str, str] = {}
    for phase in ("prefill", "decode"):
        t = bound_table(model, hardware_name, phase=phase, seq=seq)
        parts = []
        for cls, g in t.groupby("bottleneck", sort=False):
            lo, hi = g["intensity"].min(), g["intensity"].max()
            span = f"{lo:g}" if lo == hi else f"{lo:g} to {hi:g}"
            parts.append(f"{join_names(g.index)} **{cls}** (intensity {span} FLOP/byte)")
        lines.append(f"- **{phase}**: " + "; ".join(parts) + ".")
        norms = sorted({str(t.loc[k, "bottleneck"]) for k in t.index if "norm" in k})
        norm_class[phase] = "/".join(norms)
    if norm_class["prefill"] == norm_class["decode"]:
        lines.append(f"\nThe norms are **{norm_class['decode']}** in both phases.")
    else:
        lines.append(
            f"\nThe norms are **{norm_class['prefill']}** in prefill but "
            f"**{norm_class['decode']}** in decode: one token's norm is so little work that "
            "launching the kernel costs more than moving its bytes."
        )
    return Claim("\n".join(lines))


def check_ridge_point(
    answer: float,
    *,
    hardware_name: str = "h100-sxm",
    dtype: str = "bf16",
    strict: bool | None = None,
) -> CheckResult:
    """Check a ridge point (FLOP per off-chip byte) within 1 %.

    Args:
        answer: The learner's ridge point (FLOP/byte).
        hardware_name: Profile name.
        dtype: Format of the peak.
        strict: Raise on a wrong answer.

    Returns:
        The check result; expected is ``hw.ridge_point(dtype)``.
    """
    expected = hardware(hardware_name).ridge_point(dtype)
    return compare(
        f"ridge[{hardware_name},{dtype}]",
        answer,
        expected,
        rel_tol=0.01,
        hint="peak FLOP/s of the format divided by the off-chip bandwidth in bytes/s",
        hint2="both figures are on the profile: the matrix engine's peak for this format (the "
        "engine table) and the bandwidth of the outermost memory level (the memory table); keep "
        "both per second so the unit is FLOP/byte",
        strict=strict,
    )


def check_bottleneck(
    answer: str,
    *,
    kernel: str,
    model: str = "llama2-7b",
    hardware_name: str = "h100-sxm",
    phase: str = "decode",
    seq: int = 2048,
    batch: int = 1,
    strict: bool | None = None,
) -> CheckResult:
    """Check the bottleneck class the cost model gives one kernel.

    Args:
        answer: ``"compute"``, ``"bandwidth"`` (any level), ``"overhead"``...; a full class
            such as ``"bandwidth:hbm"`` is accepted too.
        kernel: Kernel name (e.g. ``"layers.0.mlp.up_proj"``).
        model: Preset name.
        hardware_name: Profile name.
        phase: ``"prefill"`` or ``"decode"``.
        seq: Prompt (prefill) or context (decode) length, tokens.
        batch: Sequences per step.
        strict: Raise on a wrong answer.

    Returns:
        The check result (expected: the class without its level when the answer has none).
    """
    m = mapping(model, hardware_name, phase=phase, batch=batch, seq=seq)
    full = m.kernel(kernel).cost.bottleneck
    said = normalize_text(answer, BOTTLENECK_SYNONYMS)  # "HBM bandwidth" names a level too
    expected = full if ":" in said else full.split(":")[0]
    return compare(
        f"bottleneck[{kernel},{phase}]" if batch == 1 else f"bottleneck[{kernel},{phase},b{batch}]",
        answer,
        expected,
        hint="compare the kernel's intensity with the ridge point",
        hint2=_bottleneck_hint2(m.kernel(kernel).kernel.kind in ("gemm", "attention"), phase),
        synonyms=BOTTLENECK_SYNONYMS,
        strict=strict,
    )


def _bottleneck_hint2(is_matrix: bool, phase: str) -> str:
    """The second hint of :func:`check_bottleneck`: what to count, never the count itself."""
    if not is_matrix:
        return (
            "a norm or elementwise kernel reads each element once and does a handful of FLOPs "
            "on it; estimate its FLOPs per byte, set it against the ridge, and ask whether one "
            "launch costs more than moving its bytes"
        )
    if phase == "decode":
        return (
            "decode has one new token per sequence: count the FLOPs one step does per byte it "
            "must read (the weights, or each sequence's KV cache) and compare with the ridge"
        )
    return (
        "a prefill GEMM reuses each weight (attention: each key and value) for every token of "
        "the prompt: estimate its FLOPs per byte of operands and set it against the ridge"
    )


def check_decode_floor(
    answer: float,
    *,
    model: str = "llama2-7b",
    hardware_name: str = "h100-sxm",
    dtype: str = "bf16",
    strict: bool | None = None,
) -> CheckResult:
    """Check the weight-streaming floor of one decode step, in seconds, within 1 %.

    Args:
        answer: The learner's floor (seconds).
        model: Preset name.
        hardware_name: Profile name.
        dtype: Weight format.
        strict: Raise on a wrong answer.

    Returns:
        The check result; expected is parameters times bytes per parameter over off-chip
        bandwidth (every weight read once per step; KV cache and launches ignored).
    """
    from workbench.ir import dtype_info
    from workbench.models import build_graph

    hw = hardware(hardware_name)
    weight_bytes = build_graph(model).params * dtype_info(dtype).bytes
    expected = weight_bytes / hw.offchip.bandwidth_bytes_per_s
    return compare(
        f"decode_floor[{model},{hardware_name}]",
        answer,
        expected,
        rel_tol=0.01,
        hint="every weight is read once per decode step: how many bytes, at what rate?",
        hint2="the bytes come from the parameter count and the format's size per element; the "
        "rate is the outermost memory level's bandwidth in bytes per second; the answer is in "
        "seconds, not milliseconds",
        strict=strict,
    )


def peak_claim(
    model: str = "llama2-7b",
    hardware_name: str = "h100-sxm",
    *,
    factor: float = 2.0,
    seq: int = 2048,
) -> Claim:
    """What a chip with ``factor`` x the matrix peak and the same memory does, computed.

    The profile is copied with every matrix-engine peak multiplied by ``factor`` (bandwidths,
    SRAM and overheads unchanged) and the model is re-mapped in prefill and in decode.

    Returns:
        A Markdown bullet with the speedup of each phase on the faster-compute chip.
    """
    faster = _scaled(hardware_name, peak=factor)
    gains = {}
    for phase in ("prefill", "decode"):
        graph = build_graph(model, phase=phase, seq=seq)
        before = mapping(
            model, hardware_name, phase=phase, seq=seq
        ).time_s  # cached, as the tables use
        gains[phase] = before / map_model(graph, faster).time_s
    verdict = "no faster" if gains["decode"] < 1.01 else "faster"
    return Claim(
        f"- A chip with x{factor:g} the matrix peak of `{hardware_name}` and the same memory: "
        "single-stream "
        f"decode x{gains['decode']:.3g} ({verdict}: it streams weights), a {seq:,}-token prefill "
        f"x{gains['prefill']:.3g}."
    )


# --- the live widget's instructions, computed on the explorer's own mapping ---------------------


def explorer_steps(
    start: ExplorerSetting = EXPLORER, *, others: tuple[str, ...] = PROFILES
) -> tuple[ExplorerStep, ...]:
    """The live-widget section's instructions as data: decode, then each profile of ``others``.

    Args:
        start: The explorer as the lesson builds it.
        others: Profiles to switch **hardware** to, in order (in decode; the last one back to
            the start's, so the context and batch drags that follow start on it).

    Returns:
        The steps (:func:`workbench.exercises._widget_steps.explorer_walk`), each accepted by
        the explorer's own refusal check.
    """
    return explorer_walk(start, [("phase", "decode"), *(("hardware", h) for h in others)])


def _matrix_kernels(m: ModelMapping) -> list[KernelMapping]:
    return [k for k in m.kernels if k.kernel.kind in ("gemm", "attention")]


def _offchip_intensity(k: KernelMapping, level: str) -> float:
    moved = k.cost.bytes_at(level)
    return k.kernel.flops / moved if moved else 0.0


def _phase_sentence(step: ExplorerStep) -> str:
    a, b = step.before.mapping(), step.after.mapping()
    ca, cb = a.bottleneck_counts().get("compute", 0), b.bottleneck_counts().get("compute", 0)
    level = b.hardware.offchip.name
    xs = [_offchip_intensity(k, level) for k in _matrix_kernels(b)]
    ridge = b.hardware.ridge_point(step.after.dtype)
    side = "left of" if max(xs) < ridge else "across"
    span = (
        f"{min(xs):.2g}"
        if f"{min(xs):.2g}" == f"{max(xs):.2g}"
        else f"{min(xs):.2g} to {max(xs):.2g}"
    )
    mbu = "rises" if b.mbu > a.mbu else "falls"
    return (
        f"{step.instruction}: the compute-bound kernels go from {ca} of {len(a.kernels)} to "
        f"{cb} (the GEMM and attention points move to intensity {span} FLOP/byte, {side} the "
        f"ridge at {ridge:.0f}), MBU {mbu} from "
        f"{a.mbu:.1%} to {b.mbu:.1%}, and the step takes {b.time_s * 1e3:.3g} ms instead of "
        f"{a.time_s * 1e3:.3g} ms"
    )


def _hardware_sentence(step: ExplorerStep) -> str:
    a, b = step.before.mapping(), step.after.mapping()
    dt = step.after.dtype
    ra, rb = a.hardware.ridge_point(dt), b.hardware.ridge_point(dt)
    fc = b.hardware.peak_flops(dt) / a.hardware.peak_flops(dt)
    fb = b.hardware.offchip.bandwidth_bytes_per_s / a.hardware.offchip.bandwidth_bytes_per_s
    after = {k.kernel.name: k.cost.bottleneck.split(":")[0] for k in b.kernels}
    moved = sum(1 for k in a.kernels if after.get(k.kernel.name) != k.cost.bottleneck.split(":")[0])
    bound = sum(1 for k in a.kernels if k.cost.bottleneck.startswith("bandwidth"))
    r = b.time_s / a.time_s
    stays = (
        f"its {bound} bandwidth-bound kernels stay bandwidth-bound, so the off-chip bandwidth, "
        "not the ridge, sets the step"
        if moved == 0
        else f"{moved} kernels change class"
    )
    return (
        f"{step.instruction}: the {dt} ridge moves {'left' if rb < ra else 'right'} from "
        f"{ra:.0f} to {rb:.0f} FLOP/byte (peak compute x{fc:.2f}, off-chip bandwidth "
        f"x{fb:.2f}); the {step.after.phase} step goes from {a.time_s * 1e3:.3g} to "
        f"{b.time_s * 1e3:.3g} ms (x{r:.3g}, {'slower' if r > 1 else 'faster'}): {stays}"
    )


def explorer_claim(
    start: ExplorerSetting = EXPLORER, *, others: tuple[str, ...] = PROFILES
) -> Claim:
    """What each instruction of :func:`explorer_steps` does, on the explorer's own mapping.

    Returns:
        A Markdown list, one item per step in order, each step starting where the last ended.
    """
    lines = []
    for step in explorer_steps(start, others=others):
        text = _phase_sentence(step) if step.control == "phase" else _hardware_sentence(step)
        lines.append(f"- {text[0].upper()}{text[1:]}.")
    return Claim("In the widget below, one after the other:\n" + "\n".join(lines))


# --- takeaways and pitfalls, computed --------------------------------------------------------


def takeaway_claim(
    model: str = "llama2-7b", hardware_name: str = "h100-sxm", *, seq: int = 2048
) -> Claim:
    """Which roof limits prefill and single-stream decode, over every kernel of the step.

    Returns:
        A Markdown bullet: prefill's compute-bound share of the step time; decode's GEMMs by
        class with their share of the step; whether decode lies above the weight-streaming
        floor (weight bytes over off-chip bandwidth, Exercise 3; the figure itself is not
        printed); the class of the decode norms.
    """
    pre = mapping(model, hardware_name, phase="prefill", seq=seq)
    dec = mapping(model, hardware_name, phase="decode", seq=seq)
    compute = sum(k.cost.total_s for k in pre.kernels if k.cost.bottleneck == "compute")
    share = compute / pre.time_s
    gemms = [k for k in dec.kernels if k.kernel.kind == "gemm"]
    bw = [k for k in gemms if k.cost.bottleneck.startswith("bandwidth")]
    classes = sorted({k.cost.bottleneck for k in bw})
    floor = (
        dec.graph.params * 2 / hardware(hardware_name).offchip.bandwidth_bytes_per_s
    )  # bf16 weights
    norms = sorted({k.cost.bottleneck for k in dec.kernels if k.kernel.name.endswith("norm")})
    most = "mostly" if share > 0.5 else "not mostly"
    every = "every GEMM is" if len(bw) == len(gemms) else f"{len(bw)} of {len(gemms)} GEMMs are"
    above = "above" if dec.time_s > floor else "at or below"
    return Claim(
        f"- A {seq:,}-token prefill of `{model}` is {most} compute-bound: compute-bound kernels "
        f"hold {share:.0%} of its step time. In single-stream decode {every} bound by "
        f"streaming its weights ({', '.join(f'**{c}**' for c in classes)}; "
        f"{sum(k.cost.total_s for k in bw) / dec.time_s:.0%} of the step), so the step sits "
        f"{above} the weight-streaming floor of Exercise 3, and the norms are "
        f"{'/'.join(f'**{c}**' for c in norms)}-bound."
    )


def _scaled(hardware_name: str, *, peak: float = 1.0, offchip: float = 1.0) -> Hardware:
    """Profile ``hardware_name`` with matrix peaks x ``peak``, off-chip bandwidth x ``offchip``.

    Everything else (SRAM, overheads, the other levels) is unchanged.
    """
    base = hardware(hardware_name)
    me = base.matrix_engine
    peaks = {k: v * peak for k, v in me.peak_flops_per_s.items()}
    off = base.offchip.name
    levels = [
        lvl.model_copy(update={"bandwidth_bytes_per_s": lvl.bandwidth_bytes_per_s * offchip})
        if lvl.name == off
        else lvl
        for lvl in base.memory
    ]
    return base.model_copy(
        update={
            "name": f"{hardware_name} x{peak:g} peak x{offchip:g} {off}",
            "matrix_engine": me.model_copy(update={"peak_flops_per_s": peaks}),
            "memory": levels,
        }
    )


def peak_pitfall_claim(
    model: str = "llama2-7b", hardware_name: str = "h100-sxm", *, seq: int = 2048
) -> Claim:
    """Quoting the fastest format's peak for a bf16 prefill: MFU and the ridge, recomputed.

    Returns:
        A Markdown bullet: the MFU against the bf16 and the fastest peak, the ridge's move, and
        layer 0's compute-bound kernels whose intensity falls below the moved ridge.
    """
    m = mapping(model, hardware_name, phase="prefill", seq=seq)
    h = hardware(hardware_name)
    peaks = h.matrix_engine.peak_flops_per_s
    fmt = max(peaks, key=lambda f: peaks[f])
    bf, other = h.peak_flops("bf16"), peaks[fmt]
    wrong = m.mfu * bf / other
    ridge = other / h.offchip.bandwidth_bytes_per_s
    t = bound_table(model, hardware_name, phase="prefill", seq=seq)
    misread = [
        k for k in t.index if t.loc[k, "bottleneck"] == "compute" and t.loc[k, "intensity"] < ridge
    ]
    misread_text = (
        f"past {join_names(misread)}, compute-bound kernels that would then read as bandwidth-bound"
        if misread
        else "past none of layer 0's compute-bound kernels here"
    )
    return Claim(
        f"- Quoting the {fmt} peak ({other / 1e12:.4g} TFLOP/s) for this bf16 prefill "
        f"{'deflates' if wrong < m.mfu else 'inflates'} its MFU from {m.mfu:.1%} to "
        f"{wrong:.1%} and moves the ridge {'right' if other > bf else 'left'}, x{other / bf:.3g}, "
        f"{misread_text}. Quote the peak of the format the GEMMs compute in."
    )


def level_pitfall_claim(
    model: str = "llama2-7b",
    hardware_name: str = "h100-sxm",
    *,
    seq: int = 2048,
    kernel: str = "layers.0.mlp.up_proj",
    tile: tuple[int, int, int] = (64, 64, 64),
) -> Claim:
    """A prefill GEMM forced to a small tile: its class, and its points at L2 and off-chip.

    Returns:
        A Markdown bullet: the class with the searched and the forced tile, the time ratio,
        the forced tile's off-chip intensity against the ridge, and how close its point at the
        binding level sits to that level's roof (achieved FLOP/s over intensity x bandwidth).
    """
    base = mapping(model, hardware_name, phase="prefill", seq=seq).kernel(kernel)
    forced = TileOverride(pattern=kernel, m=tile[0], n=tile[1], k=tile[2], split_k=1)
    opts = MapOptions(tiles=(forced,))
    k = mapping(model, hardware_name, phase="prefill", seq=seq, options=opts).kernel(kernel)
    h = hardware(hardware_name)
    off = h.offchip.name
    ridge = h.ridge_point("bf16")
    x_off = _offchip_intensity(k, off)
    cls = k.cost.bottleneck
    name = kernel.removeprefix("layers.0.")
    head = (
        f"- The ridge is per memory level: prefill's `{name}` is **{base.cost.bottleneck}** with "
        f"its searched {base.tiling.shape} tile; forced to {k.tiling.shape} it is **{cls}** "
        f"(x{k.cost.total_s / base.cost.total_s:.3g} the time)"
    )
    level = cls.split(":")[1] if cls.startswith("bandwidth:") else ""
    if not level or level == off:
        return Claim(head + f", bound by {'the off-chip level' if level else 'no inner level'}.")
    lvl = next(m for m in h.memory if m.name == level)
    x_lvl = k.kernel.flops / k.cost.bytes_at(level)
    at = (k.kernel.flops / k.cost.total_s) / (x_lvl * lvl.bandwidth_bytes_per_s)
    side = "above" if x_off > ridge else "below"
    return Claim(
        head + f" while its off-chip intensity, {x_off:.0f} FLOP/byte, is {side} the "
        f"{ridge:.0f} ridge: the {level} traffic of small tiles binds it, and its {level} point "
        f"sits at {at:.0%} of the {level} roof (lesson 03)."
    )


def launch_pitfall_claim(
    model: str = "llama2-7b",
    hardware_name: str = "h100-sxm",
    *,
    seq: int = 2048,
    kernel: str = "layers.0.attn_norm",
) -> Claim:
    """A decode norm under eager and graph launch, and on a chip with twice the bandwidth.

    Returns:
        A Markdown bullet: the kernel's time and class with graph launch (the default), eager
        launch, and graph launch on a copy of the profile with x2 off-chip bandwidth.
    """
    graph = mapping(model, hardware_name, phase="decode", seq=seq).kernel(kernel)
    eager = mapping(
        model, hardware_name, phase="decode", seq=seq, options=MapOptions(launch="eager")
    ).kernel(kernel)
    fast = map_model(
        build_graph(model, phase="decode", seq=seq), _scaled(hardware_name, offchip=2.0)
    )
    wide = fast.kernel(kernel)
    g, e, w = (x.cost.total_s for x in (graph, eager, wide))
    launch_helps, memory_helps = e > 1.05 * g, w < 0.95 * g
    lesson = {
        (True, False): "a faster memory does not help; cheaper launches do",
        (False, True): "a faster memory helps; the launch mode does not",
        (True, True): "both help",
        (False, False): "neither helps",
    }[(launch_helps, memory_helps)]
    return Claim(
        f"- Tiny kernels: decode's `{kernel.removeprefix('layers.0.')}` is "
        f"**{graph.cost.bottleneck}**-bound: {e * 1e6:.3g} µs with eager launch, "
        f"{g * 1e6:.3g} µs with graph launch (the explorer's default, x{e / g:.3g}), "
        f"and {w * 1e6:.3g} µs on a chip with twice the off-chip bandwidth (x{g / w:.3g}): "
        f"{lesson}."
    )


def efficiency_pitfall_claim(
    model: str = "llama2-7b", hardware_name: str = "h100-sxm", *, seq: int = 2048
) -> Claim:
    """How far below the compute roof prefill's compute-bound GEMMs sit, against the profile.

    Returns:
        A Markdown bullet: the range of achieved FLOP/s over peak of layer 0's compute-bound
        GEMMs, where the profile's measured large-GEMM efficiency falls in it, and (when it
        holds) that the slowest GEMM is the one with the emptiest last wave.
    """
    m = mapping(model, hardware_name, phase="prefill", seq=seq)
    h = hardware(hardware_name)
    peak = h.peak_flops("bf16")
    ks = [
        k
        for k in m.kernels
        if k.kernel.name.startswith("layers.0.")
        and k.kernel.kind == "gemm"
        and k.cost.bottleneck == "compute"
    ]
    rate = {k.kernel.name: k.kernel.flops / k.cost.total_s / peak for k in ks}
    lo, hi = min(rate.values()), max(rate.values())
    me = h.matrix_engine
    eff = me.efficiency
    where = "below" if hi < eff else ("above" if lo > eff else "on both sides of")
    shape = "x".join(str(d) for d in me.efficiency_shape) if me.efficiency_shape else ""
    slow = min(ks, key=lambda k: rate[k.kernel.name])
    emptiest = min(k.tiling.wave_efficiency for k in ks)
    why = (
        f"; the slowest, `{slow.kernel.name.removeprefix('layers.0.')}`, has the emptiest last "
        f"wave ({slow.tiling.wave_efficiency:.0%} wave efficiency)"
        if slow.tiling.wave_efficiency == emptiest < 1
        else ""
    )
    return Claim(
        f"- A point below the compute roof is not necessarily a badly tuned kernel: prefill's "
        f"compute-bound GEMMs reach {lo:.1%} to {hi:.1%} of the {peak / 1e12:.4g} TFLOP/s "
        f"roof, {where} the {eff:.1%} a measured best GEMM reaches on this chip (the profile's "
        f"efficiency{f', at {shape}' if shape else ''}): the model derives each GEMM's rate "
        f"from that measurement and the GEMM's own waves and K-steps{why}."
    )


def pitfall_claim(
    model: str = "llama2-7b", hardware_name: str = "h100-sxm", *, seq: int = 2048
) -> Claim:
    """The lesson's four pitfalls, each computed (see the ``*_pitfall_claim`` functions)."""
    parts = (
        peak_pitfall_claim(model, hardware_name, seq=seq),
        level_pitfall_claim(model, hardware_name, seq=seq),
        launch_pitfall_claim(model, hardware_name, seq=seq),
        efficiency_pitfall_claim(model, hardware_name, seq=seq),
    )
    return Claim("\n".join(p.text for p in parts))
