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

from workbench._files import read_bounded
from workbench.errors import IngestError, WorkbenchError
from workbench.ir import Graph, Op, Reshape
from workbench.models._onnx_nodes import HANDLERS, Ctx, Unsupported

__all__ = ["OnnxImport", "from_onnx"]

#: Largest ONNX file read, bytes (protobuf's own limit is 2 GiB).
MAX_ONNX_BYTES = 2**31

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
        data = read_bounded(model, MAX_ONNX_BYTES, "ONNX file")
    except WorkbenchError as exc:
        raise IngestError(str(exc)) from None
    try:
        # NOTE: weights kept in external data files are not needed: initializer dims are inline.
        return onnx.ModelProto.FromString(data), str(model)
    except Exception as exc:  # protobuf raises DecodeError and others for bad files
        raise IngestError(f"{model}: not a readable ONNX model ({type(exc).__name__})") from None


def _check_opsets(model: Any, source: str) -> None:
    """Refuse an opset the installed ``onnx`` does not define (its shape rules are unknown)."""
    import onnx

    newest = onnx.defs.onnx_opset_version()
    for entry in model.opset_import:
        if entry.domain in ("", "ai.onnx") and not 1 <= entry.version <= newest:
            raise IngestError(
                f"{source}: opset_import: ONNX opset {entry.version} is not supported "
                f"(this onnx package knows opsets 1..{newest})"
            )


def _with_batch(model: Any, batch: int | None, override: bool) -> tuple[Any, tuple[str, ...]]:
    """Copy ``model`` with its symbolic input dimensions set, then run shape inference.

    Symbolic (or unknown) dimensions become ``batch`` (default 1); fixed dimensions stay as the
    file states them, unless ``override`` replaces the leading one with ``batch``.

    Returns:
        The inferred model and a note per input whose fixed leading dimension was kept or
        replaced (empty when ``batch`` agrees with the file).
    """
    import onnx

    model = onnx.ModelProto.FromString(model.SerializeToString())
    inits = {i.name for i in model.graph.initializer}
    notes: list[str] = []
    for inp in model.graph.input:
        if inp.name in inits:
            continue
        dims = inp.type.tensor_type.shape.dim
        for i, dim in enumerate(dims):
            if dim.HasField("dim_value") and dim.dim_value <= 0:
                raise IngestError(
                    f"input {inp.name!r} dimension {i} is {dim.dim_value}: a dimension must be "
                    "positive or symbolic (dim_param)"
                )
            if not dim.HasField("dim_value"):
                dim.Clear()
                dim.dim_value = batch or 1
            elif i == 0 and batch is not None and dim.dim_value != batch:
                fixed = dim.dim_value
                if override:
                    dim.dim_value = batch
                    notes.append(f"input {inp.name!r}: fixed batch {fixed} replaced by {batch}")
                else:
                    notes.append(f"input {inp.name!r} keeps its fixed batch {fixed}")
    try:
        return onnx.shape_inference.infer_shapes(model, strict_mode=True), tuple(notes)
    except Exception as exc:  # onnx raises its own InferenceError and others
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[-1]
        raise IngestError(f"shape inference failed: {first[:200]}") from None


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
    model: str | Path | Any,
    batch: int | None = None,
    strict: bool = True,
    override_batch: bool = False,
) -> Graph | OnnxImport:
    """Import an ONNX model (path or ``onnx.ModelProto``) as a graph.

    Args:
        model: Path to a ``.onnx`` file or a loaded ``ModelProto``.
        batch: Value for symbolic input dimensions (``None``: 1). Fixed dimensions stay as the
            file states them (a model exported at batch 8 is mapped at batch 8).
        strict: Raise on unsupported nodes (``True``) or return an :class:`OnnxImport`.
        override_batch: Replace a fixed leading input dimension with ``batch`` too (reported in
            ``graph.meta["batch_notes"]``).

    Returns:
        The graph, or with ``strict=False`` an :class:`OnnxImport` (graph + unsupported list).

    Raises:
        IngestError: Unreadable file, unknown shapes, or (strict) the list of unsupported nodes
            in one line.
    """
    proto, source = _load(model)
    _check_opsets(proto, source)
    try:
        proto, notes = _with_batch(proto, batch, override_batch)
    except IngestError as exc:
        raise IngestError(f"{source}: {exc}") from None
    ctx = Ctx(source=source, infos=_value_infos(proto), elem=_ELEM)
    ctx.add_initializers(proto.graph.initializer)
    unsupported: list[str] = []
    for node in proto.graph.node:
        label = f"{node.op_type} (node {_node_label(node)!r})"
        handler = HANDLERS.get(node.op_type)
        try:
            _check_arity(node, source, label)
            if handler is None:
                raise Unsupported(node.op_type)
            handler(ctx, node)
        except Unsupported as exc:
            unsupported.append(label if str(exc) == node.op_type else f"{label}: {exc}")
        except (ValueError, TypeError, IndexError, KeyError, AssertionError) as exc:
            if isinstance(exc, IngestError):
                raise
            raise IngestError(f"{source}: {label}: malformed node ({_why(exc)})") from None
    if unsupported and strict:
        raise IngestError(f"{source}: unsupported ONNX ops: {'; '.join(unsupported)}")
    ops = _finish(ctx, proto)
    name = proto.graph.name or Path(source).stem
    meta: tuple[tuple[str, object], ...] = (
        ("model", name),
        ("source", source),
        ("batch", _graph_batch(ctx, proto, batch)),
    )
    if notes:
        meta += (("batch_notes", "; ".join(notes)),)
    try:
        graph = Graph(name=name, ops=ops, meta=meta)
    except WorkbenchError as exc:
        raise IngestError(f"{source}: {exc}") from None
    return OnnxImport(graph=graph, unsupported=tuple(unsupported)) if not strict else graph


def _node_label(node: Any) -> str:
    return str(node.name or (node.output[0] if node.output else "?"))


#: (fewest inputs, fewest outputs) each handled op needs; ONNX's checker does not run on load.
_ARITY = {"MatMul": 2, "Gemm": 2, "Conv": 2, "Add": 2, "Sub": 2, "Mul": 2, "Div": 2, "Gather": 2}


def _check_arity(node: Any, source: str, label: str) -> None:
    need = _ARITY.get(node.op_type, 1 if node.op_type != "Constant" else 0)
    present = [i for i in node.input if i]
    if len(present) < need:
        raise IngestError(f"{source}: {label}: needs {need} input(s), has {len(present)}")
    if not node.output or not node.output[0]:
        raise IngestError(f"{source}: {label}: has no output")


def _why(exc: BaseException) -> str:
    text = " ".join(str(exc).split())[:120]
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _graph_batch(ctx: Ctx, proto: Any, batch: int | None) -> int:
    """The batch the graph runs at: the leading dimension of its first activation input."""
    inits = {i.name for i in proto.graph.initializer}
    for inp in proto.graph.input:
        shape = ctx.infos.get(inp.name, ((), 0))[0]
        if inp.name not in inits and shape and shape[0] > 0:
            return int(shape[0])
    return batch or 1


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
