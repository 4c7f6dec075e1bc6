"""Lesson 05, quantization formats and data layouts: tables and self-checks."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd

from workbench.errors import WorkbenchError
from workbench.execution.quant import error_metrics, fake_quantize
from workbench.exercises._check import STEP_TIME, CheckResult, compare
from workbench.exercises._claims import Claim, gated, gated_frame
from workbench.exercises._shared import hardware, mapping
from workbench.exercises._text import LessonText
from workbench.exercises._widget_steps import ExplorerSetting, ExplorerStep, explorer_walk
from workbench.ir import Linear
from workbench.mapper import ModelMapping
from workbench.options import MapOptions
from workbench.platform.fit import setting_refusal

__all__ = [
    "FORMATS",
    "LAYOUT_EXERCISE",
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
    "layout_view",
    "nchw_pitfall_claim",
    "outlier_pitfall_claim",
    "pitfall_claim",
    "quality_claim",
    "quality_table",
    "takeaway_claim",
]

_TEXT = LessonText("lesson05")

#: Exercise 2's setting: (layout, layout propagation) whose transform count the learner computes.
LAYOUT_EXERCISE: tuple[str, bool] = ("NHWC", False)


def _layout_check_name(layout: str, propagation: bool) -> str:
    """The name :func:`check_layout_transforms` gives its exercise (what gating waits for)."""
    return f"layout_transforms[{layout},propagation={propagation}]"


def _gate(claim: Claim) -> Claim:
    """``claim``, hidden until Exercise 2 (the transform count) is solved or revealed."""
    return gated(claim, after=_layout_check_name(*LAYOUT_EXERCISE), label="Exercise 2")


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
        mp = _format_mapping(model, hardware_name, phase, seq, dtype, weight_dtype)
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


def _format_mapping(
    model: str,
    hardware_name: str,
    phase: str,
    seq: int,
    dtype: str | None,
    weight_dtype: str | None,
) -> ModelMapping:
    """One format's mapping, built as the explorer and ``workbench map --dtype`` build it.

    NOTE: a model format (``dtype``) is the graph's own (its tensors in that format), as the
    explorer's dtype dropdown builds it; a weight-only format is a mapping option. Issue 32:
    the table once mapped a bf16 graph under an fp8 option and printed 25.645 ms where the
    explorer, on the same setting, showed 25.4.
    """
    if dtype is None:
        options = MapOptions(weight_dtype=weight_dtype)
        return mapping(model, hardware_name, phase=phase, seq=seq, options=options)
    return ExplorerSetting(
        model=model, hardware=hardware_name, phase=phase, seq=seq, dtype=dtype
    ).mapping()


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


def layout_view(table: pd.DataFrame) -> pd.DataFrame:
    """:func:`layout_table` as the lesson shows it: the counts wait for Exercise 2.

    Every row's ``transforms`` reads ``(Exercise 2)`` until that check passes or its answer is
    revealed (NCHW's rows count the same transforms as NHWC without propagation, so no row
    shows before); the times stay.
    """
    return gated_frame(
        table, ["transforms"], after=_layout_check_name(*LAYOUT_EXERCISE), label="Exercise 2"
    )


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
        lines.append(
            _TEXT.render(
                "format_line",
                format_name=f,
                decode_speedup=decode.loc[f, "speedup"],
                shrink=shrink,
                prefill_speedup=p,
                direction=_direction(p),
            )
        )
    return Claim("\n".join(lines) + "\n\n" + _format_summary(decode, prefill))


def _format_summary(decode: pd.DataFrame, prefill: pd.DataFrame) -> str:
    """The sentence under the format bullets, each half conditioned on the two frames."""
    base = decode.loc["bf16", "offchip_gb"]
    fmts = [f for f in decode.index if f != "bf16"]
    # NOTE: the bytes set most of decode's time when every format recovers over half its shrink
    ratios = [decode.loc[f, "speedup"] / (base / decode.loc[f, "offchip_gb"]) for f in fmts]
    return _TEXT.render(
        "format_summary",
        follows=all(r > 0.5 for r in ratios),
        low=min(ratios),
        high=max(ratios),
        up=[f for f in fmts if prefill.loc[f, "speedup"] > 1.01],
        down=[f for f in fmts if prefill.loc[f, "speedup"] < 0.99],
    )


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
    return _TEXT.claim(
        "dtype",
        instruction=step.instruction[:1].upper() + step.instruction[1:],
        peak_before=a.peak_flops / 1e12,
        peak_after=b.peak_flops / 1e12,
        integer=to.startswith("int"),
        intensity_before=ib,
        intensity_after=it,
        intensity_ratio=it / ib,
        ms_after=b.time_s * 1e3,
        ms_before=a.time_s * 1e3,
        speedup=a.time_s / b.time_s,
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
    gain_pre = pre_bf.time_s / pre_to.time_s
    gain_dec = dec_bf.time_s / dec_to.time_s
    return _TEXT.claim(
        "explorer",
        first=dtype_claim(model, hardware_name, seq=seq, to=to).text,
        second=two.instruction,
        to=to,
        compute=pre_to.bottleneck_counts().get("compute", 0),
        kernels=len(pre_to.kernels),
        peak=pre_to.peak_flops / 1e12,
        seq=seq,
        ms_to=pre_to.time_s * 1e3,
        third=three.instruction,
        ms_bf16=pre_bf.time_s * 1e3,
        gain_prefill=gain_pre,
        more=gain_pre > gain_dec,
        gain_decode=gain_dec,
    )


def layout_claim(table: pd.DataFrame) -> Claim:
    """What the cost model charges NCHW and NHWC, from a :func:`layout_table` frame.

    Returns:
        Markdown: the fastest layout row and whether running convs in NCHW costs anything here.
    """
    nchw = table.loc[("NCHW", True), "total_ms"]
    nhwc = table.loc[("NHWC", True), "total_ms"]
    best = table["total_ms"].idxmin()
    return _TEXT.claim(
        "layout",
        best_layout=best[0],
        best_propagation=best[1],
        best_ms=table.loc[best, "total_ms"],
        nchw_ms=nchw,
        nhwc_ms=nhwc,
        nchw_free=nchw <= nhwc,
    )


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
        **_TEXT.hints("int8_bytes"),
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
        _layout_check_name(layout, propagation),
        answer,
        expected,
        **_TEXT.hints("layout_transforms"),
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
    return STEP_TIME.check(
        f"{weight_dtype} weights ({model} {phase})",
        answer,
        base.time_s,
        quant.time_s,
        hint=_TEXT.render("format_effect_hint"),
        strict=strict,
    )


def _direction(speedup: float) -> str:
    """``"down"``, ``"same"`` (within 1 %) or ``"up"``: what a speedup factor does to the time."""
    return "down" if speedup < 0.99 else "same" if speedup <= 1.01 else "up"


def _effect(x: float) -> str:
    return _TEXT.render("effect", direction=_direction(x))


def takeaway_claim(decode: pd.DataFrame, prefill: pd.DataFrame) -> Claim:
    """The formats takeaway, computed from two :func:`format_table` frames (not typed).

    Returns:
        A Markdown bullet: what weight-only formats and fp8 do to decode and to prefill, each
        direction and factor read from the tables.
    """
    wo = [f for f in decode.index if "weight-only" in f]
    fp8 = [f for f in decode.index if f.startswith("fp8")]
    pre = [prefill.loc[f, "speedup"] for f in wo]
    same = len({_direction(p) for p in pre}) == 1
    return _TEXT.claim(
        "takeaway",
        names=[f.split()[0] for f in wo],
        decode_speedups=[decode.loc[f, "speedup"] for f in wo],
        effect=_TEXT.render("effect", direction=_direction(min(pre)) if same else "mixed"),
        prefill_speedups=pre,
        fp8=[
            _TEXT.render(
                "takeaway_fp8",
                decode_effect=_effect(decode.loc[f, "speedup"]),
                decode_speedup=decode.loc[f, "speedup"],
                prefill_effect=_effect(prefill.loc[f, "speedup"]),
                prefill_speedup=prefill.loc[f, "speedup"],
            )
            for f in fp8
        ],
    )


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
            _TEXT.render("quality_part", format_name=f, snr=quality.loc[f, "snr_db"], speedup=sp)
        )
    fast = {f: sp for f, sp in speed.items() if sp is not None and sp > 1}
    quantized = [f for f in rows if f in fast]
    ordered = all(fast[a] < fast[b] for a, b in itertools.pairwise(quantized))
    return _TEXT.claim("quality", parts=", ".join(parts), ordered=ordered and len(quantized) > 1)


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
        without and with propagation (NHWC), against the convolutions' time (ms); gated
        behind Exercise 2, whose answer the count without propagation is.
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
    return _gate(
        _TEXT.claim(
            "layout_takeaway",
            flops=flops,
            count_off=n_off,
            ms_off=t_off,
            size="same" if 0.8 <= r <= 1.25 else ("more" if r > 1 else "less"),
            conv_ms=convs,
            ratio=r,
            count_on=n_on,
            ms_on=t_on,
        )
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
    return _TEXT.claim(
        "int4_pitfall",
        kernel=kernel,
        gemm=g,
        quarter=quarter,
        extra=extra,
        ratio=g.b_bytes / bf.b_bytes,
        speed=pre,
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
    return _TEXT.claim(
        "outlier_pitfall",
        outlier=outlier,
        others=n - 1,
        snr_tensor=snr["tensor"],
        snr_channel=snr["channel"],
        crushes=lost > 6.0,  # NOTE: 6 dB = one bit of resolution lost
        lost=lost,
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
        parts.append(_TEXT.render("batch_part", speedup=gains[-1], batch=b, bottleneck=cls))
    return _TEXT.claim(
        "batch_pitfall",
        weight_dtype=weight_dtype,
        seq=seq,
        parts=", ".join(parts),
        falls=all(b < a for a, b in itertools.pairwise(gains)),
        crosses=classes[0].startswith("bandwidth") and classes[-1] == "compute",
    )


def nchw_pitfall_claim(table: pd.DataFrame) -> Claim:
    """Whether NCHW is free in this model, read from a :func:`layout_table` frame.

    Returns:
        Markdown bullet: NCHW's transform time and step time against NHWC with propagation,
        and the presentation advice that follows from them (not the count: it equals Exercise
        2's answer).
    """
    nchw = table.loc[("NCHW", True)]
    nhwc = table.loc[("NHWC", True)]
    if nchw["total_ms"] <= nhwc["total_ms"]:
        return _TEXT.claim("nchw_free")
    return _TEXT.claim(
        "nchw_pitfall",
        transform_ms=nchw["transform_ms"],
        nchw_ms=nchw["total_ms"],
        nhwc_ms=nhwc["total_ms"],
        ratio=nchw["total_ms"] / nhwc["total_ms"],
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
