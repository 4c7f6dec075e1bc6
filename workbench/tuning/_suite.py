"""The validation suite: small graphs whose kernels are predicted and measured on this host."""

from __future__ import annotations

from collections.abc import Callable

from workbench.ir import ops as O
from workbench.ir.graph import Graph
from workbench.models.vector import elementwise_chain, row_op
from workbench.options import MapOptions

__all__ = ["SUITE", "SuiteCase", "suite"]

SuiteCase = tuple[str, Callable[[], Graph], MapOptions]
_F = "fp32"
_FP32 = MapOptions(dtype=_F)
_UNFUSED = MapOptions(dtype=_F, disabled_fusion=("flash_attention",))


def _g(*ops: O.Op) -> Graph:
    return Graph(name=ops[0].name, ops=ops)


def _linear(m: int, k: int, n: int, *, bias: bool = False, act: str = "") -> Callable[[], Graph]:
    def build() -> Graph:
        ops: list[O.Op] = [
            O.Linear(
                name="fc",
                inputs=("x",),
                tokens=(m,),
                in_features=k,
                out_features=n,
                bias=bias,
                dtype=_F,
            )
        ]
        if act:
            ops.append(O.Elementwise(name="act", inputs=("fc",), op=act, shape=(m, n), dtype=_F))
        return _g(*ops)

    return build


def _bmm(b: int, m: int, k: int, n: int) -> Callable[[], Graph]:
    return lambda: _g(O.MatMul(name="bmm", inputs=("a", "w"), batch=b, m=m, n=n, k=k, dtype=_F))


def _conv(c: int, hw: int, k: int, r: int, stride: int = 1, groups: int = 1, layout: str = "NHWC"):
    def build() -> Graph:
        return _g(
            O.Conv2d(
                name="conv",
                inputs=("img",),
                batch=1,
                in_channels=c,
                height=hw,
                width=hw,
                out_channels=k,
                kernel_h=r,
                kernel_w=r,
                stride=stride,
                padding=r // 2,
                groups=groups,
                dtype=_F,
                layout=layout,
            )
        )

    return build


def _attn(h: int, kvh: int, lq: int, lk: int, d: int, causal: bool = True):
    return lambda: _g(
        O.Attention(
            name="attn",
            inputs=("q", "k", "v"),
            batch=1,
            heads=h,
            kv_heads=kvh,
            q_len=lq,
            kv_len=lk,
            head_dim=d,
            causal=causal,
            dtype=_F,
        )
    )


def _row(kind: str, rows: int, cols: int) -> Callable[[], Graph]:
    return lambda: _g(row_op(kind, rows, cols, _F))


def _chain(rows: int, cols: int, kinds: tuple[str, ...]) -> Callable[[], Graph]:
    return lambda: _g(*elementwise_chain(rows, cols, kinds, _F))


# NOTE: sized so every kernel takes >= 1 ms on a 2-core x86 host with one BLAS thread (about
# 1-5 ms each): a millisecond is long against timer resolution and call jitter, and short
# against a scheduler time slice, so min-of-N finds undisturbed samples on a loaded machine.
SUITE: tuple[SuiteCase, ...] = (
    ("gemm 512^3", _linear(512, 512, 512), _FP32),
    ("gemm 768x768x256", _linear(768, 256, 768), _FP32),
    ("gemm 384x640x384 bias+gelu", _linear(384, 384, 640, bias=True, act="gelu"), _FP32),
    ("gemm 256x1024x512 relu", _linear(256, 512, 1024, act="relu"), _FP32),
    ("gemm skinny m=1 k=4096 n=4096", _linear(1, 4096, 4096), _FP32),
    ("gemm skinny m=8 k=4096 n=2048", _linear(8, 4096, 2048), _FP32),
    ("gemm skinny m=32 k=2048 n=2048", _linear(32, 2048, 2048), _FP32),
    ("gemm ragged 500x475x530", _linear(500, 530, 475), _FP32),
    ("gemm ragged 1025x513x257", _linear(1025, 257, 513), _FP32),
    ("gemm ragged 97x999x777", _linear(97, 777, 999), _FP32),
    ("gemm tall 16384x64x128", _linear(16384, 128, 64), _FP32),
    ("gemm wide 64x16384x128", _linear(64, 128, 16384), _FP32),
    ("bmm 64x128x128x128", _bmm(64, 128, 128, 128), _FP32),
    ("bmm 32x256x64x256", _bmm(32, 256, 256, 64), _FP32),
    ("conv 3x3 c64 k64 56x56", _conv(64, 56, 64, 3), _FP32),
    ("conv 1x1 c256 k256 40x40", _conv(256, 40, 256, 1), _FP32),
    ("conv 3x3/2 c64 k128 64x64", _conv(64, 64, 128, 3, stride=2), _FP32),
    ("conv depthwise 3x3 c128 64x64", _conv(128, 64, 128, 3, groups=128), _FP32),
    # NOTE: NCHW inputs of 2.4-2.7 M elements (about 10 MiB): past L2, within a 32 MiB L3.
    ("conv 1x1 NCHW c64 k16 192x192", _conv(64, 192, 16, 1, layout="NCHW"), _FP32),
    ("conv 1x1 NCHW c96 k16 160x160", _conv(96, 160, 16, 1, layout="NCHW"), _FP32),
    ("conv 3x3 NCHW c128 k8 144x144", _conv(128, 144, 8, 3, layout="NCHW"), _FP32),
    ("attention fused 8h 512 d64", _attn(8, 8, 512, 512, 64), _FP32),
    ("attention fused gqa 16h/4 256 d64", _attn(16, 4, 256, 256, 64), _FP32),
    ("attention fused decode 8h 1x8192", _attn(8, 8, 1, 8192, 64, causal=False), _FP32),
    ("attention unfused 8h 512 d64", _attn(8, 8, 512, 512, 64), _UNFUSED),
    ("layernorm 1024x1024", _row("layernorm", 1024, 1024), _FP32),
    ("layernorm 256x8192", _row("layernorm", 256, 8192), _FP32),
    ("rmsnorm 1024x1536", _row("rmsnorm", 1024, 1536), _FP32),
    ("rmsnorm 192x16384", _row("rmsnorm", 192, 16384), _FP32),
    ("softmax 512x2048", _row("softmax", 512, 2048), _FP32),
    ("softmax 8192x128", _row("softmax", 8192, 128), _FP32),
    ("chain gelu 2048x1024", _chain(2048, 1024, ("gelu",)), _FP32),
    ("chain silu*y 1024x2048", _chain(1024, 2048, ("silu", "mul")), _FP32),
    ("chain relu+y,tanh 2048x1024", _chain(2048, 1024, ("relu", "add", "tanh")), _FP32),
)

_QUICK = (
    ("gemm 32x48x40 bias+gelu", _linear(32, 40, 48, bias=True, act="gelu"), _FP32),
    ("gemm skinny m=2 k=256 n=64", _linear(2, 256, 64), _FP32),
    ("conv 3x3 NCHW c4 k8 8x8", _conv(4, 8, 8, 3, layout="NCHW"), _FP32),
    ("attention fused 2h 32 d16", _attn(2, 2, 32, 32, 16), _FP32),
    ("rmsnorm 32x256", _row("rmsnorm", 32, 256), _FP32),
    ("chain relu+y 64x64", _chain(64, 64, ("relu", "add")), _FP32),
)


def suite(quick: bool = False) -> tuple[SuiteCase, ...]:
    """The suite's cases: ``(name, graph builder, options)``; ``quick``: the small smoke suite.

    A case lowers to one kernel or more (an NCHW conv also gets its layout transform); the
    report counts the kernels that ran.
    """
    return _QUICK if quick else SUITE
