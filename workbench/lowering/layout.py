"""Placement passes after kernel selection: data layout and debug barriers.

* :func:`assign_layouts` inserts a layout-transform kernel where a conv wants a layout its
  producer did not write, or folds the transform into the producer's store (``layout_fold``);
  with ``layout_propagation`` on, the chosen layout flows through layout-agnostic kernels, so a
  CNN needs one transform at its input.
* :func:`assign_operand_layouts` handles GEMM operands: where the engine needs a K-major B
  for the kernel's format (Hopper FP8) and B is N-major (V in P V), the producer stores it
  transposed (``layout_fold``) or a transpose kernel is inserted before the GEMM.
* :func:`add_layer_barriers` adds one device-wide barrier after every layer (a debugging sync).
"""

from __future__ import annotations

import dataclasses
import math

from workbench.hw.schema import Hardware
from workbench.ir.graph import Graph
from workbench.lowering.kernel import Kernel, RowProblem
from workbench.lowering.kernel import elem_bytes as _eb
from workbench.options import MapOptions

__all__ = ["add_layer_barriers", "assign_layouts", "assign_operand_layouts"]


def assign_layouts(
    kernels: list[Kernel], graph: Graph, hw: Hardware, options: MapOptions
) -> list[Kernel]:
    """Insert (or fold) layout transforms where a conv wants another layout than it gets."""
    if not any(k.kind == "conv" for k in kernels):
        return kernels
    want = hw.matrix_engine.preferred_layout if options.layout == "auto" else options.layout
    out: list[Kernel] = []
    layout_of: dict[str, str] = {}  # tensor name -> layout it was written in
    for k in kernels:
        op = graph.op(k.ops[0])
        src = op.inputs[0] if op.inputs else None
        have = layout_of.get(src, getattr(op, "layout", "row-major")) if src else k.layout
        if k.kind == "conv" and have != want:
            out.extend(_transform(k, src, have, want, out, layout_of, graph, options))
            k = dataclasses.replace(k, layout=want)
        elif k.kind == "conv":
            k = dataclasses.replace(k, layout=want)
        native = hw.matrix_engine.preferred_layout
        if _converts_internally(k, hw, want) and src is not None:
            # NOTE: tensor-core convolutions run channels-last; handed NCHW, the library
            # converts the input to NHWC and the output back in kernels of its own (NVIDIA,
            # "Convolutional Layers User's Guide", Tensor Core tensor layouts), so NCHW costs
            # two transforms per conv: it is never free on tensor cores.
            note = (f"{native} internally: the library transposes {want} input and output "
                    "(NVIDIA Convolutional Layers User's Guide)")  # fmt: skip
            out.append(_transform_kernel(k, src, want, native, graph, back=False))
            k = dataclasses.replace(k, notes=(*k.notes, note))
            out.append(_reads_in(k, op, native))
            out.append(_transform_kernel(k, k.ops[-1], native, want, graph, back=True))
            layout_of[k.ops[-1]] = want
            continue
        out.append(_reads_in(k, op, k.layout))
        produced = k.layout if k.kind == "conv" else have
        if k.kind == "conv" and not options.layout_propagation:
            declared = getattr(op, "layout", want)
            if declared != want:
                out.append(_transform_kernel(k, k.ops[-1], want, declared, graph, back=True))
                produced = declared
        layout_of[k.ops[-1]] = produced
    return out


def _reads_in(k: Kernel, op: object, layout: str) -> Kernel:
    """A conv kernel whose input is stored in ``layout``: its compulsory bytes what it reads.

    The lowering counts a conv's whole input tensor; a strided conv whose windows skip pixels
    (ResNet's 1 x 1 stride-2 downsample) reads only part of it, as its layout allows
    (:meth:`workbench.ir.ops_gemm.Conv2d.input_read_fraction`: a quarter in NHWC, the sampled
    rows in NCHW). Other kernels are returned unchanged.
    """
    fraction = getattr(op, "input_read_fraction", None)
    if k.kind != "conv" or fraction is None:
        return k
    share = fraction(layout)
    if share >= 1.0:
        return k
    whole = op.input_tensors()[0].numel * _eb(k.dtype)  # type: ignore[attr-defined]
    return dataclasses.replace(k, bytes_read=k.bytes_read - round(whole * (1.0 - share)))


def _converts_internally(k: Kernel, hw: Hardware, layout: str) -> bool:
    """A conv on the matrix engine of hardware-scheduled tiles in a layout it does not run."""
    return (
        k.kind == "conv"
        and k.engine == "matrix"
        and layout != hw.matrix_engine.preferred_layout
        and hw.hardware_scheduled
    )


def _transform(
    k: Kernel,
    src: str | None,
    have: str,
    want: str,
    out: list[Kernel],
    layout_of: dict[str, str],
    graph: Graph,
    options: MapOptions,
) -> list[Kernel]:
    producer = next((i for i in range(len(out) - 1, -1, -1) if src in out[i].ops), None)
    can_fold = (
        options.fusion_enabled("layout_fold")
        and options.layout_propagation
        and producer is not None
        and out[producer].kind != "collective"
    )
    if can_fold:
        assert producer is not None
        p = out[producer]
        out[producer] = dataclasses.replace(
            p,
            fusion=(*p.fusion, "layout_fold"),
            notes=(*p.notes, f"stores its output in {want} for {k.name} (layout_fold)"),
            layout=want if p.kind != "conv" else p.layout,
        )
        return []
    assert src is not None
    return [_transform_kernel(k, src, have, want, graph, back=False)]


def _transform_kernel(
    k: Kernel, tensor: str, have: str, want: str, graph: Graph, back: bool
) -> Kernel:
    """A layout-transform kernel for ``tensor`` (``have`` -> ``want``)."""
    producer = graph.producer(tensor)
    if producer is not None:
        t = producer.output_tensor()
    else:
        t = next(x for x in graph.inputs if x.name == tensor)
    nbytes = round(t.numel * _eb(k.dtype))
    rows = math.prod(t.shape[:-1]) if len(t.shape) > 1 else 1
    suffix = "to_" + want.lower() + ("_back" if back else "")
    return Kernel(
        name=f"{k.name}.{suffix}",
        ops=(),
        kind="layout",
        layer_type="layout",
        engine="vector",
        engine_reason=f"layout transform {have} -> {want} for {k.name}",
        dtype=k.dtype,
        layout=have,
        rows=RowProblem(
            rows=rows, cols=t.shape[-1], reduce=False, operands=2, elem_bytes=_eb(k.dtype)
        ),
        bytes_read=nbytes,
        bytes_written=nbytes,
        notes=(f"inserted: {k.name} wants {want}, {tensor} is {have}",),
    )


def _layer_id(name: str) -> str:
    parts = name.split(".")
    return ".".join(parts[:2]) if len(parts) > 2 else parts[0]


def add_layer_barriers(kernels: list[Kernel]) -> list[Kernel]:
    """Add one device-wide barrier after the last kernel of every layer."""
    out = list(kernels)
    for i, k in enumerate(kernels):
        nxt = kernels[i + 1] if i + 1 < len(kernels) else None
        if nxt is None or _layer_id(nxt.name) != _layer_id(k.name):
            out[i] = dataclasses.replace(
                k,
                barriers=k.barriers + 1,
                notes=(*k.notes, "debug barrier after the layer (barrier_per_layer)"),
            )
    return out


def assign_operand_layouts(
    kernels: list[Kernel], hw: Hardware, options: MapOptions
) -> list[Kernel]:
    """Make every GEMM's B operand K-major where the engine requires it for the format."""
    need = set(hw.matrix_engine.k_major_dtypes)
    if not need:
        return kernels
    out: list[Kernel] = []
    for k in kernels:
        g = k.gemm
        if g is None or g.b_k_major or k.dtype not in need or k.engine != "matrix":
            out.append(k)
            continue
        why = f"{k.dtype} on {hw.name} needs a K-major B; this B is N-major"
        if options.fusion_enabled("layout_fold"):
            note = f"{why}: its producer stores it transposed (layout_fold)"
            out.append(dataclasses.replace(k, notes=(*k.notes, note)))
            continue
        nbytes = round(g.batch * g.k * g.n * g.b_bytes)
        out.append(
            Kernel(
                name=f"{k.name}.b_to_kmajor", ops=(), kind="layout", layer_type="layout",
                engine="vector", engine_reason=f"transpose B for {k.name}", dtype=k.dtype,
                rows=RowProblem(rows=g.batch * g.k, cols=g.n, reduce=False, operands=2,
                                elem_bytes=g.b_bytes),
                bytes_read=nbytes, bytes_written=nbytes, notes=(f"inserted: {why}",),
            )
        )  # fmt: skip
        out.append(k)
    return out
