"""Kernel classification on real library and compiler kernel names."""
# ruff: noqa: E501  (real kernel names are long; they are data)

from __future__ import annotations

import pytest

from workbench.evidence import CATEGORIES, classify

NAMES = [
    ("ampere_bf16_s16816gemm_bf16_128x128_ldg8_f2f_stages_64x3_tn", "gemm"),
    ("sm80_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x32_stage4_warpsize2x2x1", "gemm"),
    ("void cutlass::Kernel<cutlass_80_tensorop_bf16_s16816gemm_relu_bf16_128x128_32x4_tn>", "gemm"),
    ("nvjet_tst_128x256_64x4_1x2_h_bz_coopA_NTT", "gemm"),
    ("void gemv2T_kernel_val<int, int, float, float, float, 128, 16, 4, 4, false>", "gemm"),
    ("triton_tem_fused_mm_0", "gemm"),
    ("sm90_xmma_fprop_implicit_gemm_indexed_f16f16_f16f32_f32_nhwckrsc_nhwc_tilesize128x128", "conv"),
    ("void implicit_convolve_sgemm<float, float, 1024, 5, 5, 3, 3, 3, 1, false, false, true>", "conv"),
    ("void cudnn::winograd_nonfused::winogradForwardData4x4<float, float>", "conv"),
    ("cudnn_infer_ampere_scudnn_128x64_relu_interior_nn_v1", "conv"),
    ("sm80_xmma_dgrad_implicit_gemm_f16f16_f16f32_f32_nhwckrsc_nhwc", "conv"),
    ("void flash_fwd_kernel<Flash_fwd_kernel_traits<128, 128, 64, 4, false, false, cutlass::half_t>>", "attention"),
    ("fmha_cutlassF_f16_aligned_64x64_rf_sm80(PyTorchMemEffAttention::AttentionKernel)", "attention"),
    ("void pytorch_flash::flash_bwd_dq_dk_dv_loop_seqk_parallel_kernel<Flash_bwd_kernel_traits>", "attention"),
    ("cudnn::bn_fw_tr_1C11_kernel_NCHW<float, float, int, 512, true, 1>", "norm"),
    ("void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<c10::BFloat16, float>", "norm"),
    ("triton_per_fused_native_layer_norm_0", "norm"),
    ("void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, at::native::MeanOps>>", "reduction"),
    ("void at::native::(anonymous namespace)::cunn_SoftMaxForward<4, float, float, float>", "reduction"),
    ("triton_red_fused__to_copy_add_mean_mul_pow_rsqrt_1", "reduction"),
    ("void at::native::(anonymous namespace)::max_pool_forward_nhwc<float, float>", "reduction"),
    ("void cudnn::pooling_fw_4d_kernel<float, float, cudnn::maxpooling_func<float>>", "reduction"),
    ("void at::native::vectorized_elementwise_kernel<4, at::native::GeluCUDAKernelImpl>", "elementwise"),
    ("void at::native::elementwise_kernel<128, 2, direct_copy_kernel_cuda>", "elementwise"),
    ("triton_poi_fused_add_mul_0", "elementwise"),
    ("void at::native::distribution_elementwise_grid_stride_kernel<float, 4, normal_kernel>", "elementwise"),
    ("void convert_fp32_to_fp16_kernel(float const*, __half*, long)", "elementwise"),
    ("ncclDevKernel_AllGather_RING_LL(ncclDevComm*, unsigned long, ncclWork*)", "collective"),
    ("ncclKernel_AllReduce_RING_LL_Sum_float(ncclWorkElem)", "collective"),
    ("void at_cuda_detail::cub::DeviceRadixSortOnesweepKernel<Policy, false>", "other"),
    # DLRM on V100/A100 (HTA's test traces): FBGEMM-GPU is a library, not a GEMM (issue 17).
    ("void split_embedding_backward_codegen_rowwise_adagrad_unweighted_kernel_cta_per_row_1<float, float, float, 5ul, 32ul>(at::GenericPackedTensorAccessor<float, 1ul, at::RestrictPtrTraits, long>)", "embedding"),
    ("void split_embedding_codegen_forward_unweighted_kernel<float, float, float, long, 5ul>(at::GenericPackedTensorAccessor<float, 1ul, at::RestrictPtrTraits, long>)", "embedding"),
    ("void fbgemm_gpu::split_embedding_codegen_forward_unweighted_small_kernel<float, float, long>", "embedding"),
    ("void bounds_check_indices_kernel<long>(at::GenericPackedTensorAccessor<long, 1ul, at::RestrictPtrTraits, int>)", "embedding"),
    ("void at::native::(anonymous namespace)::indexSelectLargeIndex<float, long, unsigned int, 2, 2, -2, true>", "embedding"),
    ("void at::native::(anonymous namespace)::embedding_backward_feature_kernel<float, float, long>", "embedding"),
    ("void fbgemm_gpu::permute_indices_weights_kernel<false, int, decltype(nullptr)>(int, int, int, int const*)", "layout"),
    ("void permute_pooled_embs_kernel<float>(float const*, long const*, long const*, long const*, float*, long, long)", "layout"),
    ("void cudnn::ops::nchwToNhwcKernel<float, float, float, true, false, (cudnnKernelDataType_t)2>(cudnn::ops::nchw2nhwc_params_t<float>)", "layout"),
    ("void cudnn::ops::nhwcToNchwKernel<float, float, float, true, false, (cudnnKernelDataType_t)0>(cudnn::ops::nhwc2nchw_params_t<float>)", "layout"),
    ("void at::native::(anonymous namespace)::CatArrayBatchedCopy<float, unsigned int, 2, 128, 1>(float*, at::native::(anonymous namespace)::CatArrInputTensorMetadata<float, unsigned int, 128, 1>)", "copy"),
    ("void recat_copy_async_kernel<float>(long const*, long const*, float const*, float*, long, long, long)", "copy"),
    ("void at::native::(anonymous namespace)::GammaBetaBackwardCUDAKernel<float, float>(long, long, float const*)", "norm"),
    # A real GEMM from FBGEMM-GPU is still a GEMM.
    ("void fbgemm_gpu::f8f8bf16_rowwise_gemm_kernel<cutlass::gemm::GemmShape<128, 128, 64>>", "gemm"),
]  # fmt: skip


@pytest.mark.parametrize(("name", "category"), NAMES, ids=[n[:40] for n, _ in NAMES])
def test_real_kernel_names(name, category):
    got, rule = classify(name)
    assert got == category
    assert got in CATEGORIES
    assert rule == (
        "no rule matched"
        if category == "other"
        else f"name~{category}".replace("name~collective", "name~nccl")
    )


def test_launch_shape_rule_only_when_no_name_rule_matched():
    shape = {"grid": (4096, 1, 1), "block": (256, 1, 1), "shared_memory_bytes": 0}
    assert classify("kernel_1234", **shape)[0] == "elementwise"
    assert classify("kernel_1234", **shape)[1].startswith("shape:")
    assert classify("kernel_1234", **{**shape, "shared_memory_bytes": 49152})[0] == "other"
    assert classify("kernel_1234", **{**shape, "grid": (64, 8, 1)})[0] == "other"
    assert classify("sm90_xmma_gemm_f16", **shape) == ("gemm", "name~gemm")


def _reference(name):
    """First rule whose pattern matches ``name`` case-insensitively (the rule table's meaning)."""
    import re

    from workbench.evidence.categories import RULES

    for category, rule, pattern in RULES:
        if re.search(pattern, name, re.IGNORECASE):
            return category, rule
    return "other", "no rule matched"


EDGES = [
    "fbgemm_gpu::foo", "FBGEMM_x_gemm", "flash_MHA_fwd", "x mha_fwd", "_mha_fwd", "kmha",
    "hcudnn_128x64", "SCUDNN_winograd", "h1688gemm_x", "s16816_relu", "h12gemm", "s123456gemm",
    "GammaBetaBackward", "NORMAL_kernel", "convert_Kernel", "Kelvin_\u212a_gemm", "\u0130ndex_select",
    "stra\u00dfe_norm", "x" * 2000 + "gemm", "y" * 2000,
]  # fmt: skip


@pytest.mark.parametrize("name", [n for n, _ in NAMES] + EDGES)
def test_fast_path_matches_the_case_insensitive_rules(name):
    # The ASCII fast path (lower-cased, case-sensitive search, cached) must agree with the rule
    # table read case-insensitively, in any letter case, and for non-ASCII names.
    for variant in (name, name.upper(), name.swapcase()):
        assert classify(variant) == _reference(variant)
        assert classify(variant) == _reference(variant)  # second call: from the cache


def test_rewritten_patterns_keep_their_meaning():
    assert classify("void fbgemm_gpu::f8f8bf16_rowwise_gemm_kernel")[0] == "gemm"
    assert classify("fbgemm_only_kernel")[0] == "other"
    assert classify("run mha forward")[0] == "attention"
    assert classify("kmha_forward")[0] == "other"
    assert classify("hcudnn_128x64_relu")[0] == "conv"
    assert classify("h1688_kernel")[0] == "gemm"
    assert classify("h12_kernel")[0] == "other"
