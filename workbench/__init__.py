"""workbench: map neural-network operator graphs onto accelerator models, execute, and review."""

from workbench.errors import WorkbenchError

__version__ = "0.1.0"

__all__ = ["WorkbenchError", "__version__"]
