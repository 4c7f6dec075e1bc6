"""Each lesson self-check: the right answer passes, a wrong one fails and raises in strict mode."""

import math

import pytest

from workbench.exercises import ExerciseError, lesson01, lesson02, lesson03, lesson04, lesson05
from workbench.hw import load_hardware

H100 = load_hardware("h100-sxm")


def _right_and_wrong(check, right, wrong, **kwargs):
    ok = check(right, strict=True, **kwargs)
    assert ok.passed
    assert "correct" in repr(ok)
    bad = check(wrong, strict=False, **kwargs)
    assert not bad.passed
    assert "not yet" in repr(bad)
    with pytest.raises(ExerciseError):
        check(wrong, strict=True, **kwargs)


def test_linear_flops():
    shape = {"tokens": 2048, "in_features": 4096, "out_features": 11008}
    _right_and_wrong(
        lesson01.check_linear_flops, 2 * 2048 * 4096 * 11008, 2048 * 4096 * 11008, **shape
    )


def test_linear_intensity():
    m, k, n = 16, 4096, 4096
    right = 2 * m * k * n / (2 * (m * k + k * n + m * n))
    _right_and_wrong(
        lesson01.check_linear_intensity, right, right * 2, tokens=m, in_features=k, out_features=n
    )


def test_param_count_llama2_7b():
    # Published: 6,738,415,616 parameters (Hugging Face meta-llama/Llama-2-7b-hf, 6.74B).
    _right_and_wrong(lesson01.check_param_count, 6_738_415_616, 7_000_000_000, model="llama2-7b")


def test_operator_table_columns():
    frame = lesson01.operator_table(
        lesson01.Linear(name="fc", inputs=("x",), tokens=(4,), in_features=8, out_features=8)
    )
    assert list(frame.columns) == ["kind", "flops", "bytes_read", "bytes_written", "intensity"]
    # 2*4*8*8 FLOPs over (4*8 + 8*8 + 4*8) bf16 elements
    assert frame.loc["fc", "intensity"] == round(512 / (2 * 128), 2)


def test_ridge_point_h100():
    right = H100.peak_flops("bf16") / H100.offchip.bandwidth_bytes_per_s
    _right_and_wrong(lesson02.check_ridge_point, right, right / 2, hardware_name="h100-sxm")


def test_bottleneck_decode_is_bandwidth_and_prefill_compute():
    kw = {"kernel": "layers.0.mlp.up_proj"}
    _right_and_wrong(lesson02.check_bottleneck, "bandwidth", "compute", phase="decode", **kw)
    assert lesson02.check_bottleneck("bandwidth:hbm", phase="decode", **kw).passed
    _right_and_wrong(lesson02.check_bottleneck, "compute", "bandwidth", phase="prefill", **kw)


def test_decode_floor():
    right = 6_738_415_616 * 2 / H100.offchip.bandwidth_bytes_per_s
    _right_and_wrong(lesson02.check_decode_floor, right, right * 1.5)


def test_hardware_and_bound_tables():
    table = lesson02.hardware_table(("h100-sxm", "a100-80gb"))
    assert table.loc["h100-sxm", "ridge_flop_per_byte"] == round(H100.ridge_point("bf16"), 1)
    bounds = lesson02.bound_table(phase="decode")
    assert bounds.loc["mlp.up_proj", "bottleneck"].startswith("bandwidth")


# NVIDIA Matrix Multiplication Background User's Guide (A100, 108 SMs, 256x128 tiles):
# M=2304, K=4096, N=1408..2048 -> 99..144 tiles, 0.917..1.333 waves.
@pytest.mark.parametrize(("n", "tiles"), [(1408, 99), (1536, 108), (2048, 144)])
def test_waves_match_nvidia_guide(n, tiles):
    right = tiles / 108
    _right_and_wrong(lesson03.check_waves, right, right + 0.5, m=2304, n=n, k=4096, tile=(256, 128))


def test_tile_quantization_example():
    # The guide's tile-quantization example: a 256x256 output in 128x128 tiles is 4 tiles,
    # 257x256 is 6.
    _right_and_wrong(lesson03.check_tiles, 4, 6, m=256, n=256, tile=(128, 128))
    _right_and_wrong(lesson03.check_tiles, 6, 4, m=257, n=256, tile=(128, 128))


def test_wave_table_reproduces_guide():
    table = lesson03.wave_table(m=2304, k=4096, ns=(1408, 1664))
    assert table.loc[1408, "waves"] == 0.917
    assert table.loc[1664, "full_waves"] == 2
    assert table.loc[1664, "last_wave_util"] == 0.083
    # one tile's worth more work costs a whole extra wave
    assert table.loc[1664, "time_us"] > 1.5 * table.loc[1408, "time_us"]


def test_tile_table_padding():
    table = lesson03.tile_table(((256, 256), (257, 256)))
    assert table.loc["256x256", "wasted"] == 0
    assert math.isclose(table.loc["257x256", "padded_flops"], 2 * 384 * 256 * 4096)


def test_score_matrix_bytes():
    right = 32 * 2048 * 2048 * 2  # heads x seq x seq x bf16
    _right_and_wrong(lesson04.check_score_matrix_bytes, right, right // 2)


def test_fusion_savings_flash_attention():
    table = lesson04.fusion_savings()
    right = int(table.loc["flash_attention", "bytes_saved"])
    assert right > 0
    _right_and_wrong(lesson04.check_fusion_savings, right, right * 2, rule="flash_attention")


def test_attention_traffic_grows_quadratically_unfused():
    table = lesson04.attention_traffic((1024, 2048))
    assert table.loc[2048, "ratio"] > table.loc[1024, "ratio"]


def test_int8_bytes():
    _right_and_wrong(
        lesson05.check_int8_bytes, 4096 * 4096, 2 * 4096 * 4096, in_features=4096, out_features=4096
    )


def test_layout_transforms():
    table = lesson05.layout_table()
    right = int(table.loc[("NHWC", False), "transforms"])
    assert right > table.loc[("NHWC", True), "transforms"]
    _right_and_wrong(lesson05.check_layout_transforms, right, right + 1)


def test_quality_table_orders_formats():
    table = lesson05.quality_table(m=8, n=64, k=256)
    assert table.loc["bf16", "snr_db"] > table.loc["int8 weight-only", "snr_db"]
    assert table.loc["int8 weight-only", "snr_db"] > table.loc["int4 weight-only", "snr_db"]


def test_format_table_weight_only_helps_decode():
    table = lesson05.format_table()
    assert table.loc["int4 weight-only", "offchip_gb"] < table.loc["bf16", "offchip_gb"]
    assert table.loc["bf16", "speedup"] == 1.0


def test_untouched_stub_does_not_reveal_the_answer():
    result = lesson01.check_linear_flops(
        None, tokens=2, in_features=3, out_features=4, strict=False
    )
    assert not result.passed
    assert "no answer yet" in repr(result)
    assert "24" not in repr(result)


def _fresh(name):
    from workbench.exercises import _check

    _check._ATTEMPTS.pop(name, None)


def test_wrong_answer_never_prints_the_expected_value_and_hints_are_graded():
    from workbench.exercises import reveal

    shape = {"tokens": 2048, "in_features": 4096, "out_features": 11008}
    expected = 2 * 2048 * 4096 * 11008
    _fresh("linear_flops")
    first = lesson01.check_linear_flops(expected // 2, strict=False, **shape)
    second = lesson01.check_linear_flops(expected // 2, strict=False, **shape)
    for r in (first, second):
        for shown in (str(expected), f"{expected:,}", f"{expected:.6g}"):
            assert shown not in repr(r)
    assert first.attempt == 1
    assert len(first.hints) == 1
    assert second.attempt == 2
    assert len(second.hints) == 2
    assert "too low, by a small whole factor" in second.hints[1]
    assert "2" not in second.hints[1].split(";")[0]  # the factor itself would give it away
    assert f"{expected:,}" in second.reveal()
    assert f"{expected:,}" in reveal("linear_flops")
    assert f"{expected:,}" in reveal()
    with pytest.raises(ExerciseError) as info:
        lesson01.check_linear_flops(1, strict=True, **shape)
    assert f"{expected:,}" not in str(info.value)


def test_text_answers_match_case_whitespace_and_declared_synonyms():
    from workbench.exercises import compare

    assert compare("d", "  Roll   BACK ", "roll back", strict=False)
    assert compare("d", "rollback", "roll back", synonyms={"roll back": ("rollback",)})
    assert not compare("d", "rollback", "roll back", strict=False)
    assert compare("m", ("Launch Sync Overhead", "x"), ("launch_sync_overhead", "X"))
    assert compare("n", "4096", 4096)


def test_lesson06_blank_tuple_stub_reveals_nothing():
    from workbench.exercises import lesson06

    r = lesson06.check_first_failing("long-seq-tile", None, None, strict=False)
    assert not r.passed
    assert "no answer yet" in repr(r)
    mech, owner = r.expected
    assert mech not in repr(r)
    assert owner not in repr(r)
    wrong = lesson06.check_first_failing("long-seq-tile", "compute", owner, strict=False)
    assert mech not in repr(wrong)
    assert "reveal()" in repr(wrong)


def test_gemm_shapes_of_a_block():
    t = lesson01.gemm_shapes_table("llama2-7b", phase="prefill", seq=2048)
    assert tuple(t.loc["mlp.up_proj", ["M", "K", "N"]]) == (2048, 4096, 11008)
    assert t.loc["mlp.up_proj", "flops"] == 2 * 2048 * 4096 * 11008
    d = lesson01.gemm_shapes_table("llama2-7b", phase="decode", seq=2048, batch=8)
    assert d.loc["attn.q_proj", "M"] == 8
    assert d.loc["attn.sdpa (Q K^T)", "M"] == 1
    assert d.loc["attn.sdpa (Q K^T)", "count"] == 8 * 32


def test_bottleneck_answers_accept_declared_synonyms():
    kw = {"kernel": "layers.0.mlp.up_proj", "phase": "decode"}
    for said in ("Memory-bound", "HBM bandwidth", "bandwidth:HBM", "  bandwidth "):
        assert lesson02.check_bottleneck(said, strict=True, **kw).passed, said
    assert not lesson02.check_bottleneck("L2 bandwidth", strict=False, **kw).passed
