"""Interactive panels (ipywidgets 8): the only package that imports ipywidgets and IPython.

Each panel is a class with a Python API that tests drive without a browser; add yours below.
"""

from workbench.ui.explorer import MappingExplorer
from workbench.ui.platform_panel import LatencyPanel
from workbench.ui.tiling_lab import TilingLab
from workbench.ui.triage_panel import TriagePanel

__all__: list[str] = ["LatencyPanel", "MappingExplorer", "TilingLab", "TriagePanel"]
