import ipywidgets as widgets
import pytest

from workbench.options import FUSION_RULES
from workbench.ui import MappingExplorer, TilingLab
from workbench.ui.tiling_lab import storage_rows


@pytest.fixture(scope="module")
def explorer():
    return MappingExplorer(model="llama2-7b", hardware="h100-sxm", seq=128)


def values(spec, part):
    data = part["data"]
    return data["values"] if "values" in data else spec["datasets"][data["name"]]


def _roof_rows(chart):
    spec = chart.to_dict()
    return values(spec, spec["layer"][2])


def test_explorer_controls_and_widget(explorer):
    assert {"model", "hardware", "phase", "batch", "seq", "dtype", *FUSION_RULES} <= set(
        explorer.controls
    )
    assert isinstance(explorer.widget, widgets.VBox)
    assert "application/vnd.jupyter.widget-view+json" in explorer._repr_mimebundle_()
    assert "llama2-7b" in explorer._summary.value
    assert "<table" in explorer._sheet.value


def test_explorer_batch_change_remaps(explorer):
    before_rows = _roof_rows(explorer.roofline_chart)
    before_time = explorer.mapping.time_s
    explorer.controls["batch"].value = 8
    assert explorer.mapping.graph.meta_dict()["batch"] == 8
    assert explorer.mapping.time_s > before_time
    assert _roof_rows(explorer.roofline_chart) != before_rows
    # the live chart widget holds the new spec
    live = explorer._roofline.widget
    assert live.spec == explorer.roofline_chart.to_dict(validate=False)
    explorer.controls["batch"].value = 4
    assert live.spec == explorer.roofline_chart.to_dict(validate=False)
    explorer.controls["batch"].value = 1


def test_explorer_fusion_off_is_never_faster(explorer):
    for rule in FUSION_RULES:
        on = explorer.mapping.time_s
        explorer.controls[rule].value = False
        assert rule in explorer.mapping.options.disabled_fusion
        assert explorer.mapping.time_s >= on * (1 - 1e-12)
        explorer.controls[rule].value = True
    assert explorer.mapping.options.disabled_fusion == ()


def test_explorer_shows_errors_and_keeps_mapping(explorer):
    good = explorer.mapping
    explorer.controls["dtype"].value = "int8"  # fine: a format change re-maps
    assert explorer.error == ""
    assert explorer.mapping.dtype == "int8"
    explorer.controls["dtype"].value = "bf16"
    assert explorer.mapping.time_s == pytest.approx(good.time_s)


def test_explorer_sliders_step_through_decades(explorer):
    from workbench.ui.explorer import BATCHES, SEQS

    assert isinstance(explorer.controls["batch"], widgets.SelectionSlider)
    assert set(BATCHES) <= set(explorer.controls["batch"].options)
    assert (BATCHES[0], BATCHES[-1]) == (1, 512)
    assert (SEQS[0], SEQS[-1]) == (128, 32768)
    # every row of controls and the chart row wrap instead of overflowing the cell
    rows = [c for c in explorer.widget.children if isinstance(c, widgets.HBox)]
    assert rows
    assert all(r.layout.flex_flow == "row wrap" for r in rows)


def test_explorer_refuses_kv_cache_past_capacity_and_context():
    ex = MappingExplorer(model="llama2-7b", hardware="h100-sxm", phase="decode", seq=2048)
    good = ex.mapping
    ex.controls["batch"].value = 512  # 512 x 2048 tokens of KV cache: far past 80 GB
    assert "does not fit" in ex.error
    assert "GiB" in ex.error
    assert "no step time" in ex._summary.value
    assert ex.mapping is good  # the last setting that maps stays
    ex.controls["batch"].value = 1
    assert ex.error == ""
    ex.controls["seq"].value = 8192  # llama2-7b has 4,096 positions
    assert "context is 4096 tokens" in ex.error  # the line `workbench map` prints
    ex.controls["seq"].value = 2048
    assert "MBU" in ex._summary.value


def test_tiling_lab_overflow_is_capacity_bound():
    lab = TilingLab(model="llama2-7b", kernel="layers.0.mlp.up_proj", seq=128)
    tiling, cost = lab.set_tile(512, 512, 512, stages=4)
    assert tiling.shape == "512x512x512"
    assert not tiling.fits
    assert cost.bottleneck == "capacity"
    assert lab.prediction == (tiling, cost)
    assert "overflows SRAM" in lab._summary.value
    tiling, cost = lab.set_tile(64, 64, 32, stages=2)
    assert tiling.fits
    assert cost.bottleneck != "capacity"
    assert lab.controls["tile_m"].value == 64
    assert isinstance(lab.widget, widgets.VBox)
    spec = lab.chart.to_dict()
    sram = values(spec, spec["hconcat"][0]["layer"][0])[0]
    assert sram["used_bytes"] == tiling.sram_bytes
    assert sram["pct"] == pytest.approx(100 * tiling.sram_bytes / tiling.sram_capacity_bytes)


def test_tiling_lab_fit_check_counts_register_accumulators():
    # 512x128 fp32 accumulators are 256 KiB: twice the A100 SM's accumulator share of its
    # 256 KiB register file, although operands x stages fit the 164 KiB of shared memory.
    lab = TilingLab(model="llama2-7b", kernel="layers.0.mlp.up_proj", hardware="a100-80gb")
    tiling, _ = lab.set_tile(512, 128, 64, split_k=1)
    assert tiling.fits  # SRAM alone
    assert not lab.fits
    regs = storage_rows(tiling, lab.hw)[1]
    assert regs["used_bytes"] == 512 * 128 * 4
    assert not regs["fits"]
    assert "register file" in lab._summary.value
    lab.set_tile(128, 128, 64, split_k=1)
    assert lab.fits


def test_tiling_lab_measures_on_numpy():
    lab = TilingLab(model="gpt2", kernel="layers.0.attn.sdpa", hardware="teaching", seq=64)
    lab.set_tile(32, 16)
    seconds = lab.measure(backend="numpy")
    assert seconds > 0
    assert lab.measured_s == seconds
    assert "numpy" in lab.measure_note
    assert "tile 32x16" in lab.measure_note
    gemm_lab = TilingLab(model="gpt2", kernel="layers.0.mlp.up_proj", hardware="teaching", seq=64)
    assert gemm_lab.measure(backend="numpy") > 0
    assert "scaled down" in gemm_lab.measure_note  # the 3072-wide up projection is cut to 256
    from workbench.ui.tiling_lab import MEASURE_REPEATS

    assert len(gemm_lab.measurement.samples) == MEASURE_REPEATS
    assert "p10-p90" in gemm_lab.measure_note
    gemm_lab.set_tile(32, 32, 32, split_k=1)
    gemm_lab.measure(backend="numpy")
    # a second tile is compared with the first: ranked, or refused as within the spread
    assert "than tile" in gemm_lab.measure_note or "too close to rank" in gemm_lab.measure_note


def test_measure_button_ranks_only_measurements_apart():
    from workbench.execution.measure import Measurement
    from workbench.ui.tiling_lab import _versus

    a = Measurement.of([1.0, 1.1, 1.2])
    close = Measurement.of([1.15, 1.3, 1.4])
    far = Measurement.of([2.0, 2.1, 2.2])
    assert "too close to rank" in _versus(a, (64, 64, 32, 2, 1), close, (32, 64, 32, 2, 1))
    assert "slower than tile 64x64x32" in _versus(a, (64, 64, 32, 2, 1), far, (32, 64, 32, 2, 1))
    assert "faster than" in _versus(far, (64, 64, 32, 2, 1), a, (32, 64, 32, 2, 1))
    assert _versus(a, (64, 64, 32, 2, 1), far, (64, 64, 32, 2, 1)) == ""  # same tile again
