"""A trace is matched to a sheet only when it runs that model (issue 17: AlexNet vs Llama-2-7B)."""

from __future__ import annotations

import pytest

import workbench as wb
from workbench.cli import main
from workbench.evidence import MeasuredKernel, read_trace, write_kineto_trace
from workbench.review.join._match_score import MIN_MATCH_SCORE, MatchRefused, match_score
from workbench.review.join.from_trace import record_from_trace
from workbench.review.join.matching import match_kernels

#: An AlexNet step on an A100 as cuDNN and cuBLAS run it (names as in real traces), us.
ALEXNET = (
    ("void cudnn::ops::nchwToNhwcKernel<float, float, float, false, true>", 40),
    ("sm80_xmma_fprop_implicit_gemm_tf32f32_tf32f32_f32_nhwckrsc_nhwc_tilesize128x128x16", 900),
    ("void at::native::vectorized_elementwise_kernel<4, at::native::ReluFunctor>", 60),
    ("void at::native::max_pool_forward_nchw<float, float>", 80),
    ("sm80_xmma_fprop_implicit_gemm_tf32f32_tf32f32_f32_nhwckrsc_nhwc_tilesize128x64x16", 1100),
    ("void at::native::vectorized_elementwise_kernel<4, at::native::ReluFunctor>", 40),
    ("void at::native::max_pool_forward_nchw<float, float>", 50),
    ("sm80_xmma_fprop_implicit_gemm_tf32f32_tf32f32_f32_nhwckrsc_nhwc_tilesize64x64x16", 700),
    ("void at::native::vectorized_elementwise_kernel<4, at::native::ReluFunctor>", 20),
    ("sm80_xmma_fprop_implicit_gemm_tf32f32_tf32f32_f32_nhwckrsc_nhwc_tilesize64x64x16", 650),
    ("void at::native::vectorized_elementwise_kernel<4, at::native::ReluFunctor>", 20),
    ("sm80_xmma_fprop_implicit_gemm_tf32f32_tf32f32_f32_nhwckrsc_nhwc_tilesize64x64x16", 600),
    ("void at::native::max_pool_forward_nchw<float, float>", 30),
    ("void at::native::adaptive_avg_pool2d_kernel<float>", 15),
    ("ampere_sgemm_128x64_tn", 300),
    ("void at::native::vectorized_elementwise_kernel<4, at::native::ReluFunctor>", 5),
    ("ampere_sgemm_128x64_tn", 140),
    ("void at::native::vectorized_elementwise_kernel<4, at::native::ReluFunctor>", 5),
    ("ampere_sgemm_64x32_sliced1x4_tn", 40),
    ("void at::native::softmax_warp_forward<float, float, float, 10, false>", 6),
)
#: A plausible library kernel name per sheet kind (a transformer's own trace).
NAMES = {
    "gemm": "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64",
    "attention": "void flash_fwd_kernel<Flash_fwd_kernel_traits<128, 128, 64, 4>>",
    "row": "void at::native::vectorized_layer_norm_kernel<c10::BFloat16>",
    "elementwise": "void at::native::vectorized_elementwise_kernel<4, SiluFunctor>",
    "gather": "void at::native::indexSelectLargeIndex<c10::BFloat16, long>",
    "layout": "void at::native::elementwise_kernel<128, 4, copy_kernel>",
    "collective": "ncclDevKernel_AllReduce_Sum_bf16_RING_LL",
}
EXTRA = "void at::native::vectorized_elementwise_kernel<4, MulFunctor>"


@pytest.fixture(scope="module")
def llama():
    graph = wb.build_graph("llama2-7b", batch=1, seq=128)
    return wb.map_model(graph, wb.load_hardware("h100-sxm"))


def _write(tmp_path, steps):
    kernels, t = [], 1.0
    for it, step in enumerate(steps):
        for name, dur_s in step:
            kernels.append(
                MeasuredKernel(name=name, category="other", rule="", start_s=t,
                               duration_s=dur_s, device=0, stream=7, iteration=it)
            )  # fmt: skip
            t += dur_s + 3e-6
        t += 2e-5
    return write_kineto_trace(tmp_path / "t.json", kernels)


def alexnet_trace(tmp_path, repeats=3):
    return _write(tmp_path, [[(n, us * 1e-6) for n, us in ALEXNET]] * repeats)


def transformer_trace(tmp_path, mapping, repeats=3):
    """The sheet run eagerly: every kernel 1.3-1.6x its expected time, an unfused residual add
    after every norm (the sheet fuses it), and no gather (the embedding ran before the window)."""
    steps = []
    for it in range(repeats):
        step = []
        for i, km in enumerate(mapping.kernels):
            if km.kernel.kind == "gather":
                continue
            step.append((NAMES[km.kernel.kind], km.cost.total_s * (1.3 + 0.1 * ((i + it) % 4))))
            if km.kernel.kind == "row":
                step.append((EXTRA, km.cost.total_s * 1.5))
        steps.append(step)
    return _write(tmp_path, steps)


def test_a_conv_net_trace_is_refused_against_llama(llama, tmp_path):
    run = read_trace(alexnet_trace(tmp_path))
    result = match_kernels(run, llama)
    assert result.matches  # the alignment alone still pairs GEMM-like kernels ...
    assert result.score is not None
    assert result.score.score < MIN_MATCH_SCORE  # ... the score says it is not this model
    with pytest.raises(MatchRefused, match=r"llama2-7b: match score 0\.\d\d < 0\.50") as info:
        record_from_trace(run, llama)
    assert "conv" in str(info.value)
    assert "\n" not in str(info.value)


def test_a_transformer_trace_is_accepted_with_a_high_score(llama, tmp_path):
    run = read_trace(transformer_trace(tmp_path, llama))
    result = match_kernels(run, llama)
    assert result.score is not None
    assert 0.8 < result.score.score < 1.0  # the unfused adds are measured time no row claims
    assert result.score.matched_share < 1.0
    record = record_from_trace(run, llama)
    assert sum(1 for k in record.kernels if k.measured_s) > 0.9 * len(llama.kernels)


def test_the_cli_refuses_in_one_line_and_writes_nothing(tmp_path, capsys):
    trace = alexnet_trace(tmp_path)
    out = tmp_path / "run.json"
    argv = ["run", "--from-trace", str(trace), "--model", "llama2-7b", "--seq", "128"]
    assert main([*argv, "--record", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1
    assert "does not look like a run of llama2-7b: match score" in err[0]
    assert not out.exists()


def test_score_parts_follow_the_definition():
    # Own-kind matches count fully, stand-ins half; profiles overlap by min share per family.
    same = match_score(["gemm", "row"], [3.0, 1.0], ["gemm", "norm"], [6.0, 2.0],
                       [(0, 0, True), (1, 1, True)])  # fmt: skip
    assert (same.matched_share, same.profile_similarity, same.score) == (1.0, 1.0, 1.0)
    half = match_score(["gemm"], [1.0], ["conv"], [1.0], [(0, 0, False)])
    assert half.matched_share == 0.5
    assert half.profile_similarity == 0.0
    assert "conv 100%" in half.reason()
    assert "gemm 100%" in half.reason()
    none = match_score(["gemm"], [1.0], ["gemm", "elementwise"], [1.0, 3.0], [])
    assert none.matched_share == 0.0
    assert none.profile_similarity == pytest.approx(0.25)
