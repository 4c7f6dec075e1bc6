"""ONNX file -> operator graph, via the ``onnx`` package and its shape inference.

Every node maps to IR ops or is reported; nothing is silently dropped. Decisions:

* ``Reshape``/``Flatten``/``Squeeze``/``Unsqueeze`` become a zero-cost
  :class:`~workbench.ir.Reshape` view (no FLOPs, no bytes) so every edge keeps its exact
  shape; ``Identity``/``Dropout`` are elided by renaming edges. Views are also inserted where
  an IR op wants a flatter shape than ONNX gives (batched MatMul over 4-D tensors, ReduceMean
  with ``keepdims``).
* ``MatMul``/``Gemm`` with an initializer weight -> :class:`~workbench.ir.Linear` (layer type
  mlp); ``MatMul`` of two activations -> batched :class:`~workbench.ir.MatMul` (attention).
* ``Add``/``Sub`` with an initializer -> ``bias`` along the axis it runs over; ``Mul``/``Div``
  with an initializer -> ``scale`` (its parameters are not counted); two activations of one
  shape -> a binary elementwise op. ``BatchNormalization`` -> ``affine`` (2 params/channel).
* ``Gather`` of a 2-D initializer on axis 0 -> :class:`~workbench.ir.Embedding`.
* Softmax and LayerNormalization cost the same on any axis; they are modelled on the last.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from workbench.errors import IngestError
from workbench.ir import Graph, Op, Reshape
from workbench.models._onnx_nodes import HANDLERS, Ctx, Unsupported

__all__ = ["OnnxImport", "from_onnx"]

# onnx.TensorProto elem types -> workbench dtypes
_ELEM = {1: "fp32", 10: "fp16", 16: "bf16", 3: "int8", 17: "fp8_e4m3", 19: "fp8_e5m2"}


@dataclass(frozen=True, slots=True, kw_only=True)
class OnnxImport:
    """Result of a lenient import (``strict=False``).

    Attributes:
        graph: The graph of every supported node (outputs of skipped nodes become graph inputs).
        unsupported: ``"OpType (node name)"`` for each node that could not be mapped.
    """

    graph: Graph
    unsupported: tuple[str, ...]


def _load(model: Any) -> tuple[Any, str]:
    try:
        import onnx
    except ImportError:  # pragma: no cover - onnx is a test dependency
        raise IngestError("ONNX import needs the 'onnx' package: pip install onnx") from None
    if isinstance(model, onnx.ModelProto):
        return model, "model"
    try:
        return onnx.load(str(model)), str(model)
    except Exception as exc:  # onnx raises several kinds for bad files
        raise IngestError(f"{model}: not a readable ONNX model ({type(exc).__name__})") from None


def _with_batch(model: Any, batch: int | None) -> Any:
    """Copy ``model`` with every symbolic input dimension set to ``batch`` (default 1)."""
    import onnx

    model = onnx.ModelProto.FromString(model.SerializeToString())
    inits = {i.name for i in model.graph.initializer}
    for inp in model.graph.input:
        if inp.name in inits:
            continue
        for dim in inp.type.tensor_type.shape.dim:
            if not dim.HasField("dim_value") or dim.dim_value <= 0:
                dim.Clear()
                dim.dim_value = batch or 1
            elif batch is not None and dim is inp.type.tensor_type.shape.dim[0]:
                dim.dim_value = batch
    return onnx.shape_inference.infer_shapes(model)


def _value_infos(model: Any) -> dict[str, tuple[tuple[int, ...], int]]:
    out: dict[str, tuple[tuple[int, ...], int]] = {}
    g = model.graph
    for vi in (*g.input, *g.value_info, *g.output):
        tt = vi.type.tensor_type
        if not tt.HasField("shape"):
            continue
        dims = tuple(d.dim_value if d.HasField("dim_value") else 0 for d in tt.shape.dim)
        out[vi.name] = (dims, tt.elem_type)
    return out


def from_onnx(
    model: str | Path | Any, batch: int | None = None, strict: bool = True
) -> Graph | OnnxImport:
    """Import an ONNX model (path or ``onnx.ModelProto``) as a graph.

    Args:
        model: Path to a ``.onnx`` file or a loaded ``ModelProto``.
        batch: Value for symbolic (and the leading) input dimensions; ``None`` keeps fixed
            dimensions and sets symbolic ones to 1.
        strict: Raise on unsupported nodes (``True``) or return an :class:`OnnxImport`.

    Returns:
        The graph, or with ``strict=False`` an :class:`OnnxImport` (graph + unsupported list).

    Raises:
        IngestError: Unreadable file, unknown shapes, or (strict) the list of unsupported nodes
            in one line.
    """
    proto, source = _load(model)
    proto = _with_batch(proto, batch)
    ctx = Ctx(source=source, infos=_value_infos(proto), elem=_ELEM)
    ctx.add_initializers(proto.graph.initializer)
    unsupported: list[str] = []
    for node in proto.graph.node:
        label = f"{node.op_type} (node {node.name or node.output[0]!r})"
        handler = HANDLERS.get(node.op_type)
        try:
            if handler is None:
                raise Unsupported(node.op_type)
            handler(ctx, node)
        except Unsupported as exc:
            unsupported.append(label if str(exc) == node.op_type else f"{label}: {exc}")
    if unsupported and strict:
        raise IngestError(f"{source}: unsupported ONNX ops: {'; '.join(unsupported)}")
    ops = _finish(ctx, proto)
    name = proto.graph.name or Path(source).stem
    graph = Graph(name=name, ops=ops, meta=(("model", name), ("source", source), ("batch", batch)))
    return OnnxImport(graph=graph, unsupported=tuple(unsupported)) if not strict else graph


def _finish(ctx: Ctx, proto: Any) -> tuple[Op, ...]:
    """Ops in order; graph outputs reached only through an elided op get a view named after them."""
    ops = list(ctx.ops)
    names = {op.name for op in ops}
    for out in proto.graph.output:
        src = ctx.resolve(out.name)
        if out.name not in names and src in names:
            shape = ctx.shapes[src]
            ops.append(
                Reshape(name=out.name, inputs=(src,), shape=shape, to=shape, dtype=ctx.dtypes[src])
            )
    if not ops:
        raise IngestError(f"{ctx.source}: the model has no supported compute nodes")
    return tuple(ops)
