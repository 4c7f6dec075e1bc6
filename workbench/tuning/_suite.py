"""The validation suite: small graphs whose kernels are predicted and measured on this host."""

from __future__ import annotations

from collections.abc import Callable

from workbench.ir import ops as O
from workbench.ir.graph import Graph
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
    cls = {"layernorm": O.LayerNorm, "rmsnorm": O.RMSNorm, "softmax": O.Softmax}[kind]
    return lambda: _g(cls(name=kind, inputs=("x",), shape=(rows, cols), dtype=_F))


def _chain(rows: int, cols: int, kinds: tuple[str, ...]) -> Callable[[], Graph]:
    def build() -> Graph:
        ops: list[O.Op] = []
        prev = "x"
        for i, kind in enumerate(kinds):
            inputs = (prev, "y") if kind in ("add", "mul") else (prev,)
            ops.append(
                O.Elementwise(name=f"e{i}", inputs=inputs, op=kind, shape=(rows, cols), dtype=_F)
            )
            prev = f"e{i}"
        return _g(*ops)

    return build


SUITE: tuple[SuiteCase, ...] = (
    ("gemm 128^3", _linear(128, 128, 128), _FP32),
    ("gemm 256x256x128", _linear(256, 128, 256), _FP32),
    ("gemm 192x320x96 bias+gelu", _linear(192, 96, 320, bias=True, act="gelu"), _FP32),
    ("gemm 64x512x256 relu", _linear(64, 256, 512, act="relu"), _FP32),
    ("gemm skinny m=1 k=2048 n=512", _linear(1, 2048, 512), _FP32),
    ("gemm skinny m=4 k=1024 n=512", _linear(4, 1024, 512), _FP32),
    ("gemm skinny m=16 k=512 n=512", _linear(16, 512, 512), _FP32),
    ("gemm ragged 100x75x130", _linear(100, 130, 75), _FP32),
    ("gemm ragged 257x129x65", _linear(257, 65, 129), _FP32),
    ("gemm ragged 33x333x77", _linear(33, 77, 333), _FP32),
    ("gemm tall 1024x32x64", _linear(1024, 64, 32), _FP32),
    ("gemm wide 32x1024x64", _linear(32, 64, 1024), _FP32),
    ("bmm 8x64x64x64", _bmm(8, 64, 64, 64), _FP32),
    ("bmm 4x128x32x128", _bmm(4, 128, 128, 32), _FP32),
    ("conv 3x3 c16 k16 32x32", _conv(16, 32, 16, 3), _FP32),
    ("conv 1x1 c64 k64 16x16", _conv(64, 16, 64, 1), _FP32),
    ("conv 3x3/2 c16 k32 32x32", _conv(16, 32, 32, 3, stride=2), _FP32),
    ("conv depthwise 3x3 c32 16x16", _conv(32, 16, 32, 3, groups=32), _FP32),
    ("conv 3x3 NCHW c8 k16 24x24", _conv(8, 24, 16, 3, layout="NCHW"), _FP32),
    ("attention fused 4h 128 d32", _attn(4, 4, 128, 128, 32), _FP32),
    ("attention fused gqa 8h/2 64 d64", _attn(8, 2, 64, 64, 64), _FP32),
    ("attention fused decode 1x512", _attn(8, 8, 1, 512, 64, causal=False), _FP32),
    ("attention unfused 4h 128 d32", _attn(4, 4, 128, 128, 32), _UNFUSED),
    ("layernorm 512x512", _row("layernorm", 512, 512), _FP32),
    ("layernorm 64x4096", _row("layernorm", 64, 4096), _FP32),
    ("rmsnorm 512x768", _row("rmsnorm", 512, 768), _FP32),
    ("rmsnorm 16x8192", _row("rmsnorm", 16, 8192), _FP32),
    ("softmax 256x1024", _row("softmax", 256, 1024), _FP32),
    ("softmax 1024x128", _row("softmax", 1024, 128), _FP32),
    ("chain gelu 512x512", _chain(512, 512, ("gelu",)), _FP32),
    ("chain silu*y 256x1024", _chain(256, 1024, ("silu", "mul")), _FP32),
    ("chain relu+y,tanh 512x256", _chain(512, 256, ("relu", "add", "tanh")), _FP32),
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
    """The suite's cases: ``(name, graph builder, options)``; ``quick`` is six tiny ones."""
    return _QUICK if quick else SUITE
