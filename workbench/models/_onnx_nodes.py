"""ONNX node handlers for :func:`workbench.models.onnx_ingest.from_onnx` (see its docstring)."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from typing import Any

from workbench.errors import IngestError
from workbench.ir import (
    Conv2d,
    Elementwise,
    Embedding,
    LayerNorm,
    Linear,
    MatMul,
    Op,
    Pool,
    Reduce,
    Reshape,
    Softmax,
    Transpose,
)

__all__ = ["HANDLERS", "Ctx", "Unsupported"]


class Unsupported(Exception):
    """A node (or a pattern of an op) the importer cannot map; collected into one report."""


class Ctx:
    """Import state: shapes from inference, initializers, edge aliases and the ops so far."""

    def __init__(self, *, source: str, infos: dict, elem: dict[int, str]) -> None:
        self.source, self.infos, self.elem = source, infos, elem
        self.inits: dict[str, Any] = {}
        self.alias: dict[str, str] = {}
        self.shapes: dict[str, tuple[int, ...]] = {}
        self.dtypes: dict[str, str] = {}
        self.ops: list[Op] = []

    def add_initializers(self, tensors: Iterable[Any]) -> None:
        """Register weights (``TensorProto``) by name."""
        for t in tensors:
            self.inits[t.name] = t

    def resolve(self, name: str) -> str:
        """Follow elided ops (Identity, Dropout) back to the tensor that really carries ``name``."""
        while name in self.alias:
            name = self.alias[name]
        return name

    def init_dims(self, name: str) -> tuple[int, ...] | None:
        """Dimensions of initializer ``name``, or None if it is an activation."""
        t = self.inits.get(name)
        return None if t is None else tuple(t.dims)

    def init_values(self, name: str) -> list[int]:
        """Integer contents of an initializer (axes, shapes)."""
        from onnx import numpy_helper

        return [int(v) for v in numpy_helper.to_array(self.inits[name]).reshape(-1)]

    def info(self, name: str) -> tuple[tuple[int, ...], str]:
        """Inferred (shape, dtype) of ONNX tensor ``name``."""
        shape, elem = self.infos.get(name, ((), 0))
        if not shape or any(d <= 0 for d in shape):
            if name in self.infos and not shape:
                return (1,), self.elem.get(elem, "fp32")
            raise IngestError(f"{self.source}: shape of tensor {name!r} unknown after inference")
        if elem not in self.elem:
            raise Unsupported(f"tensor {name!r} has ONNX elem type {elem}")
        return shape, self.elem[elem]

    def act(self, name: str, want: tuple[int, ...] | None = None, view: str = "") -> str:
        """Resolved activation name; with ``want``, viewed (Reshape) to that shape if needed."""
        src = self.resolve(name)
        if src not in self.shapes:
            self.shapes[src], self.dtypes[src] = self.info(src)
        if want is None or self.shapes[src] == want:
            return src
        return self.push(
            Reshape(
                name=view, inputs=(src,), shape=self.shapes[src], to=want, dtype=self.dtypes[src]
            )
        )

    def push(self, op: Op, out: str | None = None) -> str:
        """Add ``op``; if ``out`` names an ONNX tensor of another shape, view it as that shape."""
        self.ops.append(op)
        self.shapes[op.name], self.dtypes[op.name] = op.output_shape(), op.output_dtype
        if out is None or out == op.name:
            return op.name
        shape, _ = self.info(out)
        return self.push(
            Reshape(name=out, inputs=(op.name,), shape=op.output_shape(), to=shape, dtype=op.dtype)
        )

    def core(self, out: str, shape: tuple[int, ...]) -> str:
        """Name for the op computing ONNX tensor ``out``: ``out`` itself if shapes agree."""
        return out if self.info(out)[0] == shape else f"{out}.op"


def _attrs(node: Any) -> dict[str, Any]:
    from onnx import helper

    return {a.name: helper.get_attribute_value(a) for a in node.attribute}


def _elided(ctx: Ctx, node: Any) -> None:
    ctx.alias[node.output[0]] = node.input[0]


def _view(ctx: Ctx, node: Any) -> None:
    out = node.output[0]
    src = ctx.act(node.input[0])
    shape, dtype = ctx.info(out)
    ctx.push(Reshape(name=out, inputs=(src,), shape=ctx.shapes[src], to=shape, dtype=dtype))


def _unary(kind: str) -> Callable[[Ctx, Any], None]:
    def handle(ctx: Ctx, node: Any) -> None:
        out = node.output[0]
        shape, dtype = ctx.info(out)
        x = ctx.act(node.input[0], shape, f"{out}.in")
        ctx.push(Elementwise(name=out, inputs=(x,), op=kind, shape=shape, dtype=dtype))

    return handle


def _binary(kind: str, param_kind: str) -> Callable[[Ctx, Any], None]:
    def handle(ctx: Ctx, node: Any) -> None:
        out = node.output[0]
        shape, dtype = ctx.info(out)
        a, b = node.input[0], node.input[1]
        dims_a, dims_b = ctx.init_dims(a), ctx.init_dims(b)
        if dims_a is None and dims_b is None:
            if ctx.info(a)[0] != shape or ctx.info(b)[0] != shape:
                raise Unsupported("broadcast between two activations")
            xs = (ctx.act(a), ctx.act(b))
            ctx.push(Elementwise(name=out, inputs=xs, op=kind, shape=shape, dtype=dtype))
            return
        x, dims = (a, dims_b) if dims_a is None else (b, dims_a)
        if ctx.info(x)[0] != shape:
            raise Unsupported("initializer operand broadcasts the activation")
        op, axis = _param_axis(param_kind, dims or (), shape)
        ew = Elementwise(
            name=out, inputs=(ctx.act(x),), op=op, shape=shape, channel_axis=axis, dtype=dtype
        )
        ctx.push(ew)

    return handle


def _param_axis(kind: str, dims: tuple[int, ...], shape: tuple[int, ...]) -> tuple[str, int]:
    """Kind and axis for an op with a parameter of ``dims`` broadcast over ``shape``."""
    n = math.prod(dims)
    if kind == "bias" and n > 1:
        for axis in range(-1, -len(dims) - 1, -1):
            if dims[axis] == n and shape[axis] == n:
                return "bias", axis
        raise Unsupported(f"parameter of shape {dims} is not a per-channel vector")
    return "scale", -1


def _matmul(ctx: Ctx, node: Any) -> None:
    out = node.output[0]
    _, dtype = ctx.info(out)
    a, b = node.input
    wdims = ctx.init_dims(b)
    if ctx.init_dims(a) is not None:
        raise Unsupported("initializer as the left operand")
    sa = ctx.info(a)[0]
    if wdims is not None:
        if len(wdims) != 2:
            raise Unsupported(f"weight of rank {len(wdims)}")
        op = Linear(
            name=out, inputs=(ctx.act(a),), tokens=sa[:-1], in_features=wdims[0],
            out_features=wdims[1], dtype=dtype,
        )  # fmt: skip
        ctx.push(op)
        return
    sb = ctx.info(b)[0]
    if len(sa) < 2 or len(sb) < 2 or sa[:-2] != sb[:-2]:
        raise Unsupported("batched MatMul with broadcast batch dimensions")
    batch, (m, k), n = math.prod(sa[:-2]), sa[-2:], sb[-1]
    x = ctx.act(a, (batch, m, k), f"{out}.a")
    w = ctx.act(b, (batch, k, n), f"{out}.b")
    name = ctx.core(out, (batch, m, n))
    mm = MatMul(
        name=name, inputs=(x, w), batch=batch, m=m, n=n, k=k, dtype=dtype, layer_type="attention"
    )
    ctx.push(mm, out)


def _gemm(ctx: Ctx, node: Any) -> None:
    at = _attrs(node)
    out = node.output[0]
    _, dtype = ctx.info(out)
    wdims = ctx.init_dims(node.input[1])
    if at.get("transA", 0) or wdims is None or len(wdims) != 2:
        raise Unsupported("needs an initializer weight B and transA=0")
    k, n = (wdims[1], wdims[0]) if at.get("transB", 0) else wdims
    m = ctx.info(node.input[0])[0][0]
    bias = len(node.input) > 2 and bool(node.input[2])
    x = ctx.act(node.input[0], (m, k), f"{out}.in")
    op = Linear(
        name=out, inputs=(x,), tokens=(m,), in_features=k, out_features=n, bias=bias, dtype=dtype
    )
    ctx.push(op)


def _conv(ctx: Ctx, node: Any) -> None:
    at, out = _attrs(node), node.output[0]
    _, dtype = ctx.info(out)
    wdims = ctx.init_dims(node.input[1])
    (n, c, h, w) = ctx.info(node.input[0])[0]
    pads = tuple(at.get("pads", (0, 0, 0, 0)))
    strides = tuple(at.get("strides", (1, 1)))
    dil = tuple(at.get("dilations", (1, 1)))
    if wdims is None or len(wdims) != 4 or len(set(pads)) > 1 or len(set(strides)) > 1:
        raise Unsupported("needs a 4-D initializer weight and equal pads and strides")
    if len(set(dil)) > 1 or at.get("auto_pad", b"NOTSET") not in (b"NOTSET", "NOTSET"):
        raise Unsupported("needs equal dilations and explicit pads")
    op = Conv2d(
        name=out, inputs=(ctx.act(node.input[0]),), batch=n, in_channels=c, height=h, width=w,
        out_channels=wdims[0], kernel_h=wdims[2], kernel_w=wdims[3], stride=strides[0],
        padding=pads[0], dilation=dil[0], groups=int(at.get("group", 1)),
        bias=len(node.input) > 2 and bool(node.input[2]), dtype=dtype,
    )  # fmt: skip
    ctx.push(op)


def _row(cls: type[Op]) -> Callable[[Ctx, Any], None]:
    def handle(ctx: Ctx, node: Any) -> None:
        out = node.output[0]
        shape, dtype = ctx.info(out)
        ctx.push(cls(name=out, inputs=(ctx.act(node.input[0]),), shape=shape, dtype=dtype))  # type: ignore[call-arg]

    return handle


def _reduce(kind: str) -> Callable[[Ctx, Any], None]:
    def handle(ctx: Ctx, node: Any) -> None:
        at, out = _attrs(node), node.output[0]
        x = ctx.act(node.input[0])
        shape = ctx.shapes[x]
        axes = list(at.get("axes", ()))
        if not axes and len(node.input) > 1 and node.input[1]:
            if node.input[1] not in ctx.inits:
                raise Unsupported("axes given by an activation")
            axes = ctx.init_values(node.input[1])
        axes = sorted({a % len(shape) for a in axes} or range(len(shape)), reverse=True)
        for i, axis in enumerate(axes):
            name = ctx.core(out, shape[:axis] + shape[axis + 1 :]) if i == len(axes) - 1 else ""
            op = Reduce(
                name=name or f"{out}.r{axis}", inputs=(x,), shape=shape, axis=axis, op=kind,
                dtype=ctx.dtypes[x],
            )  # fmt: skip
            x = ctx.push(op)
            shape = op.output_shape()
        if x != out:
            ctx.push(
                Reshape(
                    name=out, inputs=(x,), shape=shape, to=ctx.info(out)[0], dtype=ctx.dtypes[x]
                )
            )

    return handle


def _gather(ctx: Ctx, node: Any) -> None:
    out = node.output[0]
    table = ctx.init_dims(node.input[0])
    if table is None or len(table) != 2 or _attrs(node).get("axis", 0) != 0:
        raise Unsupported("only a 2-D initializer table gathered on axis 0")
    ids, _ = ctx.infos.get(node.input[1], ((), 0))
    if not ids or any(d <= 0 for d in ids):
        raise IngestError(f"{ctx.source}: shape of tensor {node.input[1]!r} unknown")
    dtype = ctx.elem.get(ctx.inits[node.input[0]].data_type)
    if dtype is None:
        raise Unsupported("table dtype")
    ctx.push(Embedding(name=out, tokens=ids, vocab=table[0], dim=table[1], dtype=dtype))


def _pool(kind: str) -> Callable[[Ctx, Any], None]:
    def handle(ctx: Ctx, node: Any) -> None:
        at, out = _attrs(node), node.output[0]
        _, dtype = ctx.info(out)
        n, c, h, w = ctx.info(node.input[0])[0]
        kernel = tuple(at.get("kernel_shape", (1, 1)))
        strides = tuple(at.get("strides", (1, 1)))
        pads = tuple(at.get("pads", (0, 0, 0, 0)))
        if kind != "global_avg" and (len({*kernel}) > 1 or len({*strides}) > 1 or len({*pads}) > 1):
            raise Unsupported("needs square kernels, equal strides and equal pads")
        op = Pool(
            name=out, inputs=(ctx.act(node.input[0]),), batch=n, channels=c, height=h, width=w,
            kernel=kernel[0], stride=strides[0], padding=pads[0], op=kind, dtype=dtype,
        )  # fmt: skip
        ctx.push(op)

    return handle


def _batchnorm(ctx: Ctx, node: Any) -> None:
    out = node.output[0]
    shape, dtype = ctx.info(out)
    x = ctx.act(node.input[0])
    op = Elementwise(
        name=out, inputs=(x,), op="affine", shape=shape, channel_axis=1, dtype=dtype,
        layer_type="norm",
    )  # fmt: skip
    ctx.push(op)


def _transpose(ctx: Ctx, node: Any) -> None:
    out = node.output[0]
    x = ctx.act(node.input[0])
    shape = ctx.shapes[x]
    perm = tuple(_attrs(node).get("perm", tuple(reversed(range(len(shape))))))
    ctx.push(Transpose(name=out, inputs=(x,), shape=shape, perm=perm, dtype=ctx.dtypes[x]))


def _constant(ctx: Ctx, node: Any) -> None:
    value = _attrs(node).get("value")
    if value is None:
        raise Unsupported("only Constant with a tensor 'value'")
    value.name = node.output[0]
    ctx.inits[node.output[0]] = value


HANDLERS: dict[str, Callable[[Ctx, Any], None]] = {
    "Identity": _elided,
    "Dropout": _elided,
    "Constant": _constant,
    **dict.fromkeys(("Reshape", "Flatten", "Squeeze", "Unsqueeze"), _view),
    "Transpose": _transpose,
    "MatMul": _matmul,
    "Gemm": _gemm,
    "Conv": _conv,
    "Softmax": _row(Softmax),
    "LayerNormalization": _row(LayerNorm),
    "Add": _binary("add", "bias"),
    "Sub": _binary("sub", "bias"),
    "Mul": _binary("mul", "scale"),
    "Div": _binary("div", "scale"),
    "Relu": _unary("relu"),
    "Gelu": _unary("gelu"),
    "Sigmoid": _unary("sigmoid"),
    "Tanh": _unary("tanh"),
    "ReduceMean": _reduce("mean"),
    "ReduceSum": _reduce("sum"),
    "ReduceMax": _reduce("max"),
    "Gather": _gather,
    "MaxPool": _pool("max"),
    "AveragePool": _pool("avg"),
    "GlobalAveragePool": _pool("global_avg"),
    "BatchNormalization": _batchnorm,
}
