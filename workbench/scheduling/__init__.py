"""Tile and dataflow scheduling: mapspaces of tilings and the traffic each implies."""

from workbench.scheduling.tiling import Tiling

__all__ = ["Tiling"]
