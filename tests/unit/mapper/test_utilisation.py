"""MFU, HFU and MBU (workbench.cost.utilisation): 0 <= MFU <= HFU <= 1 on every preset x profile
x format, and one kernel's format override never switches the model's MFU denominator."""

import pytest

from workbench.cost.utilisation import busy_s, credit_s, model_peak
from workbench.hw import list_hardware, load_hardware
from workbench.mapper import map_model
from workbench.models import build_graph, list_models
from workbench.options import MapOptions

FORMATS = ("bf16", "fp16", "fp32", "int8", "fp8_e4m3")
PROFILES = tuple(list_hardware())
PRESETS = tuple(list_models())


def _formats(profile: str) -> tuple[str, ...]:
    """The formats of FORMATS the profile runs (its matrix engine's, and fp32 everywhere)."""
    hw = load_hardware(profile)
    return tuple(f for f in FORMATS if f == "fp32" or hw.supports(f))


def _cases():
    """Every preset x every profile x every format the profile runs (issue 18), the phase
    rotated deterministically."""
    for i, model in enumerate(PRESETS):
        for j, profile in enumerate(PROFILES):
            for k, fmt in enumerate(_formats(profile)):
                phase = "decode" if (i + j + k) % 3 == 0 else "prefill"
                yield pytest.param(model, profile, fmt, phase,
                                   id=f"{model}-{profile}-{fmt}")  # fmt: skip


def _graph(model: str, fmt: str, phase: str):
    if model in ("resnet50", "mlp") or model.startswith("bert"):
        phase = "prefill"
    if phase == "decode":
        return build_graph(model, phase="decode", context=64, dtype=fmt)
    return build_graph(model, seq=64, dtype=fmt)


def _check(m) -> None:
    assert 0.0 <= m.mfu <= m.hfu <= 1.0, (m.mfu, m.hfu)
    assert 0.0 <= m.mbu <= 1.0 + 1e-9
    for lt, v in m.mfu_by_layer_type().items():
        assert 0.0 <= v <= 1.0, lt


@pytest.mark.parametrize(("model", "profile", "fmt", "phase"), list(_cases()))
def test_mfu_within_hfu_within_one_with_and_without_a_one_kernel_fp32_override(
    model, profile, fmt, phase
):
    hw = load_hardware(profile)
    g = _graph(model, fmt, phase)
    plain = map_model(g, hw, MapOptions(search="heuristic", dtype=fmt))
    _check(plain)
    # Without an override that outruns the model's format, MFU is exactly PaLM's definition.
    expected = plain.model_flops / (plain.time_s * model_peak(hw, fmt)[0])
    assert plain.mfu == pytest.approx(expected, rel=1e-9)
    gemm = next(k.kernel.name for k in plain.kernels if k.kernel.matmul_flops)
    forced = map_model(
        g, hw, MapOptions(search="heuristic", dtype=fmt, dtype_overrides=((gemm, "fp32"),))
    )
    _check(forced)
    assert forced.peak_flops == plain.peak_flops  # never switched by one kernel's override
    assert forced.mfu_peak_name == plain.mfu_peak_name


@pytest.mark.parametrize("phase", ["prefill", "decode"])
def test_fp32_mlp_override_lowers_mfu_instead_of_switching_the_denominator(h100, phase):
    # The issue: `run --kernel-dtype '*.mlp.*=fp32'` wrote MFU 145.9% (prefill), and a decode run
    # 54% slower showed MFU 0.3% -> 2.5%, because the denominator became the fp32 vector peak.
    g = build_graph("llama2-7b", phase=phase, seq=2048, context=2048 if phase == "decode" else None)
    base = map_model(g, h100)
    fp32 = map_model(g, h100, MapOptions(dtype_overrides=(("*.mlp.*", "fp32"),)))
    assert fp32.time_s > base.time_s * 1.3
    assert fp32.peak_flops == base.peak_flops == h100.peak_flops("bf16")
    assert fp32.mfu < base.mfu  # slower at the same model FLOPs: lower MFU
    assert fp32.mfu == pytest.approx(base.mfu * base.time_s / fp32.time_s, rel=1e-9)
    assert fp32.mfu <= fp32.hfu <= 1.0
    assert fp32.hfu > fp32.mfu * 2  # the fp32 work on the vector unit counts in HFU


def test_a_faster_format_override_is_credited_at_its_own_peak(h100):
    # fp8 GEMMs in a bf16 model: model FLOPs at the bf16 peak would overstate MFU.
    g = build_graph("llama2-7b", seq=2048)
    m = map_model(g, h100, MapOptions(dtype_overrides=(("*", "fp8_e4m3"),)))
    assert m.peak_flops == h100.peak_flops("bf16")
    assert 0.0 < m.mfu <= m.hfu <= 1.0
    for k in m.kernels:
        assert credit_s(k, h100, m.peak_flops) <= busy_s(k, h100) <= k.cost.total_s


def test_weight_only_format_keeps_the_activation_format_peak(h100):
    g = build_graph("llama2-7b", phase="decode", context=512)
    m = map_model(g, h100, MapOptions(weight_dtype="int4"))
    assert m.peak_flops == h100.peak_flops("bf16")
    assert 0.0 <= m.mfu <= m.hfu <= 1.0
