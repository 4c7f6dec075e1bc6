"""Reproduce collective, encoder and ratio rows, and their roofline floors.

* collective (an nccl-tests point): the call's time from workbench/cost/collective.py
  (``all_reduce_s``; ``all_gather_s`` for all-gather and for reduce-scatter, which moves the same
  ring traffic the other way), turned into the benchmark's bus bandwidth
  ``busbw = size / time x factor`` (``2 (n-1)/n`` all-reduce, ``(n-1)/n`` the others). Its floor
  is the bandwidth-optimal algorithm on the datasheet link rate: each chip sends
  ``factor x size`` bytes over its links (``size`` alone for an all-reduce reduced inside the
  switch), and a full-mesh chip uses only its links to the peers taking part.
* encoder: the BERT preset's forward graph (:func:`workbench.models.encoder_graph`) through the
  mapper with the row's stack's options; latency, or ``batch / time`` (sequences/s). Floor as
  for models: every matmul at peak and every weight read once.
* ratio: the two runs reproduced like rows of their own, the ratio of their metrics. Its floor
  check is each run's own (the run nearest its floor is reported).
"""

from __future__ import annotations

from functools import lru_cache

from workbench.cost.collective import all_gather_s, all_reduce_s, mesh_links_per_peer
from workbench.fidelity.reproduce import Reproduction, _class, _graph_floor, reproduce
from workbench.fidelity.schema import (
    CollectiveSetup,
    CorpusError,
    EncoderSetup,
    PublishedRow,
    RatioSetup,
    RunSpec,
)
from workbench.fidelity.schema_kinds import BUS_FACTOR
from workbench.hw import load_hardware
from workbench.hw.schema import Hardware
from workbench.hw.stack import load_stack
from workbench.mapper import map_model
from workbench.models import PRESETS, encoder_graph

__all__ = ["reproduce_kind"]


def _collective_time(s: CollectiveSetup, hw: Hardware) -> float:
    """Seconds of one call, as workbench/cost/collective.py costs it."""
    if s.op == "all_reduce":
        return all_reduce_s(float(s.message_bytes), s.ranks, hw)[0]
    return all_gather_s(float(s.message_bytes), s.ranks, hw)


def _collective_floor(s: CollectiveSetup, hw: Hardware) -> float:
    """Seconds of the bandwidth-optimal algorithm on the datasheet link rate (no latency)."""
    ic = hw.interconnect
    links = float(ic.links)
    if ic.topology == "full-mesh":
        links = min(links, (s.ranks - 1) * mesh_links_per_peer(hw))
    sent = BUS_FACTOR[s.op](s.ranks) * s.message_bytes
    if s.op == "all_reduce" and ic.in_network_reduction:
        sent = float(s.message_bytes)
    return sent / (links * ic.link_bandwidth_bytes_per_s)


def _collective(row: PublishedRow, s: CollectiveSetup, hw: Hardware) -> Reproduction:
    if s.ranks > max(hw.interconnect.mesh_size or 0, 8) or hw.interconnect.links <= 0:
        raise CorpusError(f"{hw.name}: {s.ranks} ranks do not fit one node's chip-to-chip fabric")
    host = load_stack(row.stack).request_overhead_s.value or 0.0  # NOTE: per timed call
    time = _collective_time(s, hw) + host
    floor = _collective_floor(s, hw)
    bus = BUS_FACTOR[s.op](s.ranks) * s.message_bytes
    latency = _collective_time(s.model_copy(update={"message_bytes": 1}), hw) + host
    return Reproduction.rate(bus, time, floor, "overhead" if latency > time / 2 else "interconnect")


def _encoder(row: PublishedRow, s: EncoderSetup, hw: Hardware) -> Reproduction:
    g = encoder_graph(PRESETS[s.model], batch=s.batch, seq=s.seq, dtype=s.dtype)
    m = map_model(g, hw, load_stack(row.stack).map_options())
    floor = _graph_floor(g, hw, s.dtype)
    if row.metric == "items_per_s":
        predicted, bound = s.batch / m.time_s, s.batch / floor
    else:
        predicted, bound = m.time_s, floor
    return Reproduction(
        predicted=predicted,
        bound=bound,
        time_s=m.time_s,
        floor_s=floor,
        bottleneck=_class((m,)),
    )


@lru_cache(maxsize=32)
def _hardware(name: str) -> Hardware:
    return load_hardware(name)


def _run(row: PublishedRow, run: RunSpec) -> Reproduction:
    """One side of a ratio, reproduced as a row of its own."""
    sub = row.model_copy(update={"hardware": run.hardware, "setup": run.setup, "unit": run.unit})
    return reproduce(sub, _hardware(run.hardware))


def _ratio(row: PublishedRow, s: RatioSetup) -> Reproduction:
    num, den = _run(row, s.numerator), _run(row, s.denominator)
    # NOTE: the "bound" of a ratio is the ratio of the two floors' metrics, not a limit.
    predicted, bound = num.predicted / den.predicted, num.bound / den.bound
    tight = min((num, den), key=lambda r: r.time_s / r.floor_s)
    return Reproduction(
        predicted=predicted,
        bound=bound,
        time_s=tight.time_s,
        floor_s=tight.floor_s,
        bottleneck=num.bottleneck,
    )


def reproduce_kind(row: PublishedRow, hw: Hardware) -> Reproduction:
    """Predict a collective, encoder or ratio row (see the module docstring).

    Args:
        row: A corpus row of one of those kinds.
        hw: Its hardware profile (a ratio's runs name their own).

    Returns:
        The :class:`~workbench.fidelity.reproduce.Reproduction`, SI units (B/s, s, items/s,
        or a plain ratio).

    Raises:
        CorpusError: A collective over more ranks than one node's fabric holds.
    """
    s = row.setup
    if isinstance(s, CollectiveSetup):
        return _collective(row, s, hw)
    if isinstance(s, EncoderSetup):
        return _encoder(row, s, hw)
    if isinstance(s, RatioSetup):
        return _ratio(row, s)
    raise CorpusError(f"row {row.id!r}: no reproduction for setup kind {s.kind!r}")
