"""An implicit-GEMM conv reads its input from off-chip memory once where the halo stays cached.

Neighbouring output tiles' R x S windows overlap: the rows they share are served by the shared
cache while the input under a wave's tiles fits it (workbench/scheduling/gemm.py,
``_halo_expansion``); the cache level still serves every element of the implicit A matrix.
"""

import pytest

from workbench import load_hardware, map_model
from workbench.ir import Conv2d, Graph
from workbench.options import MapOptions


def _conv(hw, *, batch=64, c=64, hw_px=56, k=64, r=3, stride=1, pad=1, dtype="fp16"):
    op = Conv2d(
        name="c", inputs=("x",), batch=batch, in_channels=c, height=hw_px, width=hw_px,
        out_channels=k, kernel_h=r, kernel_w=r, stride=stride, padding=pad, layout="NHWC",
        dtype=dtype,
    )  # fmt: skip
    m = map_model(Graph(name="c", ops=(op,)), hw, MapOptions(dtype=dtype))
    return op, next(x for x in m.kernels if x.kernel.kind == "conv")


@pytest.mark.parametrize(
    ("kw", "expansion"),
    [
        ({"r": 3, "stride": 1, "pad": 1}, 9.0),
        ({"r": 3, "stride": 2, "pad": 1}, 2.25),
        ({"r": 7, "stride": 2, "pad": 3, "c": 3, "hw_px": 224}, 12.25),
        ({"r": 1, "stride": 2, "pad": 0}, 1.0),  # a strided 1x1 reads only what it samples
        ({"r": 1, "stride": 1, "pad": 0}, 1.0),
    ],
)
def test_im2col_expansion(kw, expansion):
    op = Conv2d(
        name="c", inputs=("x",), batch=1, in_channels=kw.get("c", 64),
        height=kw.get("hw_px", 56), width=kw.get("hw_px", 56), out_channels=64,
        kernel_h=kw["r"], kernel_w=kw["r"], stride=kw["stride"], padding=kw["pad"],
    )  # fmt: skip
    assert op.im2col_expansion == pytest.approx(expansion)


@pytest.mark.parametrize("hw_name", ["h100-sxm", "a100-80gb"])
def test_3x3_conv_reads_its_input_once_from_hbm_and_the_halo_from_l2(hw_name):
    hw = load_hardware(hw_name)
    op, k = _conv(hw)
    m, _, kk = op.gemm_mnk
    im2col = m * kk * 2  # the implicit A matrix, fp16
    compulsory = k.kernel.bytes
    hbm = k.cost.bytes_at(hw.offchip.name)
    assert compulsory <= hbm <= 1.05 * compulsory
    assert hbm < im2col / 4  # before: every A element was charged to HBM
    assert k.cost.bytes_at("l2") >= im2col  # the cache serves every gathered element


def test_the_halo_is_charged_to_hbm_when_the_cache_cannot_hold_it():
    # The same conv on an H100 whose L2 is shrunk to 64 KiB: the input under a wave's tiles no
    # longer fits, so the overlapping windows come from HBM again.
    hw = load_hardware("h100-sxm")
    small = tuple(
        lvl.model_copy(update={"capacity_bytes": 64 * 1024}) if lvl.name == "l2" else lvl
        for lvl in hw.memory
    )
    tiny = hw.model_copy(update={"memory": small})
    op, k = _conv(tiny)
    m, _, kk = op.gemm_mnk
    assert k.cost.bytes_at("hbm") >= m * kk * 2
    _, big = _conv(hw)
    assert k.cost.bytes_at("hbm") > 4 * big.cost.bytes_at("hbm")


def test_the_resnet50_stem_moves_its_compulsory_bytes():
    # ResNet-50's 7x7 stride-2 stem at batch 1024, int8, on H100 (the MLPerf offline row's
    # shape): 154 MB in + 822 MB out; its im2col A matrix alone is 1.9 GB.
    hw = load_hardware("h100-sxm")
    _, k = _conv(hw, batch=1024, c=3, hw_px=224, r=7, stride=2, pad=3, dtype="int8")
    assert k.cost.bytes_at("hbm") == pytest.approx(k.kernel.bytes, rel=0.02)
