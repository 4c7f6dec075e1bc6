"""Small helpers the lesson modules share: cached mappings of presets."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

import pandas as pd

from workbench._format import fmt_time
from workbench.hw import load_hardware
from workbench.hw.schema import Hardware
from workbench.mapper import KernelMapping, ModelMapping, map_model
from workbench.models import build_graph
from workbench.options import MapOptions, TileOverride

__all__ = ["DATA", "forced_tile", "hardware", "mapping", "mapping_summary"]

#: The checkout's public data files the lessons read (traces, Timeloop exercises), each folder
#: with a README naming its repository, commit and licence.
DATA = Path(__file__).resolve().parents[2] / "tests" / "data"


@lru_cache(maxsize=32)
def hardware(name: str) -> Hardware:
    """Load a hardware profile once per session."""
    return load_hardware(name)


@lru_cache(maxsize=192)
def mapping(
    model: str,
    hardware_name: str,
    *,
    phase: str = "prefill",
    batch: int = 1,
    seq: int = 2048,
    dtype: str = "bf16",
    options: MapOptions | None = None,
) -> ModelMapping:
    """Map a preset model onto a hardware profile (cached; options must be hashable).

    The one cache of preset mappings: the lesson modules and the explorer's steps
    (:meth:`~workbench.exercises._widget_steps.ExplorerSetting.mapping`) both read it.

    Args:
        model: Preset name (``"llama2-7b"``...).
        hardware_name: Hardware profile name.
        phase: ``"prefill"`` or ``"decode"`` (ignored by CNNs).
        batch: Sequences (or images) per step.
        seq: Prompt length (prefill) or context length (decode), tokens.
        dtype: The model's format, its tensors' (a weight-only format is an option).
        options: Mapping overrides.

    Returns:
        The model mapping.
    """
    graph = build_graph(model, phase=phase, batch=batch, seq=seq, dtype=dtype)
    return map_model(graph, hardware(hardware_name), options)


def forced_tile(
    model: str, hardware_name: str, kernel: str, tile: tuple[int, int, int], *, seq: int = 2048
) -> tuple[KernelMapping, KernelMapping]:
    """One prefill kernel as the search maps it, and with ``tile`` forced on it (no split-K).

    Args:
        model: Preset name.
        hardware_name: Hardware profile name.
        kernel: The kernel's name (``"layers.0.mlp.up_proj"``).
        tile: ``(tile_m, tile_n, tile_k)``, elements.
        seq: Prompt length, tokens.

    Returns:
        ``(searched, forced)``: the kernel's mapping in each case.
    """
    searched = mapping(model, hardware_name, phase="prefill", seq=seq).kernel(kernel)
    override = TileOverride(pattern=kernel, m=tile[0], n=tile[1], k=tile[2], split_k=1)
    options = MapOptions(tiles=(override,))
    forced = mapping(model, hardware_name, phase="prefill", seq=seq, options=options).kernel(kernel)
    return searched, forced


def mapping_summary(m: ModelMapping) -> pd.DataFrame:
    """One row: step time (with its unit), tokens/s, MFU, MBU and kernels per bottleneck class.

    MBU is the off-chip bandwidth utilisation (bytes / (time x sustained bandwidth)): the
    decode counterpart of MFU. Memory stall, shown by the explorer, is the time a kernel runs
    beyond the compute it needs, waiting on memory.

    Args:
        m: A model mapping.

    Returns:
        A one-row frame indexed by the graph's name.
    """
    row: dict[str, object] = {
        "step": fmt_time(m.time_s),
        "tokens_per_s": round(m.tokens_per_s),
        "mfu": f"{m.mfu:.1%}",
        "mbu": f"{m.mbu:.1%}",
    }
    row.update({f"kernels {c}": n for c, n in sorted(m.bottleneck_counts().items())})
    return pd.DataFrame([row], index=pd.Index([m.graph.name], name="mapping"))
