import pytest

from workbench.errors import WorkbenchError
from workbench.execution import Trace, TraceEvent
from workbench.hw import load_hardware
from workbench.mapper import map_model
from workbench.models import build_graph
from workbench.options import FUSION_RULES, MapOptions
from workbench.report import charts as C


@pytest.fixture(scope="module")
def hw():
    return load_hardware("h100-sxm")


@pytest.fixture(scope="module")
def llama(hw):
    return map_model(build_graph("llama2-7b", seq=128), hw)


@pytest.fixture(scope="module")
def unfused(hw):
    return map_model(
        build_graph("llama2-7b", seq=128), hw, MapOptions(disabled_fusion=tuple(FUSION_RULES))
    )


@pytest.fixture(scope="module")
def gpt2():
    return map_model(build_graph("gpt2", seq=128), load_hardware("teaching"))


def values(spec, part):
    """The data rows of ``part`` of a Vega-Lite spec (inline or a named top-level dataset)."""
    data = part["data"]
    return data["values"] if "values" in data else spec["datasets"][data["name"]]


def _layers(spec):
    return spec.get("layer") or [spec]


def test_roofline_points_are_kernel_flops_over_time(llama):
    pts = C.roofline_points(llama)
    assert len(pts) == sum(1 for k in llama.kernels if k.kernel.flops and k.cost.bytes_at("hbm"))
    up = next(p for p in pts if p["kernel"] == "layers.0.mlp.up_proj")
    km = llama.kernel("layers.0.mlp.up_proj")
    assert up["achieved_flops_per_s"] == pytest.approx(km.kernel.flops / km.cost.total_s)
    assert up["intensity"] == pytest.approx(km.kernel.flops / km.cost.bytes_at("hbm"))
    assert up["expected_bottleneck"] == km.cost.evidence
    grouped = C.roofline_points(llama, grouped=True)
    assert sum(p["count"] for p in grouped) == len(pts)
    assert len(grouped) < len(pts) / 10  # 32 identical decoder blocks collapse


def test_roofline_ridges_match_hardware(llama, hw):
    ridges = {r["level"]: r["intensity"] for r in C.roofline_roofs(llama) if r["ridge"]}
    assert ridges["hbm"] == pytest.approx(hw.ridge_point("bf16"))
    assert ridges["l2"] == pytest.approx(hw.ridge_point("bf16", "l2"))
    assert "registers" not in ridges  # from the SRAM outwards
    only = C.roofline_roofs(llama, levels=["hbm"])
    assert {r["level"] for r in only} == {"hbm", "compute"}


def test_roofline_spec(llama):
    spec = C.roofline(llama).to_dict()
    layers = _layers(spec)
    marks = [lay["mark"]["type"] for lay in layers]
    assert marks == ["line", "point", "point"]
    enc = layers[2]["encoding"]
    assert enc["x"]["field"] == "intensity"
    assert enc["x"]["scale"]["type"] == "log"
    assert enc["y"]["field"] == "tflops"
    assert "TFLOP/s" in enc["y"]["title"]
    assert enc["color"]["field"] == "bottleneck"
    tips = {t["field"] for t in enc["tooltip"]}
    assert {"kernel", "layer_type", "tile", "bottleneck", "expected_bottleneck"} <= tips
    rows = values(spec, layers[2])
    assert {r["bottleneck"] for r in rows} == {p["bottleneck"] for p in C.roofline_points(llama)}
    assert enc["shape"]["field"] == "level_kind"


def test_hierarchical_roofline_places_each_kernel_at_each_level(llama):
    # Nsight Compute's hierarchical roofline: intensity at a level = FLOPs / bytes at that level.
    pts = C.hierarchical_points(llama)
    by_name = {k.kernel.name: k for k in llama.kernels}
    levels = {p["level"] for p in pts}
    assert {"hbm", "l2"} <= levels
    for p in pts:
        km = by_name[p["kernel"]]
        assert p["intensity"] == pytest.approx(km.kernel.flops / km.cost.bytes_at(p["level"]))
    # the roof styles are fixed per level kind, whatever levels are drawn
    spec = C.roofline(llama).to_dict()
    dash = _layers(spec)[0]["encoding"]["strokeDash"]["scale"]
    assert dict(zip(dash["domain"], map(tuple, dash["range"]), strict=True))["dram"] == (8, 3)


def test_bandwidth_lens_labels_follow_rules(unfused, llama, hw):
    decode = map_model(build_graph("llama2-7b", phase="decode", seq=128), hw)
    rows = C.bandwidth_lens_points([("baseline", unfused), ("fused", llama), ("decode", decode)])
    assert rows[0]["label"] == "baseline behaviour"
    for r in rows[1:]:
        # without a serving replay, pressure never claims a tail (issue 20)
        expected = "saturated" if r["pressure"] >= 0.8 else "headroom left"
        assert r["label"] == expected
    fused = rows[1]
    assert fused["pressure"] == pytest.approx(
        llama.total.bytes_at("hbm") / llama.time_s / hw.offchip.bandwidth_bytes_per_s
    )
    low = C.bandwidth_lens_points([("a", llama), ("b", llama)], saturation=1.0)
    assert low[1]["label"] == "headroom left"
    high = C.bandwidth_lens_points([("a", llama), ("b", llama)], saturation=0.01)
    assert high[1]["label"] == "saturated"


def test_bandwidth_lens_spec_and_errors(llama):
    spec = C.bandwidth_lens([("a", llama), ("b", llama)], level="l2").to_dict()
    layers = _layers(spec)
    assert layers[0]["mark"]["type"] == "rect"
    assert values(spec, layers[0])[0]["lo"] == pytest.approx(80.0)
    assert "l2" in layers[2]["encoding"]["y"]["title"]
    assert layers[2]["encoding"]["color"]["field"] == "label"
    with pytest.raises(WorkbenchError):
        C.bandwidth_lens_points([])
    with pytest.raises(WorkbenchError):
        C.bandwidth_lens_points([("a", llama)], saturation=1.5)


def test_bandwidth_lens_unstable_from_the_simulation_and_per_layer_type(unfused, llama, hw):
    variants = [("eager", unfused), ("fused", llama), ("again", llama)]
    rows = C.bandwidth_lens_points(variants, against="sustained", unstable={"again"})
    assert [r["label"] for r in rows] == [
        "baseline behaviour", rows[1]["label"], "unstable tail latency",
    ]  # fmt: skip
    assert rows[1]["label"] in ("saturated", "headroom left")
    assert rows[1]["pressure"] == pytest.approx(
        llama.total.bytes_at("hbm") / llama.time_s / hw.offchip.sustained_bytes_per_s
    )
    per = C.bandwidth_lens_layer_points(variants)
    assert {r["layer_type"] for r in per} >= {"attention", "mlp"}
    assert all(0.0 <= r["pressure"] <= 1.0 for r in per)
    spec = C.bandwidth_lens(variants, unstable={"again"}, by_layer_type=True).to_dict()
    # issue 12: no text label over each point (they overlapped); the reading is a legend in
    # colour and shape, and the subtitle names the ring
    marks = [lay["mark"]["type"] if isinstance(lay["mark"], dict) else lay["mark"]
             for lay in _layers(spec)]  # fmt: skip
    assert "text" not in marks
    shaped = [lay for lay in _layers(spec) if lay.get("encoding", {}).get("shape")]
    fields = {lay["encoding"]["shape"]["field"]: lay for lay in shaped}
    dots = fields["label"]
    assert dots["encoding"]["shape"]["field"] == dots["encoding"]["color"]["field"] == "label"
    lines = fields["layer_type"]  # issue 20: layer types told apart by colour and shape
    assert lines["encoding"]["color"]["field"] == "layer_type"
    assert spec["resolve"]["scale"] == {"color": "independent", "shape": "independent"}
    assert any("red ring" in line for line in spec["title"]["subtitle"])


def test_layer_type_rows_sum_to_time(gpt2):
    rows = C.layer_type_rows(gpt2)
    by_type = {}
    for r in rows:
        by_type[r["layer_type"]] = by_type.get(r["layer_type"], 0.0) + r["seconds"]
    for lt, t in gpt2.time_by_layer_type().items():
        assert by_type.get(lt, 0.0) == pytest.approx(t)
    spec = C.layer_type_bars(gpt2).to_dict()
    stacked, util = spec["hconcat"]
    assert stacked["mark"]["type"] == "bar"
    assert stacked["encoding"]["color"]["field"] == "part"
    assert "µs" in stacked["encoding"]["x"]["title"]
    # MFU beside the off-chip bandwidth utilisation, so decode's bars are readable
    assert util["encoding"]["x"]["field"] == "pct"
    assert util["transform"][1]["fold"] == ["mfu", "mbu"]
    assert all(0.0 <= r["mbu"] <= 1.0 for r in rows)


def test_time_by_kernel_groups_layers(llama):
    rows = C.time_by_kernel_rows(llama, top=5)
    assert len(rows) == 6
    assert rows[-1]["group"].startswith("other")
    assert sum(r["seconds"] for r in rows) == pytest.approx(llama.time_s)
    assert [r["seconds"] for r in rows[:5]] == sorted(
        (r["seconds"] for r in rows[:5]), reverse=True
    )
    assert rows[0]["count"] == 32  # one per decoder block
    spec = C.time_by_kernel(llama, top=5).to_dict()
    assert spec["encoding"]["y"]["sort"] == "-x"


def test_fusion_traffic_never_grows(unfused, llama):
    rows = C.fusion_traffic_rows(unfused, llama)
    before = {r["layer_type"]: r["bytes"] for r in rows if r["variant"] == "before"}
    after = {r["layer_type"]: r["bytes"] for r in rows if r["variant"] == "after"}
    assert sum(after.values()) < sum(before.values())
    spec = C.fusion_traffic(unfused, llama).to_dict()
    assert spec["encoding"]["xOffset"]["field"] == "variant"
    assert "hbm" in spec["encoding"]["y"]["title"]


def test_tile_grid_marks_overflow(llama, hw):
    rows = C.tile_grid(llama.kernel("layers.0.mlp.up_proj"), hw, sizes=(64, 512), tile_k=64)
    assert [(r["tile_m"], r["tile_n"]) for r in rows] == [
        (64, 64),
        (64, 512),
        (512, 64),
        (512, 512),
    ]
    big = rows[-1]
    assert not big["fits"]
    assert big["bottleneck"] == "capacity"
    assert rows[0]["fits"]
    spec = C.tile_heatmap(rows).to_dict()
    assert _layers(spec)[0]["mark"]["type"] == "rect"
    measured = [dict(r, measured_s=1e-3) for r in rows]
    assert len(C.tile_heatmap(measured).to_dict()["hconcat"]) == 2


def test_timeline_rows_and_downsampling():
    events = [
        TraceEvent(
            kernel="gemm",
            tile_index=(i, 0),
            bytes_touched=10,
            flops=20,
            start_s=i * 1e-3,
            elapsed_s=1e-3,
        )
        for i in range(100)
    ]
    rows = C.timeline_rows(events)
    assert len(rows) == 100
    assert rows[5]["end_s"] == pytest.approx(6e-3)
    merged = C.timeline_rows(events, max_rows=10)
    assert len(merged) == 10
    assert sum(r["tiles"] for r in merged) == 100
    trace = Trace(events=list(events))
    spec = C.timeline(trace).to_dict()
    assert spec["mark"]["type"] == "bar"
    assert spec["encoding"]["x2"]["field"] == "end"
    assert "ms" in spec["encoding"]["x"]["title"]


def test_lane_timeline_keeps_lane_order_marks_overlap_and_merges_below_a_pixel():
    many = [(6e-3 + i * 1e-12, 6e-3 + i * 1e-12 + 5e-13, f"tiny{i}") for i in range(1000)]
    lanes = [("stream 7", [(0.0, 4e-3, "gemm"), *many]), ("stream 13", [(1e-3, 5e-3, "nccl")])]
    rows = C.lane_rows(lanes)
    assert [r["lane"] for r in rows] == ["stream 7", "stream 7", "stream 13", "overlap"]
    assert rows[0]["name"] == "gemm"
    assert rows[1]["name"] == "tiny0 and 999 more"  # 1 ns apart: merged at the plot's resolution
    assert (rows[-1]["start_s"], rows[-1]["end_s"]) == pytest.approx((1e-3, 4e-3))
    spec = C.lane_timeline(lanes, "a <b>").to_dict()
    assert spec["mark"]["type"] == "bar"
    assert spec["encoding"]["y"]["sort"] == ["stream 7", "stream 13", "overlap"]
    assert spec["encoding"]["color"]["scale"]["range"][-1] == "#d62728"  # the overlap lane
    assert "ms" in spec["encoding"]["x"]["title"]
    assert spec["title"] == "a <b>"  # escaped by the renderer, not in the spec
    assert C.lane_rows([("one", [(0.0, 1.0, "k")])], overlap=True)[-1]["lane"] == "one"


def test_platform_bars():
    rows = [
        {"platform": "a", "metric": "tokens/s", "value": 3.0},
        {"platform": "b", "metric": "MFU", "value": 40, "unit": "%"},
    ]
    spec = C.platform_bars(rows).to_dict()
    assert spec["facet"]["row"]["field"] == "metric"
    assert {r["metric"] for r in values(spec, spec)} == {"tokens/s", "MFU (%)"}
    with pytest.raises(WorkbenchError, match="row 0 lacks value"):
        C.platform_bars([{"platform": "a", "metric": "m"}])


def test_roofline_legends_name_the_profiles_levels():
    # issue 20: the legend said `dram` where the profile says `hbm`
    import json

    from workbench.exercises._shared import mapping
    from workbench.report.charts import roofline

    spec = json.dumps(roofline(mapping("gpt2", "h100-sxm", phase="decode", seq=128)).to_dict())
    assert '\\"dram\\": \\"dram (hbm)\\"' in spec
    assert '\\"cache\\": \\"cache (l2)\\"' in spec
