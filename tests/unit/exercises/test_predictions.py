"""Prediction exercises: the answer is the direction the library computes (issue 20)."""

from __future__ import annotations

import pytest

from workbench.exercises import lesson04, lesson05
from workbench.exercises._check import direction
from workbench.exercises._shared import mapping
from workbench.options import MapOptions


def test_direction_words():
    assert direction(1.0, 0.9) == "faster"
    assert direction(1.0, 1.1) == "slower"
    assert direction(1.0, 1.004) == "same"
    assert direction(0.0, 1.0) == "same"


@pytest.mark.parametrize("rule", ["flash_attention", "gemm_epilogue", "layout_fold"])
def test_fusion_prediction_follows_the_mapper(rule):
    on = mapping("llama2-7b", "h100-sxm", phase="decode", seq=2048)
    off = mapping(
        "llama2-7b", "h100-sxm", phase="decode", seq=2048,
        options=MapOptions(disabled_fusion=(rule,)),
    )  # fmt: skip
    want = direction(on.time_s, off.time_s)
    assert lesson04.check_fusion_effect(want, rule=rule, strict=False)
    wrong = "faster" if want != "faster" else "slower"
    assert not lesson04.check_fusion_effect(wrong, rule=rule, strict=False)


@pytest.mark.parametrize("phase", ["prefill", "decode"])
def test_format_prediction_follows_the_mapper(phase):
    base = mapping("llama2-7b", "h100-sxm", phase=phase, seq=2048)
    quant = mapping(
        "llama2-7b", "h100-sxm", phase=phase, seq=2048, options=MapOptions(weight_dtype="int8")
    )
    want = direction(base.time_s, quant.time_s)
    assert lesson05.check_format_effect(want, weight_dtype="int8", phase=phase, strict=False)
    assert lesson05.check_format_effect("quicker" if want == "faster" else want,
                                        weight_dtype="int8", phase=phase, strict=False)  # fmt: skip
