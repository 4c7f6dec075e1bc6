"""Formats on the engines: where a GEMM-like kernel runs, and what weight-only formats cost.

* :func:`engine_for`: the matrix engine when it has the format; a wider format it has when a
  library unpacks to it (int4 to int8 tensor cores, FP8 to 16-bit on Ampere); else the vector unit.
* Weight-only formats: group scales and zero points (:func:`group_bytes`) and the vector-unit
  instructions that dequantize each weight in the GEMM main loop (:data:`DEQUANT_OPS`).
"""

from __future__ import annotations

from workbench.hw.schema import Hardware

__all__ = ["DEQUANT_OPS", "WEIGHT_GROUP", "engine_for", "group_bytes"]


#: Formats a library unpacks to a wider one the matrix engine has, in order of preference:
#: int4 operands to int8 (Hopper's wgmma has no int4; CUTLASS/TensorRT-LLM unpack in registers),
#: FP8 operands to 16-bit on engines without FP8 (Ampere: weights dequantized to fp16/bf16).
_PROMOTE = {
    "int4": ("int8",),
    "fp8_e4m3": ("bf16", "fp16"),
    "fp8_e5m2": ("bf16", "fp16"),
}


def engine_for(hw: Hardware, dtype: str) -> tuple[str, str, str | None]:
    """(engine, why, engine format when it differs from ``dtype``) of a GEMM-like kernel."""
    if hw.supports(dtype):
        return "matrix", f"GEMM-like, {dtype} runs on the {hw.name} matrix engine", None
    have = ", ".join(hw.matrix_engine.peak_flops_per_s)
    wider = next((d for d in _PROMOTE.get(dtype, ()) if hw.supports(d)), None)
    if wider is not None and hw.hardware_scheduled:
        return (
            "matrix",
            f"{hw.name} matrix engine has no {dtype} (has {have}): operands unpacked to "
            f"{wider} in registers, runs on the matrix engine at its {wider} rate",
            wider,
        )
    return (
        "vector",
        f"{hw.name} matrix engine has no {dtype} (has {have}): falls back to vector unit",
        None,
    )


#: Weight-only integer formats (AWQ, GPTQ) keep one fp16 scale and one zero point per group of
#: 128 weights along K: the group size both papers default to (Lin et al. 2023 arXiv:2306.00978;
#: Frantar et al. 2022 arXiv:2210.17323). FP8 weights use a per-channel scale (negligible).
WEIGHT_GROUP = 128
#: Vector instructions per weight to dequantize in a GEMM's main loop: unpack (shift/mask), convert
#: to the compute format, subtract the zero and apply the scale. An assumption: the LOP3 and
#: magic-number int4 -> fp16 conversion of FasterTransformer/TensorRT-LLM (Kim et al. 2022,
#: arXiv:2211.10017) needs a few ALU instructions per element; int8 one fewer, fp8 two.
DEQUANT_OPS = {"int4": 4.0, "int8": 3.0, "fp8_e4m3": 2.0, "fp8_e5m2": 2.0}


def group_bytes(wdt: str) -> float:
    """Scale + zero-point bytes per weight of a weight-only integer format (fp16 each)."""
    return 4.0 / WEIGHT_GROUP if wdt in ("int4", "int8") else 0.0
