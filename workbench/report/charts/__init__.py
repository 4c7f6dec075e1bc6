"""Altair charts of mappings, traces and comparisons: pure functions to ``alt.Chart`` values.

Every chart is built from workbench data (a ``ModelMapping``, trace events, plain rows) and is
tested through ``chart.to_dict()``; each has a ``*_points``/``*_rows`` twin returning its data
rows (SI units) for tests and widgets. Display units (TFLOP/s, ms, MB) are computed in the
chart's ``calculate`` transforms.
"""

from workbench.report.charts._common import BOTTLENECK_COLOURS, MAX_ROWS, group_name
from workbench.report.charts.bars import (
    TIME_PARTS,
    fusion_traffic,
    fusion_traffic_rows,
    layer_type_bars,
    layer_type_rows,
    platform_bars,
    time_by_kernel,
    time_by_kernel_rows,
)
from workbench.report.charts.lens import (
    LENS_LABELS,
    bandwidth_lens,
    bandwidth_lens_layer_points,
    bandwidth_lens_points,
)
from workbench.report.charts.roofline import (
    hierarchical_points,
    roofline,
    roofline_points,
    roofline_roofs,
)
from workbench.report.charts.tiles import DEFAULT_TILE_SIZES, forced_tile, tile_grid, tile_heatmap
from workbench.report.charts.timeline import lane_rows, lane_timeline, timeline, timeline_rows

__all__ = [
    "BOTTLENECK_COLOURS",
    "DEFAULT_TILE_SIZES",
    "LENS_LABELS",
    "MAX_ROWS",
    "TIME_PARTS",
    "bandwidth_lens",
    "bandwidth_lens_layer_points",
    "bandwidth_lens_points",
    "forced_tile",
    "fusion_traffic",
    "fusion_traffic_rows",
    "group_name",
    "hierarchical_points",
    "lane_rows",
    "lane_timeline",
    "layer_type_bars",
    "layer_type_rows",
    "platform_bars",
    "roofline",
    "roofline_points",
    "roofline_roofs",
    "tile_grid",
    "tile_heatmap",
    "time_by_kernel",
    "time_by_kernel_rows",
    "timeline",
    "timeline_rows",
]
