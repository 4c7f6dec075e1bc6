"""Lesson 02, the hardware model and the roofline: tables and self-checks."""

from __future__ import annotations

import itertools

import pandas as pd

from workbench._format import fmt_capacity
from workbench.cost.model import Bottleneck
from workbench.exercises._check import CheckResult, compare, normalize_text
from workbench.exercises._claims import BOTTLENECK_SYNONYMS, Claim, bullet_list, gated
from workbench.exercises._decode import decode_floor_s
from workbench.exercises._shared import forced_tile, hardware, mapping, mapping_summary
from workbench.exercises._text import LessonText
from workbench.exercises._widget_steps import ExplorerSetting, ExplorerStep, explorer_walk
from workbench.hw import list_hardware
from workbench.hw.schema import Hardware
from workbench.mapper import KernelMapping, ModelMapping, map_model
from workbench.models import build_graph
from workbench.options import MapOptions
from workbench.report.sheet import sheet_frame

__all__ = [
    "EXPLORER",
    "PROFILES",
    "SIDE_OF_RIDGE_KERNEL",
    "bound_table",
    "check_bottleneck",
    "check_decode_floor",
    "check_ridge_point",
    "check_side_of_ridge",
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

_TEXT = LessonText("lesson02")


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
        ra, rb, fc, fb = _ridge_move(hardware(a), hardware(b), "bf16")
        parts.append(
            _TEXT.render(
                "ridge_step",
                a=a,
                b=b,
                rises=rb > ra,
                ridge_a=ra,
                ridge_b=rb,
                compute_ratio=fc,
                bandwidth_ratio=fb,
            )
        )
    return _TEXT.claim("ridge", steps="; ".join(parts))


def _ridge_move(a: Hardware, b: Hardware, dtype: str) -> tuple[float, float, float, float]:
    """What moves the ridge from profile ``a`` to ``b`` in format ``dtype``.

    Returns:
        ``(ridge_a, ridge_b, compute_ratio, bandwidth_ratio)``: both ridge points (FLOP/byte),
        and ``b``'s peak compute and off-chip bandwidth over ``a``'s.
    """
    return (
        a.ridge_point(dtype),
        b.ridge_point(dtype),
        b.peak_flops(dtype) / a.peak_flops(dtype),
        b.offchip.bandwidth_bytes_per_s / a.offchip.bandwidth_bytes_per_s,
    )


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
        _TEXT.render(
            "phase_ridge",
            hardware_name=hardware_name,
            ridge=hardware(hardware_name).ridge_point("bf16"),
        )
    ]
    norm_class: dict[str, str] = {}
    for phase in ("prefill", "decode"):
        t = bound_table(model, hardware_name, phase=phase, seq=seq)
        parts = []
        for cls, g in t.groupby("bottleneck", sort=False):
            parts.append(
                _TEXT.render(
                    "phase_class",
                    kernels=list(g.index),
                    bottleneck=cls,
                    lo=g["intensity"].min(),
                    hi=g["intensity"].max(),
                )
            )
        lines.append(_TEXT.render("phase_line", phase=phase, classes="; ".join(parts)))
        norms = sorted({str(t.loc[k, "bottleneck"]) for k in t.index if "norm" in k})
        norm_class[phase] = "/".join(norms)
    lines.append(
        "\n"  # a paragraph of its own, after the list
        + _TEXT.render("phase_norms", prefill=norm_class["prefill"], decode=norm_class["decode"])
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
        **_TEXT.hints("ridge_point"),
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
    expected = _class_as_said(m.kernel(kernel).cost.bottleneck, answer)
    return compare(
        f"bottleneck[{kernel},{phase}]" if batch == 1 else f"bottleneck[{kernel},{phase},b{batch}]",
        answer,
        expected,
        hint=_TEXT.render("bottleneck_hint"),
        hint2=_TEXT.render(
            "bottleneck_hint2",
            matrix=m.kernel(kernel).kernel.kind in ("gemm", "attention"),
            phase=phase,
        ),
        synonyms=BOTTLENECK_SYNONYMS,
        strict=strict,
    )


def _class_as_said(full: str, answer: object) -> str:
    """The mapper's class ``full``, with its level only when the answer names a level."""
    said = normalize_text(answer, BOTTLENECK_SYNONYMS)  # "HBM bandwidth" names a level too
    return full if ":" in said else full.split(":")[0]


#: Exercise 2's GEMM: Llama-2-7B's layer-0 up projection (4,096 x 11,008 bf16 weight).
SIDE_OF_RIDGE_KERNEL = ("llama2-7b", "layers.0.mlp.up_proj")


def check_side_of_ridge(
    answer: tuple[float, str],
    *,
    batch: int = 512,
    seq: int = 128,
    hardware_name: str = "h100-sxm",
    strict: bool | None = None,
) -> CheckResult:
    """Check a batched decode GEMM's intensity (within 1 %) and the class the cost model gives it.

    The learner computes the intensity of Llama-2-7B's ``layers.0.mlp.up_proj`` from the
    Linear's shapes (its input, weight and output each moved once: the graph op's compulsory
    bytes, not the fused kernel's), sets it against the ridge and names the side; the class is
    the mapper's for that kernel at ``batch``.

    Args:
        answer: ``(intensity, class)``: FLOP per byte, and ``"compute"``, ``"bandwidth"`` or
            ``"overhead"`` (a full class such as ``"bandwidth:hbm"`` is accepted too).
        batch: Sequences decoded together (one new token each).
        seq: Cached context, tokens (the GEMM does not depend on it).
        hardware_name: Profile name.
        strict: Raise on a wrong answer.

    Returns:
        The check result; expected is the graph op's FLOPs over its input, weight and output
        bytes, and the mapper's class (without its level unless the answer names one).
    """
    model, kernel = SIDE_OF_RIDGE_KERNEL
    m = mapping(model, hardware_name, phase="decode", batch=batch, seq=seq)
    op = m.graph.op(kernel)
    pair = answer if isinstance(answer, tuple | list) and len(answer) == 2 else (None, "")
    return _TEXT.check(
        "side_of_ridge",
        f"side_of_ridge[{kernel.removeprefix('layers.0.')},decode,b{batch}]",
        answer,
        (
            op.flops / (op.bytes_read + op.bytes_written),
            _class_as_said(m.kernel(kernel).cost.bottleneck, pair[1]),
        ),
        rel_tol=0.01,
        synonyms=BOTTLENECK_SYNONYMS,
        strict=strict,
    )


def check_decode_floor(
    answer: float,
    *,
    model: str = "llama2-7b",
    hardware_name: str = "h100-sxm",
    dtype: str = "bf16",
    strict: bool | None = None,
) -> CheckResult:
    """Check the decode floor of one step, in seconds, within 1 %.

    The course's vocabulary (:mod:`workbench.exercises._decode`): the *floor* is at the
    datasheet peak off-chip bandwidth, the bound no run beats; the figure at the sustained rate
    is the *expected* step, which this check rejects.

    Args:
        answer: The learner's floor (seconds).
        model: Preset name.
        hardware_name: Profile name.
        dtype: Weight format.
        strict: Raise on a wrong answer.

    Returns:
        The check result; expected is parameters times bytes per parameter over the datasheet
        peak off-chip bandwidth (every weight read once per step; KV cache and launches
        ignored).
    """
    expected = decode_floor_s(model, hardware_name, dtype)
    return compare(
        f"decode_floor[{model},{hardware_name}]",
        answer,
        expected,
        rel_tol=0.01,
        **_TEXT.hints("decode_floor"),
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
    return _TEXT.claim(
        "peak",
        factor=factor,
        hardware_name=hardware_name,
        decode_gain=gains["decode"],
        no_faster=gains["decode"] < 1.01,
        seq=seq,
        prefill_gain=gains["prefill"],
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
    return _TEXT.render(
        "explorer_phase",
        instruction=_capital(step.instruction),
        compute_before=ca,
        kernels=len(a.kernels),
        compute_after=cb,
        lo=min(xs),
        hi=max(xs),
        left=max(xs) < ridge,
        ridge=ridge,
        rises=b.mbu > a.mbu,
        mbu_before=a.mbu,
        mbu_after=b.mbu,
        ms_after=b.time_s * 1e3,
        ms_before=a.time_s * 1e3,
    )


def _hardware_sentence(step: ExplorerStep) -> str:
    a, b = step.before.mapping(), step.after.mapping()
    dt = step.after.dtype
    ra, rb, fc, fb = _ridge_move(a.hardware, b.hardware, dt)
    after = {k.kernel.name: k.cost.bottleneck.split(":")[0] for k in b.kernels}
    moved = sum(1 for k in a.kernels if after.get(k.kernel.name) != k.cost.bottleneck.split(":")[0])
    bound = sum(1 for k in a.kernels if k.cost.bottleneck.startswith("bandwidth"))
    r = b.time_s / a.time_s
    return _TEXT.render(
        "explorer_hardware",
        instruction=_capital(step.instruction),
        dtype=dt,
        left=rb < ra,
        ridge_before=ra,
        ridge_after=rb,
        compute_ratio=fc,
        bandwidth_ratio=fb,
        phase=step.after.phase,
        ms_before=a.time_s * 1e3,
        ms_after=b.time_s * 1e3,
        ratio=r,
        slower=r > 1,
        moved=moved,
        bound=bound,
    )


def _capital(text: str) -> str:
    """``text`` with its first letter upper-case (an instruction opening a bullet)."""
    return text[:1].upper() + text[1:]


def explorer_claim(
    start: ExplorerSetting = EXPLORER, *, others: tuple[str, ...] = PROFILES
) -> Claim:
    """What each instruction of :func:`explorer_steps` does, on the explorer's own mapping.

    Returns:
        A Markdown list, one item per step in order, each step starting where the last ended.
    """
    lines = [
        _phase_sentence(step) if step.control == "phase" else _hardware_sentence(step)
        for step in explorer_steps(start, others=others)
    ]
    return _TEXT.claim("explorer", steps="\n".join(lines))


# --- takeaways and pitfalls, computed --------------------------------------------------------


def takeaway_claim(
    model: str = "llama2-7b", hardware_name: str = "h100-sxm", *, seq: int = 2048
) -> Claim:
    """Which roof limits prefill and single-stream decode, over every kernel of the step.

    Returns:
        A Markdown bullet: prefill's compute-bound share of the step time; decode's GEMMs by
        class with their share of the step; whether decode lies above the weight-streaming
        floor (weight bytes over the datasheet peak off-chip bandwidth, Exercise 3; the figure
        itself is not printed); the class of the decode norms.
    """
    pre = mapping(model, hardware_name, phase="prefill", seq=seq)
    dec = mapping(model, hardware_name, phase="decode", seq=seq)
    compute = sum(k.cost.total_s for k in pre.kernels if k.cost.bottleneck == "compute")
    share = compute / pre.time_s
    gemms = [k for k in dec.kernels if k.kernel.kind == "gemm"]
    bw = [k for k in gemms if k.cost.bottleneck.startswith("bandwidth")]
    classes = sorted({k.cost.bottleneck for k in bw})
    floor = decode_floor_s(model, hardware_name, "bf16")
    norms = sorted({k.cost.bottleneck for k in dec.kernels if k.kernel.name.endswith("norm")})
    return _TEXT.claim(
        "takeaway",
        seq=seq,
        model=model,
        mostly=share > 0.5,
        share=share,
        bound=len(bw),
        gemms=len(gemms),
        classes=classes,
        bound_share=sum(k.cost.total_s for k in bw) / dec.time_s,
        above=dec.time_s > floor,
        norms=norms,
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
    claim = _TEXT.claim(
        "peak_pitfall",
        format_name=fmt,
        peak_tflops=other / 1e12,
        deflates=wrong < m.mfu,
        mfu=m.mfu,
        wrong_mfu=wrong,
        right=other > bf,
        ridge_ratio=other / bf,
        misread=misread,
    )
    # NOTE: the ridge's move from bf16 to the fastest format answers Exercise 1 (that ridge).
    return gated(claim, after=f"ridge[{hardware_name},{fmt}]", label="Exercise 1")


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
    base, k = forced_tile(model, hardware_name, kernel, tile, seq=seq)
    h = hardware(hardware_name)
    off = h.offchip.name
    ridge = h.ridge_point("bf16")
    x_off = _offchip_intensity(k, off)
    cls = k.cost.bottleneck
    name = kernel.removeprefix("layers.0.")
    head = _TEXT.render(
        "level_pitfall_head",
        name=name,
        searched_class=base.cost.bottleneck,
        searched_tile=base.tiling.shape,
        forced_tile=k.tiling.shape,
        forced_class=cls,
        time_ratio=k.cost.total_s / base.cost.total_s,
    )
    b = Bottleneck.parse(cls)
    level = b.level if b.is_bandwidth else ""
    if not level or level == off:
        return _TEXT.claim("level_pitfall_outer", head=head, offchip=bool(level))
    lvl = next(m for m in h.memory if m.name == level)
    x_lvl = k.kernel.flops / k.cost.bytes_at(level)
    at = (k.kernel.flops / k.cost.total_s) / (x_lvl * lvl.bandwidth_bytes_per_s)
    return _TEXT.claim(
        "level_pitfall_inner",
        head=head,
        intensity=x_off,
        above=x_off > ridge,
        ridge=ridge,
        level=level,
        at=at,
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
    return _TEXT.claim(
        "launch_pitfall",
        name=kernel.removeprefix("layers.0."),
        bottleneck=graph.cost.bottleneck,
        eager_us=e * 1e6,
        graph_us=g * 1e6,
        eager_ratio=e / g,
        wide_us=w * 1e6,
        wide_ratio=g / w,
        launch_helps=e > 1.05 * g,
        memory_helps=w < 0.95 * g,
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
    where = "below" if hi < eff else ("above" if lo > eff else "both")
    shape = "x".join(str(d) for d in me.efficiency_shape) if me.efficiency_shape else ""
    slow = min(ks, key=lambda k: rate[k.kernel.name])
    emptiest = min(k.tiling.wave_efficiency for k in ks)
    return _TEXT.claim(
        "efficiency_pitfall",
        lo=lo,
        hi=hi,
        peak_tflops=peak / 1e12,
        where=where,
        efficiency=eff,
        shape=shape,
        # the slowest GEMM is named only when it is the one with the emptiest last wave
        slowest=(
            slow.kernel.name.removeprefix("layers.0.")
            if slow.tiling.wave_efficiency == emptiest < 1
            else ""
        ),
        slowest_wave=slow.tiling.wave_efficiency,
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
    return bullet_list(parts)
