"""Measured kernels matched to mapping-sheet rows: order, kinds, confidence, nothing dropped."""

from __future__ import annotations

import pytest

import workbench as wb
from workbench.evidence import MeasuredKernel, read_trace, write_kineto_trace
from workbench.review.join.matching import match_kernels

#: A plausible library kernel name per sheet kind (what a CUDA trace would show).
NAMES = {
    "gemm": "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64",
    "attention": "void flash_fwd_kernel<Flash_fwd_kernel_traits<64, 128, 64, 4>>",
    "row": "void at::native::vectorized_layer_norm_kernel<c10::BFloat16>",
    "elementwise": "void at::native::vectorized_elementwise_kernel<4, AddFunctor>",
    "gather": "void at::native::indexSelectLargeIndex<c10::BFloat16, long>",
    "conv": "sm80_xmma_fprop_implicit_gemm_bf16bf16_bf16f32_f32_nhwckrsc_nhwc",
    "layout": "void at::native::elementwise_kernel<128, 4, nchwToNhwcKernel>",
    "collective": "ncclDevKernel_AllReduce_Sum_bf16_RING_LL",
}
GELU = "void at::native::vectorized_elementwise_kernel<4, GeluCUDAKernelImpl>"


@pytest.fixture(scope="module")
def gpt2():
    return wb.map_model(wb.build_graph("gpt2", batch=1, seq=128), wb.load_hardware("h100-sxm"))


def trace_of(mapping, tmp_path, *, scale=(1.2, 1.3, 1.4), drop=(), extra_after=(), names=NAMES):
    """A Kineto trace of len(scale) iterations replaying the sheet at ``scale`` x its times."""
    kernels, t = [], 1.0
    for it, factor in enumerate(scale):
        for i, km in enumerate(mapping.kernels):
            if i in drop:
                continue
            d = km.cost.total_s * factor
            kernels.append(MeasuredKernel(name=names[km.kernel.kind], category="other", rule="",
                                          start_s=t, duration_s=d, device=0, stream=7,
                                          iteration=it))  # fmt: skip
            t += d + 4e-6
            if i in extra_after:
                kernels.append(MeasuredKernel(name=GELU, category="other", rule="", start_s=t,
                                              duration_s=2e-6, device=0, iteration=it))  # fmt: skip
                t += 6e-6
        kernels.append(MeasuredKernel(name="Memcpy DtoH", category="copy", rule="", start_s=t,
                                      duration_s=1e-6, device=0, stream=8, iteration=it,
                                      kind="memcpy"))  # fmt: skip
        t += 1e-5
    return read_trace(write_kineto_trace(tmp_path / "t.json", kernels))


def test_a_faithful_trace_matches_every_row_with_full_confidence(gpt2, tmp_path):
    run = trace_of(gpt2, tmp_path)
    result = match_kernels(run, gpt2)
    assert len(result.matches) == len(gpt2.kernels)
    assert result.unmatched_sheet == ()
    assert result.matched_fraction == 1.0
    assert all(m.confidence == 1.0 for m in result.matches)
    # The median of 1.2x, 1.3x and 1.4x over the three repeats (Kineto stores whole ns).
    for row in result.sheet_rows:
        assert row.measured_s == pytest.approx(1.3 * row.expected_s, abs=1e-9)
    assert all(m.repeats == 3 for m in result.matches)
    # The memcpy is listed, not dropped, and says why.
    assert [u.category for u in result.unmatched_measured] == ["copy"]
    assert "transfers" in result.unmatched_measured[0].reason


def test_extra_and_missing_kernels_stay_in_place_and_are_listed(gpt2, tmp_path):
    gemms = [i for i, k in enumerate(gpt2.kernels) if k.kernel.kind == "gemm"]
    rows = [i for i, k in enumerate(gpt2.kernels) if k.kernel.kind == "row"]
    run = trace_of(gpt2, tmp_path, drop={rows[3]}, extra_after={gemms[5]})
    result = match_kernels(run, gpt2)
    assert result.unmatched_sheet == (rows[3],)
    assert len(result.matches) == len(gpt2.kernels) - 1
    extra = [u for u in result.unmatched_measured if u.name == GELU]
    assert len(extra) == 1
    assert "no sheet row" in extra[0].reason
    # Every other row still pairs with the kernel of its own kind, in order.
    for m in result.matches:
        assert run.kernels[m.measured_index].name == NAMES[gpt2.kernels[m.sheet_index].kernel.kind]
    by_sheet = {m.sheet_index: m for m in result.matches}
    assert by_sheet[gemms[5]].confidence == pytest.approx(0.8)  # its next neighbour is the extra
    assert "neighbours" not in by_sheet[gemms[5]].reason
    # Side by side: the dropped row has an expected time and no measured one.
    row = result.sheet_rows[rows[3]]
    assert row.measured_s is None
    assert row.expected_s > 0
    assert row.confidence is None
    # Counting: every measured kernel of the iteration is either matched or listed.
    n_iter = sum(1 for k in run.kernels if k.iteration == result.iteration)
    assert len(result.matches) + len(result.unmatched_measured) == n_iter


def test_stand_in_categories_match_with_lower_confidence_and_say_so(gpt2, tmp_path):
    names = {**NAMES, "attention": NAMES["gemm"]}  # unfused attention run as a GEMM kernel
    result = match_kernels(trace_of(gpt2, tmp_path, names=names), gpt2)
    attn = [m for m in result.matches if gpt2.kernels[m.sheet_index].kernel.kind == "attention"]
    assert attn
    assert all(m.confidence == pytest.approx(0.7) for m in attn)
    assert all("stand-in" in m.reason for m in attn)


def test_times_far_from_expected_lower_the_confidence(gpt2, tmp_path):
    result = match_kernels(trace_of(gpt2, tmp_path, scale=(10.0, 10.0)), gpt2)
    assert all(m.confidence == pytest.approx(0.8) for m in result.matches)
    assert "10x expected" in result.matches[0].reason


def test_chosen_iteration_and_errors(gpt2, tmp_path):
    run = trace_of(gpt2, tmp_path, scale=(1.0, 3.0, 2.0))
    assert match_kernels(run, gpt2).iteration == 2  # the median wall time
    assert match_kernels(run, gpt2, iteration=0).iteration == 0
    with pytest.raises(wb.WorkbenchError, match="iteration 9"):
        match_kernels(run, gpt2, iteration=9)
    with pytest.raises(wb.WorkbenchError, match="device 4"):
        match_kernels(run, gpt2, device=4)


def test_a_convolutional_net_matches_convs_pools_and_layout(tmp_path):
    resnet = wb.map_model(
        wb.build_graph("resnet50", phase="inference", batch=8), wb.load_hardware("a100-80gb")
    )
    names = {
        **NAMES,
        "row": "void at::native::(anonymous namespace)::max_pool_forward_nhwc<float, float>",
        "layout": "void cudnn::ops::nchwToNhwcKernel<float, float, float, false, true>",
    }
    result = match_kernels(trace_of(resnet, tmp_path, names=names), resnet)
    assert result.matched_fraction == 1.0
    by_kind = {}
    for m in result.matches:
        by_kind.setdefault(resnet.kernels[m.sheet_index].kernel.kind, set()).add(m.confidence)
    assert by_kind["conv"] == {1.0}
    assert by_kind["row"] == {1.0}  # pooling is a reduction, a row kernel's own category
    assert by_kind["layout"] == {1.0}  # cuDNN's nchwToNhwc is a layout transform (issue 17)


def test_layer_type_totals_add_up_on_both_sides(gpt2, tmp_path):
    gemms = [i for i, k in enumerate(gpt2.kernels) if k.kernel.kind == "gemm"]
    run = trace_of(gpt2, tmp_path, drop={gemms[2]}, extra_after={gemms[5]})
    result = match_kernels(run, gpt2)
    totals = result.layer_type_totals()
    assert totals[-1][0] == "unmatched measured"
    assert sum(e for _, e, _ in totals) == pytest.approx(sum(k.cost.total_s for k in gpt2.kernels))
    ran = [k for k in run.kernels if k.iteration == result.iteration]
    # Matched medians equal this iteration's times here only up to the 1.2/1.3/1.4 spread, so
    # compare the unmatched part exactly and the whole within that spread.
    assert totals[-1][2] == pytest.approx(2e-6 + 1e-6)
    assert sum(m for _, _, m in totals) == pytest.approx(sum(k.duration_s for k in ran), rel=0.1)


def test_time_shape_decides_which_same_kind_row_a_kernel_belongs_to(tmp_path):
    # Llama 3's grouped-query attention: k_proj and v_proj are 4x smaller GEMMs than q_proj.
    llama = wb.map_model(
        wb.build_graph("llama3-8b", batch=1, seq=512), wb.load_hardware("h100-sxm")
    )
    names = [k.kernel.name for k in llama.kernels]
    q, k = names.index("layers.0.attn.q_proj"), names.index("layers.0.attn.k_proj")
    assert llama.kernels[q].cost.total_s > 2 * llama.kernels[k].cost.total_s
    result = match_kernels(trace_of(llama, tmp_path, drop={k}), llama)
    # The measured q_proj (large) pairs with the q_proj row, not with the k_proj row just after.
    assert result.unmatched_sheet == (k,)
    by_sheet = {m.sheet_index: m for m in result.matches}
    assert by_sheet[q].measured_s == pytest.approx(1.3 * llama.kernels[q].cost.total_s, abs=1e-9)
