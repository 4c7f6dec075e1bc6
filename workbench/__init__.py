"""workbench: map neural-network operator graphs onto accelerator models, execute, and review.

The public face: build a graph, load a hardware profile, map one onto the other.

>>> from workbench import build_graph, load_hardware, map_model
>>> m = map_model(build_graph("gpt2", seq=128), load_hardware("h100-sxm"))
>>> m.time_s > 0
True
"""

__version__ = "0.1.0"

from workbench.errors import OptionsError, WorkbenchError
from workbench.hw import list_hardware, load_hardware
from workbench.mapper import ModelMapping, map_model
from workbench.models import build_graph, list_models
from workbench.options import FUSION_RULES, MapOptions, TileOverride

__all__ = [
    "FUSION_RULES",
    "MapOptions",
    "ModelMapping",
    "OptionsError",
    "TileOverride",
    "WorkbenchError",
    "__version__",
    "build_graph",
    "list_hardware",
    "list_models",
    "load_hardware",
    "map_model",
]
