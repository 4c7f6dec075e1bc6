"""Cache residency between consecutive kernels: a pass after layout assignment.

A kernel that reads the tensor its predecessor has just written finds it in the shared cache
when the tensor fits the share of the cache one tensor may use (the same
:data:`~workbench.scheduling.gemm.CACHE_USABLE_FRACTION` the GEMM model uses): the read is served
by the cache, not by off-chip memory. The write itself still reaches off-chip memory (a
write-back cache evicts it later). ResNet-50's activations at batch 1 (at most a few MB) all
stay in an H100's 50 MB L2 between a conv and the next; a 4096-token Llama prefill's 32 MB
hidden state does not fit the 25 MB share, so it streams.
"""

from __future__ import annotations

import dataclasses

from workbench.hw.schema import Hardware
from workbench.ir.graph import Graph
from workbench.lowering.kernel import Kernel

__all__ = ["mark_cache_residency"]

#: Share of a shared cache one producer's output may occupy and still be there for the next
#: kernel (the rest holds the consumer's other operands and other lines). An assumption, the
#: same share the GEMM model lets a resident operand use.
RESIDENT_FRACTION = 0.5


def mark_cache_residency(kernels: list[Kernel], graph: Graph, hw: Hardware) -> list[Kernel]:
    """Set ``cached_input_bytes`` where a kernel reads what its predecessor left in the cache.

    Args:
        kernels: Kernels in execution order.
        graph: The graph they run (tensor names are their producing op's name).
        hw: Hardware (its largest shared cache level; none: nothing changes).

    Returns:
        The kernels, those reading a cache-resident input marked.
    """
    caches = [m for m in hw.memory if m.kind == "cache" and m.scope == "shared"]
    if not caches or not hw.hardware_scheduled:
        return kernels
    usable = RESIDENT_FRACTION * max(c.capacity_bytes for c in caches)
    out = list(kernels)
    for i in range(1, len(out)):
        prev, k = out[i - 1], out[i]
        if "collective" in (k.kind, prev.kind) or not prev.ops or not k.ops:
            continue
        produced = prev.bytes_written
        if 0 < produced <= usable and prev.ops[-1] in graph.op(k.ops[0]).inputs:
            cached = min(produced, k.bytes_read)
            out[i] = dataclasses.replace(k, cached_input_bytes=cached)
    return out
