"""``remap`` maps a slice of a run once: the same slice of an equal run is the cached mapping,
another slice or other options are mapped afresh, and the cached one equals a fresh mapping."""

import dataclasses

from workbench.hw import load_hardware
from workbench.mapper import map_model
from workbench.models import build_graph
from workbench.options import MapOptions
from workbench.review import record_from_mapping
from workbench.review.records import reproduce
from workbench.review.records.reproduce import graph_for, options_for, remap


def _record(**opts):
    hw = load_hardware("h100-sxm")
    return record_from_mapping(map_model(build_graph("gpt2", seq=128), hw, MapOptions(**opts)))


def test_same_slice_is_mapped_once_and_equals_a_fresh_mapping():
    rec = _record()
    first = remap(rec, batch=4)
    again = remap(dataclasses.replace(rec), batch=4)
    assert first is not None
    assert again is first
    fresh = map_model(graph_for(rec, batch=4), load_hardware("h100-sxm"), options_for(rec))
    assert first.time_s == fresh.time_s
    assert len(first.kernels) == len(fresh.kernels)


def test_other_slice_or_options_are_not_the_cached_mapping():
    rec = _record()
    one = remap(rec, batch=2)
    other = remap(rec, batch=8)
    unfused = remap(_record(disabled_fusion=("gemm_epilogue",)), batch=2)
    assert one is not None
    assert other is not None
    assert unfused is not None
    assert other is not one
    assert other.time_s > one.time_s
    assert unfused is not one
    assert unfused.time_s > one.time_s


def test_the_cache_is_bounded():
    rec = _record()
    for batch in range(1, reproduce._REMAP_CACHE_SIZE + 5):
        remap(rec, batch=batch, tokens=64)
    assert len(reproduce._REMAPPED) <= reproduce._REMAP_CACHE_SIZE
