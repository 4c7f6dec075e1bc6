"""Lesson 05, quantization formats and data layouts: tables and self-checks."""

from __future__ import annotations

import numpy as np
import pandas as pd

from workbench.execution.quant import error_metrics, fake_quantize
from workbench.exercises._check import CheckResult, check_direction, compare
from workbench.exercises._claims import Claim
from workbench.exercises._shared import hardware, mapping
from workbench.ir import Linear
from workbench.mapper import map_model
from workbench.models import build_graph
from workbench.options import MapOptions

__all__ = [
    "FORMATS",
    "check_format_effect",
    "check_int8_bytes",
    "check_layout_transforms",
    "dtype_claim",
    "format_claim",
    "format_table",
    "layout_claim",
    "layout_table",
    "quality_table",
    "takeaway_claim",
]

#: (label, dtype, weight_dtype) of the formats the lesson compares.
FORMATS: tuple[tuple[str, str | None, str | None], ...] = (
    ("bf16", None, None),
    ("fp8 (weights and activations)", "fp8_e4m3", None),
    ("int8 weight-only", None, "int8"),
    ("int4 weight-only", None, "int4"),
)


def format_table(
    model: str = "llama2-7b", hw: str = "h100-sxm", *, phase: str = "decode", seq: int = 2048
) -> pd.DataFrame:
    """Predicted step time and off-chip traffic of a model in each format of :data:`FORMATS`.

    Args:
        model: Preset name.
        hw: Hardware profile.
        phase: ``"prefill"`` or ``"decode"``.
        seq: Prompt (prefill) or context (decode) length, tokens.

    Returns:
        A frame indexed by format with ``time_ms`` (milliseconds, rounded to 0.001),
        ``offchip_gb`` (1e9 bytes, rounded to 0.01) and ``speedup`` (bf16 time over this
        format's, rounded to 0.01).
    """
    rows = []
    for label, dtype, weight_dtype in FORMATS:
        options = MapOptions(dtype=dtype, weight_dtype=weight_dtype)
        mp = mapping(model, hw, phase=phase, seq=seq, options=options)
        rows.append(
            {
                "format": label,
                "time_ms": mp.time_s * 1e3,
                "offchip_gb": mp.total.bytes_at(mp.hardware.offchip.name) / 1e9,
            }
        )
    frame = pd.DataFrame(rows).set_index("format")
    frame["speedup"] = (frame["time_ms"].iloc[0] / frame["time_ms"]).round(2)
    return frame.round({"time_ms": 3, "offchip_gb": 2})


def quality_table(
    *, m: int = 64, n: int = 512, k: int = 1024, seed: int = 0, group_size: int = 128
) -> pd.DataFrame:
    """Quality evidence: error of one GEMM ``x @ w`` with ``w`` (and for floats ``x``) quantized.

    ``x`` is standard normal and ``w`` normal with std ``1/sqrt(k)``, from a seeded generator;
    the exact product is computed in float64. int8 uses one scale per output channel, int4 one
    per group of ``group_size`` along K (weight-only: ``x`` stays exact); bf16 and fp8 (e4m3,
    per-tensor scale) round both operands.

    Args:
        m: Rows of ``x`` (elements).
        n: Columns of ``w`` (elements).
        k: Reduction depth (elements).
        seed: Generator seed.
        group_size: int4 group length along K (elements).

    Returns:
        A frame indexed by format with ``max_abs_error``, ``rel_error`` (both rounded to 4
        significant digits) and ``snr_db`` (dB, rounded to 0.1).
    """
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((m, k)).astype(np.float32)
    w = (rng.standard_normal((k, n)) / np.sqrt(k)).astype(np.float32)
    exact = x.astype(np.float64) @ w.astype(np.float64)
    variants = {
        "bf16": (fake_quantize(x, "bf16"), fake_quantize(w, "bf16")),
        "fp8_e4m3": (fake_quantize(x, "fp8_e4m3"), fake_quantize(w, "fp8_e4m3")),
        "int8 weight-only": (x, fake_quantize(w, "int8", axis=1)),
        "int4 weight-only": (x, fake_quantize(w, "int4", axis=0, group_size=group_size)),
    }
    rows = []
    for label, (xq, wq) in variants.items():
        q = error_metrics(xq.astype(np.float64) @ wq.astype(np.float64), exact)
        rows.append(
            {
                "format": label,
                "max_abs_error": float(f"{q.max_abs_error:.4g}"),
                "rel_error": float(f"{q.rel_error:.4g}"),
                "snr_db": round(q.snr_db, 1),
            }
        )
    return pd.DataFrame(rows).set_index("format")


def layout_table(model: str = "resnet50", hw: str = "h100-sxm", *, batch: int = 32) -> pd.DataFrame:
    """Conv layouts: transforms inserted and predicted time for each layout choice.

    Args:
        model: A CNN preset (the graph is built NCHW, PyTorch's default).
        hw: Hardware profile.
        batch: Images per step.

    Returns:
        A frame indexed by ``(layout, propagation)`` with ``transforms`` (layout kernels),
        ``transform_ms`` and ``total_ms`` (milliseconds, rounded to 0.001).
    """
    rows = []
    for layout in ("NCHW", "NHWC"):
        for propagation in (True, False):
            options = MapOptions(layout=layout, layout_propagation=propagation)
            mp = mapping(model, hw, batch=batch, options=options)
            moves = [km for km in mp.kernels if km.kernel.kind == "layout"]
            rows.append(
                {
                    "layout": layout,
                    "propagation": propagation,
                    "transforms": len(moves),
                    "transform_ms": round(sum(km.cost.total_s for km in moves) * 1e3, 3),
                    "total_ms": round(mp.time_s * 1e3, 3),
                }
            )
    return pd.DataFrame(rows).set_index(["layout", "propagation"])


def format_claim(decode: pd.DataFrame, prefill: pd.DataFrame) -> Claim:
    """What each format does to decode and prefill, from two :func:`format_table` frames.

    Returns:
        Markdown: per format the decode speedup against the bytes it removes, and the prefill
        speedup (a value below 1 is a slowdown).
    """
    base = decode.loc["bf16", "offchip_gb"]
    lines = []
    for f in decode.index:
        if f == "bf16":
            continue
        shrink = base / decode.loc[f, "offchip_gb"]
        p = prefill.loc[f, "speedup"]
        pre = "a slowdown" if p < 0.99 else "no change" if p <= 1.01 else "a speedup"
        lines.append(
            f"- `{f}`: decode x{decode.loc[f, 'speedup']:g} for x{shrink:.3g} fewer off-chip "
            f"bytes; prefill x{p:g} ({pre})"
        )
    return Claim(
        "\n".join(lines)
        + "\n\nDecode streams weights, so its speedup follows the bytes removed; prefill is "
        "compute-bound, so only a format the matrix engine computes in raises its roof, and a "
        "weight-only format adds dequantization work."
    )


def dtype_claim(
    model: str = "llama2-7b", hw: str = "h100-sxm", *, seq: int = 2048, to: str = "fp8_e4m3"
) -> Claim:
    """What switching the explorer's dtype from bf16 to ``to`` does to the roofline in decode.

    Returns:
        Markdown: the compute roof (peak, TFLOP/s or TOPS) and ``up_proj``'s off-chip intensity
        (FLOP/byte) in both formats.
    """
    out = {}
    for dt in ("bf16", to):
        graph = build_graph(model, phase="decode", seq=seq, dtype=dt)
        m = map_model(graph, hardware(hw))
        k = m.kernel("layers.0.mlp.up_proj")
        moved = k.cost.bytes_at(m.hardware.offchip.name)
        out[dt] = (m.peak_flops / 1e12, k.kernel.flops / moved if moved else 0.0)
    (pb, ib), (pt, it) = out["bf16"], out[to]
    unit = "TOPS" if to.startswith("int") else "TFLOP/s"
    return Claim(
        f"Switch **dtype** from bf16 to {to} in decode: the compute roof moves from {pb:.4g} to "
        f"{pt:.4g} {unit}, and `up_proj`'s point moves from {ib:.3g} to {it:.3g} FLOP/byte "
        f"(x{it / ib:.2g}: each weight byte carries more FLOPs)."
    )


def layout_claim(table: pd.DataFrame) -> Claim:
    """What the cost model charges NCHW and NHWC, from a :func:`layout_table` frame.

    Returns:
        Markdown: the fastest layout row and whether running convs in NCHW costs anything here.
    """
    nchw = table.loc[("NCHW", True), "total_ms"]
    nhwc = table.loc[("NHWC", True), "total_ms"]
    best = table["total_ms"].idxmin()
    text = (
        f"Fastest here: {best[0]} {'with' if best[1] else 'without'} propagation "
        f"({table.loc[best, 'total_ms']:.3g} ms). NCHW takes {nchw:.3g} ms, NHWC with one "
        f"transform {nhwc:.3g} ms. "
    )
    if nchw <= nhwc:
        text += (
            "This profile charges nothing for running tensor-core convolutions in NCHW, so the "
            "transforms look like pure cost. Practice is the opposite: cuDNN transposes NCHW "
            "inputs to NHWC for tensor-core convolutions on every call (PyTorch's *Channels Last "
            "Memory Format* tutorial; MosaicML Composer's *Channels Last* method card, 1.5-2x "
            "per convolution), so on a GPU keep activations NHWC and propagate the layout."
        )
    else:
        text += (
            "Running tensor-core convolutions in NCHW costs the internal conversion to "
            "channels-last on every call (cuDNN transposes NCHW inputs to NHWC: PyTorch's "
            "*Channels Last Memory Format* tutorial), so one transform at the input and "
            "propagation win."
        )
    return Claim(text)


def check_int8_bytes(
    answer: int, *, in_features: int, out_features: int, strict: bool | None = None
) -> CheckResult:
    """Check the storage of an int8 weight-only Linear weight (scales not counted), in bytes.

    Args:
        answer: The learner's size (bytes).
        in_features: K.
        out_features: N.
        strict: Raise on a wrong answer.

    Returns:
        The check result; expected is the IR's weight tensor size.
    """
    op = Linear(
        name="fc",
        inputs=("x",),
        tokens=(1,),
        in_features=in_features,
        out_features=out_features,
        weight_dtype="int8",
    )
    return compare(
        "int8_weight_bytes",
        answer,
        op.weight_tensors()[0].nbytes,
        hint="one byte per weight",
        hint2="in_features * out_features weights, 1 byte each",
        strict=strict,
    )


def check_layout_transforms(
    answer: int,
    *,
    model: str = "resnet50",
    hw: str = "h100-sxm",
    layout: str = "NHWC",
    propagation: bool = False,
    batch: int = 32,
    strict: bool | None = None,
) -> CheckResult:
    """Check how many layout-transform kernels the mapper inserts.

    Args:
        answer: The learner's count.
        model: A CNN preset.
        hw: Hardware profile.
        layout: Layout the convolutions use.
        propagation: Whether the chosen layout is kept between convolutions.
        batch: Images per step.
        strict: Raise on a wrong answer.

    Returns:
        The check result; expected counts the mapping's kernels of kind ``layout``.
    """
    options = MapOptions(layout=layout, layout_propagation=propagation)
    mp = mapping(model, hw, batch=batch, options=options)
    expected = sum(1 for km in mp.kernels if km.kernel.kind == "layout")
    return compare(
        f"layout_transforms[{layout},propagation={propagation}]",
        answer,
        expected,
        hint="without propagation every conv converts its input and converts its output back",
        hint2="read the transforms column of the layout table for this layout and propagation",
        strict=strict,
    )


def check_format_effect(
    answer: object,
    *,
    weight_dtype: str,
    model: str = "llama2-7b",
    hw: str = "h100-sxm",
    phase: str = "prefill",
    seq: int = 2048,
    strict: bool | None = None,
) -> CheckResult:
    """A prediction: with weights in ``weight_dtype`` (activations bf16), faster, slower, same?"""
    base = mapping(model, hw, phase=phase, seq=seq)
    quant = mapping(model, hw, phase=phase, seq=seq, options=MapOptions(weight_dtype=weight_dtype))
    return check_direction(
        f"{weight_dtype} weights ({model} {phase})",
        answer,
        base.time_s,
        quant.time_s,
        hint="fewer weight bytes help only where weight bytes set the time; what else does a "
        "weight-only format add to every GEMM?",
        strict=strict,
    )


def _effect(x: float) -> str:
    return "slow" if x < 0.99 else "leave unchanged" if x <= 1.01 else "speed up"


def takeaway_claim(decode: pd.DataFrame, prefill: pd.DataFrame) -> Claim:
    """The formats takeaway, computed from two :func:`format_table` frames (not typed).

    Returns:
        A Markdown bullet: what weight-only formats and fp8 do to decode and to prefill, each
        direction and factor read from the tables.
    """
    wo = [f for f in decode.index if "weight-only" in f]
    fp8 = [f for f in decode.index if f.startswith("fp8")]
    dec = ", ".join(f"x{decode.loc[f, 'speedup']:g}" for f in wo)
    pre = [prefill.loc[f, "speedup"] for f in wo]
    verb = _effect(min(pre)) if len({_effect(p) for p in pre}) == 1 else "change"
    text = (
        f"- Weight-only formats ({', '.join(f.split()[0] for f in wo)}) cut decode time by "
        f"cutting weight bytes ({dec}) and {verb} a compute-bound prefill "
        f"({', '.join(f'x{p:g}' for p in pre)}: the dequantization work is added to every GEMM)."
    )
    for f in fp8:
        text += (
            f" fp8 weights and activations {_effect(decode.loc[f, 'speedup'])} decode "
            f"(x{decode.loc[f, 'speedup']:g}) and {_effect(prefill.loc[f, 'speedup'])} prefill "
            f"(x{prefill.loc[f, 'speedup']:g}) where the matrix engine computes fp8."
        )
    return Claim(text)
