"""Lesson 02, the hardware model and the roofline: tables and self-checks."""

from __future__ import annotations

import itertools

import pandas as pd

from workbench._format import fmt_capacity
from workbench.exercises._check import CheckResult, compare, normalize_text
from workbench.exercises._claims import BOTTLENECK_SYNONYMS, Claim, join_names
from workbench.exercises._shared import hardware, mapping, mapping_summary
from workbench.hw import list_hardware
from workbench.mapper import map_model
from workbench.models import build_graph
from workbench.report.sheet import sheet_frame

__all__ = [
    "bound_table",
    "check_bottleneck",
    "check_decode_floor",
    "check_ridge_point",
    "engine_table",
    "hardware_table",
    "mapping_summary",
    "memory_table",
    "peak_claim",
    "phase_claim",
    "ridge_claim",
]


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
    model: str = "llama2-7b", hw: str = "h100-sxm", *, phase: str = "prefill", seq: int = 2048
) -> pd.DataFrame:
    """Layer 0's kernels of a model: intensity, time and bottleneck class.

    Args:
        model: Preset name.
        hw: Hardware profile.
        phase: ``"prefill"`` or ``"decode"``.
        seq: Prompt (prefill) or context (decode) length, tokens.

    Returns:
        A frame indexed by kernel with ``intensity`` (FLOP/byte off-chip), ``time_us``
        (microseconds, rounded to 0.1) and ``bottleneck``.
    """
    frame = sheet_frame(mapping(model, hw, phase=phase, seq=seq))
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


def phase_claim(model: str = "llama2-7b", hw: str = "h100-sxm", *, seq: int = 2048) -> Claim:
    """What limits layer 0's kernels in prefill and in decode, read from :func:`bound_table`.

    Args:
        model: Preset name.
        hw: Hardware profile.
        seq: Prompt (prefill) or context (decode) length, tokens.

    Returns:
        A Markdown list: per phase, the kernels of each bottleneck class with their intensity
        range (FLOP/byte), and a sentence on the norms (same class in both phases or not).
    """
    lines = [f"The bf16 ridge of `{hw}` is {hardware(hw).ridge_point('bf16'):.0f} FLOP/byte."]
    norm_class: dict[str, str] = {}
    for phase in ("prefill", "decode"):
        t = bound_table(model, hw, phase=phase, seq=seq)
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
        f"ridge_point[{hardware_name},{dtype}]",
        answer,
        expected,
        rel_tol=0.01,
        hint="peak FLOP/s of the format divided by the off-chip bandwidth in bytes/s",
        hint2="hw.peak_flops(dtype) / hw.offchip.bandwidth_bytes_per_s; both per second, so the"
        " unit is FLOP/byte",
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
        hint2=(
            "decode has one new token per sequence: count the FLOPs one step does per byte it "
            "must read (the weights, or each sequence's KV cache) and compare with the ridge"
            if phase == "decode"
            else "a prefill GEMM reuses each weight for every token of the prompt: compare "
            "2 x tokens x K x N FLOPs with the bytes of its operands"
        ),
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
        hint="every weight is read once per decode step: params * bytes / (bytes/s)",
        hint2="build_graph(model).params * 2 bytes (bf16) / hw.offchip.bandwidth_bytes_per_s, "
        "in seconds",
        strict=strict,
    )


def peak_claim(
    model: str = "llama2-7b", hw: str = "h100-sxm", *, factor: float = 2.0, seq: int = 2048
) -> Claim:
    """What a chip with ``factor`` x the matrix peak and the same memory does, computed.

    The profile is copied with every matrix-engine peak multiplied by ``factor`` (bandwidths,
    SRAM and overheads unchanged) and the model is re-mapped in prefill and in decode.

    Returns:
        A Markdown bullet with the speedup of each phase on the faster-compute chip.
    """
    base = hardware(hw)
    me = base.matrix_engine
    peaks = {k: v * factor for k, v in me.peak_flops_per_s.items()}
    faster = base.model_copy(
        update={
            "name": f"{hw} x{factor:g} peak",
            "matrix_engine": me.model_copy(update={"peak_flops_per_s": peaks}),
        }
    )
    gains = {}
    for phase in ("prefill", "decode"):
        graph = build_graph(model, phase=phase, seq=seq)
        before = mapping(model, hw, phase=phase, seq=seq).time_s  # cached, as the tables use
        gains[phase] = before / map_model(graph, faster).time_s
    verdict = "no faster" if gains["decode"] < 1.01 else "faster"
    return Claim(
        f"- A chip with x{factor:g} the matrix peak of `{hw}` and the same memory: single-stream "
        f"decode x{gains['decode']:.3g} ({verdict}: it streams weights), a {seq:,}-token prefill "
        f"x{gains['prefill']:.3g}."
    )
