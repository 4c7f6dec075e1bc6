"""The loop-nest model: mappings divide and fit, capacities refuse, reuse, cycles, utilisation."""

import math

import pytest

from workbench.errors import WorkbenchError
from workbench.hw import load_hardware
from workbench.scheduling.loopnest import (
    DATAFLOWS,
    SPAD_WORDS,
    ConvShape,
    Loop,
    LoopNest,
    access_words,
    cost,
    loop_nest,
    refusal,
    tile_words,
)

HW = load_hardware("eyeriss")
CONV1 = ConvShape(K=96, C=3, P=55, Q=55, R=11, S=11, U=4)
CONV3 = ConvShape(K=384, C=256, P=13, Q=13, R=3, S=3)
PES = HW.matrix_engine.native_tile_m * HW.matrix_engine.native_tile_n


@pytest.mark.parametrize("shape", [CONV1, CONV3], ids=["conv1", "conv3"])
@pytest.mark.parametrize("dataflow", list(DATAFLOWS))
def test_nest_divides_the_layer_and_fits_each_scratchpad(dataflow, shape):
    nest = loop_nest(shape, dataflow, HW)
    for d in "KCPQRS":
        assert math.prod(lp.bound for lp in nest.loops if lp.dim == d) == getattr(shape, d)
    assert nest.padded_macs == shape.macs  # bounds divide: no padded iterations
    assert nest.pes_used <= PES
    below = nest.at("spad")
    for t in "WIO":
        assert tile_words(below, t, shape.U) <= SPAD_WORDS["eyeriss"][t]


def test_a_mapping_that_does_not_fit_the_ifmap_scratchpad_is_refused_with_the_reason():
    # conv3 row-stationary with a whole 3 x 13 input window per PE in the spad: 1 x 3 x 15 words
    # of ifmap, more than the 12 an Eyeriss PE holds.
    loops = (
        Loop("K", 384, "dram"),
        Loop("C", 256, "dram"),
        Loop("R", 3, "spatial"),
        Loop("P", 13, "spatial"),
        Loop("Q", 13, "spad"),
        Loop("S", 3, "spad"),
    )
    nest = LoopNest(shape=CONV3, dataflow="row_stationary", loops=loops)
    why = refusal(nest, HW)
    assert why is not None
    assert "ifmap_spad" in why
    assert "capacity 12" in why
    with pytest.raises(WorkbenchError, match="ifmap_spad holds 15 words, capacity 12"):
        cost(nest, HW)
    assert refusal(loop_nest(CONV3, "row_stationary", HW), HW) is None


def test_row_stationary_shares_input_rows_along_the_diagonal():
    nest = loop_nest(CONV3, "row_stationary", HW)
    st = cost(nest, HW).stats
    spatial = {lp.dim: lp.bound for lp in nest.at("spatial")}
    delivered = st.fills["ifmap_spad", "I"] * nest.pes_used
    # filter rows x output rows on the array: one GLB read feeds every PE on a diagonal, so the
    # GLB reads fewer input words than it delivers, by about (R + P - 1) / (R x P)
    share = (spatial["R"] + spatial["P"] - 1) / (spatial["R"] * spatial["P"])
    assert st.reads["glb", "I"] == pytest.approx(delivered * share / spatial["K"], rel=0.01)
    ws = cost(loop_nest(CONV3, "weight_stationary", HW), HW).stats
    ws_delivered = ws.fills["ifmap_spad", "I"] * loop_nest(CONV3, "weight_stationary", HW).pes_used
    assert ws.reads["glb", "I"] <= ws_delivered


@pytest.mark.parametrize("dataflow", list(DATAFLOWS))
def test_cycles_utilisation_and_energy_are_consistent(dataflow):
    nest = loop_nest(CONV3, dataflow, HW)
    c = cost(nest, HW)
    assert c.cycles >= CONV3.macs / c.pes_used
    assert c.spatial_utilisation == pytest.approx(c.pes_used / PES)
    assert c.utilisation == pytest.approx(c.spatial_utilisation * c.temporal_utilisation)
    assert 0 < c.utilisation <= 1
    assert c.latency_s == pytest.approx(c.cycles / HW.matrix_engine.clock_hz)
    assert all(v >= 0 and math.isfinite(v) for v in c.energy_pj.values())
    assert c.energy_pj["noc"] > 0
    words = access_words(nest, HW)
    s = CONV3
    compulsory = s.K * s.C * s.R * s.S + s.C * (s.P + 2) * (s.Q + 2) + s.K * s.P * s.Q
    assert words["dram"] >= compulsory
    assert words["spad"] >= 3 * s.macs
    assert c.energy_pj["dram"] == pytest.approx(words["dram"] * 2 * HW.offchip.energy_pj_per_byte)


def test_stride_four_widens_the_input_window():
    loops = (Loop("Q", 3, "spad"),)
    assert tile_words(loops, "I", 1) == 3
    assert tile_words(loops, "I", 4) == 9  # 4 x (3 - 1) + 1 input columns
    stride1 = ConvShape(K=96, C=3, P=55, Q=55, R=11, S=11)
    c4 = cost(loop_nest(CONV1, "row_stationary", HW), HW).stats
    c1 = cost(loop_nest(stride1, "row_stationary", HW), HW).stats
    assert c4.reads["dram", "I"] > c1.reads["dram", "I"]


def test_text_names_every_loop_and_the_strided_body():
    nest = loop_nest(CONV1, "row_stationary", HW)
    text = nest.text()
    assert text.count("parallel_for") == len(nest.at("spatial"))
    assert text.count("\n") == len(nest.loops)
    assert "I[c][4*p+r][4*q+s]" in text


def test_bad_input_raises():
    with pytest.raises(WorkbenchError, match="dataflow"):
        loop_nest(CONV3, "input_stationary_x", HW)
    with pytest.raises(WorkbenchError, match="K=0"):
        ConvShape(K=0, C=1, P=1, Q=1, R=1, S=1)
    with pytest.raises(WorkbenchError, match="multiply to"):
        cost(LoopNest(shape=CONV3, dataflow="row_stationary", loops=(Loop("K", 2, "dram"),)), HW)
