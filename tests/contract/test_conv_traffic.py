"""Property: a conv's off-chip traffic lies between its compulsory bytes and no reuse at all.

Whatever the shape, stride, padding, format and chip, the mapper never charges off-chip memory
less than the kernel's compulsory traffic (input, weights and output once; DESIGN.md, tests),
and never more than re-reading the whole implicit A matrix once per column of output tiles.
The cache level between the SRAM and off-chip memory always serves at least the A matrix.
"""

from hypothesis import given, settings
from hypothesis import strategies as st

from workbench import load_hardware, map_model
from workbench.ir import Conv2d, Graph
from workbench.options import MapOptions

_HW = {name: load_hardware(name) for name in ("h100-sxm", "a100-80gb", "l4")}

shapes = st.fixed_dictionaries(
    {
        "hw": st.sampled_from(sorted(_HW)),
        "batch": st.sampled_from([1, 8, 64, 256]),
        "c": st.sampled_from([3, 16, 64, 256]),
        "k": st.sampled_from([16, 64, 256]),
        "px": st.sampled_from([7, 14, 28, 56, 112]),
        "r": st.sampled_from([1, 3, 5, 7]),
        "stride": st.sampled_from([1, 2]),
        "dtype": st.sampled_from(["fp16", "int8"]),
    }
)


@settings(max_examples=30, deadline=None)
@given(shapes)
def test_conv_offchip_traffic_between_compulsory_and_no_reuse(s):
    hw = _HW[s["hw"]]
    op = Conv2d(
        name="c", inputs=("x",), batch=s["batch"], in_channels=s["c"], height=s["px"],
        width=s["px"], out_channels=s["k"], kernel_h=s["r"], kernel_w=s["r"],
        stride=s["stride"], padding=s["r"] // 2, layout="NHWC", dtype=s["dtype"],
    )  # fmt: skip
    m = map_model(Graph(name="c", ops=(op,)), hw, MapOptions(dtype=s["dtype"]))
    k = next(x for x in m.kernels if x.kernel.kind == "conv")
    p, t = k.kernel.gemm, k.tiling
    assert p is not None
    off = k.cost.bytes_at(hw.offchip.name)
    assert off >= k.kernel.bytes * 0.999
    a_matrix = p.batch * p.m * p.k * p.a_bytes
    grid_n = -(-p.n // t.tile_n)
    b = p.batch * p.k * p.n * p.b_bytes * -(-p.m // t.tile_m)
    c_and_epilogue = p.batch * p.m * p.n * p.c_bytes + p.epilogue_bytes
    no_reuse = grid_n * a_matrix + b + c_and_epilogue + 2.0 * p.m * p.n * 4 * t.split_k
    assert off <= max(no_reuse, k.kernel.bytes) * 1.001
    cache = next(lvl.name for lvl in hw.memory if lvl.kind == "cache")
    assert k.cost.bytes_at(cache) >= a_matrix * 0.999
