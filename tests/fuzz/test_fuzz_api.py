"""Python API misuse: ``map_model``, ``MapOptions`` and ``TileOverride`` with hostile values.

Whatever a caller passes, the library either maps with finite, sane figures or raises one
documented type, :class:`workbench.OptionsError` (a :class:`workbench.WorkbenchError`), naming
the argument (issue 30): never AttributeError, ZeroDivisionError or OverflowError, never a
silently slower mapping from a negative tile.
"""

from __future__ import annotations

import dataclasses
import math

import pytest
from fuzz_contract import hostile_values
from hypothesis import given, settings
from hypothesis import strategies as st

from workbench import MapOptions, OptionsError, TileOverride, map_model
from workbench.hw import load_hardware
from workbench.models import build_graph

GRAPH = build_graph("mlp")
HW = load_hardware("teaching")
OPTION_FIELDS = tuple(f.name for f in dataclasses.fields(MapOptions))
TILE_FIELDS = ("m", "n", "k", "split_k", "stages", "pattern")
SIDES = st.one_of(hostile_values, st.sampled_from((0, -1, -64, 1, 16, 64, 10**30, 2**63, 64.0)))


def _sane(mapping) -> None:
    total = mapping.total
    assert math.isfinite(total.total_s)
    assert total.total_s > 0


@settings(max_examples=40, deadline=None)
@given(field=st.sampled_from(OPTION_FIELDS), value=SIDES)
def test_map_options_fields(field, value):
    try:
        options = MapOptions(**{field: value})
    except OptionsError:  # NOTE: any other exception type fails the test
        return
    _sane(map_model(GRAPH, HW, options))


@settings(max_examples=40, deadline=None)
@given(field=st.sampled_from(TILE_FIELDS), value=SIDES)
def test_tile_override_fields(field, value):
    fields = {"pattern": "*", "m": 16, "n": 16, "k": 16, field: value}
    try:
        tile = TileOverride(**fields)
    except OptionsError as exc:
        named = f"TileOverride.{field}" in str(exc)
        if not named:
            raise
        return
    assert all(getattr(tile, s) >= 1 for s in ("m", "n", "k"))
    _sane(map_model(GRAPH, HW, MapOptions(tiles=(tile,))))


@settings(max_examples=15, deadline=None)
@given(which=st.integers(0, 2), value=hostile_values)
def test_map_model_arguments(which, value):
    args = [GRAPH, HW, None]
    args[which] = value
    if which == 2 and value is None:
        return
    with pytest.raises(OptionsError, match=("graph", "hw", "options")[which]):
        map_model(*args)
