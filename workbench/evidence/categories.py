"""Classify a measured GPU kernel from its name and launch shape, naming the rule that matched.

Rules are tried in order; the first match wins, and its name is recorded on the kernel so a reader
can see *why* a kernel was called a GEMM. Name rules come first (library and compiler naming:
cuBLAS/CUTLASS ``gemm``/``xmma``, cuDNN ``implicit_gemm``/``winograd``, FlashAttention ``flash``,
``fmha``, NCCL ``ncclKernel``, PyTorch ``elementwise_kernel``/``reduce_kernel``, Triton Inductor's
``triton_poi_``/``triton_red_``/``triton_per_``/``triton_tem_`` prefixes); the launch-shape rule
only applies when no name rule did. Order matters where names overlap: an ``implicit_gemm`` is a
convolution, and a CUTLASS FlashAttention kernel is attention, so conv and attention come before
gemm; cuDNN batch-norm kernels are norms, so norm comes before conv. Look-aheads keep ``normal``
(random init) out of norm and ``convert`` out of conv. ``fbgemm`` is a library name, not a GEMM:
FBGEMM-GPU's embedding (TBE ``split_embedding_*``) and permute kernels are embedding and layout;
``permute_pooled_embs`` is a permute, not a pooling reduction; ``CatArrayBatchedCopy``
(``torch.cat``) is a copy; cuDNN's ``nchwToNhwc``/``nhwcToNchw`` are layout transforms.

>>> classify("ampere_fp16_s16816gemm_fp16_128x128_ldg8_f2f_stages_32x5_nn")
('gemm', 'name~gemm')
>>> classify("void at::native::vectorized_elementwise_kernel<4, at::native::GeluCUDAKernelImpl>")
('elementwise', 'name~elementwise')
>>> classify("my_kernel", grid=(4096, 1, 1), block=(256, 1, 1), shared_memory_bytes=0)
('elementwise', 'shape:1-D grid of 1-D blocks, no shared memory')
"""

from __future__ import annotations

import functools
import re

__all__ = ["RULES", "classify"]

#: (category, rule name, pattern) in the order they are tried. Patterns are case-insensitive and
#: lower case. Every alternative starts with a literal (``gemm(?<!fbgemm)``, not
#: ``(?<!fb)gemm``; ``scudnn|hcudnn``, not ``[sh]cudnn``): the regex engine then skips to the
#: positions where one of those first letters occurs instead of trying every position, about 5x
#: faster on a long name that matches nothing.
RULES: tuple[tuple[str, str, str], ...] = (
    ("collective", "name~nccl", r"nccl|all_?reduce|all_?gather|reduce_?scatter|all_?to_?all"),
    ("copy", "name~memcpy", r"memcpy|memset"),
    ("attention", "name~attention", r"flash|fmha|sdpa|attention|attn|xformers|mha(?<!\wmha)"),
    ("norm", "name~norm", r"norm(?!al)|bn_fw|bn_bw|gammabetabackward"),
    ("conv", "name~conv", r"conv(?!ert)|implicit_gemm|winograd|dgrad|wgrad|fprop|scudnn|hcudnn"),
    (
        "gemm",
        "name~gemm",
        r"gemm(?<!fbgemm)|gemv|cutlass|xmma|cublas|nvjet|wgmma|hmma|matmul|triton_tem_"
        r"|h\d{3,5}(?:gemm|_)|s\d{3,5}(?:gemm|_)",
    ),
    (
        "layout",
        "name~layout",
        r"nchw_?to_?nhwc|nhwc_?to_?nchw|permute|transpose|channels_?last",
    ),
    (
        "embedding",
        "name~embedding",
        r"split_embedding|embedding|index_?select|bounds_check_indices|lxu_cache",
    ),
    ("copy", "name~copy", r"catarraybatchedcopy|concat|recat_copy"),
    (
        "reduction",
        "name~reduction",
        r"reduce|reduction|softmax|pool|triton_red_|triton_per_|argmax|topk",
    ),
    (
        "elementwise",
        "name~elementwise",
        r"elementwise|pointwise|triton_poi_|vectorized|unrolled|fill|copy_kernel|gelu|silu|relu"
        r"|dropout|cast|convert|add_kernel|mul_kernel|activation",
    ),
)
_COMPILED = tuple((cat, rule, re.compile(pat, re.IGNORECASE)) for cat, rule, pat in RULES)
# NOTE: an ASCII name lower-cased once and searched case-sensitively matches exactly as the
# case-insensitive pattern would (every pattern is lower case), about 4x faster per name than
# ``re.IGNORECASE``; a non-ASCII name (Unicode case folding differs) takes the original patterns.
_COMPILED_LOWER = tuple((cat, rule, re.compile(pat)) for cat, rule, pat in RULES)
#: Distinct names whose name-rule verdict is remembered across calls (bounded: a trace of 10**6
#: distinct names cycles through it instead of growing it).
_CACHE_NAMES = 1 << 16
#: Longest name cached, characters (so the cache holds at most ~64 MiB of names).
_CACHE_MAX_CHARS = 1024


def classify(
    name: str,
    *,
    grid: tuple[int, int, int] | None = None,
    block: tuple[int, int, int] | None = None,
    shared_memory_bytes: int | None = None,
) -> tuple[str, str]:
    """Category and matching rule of a kernel.

    Args:
        name: The kernel's name (demangled or short).
        grid: Launch grid in blocks, if known.
        block: Block shape in threads, if known.
        shared_memory_bytes: Shared memory per block, bytes, if known.

    Returns:
        ``(category, rule)``; ``("other", "no rule matched")`` when nothing applies.
    """
    hit = _cached(name) if len(name) <= _CACHE_MAX_CHARS else _by_name(name)
    if hit is not None:
        return hit
    if (
        grid is not None
        and block is not None
        and grid[1] == grid[2] == 1
        and block[1] == block[2] == 1
        and shared_memory_bytes == 0
    ):
        # NOTE: a 1-D launch with no shared memory is the shape of a grid-stride elementwise loop;
        # tiled GEMM/conv/attention kernels stage operands in shared memory.
        return "elementwise", "shape:1-D grid of 1-D blocks, no shared memory"
    return "other", "no rule matched"


def _by_name(name: str) -> tuple[str, str] | None:
    """The first name rule matching ``name``, or None (the launch-shape rule is not tried here)."""
    if name.isascii():
        low = name.lower()
        for category, rule, pattern in _COMPILED_LOWER:
            if pattern.search(low):
                return category, rule
        return None
    for category, rule, pattern in _COMPILED:
        if pattern.search(name):
            return category, rule
    return None


_cached = functools.lru_cache(maxsize=_CACHE_NAMES)(_by_name)
