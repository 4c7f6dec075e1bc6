"""Re-map a recorded run from its tags (preset model, named hardware profile, options).

Used for the validation matrix's extra slices and the SLA simulation. A run is reproducible when
its model is a preset and its hardware profile is embedded in the record (version 2) or still
loads with the recorded content hash.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

from workbench.errors import WorkbenchError
from workbench.hw.loader import hardware_hash, load_hardware
from workbench.hw.schema import Hardware
from workbench.ir.graph import Graph
from workbench.mapper import ModelMapping, map_model
from workbench.models import build_graph, list_models
from workbench.options import MapOptions, TileOverride
from workbench.review.records.store import RunRecord, embedded_hardware

__all__ = ["graph_for", "hardware_for", "options_for", "remap"]


def options_for(record: RunRecord) -> MapOptions:
    """The :class:`MapOptions` the record's compiler and runtime tags describe."""
    c, r = record.tags.compiler, record.tags.runtime
    return MapOptions(
        dtype=c.dtype,
        weight_dtype=c.weight_dtype,
        dtype_overrides=tuple((g, d) for g, d in c.dtype_overrides),
        disabled_fusion=c.fusion_disabled,
        layout=c.layout,
        layout_propagation=c.layout_propagation,
        launch=r.launch,
        launch_host_s=r.launch_host_s,
        tiles=tuple(TileOverride.parse(t) for t in c.tiles),
        search=c.search,
        barrier_per_layer=r.barrier_per_layer,
        chips=r.chips,
        step_overhead_s=r.step_overhead_s,
        attention_kernel=r.attention_kernel,
        gqa_kv_sharing=r.gqa_kv_sharing,
    )


def hardware_for(record: RunRecord) -> Hardware | None:
    """The run's hardware profile: embedded in the record, else loaded by name, else None.

    A profile loaded by name is used only if it still has the recorded content hash.
    """
    embedded = embedded_hardware(record)
    if embedded is not None:
        return embedded
    try:
        hw = load_hardware(record.tags.hardware.profile)
    except WorkbenchError:
        return None
    return hw if hardware_hash(hw) == record.tags.hardware.hardware_hash else None


def graph_for(
    record: RunRecord,
    *,
    phase: str | None = None,
    batch: int | None = None,
    tokens: int | None = None,
) -> Graph | None:
    """The record's workload graph (optionally another phase/batch/length), or None."""
    w = record.tags.workload
    if w.model not in list_models():
        return None
    phase = phase or w.phase
    batch = batch or w.batch
    extra = dict(w.extra)
    tp_text = extra.get("tensor_parallel", "1")
    if not (isinstance(tp_text, str) and tp_text.isdigit() and len(tp_text) <= 5):
        return None  # NOTE: a record built by hand; a loaded one is checked (records/_sanity.py)
    tp = int(tp_text)
    try:
        if phase in ("prefill", "decode", "encode"):
            n = tokens or (w.seq if phase != "decode" else w.context) or w.seq or w.context or 512
            ph = "decode" if phase == "decode" else "prefill"
            return build_graph(
                w.model,
                ph,
                batch=batch,
                seq=n,
                context=n if ph == "decode" else None,
                dtype=w.dtype,
                tensor_parallel=tp,
            )
        return build_graph(w.model, batch=batch, dtype=w.dtype)
    except WorkbenchError:
        return None


#: Re-mapped slices, newest last: (workload tags, profile hash, options, slice) -> mapping.
_REMAPPED: OrderedDict[tuple[Any, ...], ModelMapping] = OrderedDict()
_REMAP_CACHE_SIZE = 64


def remap(record: RunRecord, **slice_args: int | str | None) -> ModelMapping | None:
    """Map the record's model again (another slice via ``graph_for`` arguments), or None.

    Cached: the mapping is a function of the workload tags, the profile's content, the options
    and the slice, so the same slice of the same run (a shared baseline triaged against several
    candidates) is mapped once. Mappings are frozen.
    """
    hw = hardware_for(record)
    if hw is None:
        return None
    options = options_for(record)
    key = (record.tags.workload, hardware_hash(hw), options, tuple(sorted(slice_args.items())))
    try:
        hit = _REMAPPED.get(key)
    except TypeError:  # an unhashable tag value (a record built by hand): map, do not cache
        graph = graph_for(record, **slice_args)  # type: ignore[arg-type]
        return None if graph is None else map_model(graph, hw, options)
    if hit is not None:
        _REMAPPED.move_to_end(key)
        return hit
    graph = graph_for(record, **slice_args)  # type: ignore[arg-type]
    if graph is None:
        return None
    mapping = map_model(graph, hw, options)
    _REMAPPED[key] = mapping
    if len(_REMAPPED) > _REMAP_CACHE_SIZE:
        _REMAPPED.popitem(last=False)
    return mapping
