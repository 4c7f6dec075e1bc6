"""The loop-nest model: mappings fit their levels, stationarity counts, access totals."""

import math

import pytest

from workbench.errors import WorkbenchError
from workbench.hw import load_hardware
from workbench.scheduling.loopnest import (
    DATAFLOWS,
    WORD_BYTES,
    ConvShape,
    Loop,
    LoopNest,
    access_words,
    loop_nest,
    tile_words,
)

HW = load_hardware("eyeriss")
CONV3 = ConvShape(K=384, C=256, P=13, Q=13, R=3, S=3)


@pytest.mark.parametrize("dataflow", list(DATAFLOWS))
def test_nest_covers_the_layer_and_fits_each_level(dataflow):
    nest = loop_nest(CONV3, dataflow, HW)
    for d in "KCPQRS":
        covered = math.prod(lp.bound for lp in nest.loops if lp.dim == d)
        assert covered >= getattr(CONV3, d)
    assert nest.padded_macs >= CONV3.macs
    rows, cols = HW.matrix_engine.native_tile_m, HW.matrix_engine.native_tile_n
    assert nest.pes_used <= rows * cols
    spad = sum(tile_words(nest.at("spad"), t) for t in "WIO") * WORD_BYTES
    assert spad <= HW.memory[0].capacity_bytes / (rows * cols)
    glb = sum(tile_words(nest.at("glb", "spatial", "spad"), t) for t in "WIO") * WORD_BYTES
    assert glb <= HW.sram.capacity_bytes


@pytest.mark.parametrize("dataflow", list(DATAFLOWS))
def test_dram_reads_at_least_compulsory(dataflow):
    words = access_words(loop_nest(CONV3, dataflow, HW))
    s = CONV3
    compulsory = s.K * s.C * s.R * s.S + s.C * (s.P + 2) * (s.Q + 2) + s.K * s.P * s.Q
    assert words["dram"] >= compulsory
    assert words["spad"] >= 4 * s.macs
    assert words["glb"] >= words["dram"]


def test_stationarity_rule_by_hand():
    # One PE, a 2 x 3 nest: for k in 2 (glb): for p in 3 (spad). W[k] is stationary across p.
    shape = ConvShape(K=2, C=1, P=3, Q=1, R=1, S=1)
    nest = LoopNest(
        shape=shape,
        dataflow="weight_stationary",
        loops=(Loop("K", 2, "dram"), Loop("Q", 1, "spatial"), Loop("P", 3, "spad")),
    )
    words = access_words(nest)
    # DRAM -> GLB: W 1 x 2 fills, I 3 words x 1 fill (k does not index I), O 3 x 2 fills
    # written back (2 x 6 - 6 zero reads skipped) -> 2 + 3 + 6 = 11
    assert words["dram"] == 11
    # GLB -> spad: the same tiles (nothing at glb), so 11; glb words = 11 + 11
    assert words["glb"] == 22
    assert words["spad"] == 4 * 6 + 11


def test_text_names_every_loop_and_the_body():
    nest = loop_nest(CONV3, "row_stationary", HW)
    text = nest.text()
    assert text.count("parallel_for") == len(nest.at("spatial"))
    assert text.count("\n") == len(nest.loops)
    assert "O[k][p][q] += W[k][c][r][s] * I[c][p+r][q+s]" in text


def test_bad_input_raises():
    with pytest.raises(WorkbenchError, match="dataflow"):
        loop_nest(CONV3, "input_stationary_x", HW)
    with pytest.raises(WorkbenchError, match="K=0"):
        ConvShape(K=0, C=1, P=1, Q=1, R=1, S=1)
