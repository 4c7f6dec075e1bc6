"""Lesson 05, quantization formats and data layouts: tables and self-checks."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd

from workbench.errors import WorkbenchError
from workbench.execution.quant import error_metrics, fake_quantize
from workbench.exercises._check import CheckResult, check_direction, compare
from workbench.exercises._claims import Claim
from workbench.exercises._shared import hardware, mapping
from workbench.exercises._widget_steps import ExplorerSetting, ExplorerStep, explorer_walk
from workbench.ir import Linear
from workbench.mapper import ModelMapping
from workbench.options import MapOptions
from workbench.platform.fit import setting_refusal

__all__ = [
    "FORMATS",
    "batch_pitfall_claim",
    "check_format_effect",
    "check_int8_bytes",
    "check_layout_transforms",
    "dtype_claim",
    "explorer_claim",
    "explorer_steps",
    "format_claim",
    "format_table",
    "int4_pitfall_claim",
    "layout_claim",
    "layout_table",
    "layout_takeaway_claim",
    "nchw_pitfall_claim",
    "outlier_pitfall_claim",
    "pitfall_claim",
    "quality_claim",
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
    model: str = "llama2-7b",
    hardware_name: str = "h100-sxm",
    *,
    phase: str = "decode",
    seq: int = 2048,
) -> pd.DataFrame:
    """Predicted step time and off-chip traffic of a model in each format of :data:`FORMATS`.

    Args:
        model: Preset name.
        hardware_name: Hardware profile name.
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
        mp = mapping(model, hardware_name, phase=phase, seq=seq, options=options)
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


def layout_table(
    model: str = "resnet50", hardware_name: str = "h100-sxm", *, batch: int = 32
) -> pd.DataFrame:
    """Conv layouts: transforms inserted and predicted time for each layout choice.

    Args:
        model: A CNN preset (the graph is built NCHW, PyTorch's default).
        hardware_name: Hardware profile name.
        batch: Images per step.

    Returns:
        A frame indexed by ``(layout, propagation)`` with ``transforms`` (layout kernels),
        ``transform_ms`` and ``total_ms`` (milliseconds, rounded to 0.001).
    """
    rows = []
    for layout in ("NCHW", "NHWC"):
        for propagation in (True, False):
            options = MapOptions(layout=layout, layout_propagation=propagation)
            mp = mapping(model, hardware_name, batch=batch, options=options)
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
    return Claim("\n".join(lines) + "\n\n" + _format_summary(decode, prefill))


def _format_summary(decode: pd.DataFrame, prefill: pd.DataFrame) -> str:
    """The sentence under the format bullets, each half conditioned on the two frames."""
    base = decode.loc["bf16", "offchip_gb"]
    fmts = [f for f in decode.index if f != "bf16"]
    # NOTE: the bytes set most of decode's time when every format recovers over half its shrink
    ratios = [decode.loc[f, "speedup"] / (base / decode.loc[f, "offchip_gb"]) for f in fmts]
    follows = all(r > 0.5 for r in ratios)
    head = (
        f"Decode's speedup recovers {min(ratios):.0%}-{max(ratios):.0%} of the byte shrink: "
        "streaming weights sets most of its time"
        if follows
        else f"Decode's speedup recovers as little as {min(ratios):.0%} of the byte shrink: "
        "something other than streaming weights sets its time"
    )
    up = [f"`{f}`" for f in fmts if prefill.loc[f, "speedup"] > 1.01]
    down = [f"`{f}`" for f in fmts if prefill.loc[f, "speedup"] < 0.99]
    tail = "; prefill is faster with " + (", ".join(up) or "no format")
    if down:
        tail += f" and slower with {', '.join(down)}"
    tail += (
        " (weight-only formats add dequantization work to every GEMM, which only a format the "
        "matrix engine computes in avoids)."
        if down
        else "."
    )
    return head + tail


def explorer_steps(
    model: str = "llama2-7b",
    hardware_name: str = "h100-sxm",
    *,
    seq: int = 2048,
    to: str = "fp8_e4m3",
) -> tuple[ExplorerStep, ...]:
    """The live-widget section's instructions as data, in the order the lesson gives them.

    From the explorer as the lesson builds it (a decode step of ``model`` on ``hardware_name`` at a
    ``seq``-token context, bf16): **dtype** to ``to``; **phase** to prefill; **dtype** back to
    bf16.

    Returns:
        The steps, each accepted by the explorer's own refusal check.
    """
    start = ExplorerSetting(model=model, hardware=hardware_name, phase="decode", seq=seq)
    return explorer_walk(start, [("dtype", to), ("phase", "prefill"), ("dtype", "bf16")])


def _up_proj_intensity(m: ModelMapping) -> float:
    k = m.kernel("layers.0.mlp.up_proj")
    moved = k.cost.bytes_at(m.hardware.offchip.name)
    return k.kernel.flops / moved if moved else 0.0


def dtype_claim(
    model: str = "llama2-7b",
    hardware_name: str = "h100-sxm",
    *,
    seq: int = 2048,
    to: str = "fp8_e4m3",
) -> Claim:
    """Step 1 of :func:`explorer_steps`: switching **dtype** from bf16 to ``to`` in decode.

    Returns:
        Markdown: the compute roof (peak, TFLOP/s or TOPS), ``up_proj``'s off-chip intensity
        (FLOP/byte) and the step time in both formats.
    """
    step = explorer_steps(model, hardware_name, seq=seq, to=to)[0]
    a, b = step.before.mapping(), step.after.mapping()
    ib, it = _up_proj_intensity(a), _up_proj_intensity(b)
    unit = "TOPS" if to.startswith("int") else "TFLOP/s"
    return Claim(
        f"{step.instruction[0].upper()}{step.instruction[1:]} in decode: the compute roof moves "
        f"from {a.peak_flops / 1e12:.4g} to {b.peak_flops / 1e12:.4g} {unit}, `up_proj`'s point "
        f"moves from {ib:.3g} to {it:.3g} FLOP/byte (x{it / ib:.2g}: each weight byte carries "
        f"more FLOPs), and the step takes {b.time_s * 1e3:.3g} ms instead of "
        f"{a.time_s * 1e3:.3g} ms (x{a.time_s / b.time_s:.3g} faster)."
    )


def explorer_claim(
    model: str = "llama2-7b",
    hardware_name: str = "h100-sxm",
    *,
    seq: int = 2048,
    to: str = "fp8_e4m3",
) -> Claim:
    """What each instruction of :func:`explorer_steps` does, on the explorer's own mapping.

    Returns:
        A Markdown list: step 1 (:func:`dtype_claim`); step 2, prefill in ``to``: its class
        counts and step time; step 3, back to bf16: the prefill step's change, and the speedup
        ``to`` gave prefill against the one it gave decode.
    """
    one, two, three = explorer_steps(model, hardware_name, seq=seq, to=to)
    pre_to, pre_bf = two.after.mapping(), three.after.mapping()
    dec_bf, dec_to = one.before.mapping(), one.after.mapping()
    counts = pre_to.bottleneck_counts()
    compute = counts.get("compute", 0)
    gain_pre = pre_bf.time_s / pre_to.time_s
    gain_dec = dec_bf.time_s / dec_to.time_s
    more = "more" if gain_pre > gain_dec else "less"
    return Claim(
        f"- {dtype_claim(model, hardware_name, seq=seq, to=to).text}\n"
        f"- Then {two.instruction}: still in {to}, {compute} of {len(pre_to.kernels)} kernels "
        f"are compute-bound against the {pre_to.peak_flops / 1e12:.4g} {to} roof and the "
        f"{seq:,}-token prefill takes {pre_to.time_s * 1e3:.3g} ms.\n"
        f"- Then {three.instruction}: the prefill step goes from {pre_to.time_s * 1e3:.3g} to "
        f"{pre_bf.time_s * 1e3:.3g} ms: {to} made prefill x{gain_pre:.3g} faster, {more} than "
        f"the x{gain_dec:.3g} it gave decode."
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
        hint2="a Linear layer holds one weight per (input feature, output feature) pair",
        strict=strict,
    )


def check_layout_transforms(
    answer: int,
    *,
    model: str = "resnet50",
    hardware_name: str = "h100-sxm",
    layout: str = "NHWC",
    propagation: bool = False,
    batch: int = 32,
    strict: bool | None = None,
) -> CheckResult:
    """Check how many layout-transform kernels the mapper inserts.

    Args:
        answer: The learner's count.
        model: A CNN preset.
        hardware_name: Hardware profile name.
        layout: Layout the convolutions use.
        propagation: Whether the chosen layout is kept between convolutions.
        batch: Images per step.
        strict: Raise on a wrong answer.

    Returns:
        The check result; expected counts the mapping's kernels of kind ``layout``.
    """
    options = MapOptions(layout=layout, layout_propagation=propagation)
    mp = mapping(model, hardware_name, batch=batch, options=options)
    expected = sum(1 for km in mp.kernels if km.kernel.kind == "layout")
    return compare(
        f"layout_transforms[{layout},propagation={propagation}]",
        answer,
        expected,
        hint="without propagation every conv converts its input and converts its output back",
        hint2="count the convolutions the mapper sees in this model, then the transforms each "
        "one pays when the layout is not kept between them",
        strict=strict,
    )


def check_format_effect(
    answer: object,
    *,
    weight_dtype: str,
    model: str = "llama2-7b",
    hardware_name: str = "h100-sxm",
    phase: str = "prefill",
    seq: int = 2048,
    strict: bool | None = None,
) -> CheckResult:
    """A prediction: with weights in ``weight_dtype`` (activations bf16), faster, slower, same?"""
    base = mapping(model, hardware_name, phase=phase, seq=seq)
    quant = mapping(
        model, hardware_name, phase=phase, seq=seq, options=MapOptions(weight_dtype=weight_dtype)
    )
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


def _decode_label(quality_label: str, decode: pd.DataFrame) -> str | None:
    """The :func:`format_table` row of a :func:`quality_table` row (same format, other label)."""
    head = quality_label.split()[0].split("_")[0]
    return next((f for f in decode.index if f.split()[0].split("_")[0] == head), None)


def quality_claim(quality: pd.DataFrame, decode: pd.DataFrame) -> Claim:
    """Signal-to-noise against decode speedup, from :func:`quality_table` and :func:`format_table`.

    Returns:
        Markdown: the formats in order of SNR (dB) with their decode speedups, and whether the
        faster formats are the noisier ones here (read from both orders).
    """
    rows = sorted(quality.index, key=lambda f: -quality.loc[f, "snr_db"])
    parts = []
    speed = {}
    for f in rows:
        d = _decode_label(f, decode)
        sp = float(decode.loc[d, "speedup"]) if d is not None else None
        speed[f] = sp
        parts.append(
            f"{f} {quality.loc[f, 'snr_db']:g} dB"
            + (f" (decode x{sp:g})" if sp is not None else "")
        )
    fast = {f: sp for f, sp in speed.items() if sp is not None and sp > 1}
    quantized = [f for f in rows if f in fast]
    ordered = all(fast[a] < fast[b] for a, b in itertools.pairwise(quantized))
    verdict = (
        "here the faster a format makes decode, the more signal it loses"
        if ordered and len(quantized) > 1
        else "here speed and signal do not trade off in order"
    )
    return Claim(
        "Every format costs signal-to-noise against the exact float64 product (even bf16 "
        f"operands): {', '.join(parts)}; {verdict}. Whether that error is acceptable is a "
        "model-level question (perplexity, task accuracy), but this is the evidence that starts "
        "the discussion, computed, not quoted."
    )


def layout_takeaway_claim(
    table: pd.DataFrame,
    model: str = "resnet50",
    hardware_name: str = "h100-sxm",
    *,
    batch: int = 32,
) -> Claim:
    """What per-layer layout conversion costs against the convolutions, from :func:`layout_table`.

    Returns:
        Markdown bullet: the transforms' FLOPs (none: pure traffic), their count and time
        without and with propagation (NHWC), against the convolutions' time (ms).
    """
    off = MapOptions(layout="NHWC", layout_propagation=False)
    mp = mapping(model, hardware_name, batch=batch, options=off)
    moves = [k for k in mp.kernels if k.kernel.kind == "layout"]
    convs = sum(k.cost.total_s for k in mp.kernels if k.kernel.kind == "conv") * 1e3
    flops = sum(k.kernel.flops for k in moves)
    t_off = table.loc[("NHWC", False), "transform_ms"]
    t_on = table.loc[("NHWC", True), "transform_ms"]
    n_off = table.loc[("NHWC", False), "transforms"]
    n_on = table.loc[("NHWC", True), "transforms"]
    r = t_off / convs if convs else 0.0
    size = "as much as" if 0.8 <= r <= 1.25 else ("more than" if r > 1 else "less than")
    pure = "pure traffic (no FLOPs)" if flops == 0 else f"mostly traffic ({flops:.3g} FLOPs)"
    return Claim(
        f"- Layout transforms are {pure}. Converting per layer (NHWC, no propagation) runs "
        f"{n_off} of them in {t_off:.3g} ms, {size} the convolutions themselves "
        f"({convs:.3g} ms, x{r:.2f}); propagating the layout leaves {n_on} ({t_on:.3g} ms). "
        "Choose the layout once and propagate it."
    )


def int4_pitfall_claim(
    model: str = "llama2-7b",
    hardware_name: str = "h100-sxm",
    *,
    seq: int = 2048,
    kernel: str = "layers.0.mlp.up_proj",
) -> Claim:
    """int4 weight-only bytes per weight and dequantization work, as the mapper lowers them.

    Returns:
        Markdown bullet: bytes per weight of ``kernel`` in int4 against bf16 (the group scale
        and zero point included), the share they add over a bare quarter, the dequantization
        instructions per weight, and the prefill speedup of int4 (``format_table``).
    """
    bf = mapping(model, hardware_name, phase="prefill", seq=seq).kernel(kernel).kernel.gemm
    q4 = mapping(
        model, hardware_name, phase="prefill", seq=seq, options=MapOptions(weight_dtype="int4")
    )
    g = q4.kernel(kernel).kernel.gemm
    if bf is None or g is None:
        raise WorkbenchError(f"int4_pitfall_claim: {kernel} is not a GEMM")
    quarter = bf.b_bytes / 4
    extra = g.b_bytes / quarter - 1
    pre = mapping(model, hardware_name, phase="prefill", seq=seq).time_s / q4.time_s
    return Claim(
        f"- Counting int4 as a quarter of the bf16 bytes: the mapped `{kernel}` "
        f"({g.k}x{g.n}) reads {g.b_bytes:.4g} bytes per weight, not {quarter:g}: each group's "
        f"fp16 scale and zero point add {extra:.2%}, so its weights are "
        f"x{g.b_bytes / bf.b_bytes:.3g} of bf16's, not x0.25. And every weight is dequantized in "
        f"the GEMM's main loop ({g.b_dequant_ops:g} vector instructions each): int4 prefill "
        f"runs at x{pre:.2f} the bf16 speed here ({'slower' if pre < 1 else 'faster'})."
    )


def outlier_pitfall_claim(
    *, m: int = 64, n: int = 512, k: int = 1024, seed: int = 0, outlier: float = 100.0
) -> Claim:
    """One outlier channel under a per-tensor and a per-channel int8 scale, measured.

    The weight of :func:`quality_table` (same seed and shape) with output channel 0 scaled by
    ``outlier``; ``x @ w`` with ``w`` int8 (one scale per tensor, then one per output channel)
    against the exact float64 product, SNR over the other channels' outputs.

    Returns:
        Markdown bullet: the SNR (dB) of the other channels with each scale.
    """
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((m, k)).astype(np.float32)
    w = (rng.standard_normal((k, n)) / np.sqrt(k)).astype(np.float32)
    w[:, 0] *= outlier
    exact = x.astype(np.float64) @ w.astype(np.float64)
    snr = {}
    for label, axis in (("tensor", None), ("channel", 1)):
        out = x.astype(np.float64) @ fake_quantize(w, "int8", axis=axis).astype(np.float64)
        snr[label] = error_metrics(out[:, 1:], exact[:, 1:]).snr_db
    lost = snr["channel"] - snr["tensor"]
    verdict = (
        "the single large value crushes the resolution of every other channel."
        if lost > 6.0  # NOTE: 6 dB = one bit of resolution lost
        else f"here the outlier costs the other channels only {lost:.1f} dB."
    )
    return Claim(
        f"- Per-tensor scales on a tensor with an outlier channel: with one output channel of "
        f"`w` x{outlier:g}, int8 with one scale per tensor leaves the other {n - 1} channels "
        f"{snr['tensor']:.1f} dB of SNR, one scale per channel {snr['channel']:.1f} dB: {verdict}"
    )


def batch_pitfall_claim(
    model: str = "llama2-7b",
    hardware_name: str = "h100-sxm",
    *,
    seq: int = 512,
    batches: tuple[int, ...] = (1, 16, 64, 128),
    weight_dtype: str = "int8",
) -> Claim:
    """The decode speedup of a weight-only format across batch sizes, with ``up_proj``'s class.

    Every setting is one the explorer accepts (:func:`setting_refusal`).

    Returns:
        Markdown bullet: the speedup (bf16 time over ``weight_dtype``'s) at each batch, the
        class of quantized ``up_proj``, and whether the speedup falls as the batch grows.
    """
    parts, gains, classes = [], [], []
    for b in batches:
        why = setting_refusal(model, hardware(hardware_name), phase="decode", batch=b, seq=seq)
        if why:
            raise WorkbenchError(f"batch_pitfall_claim: batch {b} is refused: {why}")
        base = mapping(model, hardware_name, phase="decode", seq=seq, batch=b)
        q = mapping(
            model, hardware_name, phase="decode", seq=seq, batch=b,
            options=MapOptions(weight_dtype=weight_dtype),
        )  # fmt: skip
        gains.append(base.time_s / q.time_s)
        cls = q.kernel("layers.0.mlp.up_proj").cost.bottleneck
        classes.append(cls)
        parts.append(f"x{gains[-1]:.3g} at batch {b} (`up_proj` **{cls}**)")
    falls = all(b < a for a, b in itertools.pairwise(gains))
    crosses = classes[0].startswith("bandwidth") and classes[-1] == "compute"
    return Claim(
        f"- Comparing formats at one batch size: {weight_dtype} weight-only speeds a decode step "
        f"({seq:,}-token context) {', '.join(parts)}: its value "
        + (
            "falls as the batch grows"
            + (" and the GEMMs cross from bandwidth- to compute-bound." if crosses else ".")
            if falls
            else "does not fall steadily with the batch here."
        )
    )


def nchw_pitfall_claim(table: pd.DataFrame) -> Claim:
    """Whether NCHW is free in this model, read from a :func:`layout_table` frame.

    Returns:
        Markdown bullet: NCHW's transforms and time against NHWC with propagation, and the
        presentation advice that follows from them.
    """
    nchw = table.loc[("NCHW", True)]
    nhwc = table.loc[("NHWC", True)]
    if nchw["total_ms"] <= nhwc["total_ms"]:
        return Claim(
            '- Reading the layout table as "NCHW is free": this profile charges nothing for '
            "NCHW tensor-core convolutions, which real libraries convert internally; say so "
            "when you present it."
        )
    return Claim(
        f"- Reading NCHW as free: even with propagation, NCHW runs {int(nchw['transforms'])} "
        f"transforms ({nchw['transform_ms']:.3g} ms, the conversion a tensor-core convolution "
        f"makes internally) and takes {nchw['total_ms']:.3g} ms against NHWC's "
        f"{nhwc['total_ms']:.3g} ms (x{nchw['total_ms'] / nhwc['total_ms']:.2f})."
    )


def pitfall_claim(
    layouts: pd.DataFrame, model: str = "llama2-7b", hardware_name: str = "h100-sxm"
) -> Claim:
    """The lesson's four pitfalls, each computed (see the ``*_pitfall_claim`` functions)."""
    parts = (
        int4_pitfall_claim(model, hardware_name),
        outlier_pitfall_claim(),
        batch_pitfall_claim(model, hardware_name),
        nchw_pitfall_claim(layouts),
    )
    return Claim("\n".join(p.text for p in parts))
