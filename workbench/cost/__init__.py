"""Cost model: time parts, energy, bottleneck class, and the mapspace search."""

from workbench.cost.model import BOTTLENECK_CLASSES, Bottleneck, Cost
from workbench.cost.search import rank, schedule

__all__ = ["BOTTLENECK_CLASSES", "Bottleneck", "Cost", "rank", "schedule"]
