"""NCCL's own cost model of a one-node collective: the (algorithm, protocol) it runs, and its time.

NCCL predicts the time of every (algorithm, protocol) pair it may run and picks the fastest
(NVIDIA/nccl src/graph/tuning.cc, ncclTopoTuneModel and ncclTopoGetAlgoTime, read at commit
b6475625fbcaa2c3c0e50eed2fa1255d7514d4a2, release 2.20.3 of 2024-02-13, the generation the
corpus's nccl-tests measurements ran). This module expresses that model for chips on one NVLink
fabric; it is used for profiles whose ``interconnect.nccl_generation`` is set.

For ``N`` chips, ``B`` the fabric's bus bandwidth (``links x link_bandwidth x sustained_fraction``,
the figure NCCL's topology search calls ``nChannels x bwIntra``) and ``S`` bytes::

    time(a, p) = base_lat[a][p] + steps(a) x hop_lat[a][p] + S / algbw(a, p)

* ring: ``steps`` = 2 (N-1) for an all-reduce, N-1 for an all-gather or reduce-scatter;
  ``algbw = busbw x N / steps``.
* tree (an all-reduce only; one node is a chain): ``steps`` = 2 (N-1), ``algbw = busbw / 2``.
* NVLS (an all-reduce reduced in the NVSwitch, Simple protocol only): no per-step latency, a
  fixed ``hop_lat`` of its own; ``algbw = busbw x 5/6 x N/(N+1)``. The 5/6 is NCCL's own
  bus-to-algorithm ratio for NVLS (tuning.cc, "Convert bus BW to algorithm BW"); the N/(N+1) is
  the traffic the switch reduction leaves each chip: its whole buffer goes up once for the
  switch to reduce (``S``) and its reduced shard once for the switch to multicast (``S/N``),
  and it takes in its reduced shard (``S/N``) and every multicast one (``S``): ``(N+1)/N x S``
  each way, "N+1 sends instead of 2N" (S. Bekman, ml-engineering
  network/README.md, section 'SHARP', at commit 29c6b7087c66ce78a0333109e7bfa88b9871a26b).
  NCCL's tuner leaves the N/(N+1) out: it only ranks algorithms, and NVLS wins large messages
  either way. With it, NVLS's bus bandwidth grows with the chips taking part,
  ``2 (N-1)/(N+1) x 5/6 x B`` (1.0 B at 4 chips, where the ring's equals it, 1.30 B at 8),
  as measured (ml-engineering, same section: 8x H200, 8 GiB, NVLS over ring 1.14x at 5 GPUs,
  1.29x at 8; and NVIDIA's maintainer in NVIDIA/nccl-tests issue 212: ~480 GB/s busbw, algbw
  ~275 GB/s, on 8 H100 against 370 GB/s for the ring: this model gives 280 GB/s algbw on
  ``B`` = 378 GB/s).

and the bus bandwidth each protocol reaches out of ``B``:

========  ===========================  ===========================  ===================
protocol  ring                         tree                         what it is
========  ===========================  ===========================  ===================
LL        min(LL cap, B / 4) all-       min(LL cap, 0.92 B / 3.8)    8-byte stores, half
          reduce, B / 3 the others                                   of them flags
LL128     0.92 B                       0.92 B x 7/9                 128-byte lines, 8 of
                                                                     them flags
Simple    B                            0.92 B                       plain copies, a
                                                                     memory fence per step
========  ===========================  ===========================  ===================

Across nodes (``nodes`` > 1, ``chips / nodes`` ranks a node, ``B_net`` one chip's share of the
node's NICs), the same file's multi-node terms::

    ring:  base_lat + (steps - inter_steps) x max(intra_lat, net_overhead) + inter_steps x net_lat
           inter_steps = 2 nodes (all-reduce), nodes - 1 (all-gather, reduce-scatter);
           intra_lat = hwLat[NVLINK] (x1.8 for LL), net_lat = hwLat[NET][Ring],
           net_overhead = 1 us (x3 for Simple: NCCL's getNetOverhead on an Intel host)
    tree:  base_lat + 2 ((chips/nodes - 1) x intra_lat + log2(nodes) x net_lat)

and the bus bandwidth is the slower of the two fabrics, ``min(B, chips/nodes x B_net)`` (a
node's rings each cross one of its NICs, so together they use all of them); LL's cap is
llMaxBws' network row (39 GB/s at 2 nodes, 20.4 beyond, an Intel host: assumption, the host's
CPU vendor is not in a profile). NVLS is a one-node algorithm here (NVLS-tree across nodes is
left out), and so are the tree's multi-node LL128 factor and the per-channel caps. The
multi-node terms are NCCL's model, not checked here against a published multi-node run.

An all-to-all is not in NCCL's tuning tables: NCCL runs it as ``N-1`` grouped send/recv pairs on
its P2P path (:func:`nccl_all_to_all_s`).

NVLS's busbw is ``B`` (NCCL: ``nChannels x min(bwIntra, bwInter)`` on one node). The per-channel
caps NCCL also applies (perChMaxRingLL128Bw, perChMaxTreeBw: 20-39 GB/s a channel) bind only
with fewer channels than NCCL opens on an NVSwitch node and are left out, as are the tree's
size-dependent correction factors (a tree never wins on one node in this model).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

__all__ = [
    "A2A_BASE_LAT_S",
    "A2A_NET_LAT_S",
    "LL_CAP_BYTES_PER_S",
    "NcclChoice",
    "nccl_all_to_all_s",
    "nccl_collective_s",
]

_US = 1e-6
_PROTOCOLS = ("LL", "LL128", "Simple")

# NOTE: tuning.cc at the commit above: baseLat[algorithm][protocol] (us) and
# hwLat[NVLINK][algorithm][protocol] (us per step; NVLS: once per call).
_BASE_LAT = {"tree": (6.8, 14.0, 0.0), "ring": (6.6, 14.0, 8.4), "NVLS": (0.0, 0.0, 0.0)}
_HOP_LAT = {"tree": (0.6, 1.25, 28.0), "ring": (0.6, 1.9, 3.4), "NVLS": (0.0, 0.0, 23.0)}

# NOTE: hwLat[NET][algorithm][protocol] (us per inter-node step), same file and commit.
_NET_LAT = {"tree": (5.0, 8.5, 28.0), "ring": (2.7, 4.0, 14.0)}
#: NCCL's network post overhead per step on an x86 Intel host, us (getNetOverhead; x3 Simple).
_NET_OVERHEAD_US = 1.0
#: LL's cap across nodes (llMaxBws[Intel][2 nodes, more]), bytes/s: assumption, an Intel host.
_LL_CAP_NET_BYTES_PER_S = (39.0e9, 20.4e9)

#: LL protocol's bus-bandwidth cap on one node (llMaxBws[compute capability][one node]), bytes/s.
LL_CAP_BYTES_PER_S = {"volta": 39.0e9, "ampere": 87.7e9, "hopper": 87.7e9}


@dataclass(frozen=True, slots=True, kw_only=True)
class NcclChoice:
    """The pair NCCL's model picks and what it predicts.

    Attributes:
        algorithm: ``ring``, ``tree`` or ``NVLS``.
        protocol: ``LL``, ``LL128`` or ``Simple``.
        time_s: Predicted time of the call, seconds.
        latency_s: Its size-independent part, seconds.
    """

    algorithm: str
    protocol: str
    time_s: float
    latency_s: float

    @property
    def name(self) -> str:
        """Readable label, e.g. ``NCCL ring/LL128``."""
        return f"NCCL {self.algorithm}/{self.protocol}"


def _busbw(op: str, algo: str, proto: str, bus: float, ll_cap: float) -> float:
    """Bus bandwidth (bytes/s) one (algorithm, protocol) reaches out of the fabric's ``bus``."""
    if algo == "NVLS":
        return bus
    if algo == "tree":
        tree = 0.92 * bus
        return {"LL": min(ll_cap, tree / 3.8), "LL128": tree * 7 / 9, "Simple": tree}[proto]
    if proto == "LL":
        return min(ll_cap, bus / (4.0 if op == "all_reduce" else 3.0))
    return 0.92 * bus if proto == "LL128" else bus


def _candidates(op: str, in_network: bool) -> list[tuple[str, str]]:
    pairs = [("ring", p) for p in _PROTOCOLS]
    if op == "all_reduce":
        pairs += [("tree", p) for p in _PROTOCOLS]
        if in_network:
            pairs.append(("NVLS", "Simple"))
    return pairs


def _latency_us(op: str, algo: str, i: int, chips: int, nodes: int) -> float:
    """NCCL's latency term of ``algo`` with protocol index ``i`` (tuning.cc), us."""
    if algo == "NVLS":
        return _BASE_LAT[algo][i] + _HOP_LAT[algo][i]
    intra = _HOP_LAT[algo][i]
    if nodes == 1:
        steps = 2 * (chips - 1) if op == "all_reduce" else chips - 1
        return _BASE_LAT[algo][i] + steps * intra
    if i == 0:
        intra *= 1.8  # NOTE: tuning.cc: LL's intra-node step across nodes
    net = _NET_LAT[algo][i]
    if algo == "tree":
        return _BASE_LAT[algo][i] + 2 * ((chips // nodes - 1) * intra + math.log2(nodes) * net)
    steps = 2 * (chips - 1) if op == "all_reduce" else chips - 1
    inter = 2 * nodes if op == "all_reduce" else nodes - 1
    overhead = _NET_OVERHEAD_US * (3.0 if _PROTOCOLS[i] == "Simple" else 1.0)
    return _BASE_LAT[algo][i] + (steps - inter) * max(intra, overhead) + inter * net


def nccl_collective_s(
    op: str,
    nbytes: float,
    chips: int,
    bus_bytes_per_s: float,
    generation: str,
    in_network: bool,
    *,
    nodes: int = 1,
    net_bytes_per_s: float = 0.0,
) -> NcclChoice:
    """The fastest (algorithm, protocol) by NCCL's model, and its time.

    Args:
        op: ``all_reduce``, ``all_gather`` or ``reduce_scatter``.
        nbytes: Bytes of the call as NCCL counts them (an all-reduce's buffer; an all-gather's
            whole output), bytes.
        chips: Ranks taking part (>= 2).
        bus_bytes_per_s: The node fabric's bus bandwidth ``B``, bytes/s (> 0).
        generation: ``volta``, ``ampere`` or ``hopper`` (NCCL's tuning row).
        in_network: Whether the switch reduces (NVLS is a candidate on one node).
        nodes: Nodes the ranks span (1: one NVLink domain).
        net_bytes_per_s: One chip's share of its node's NIC bandwidth ``B_net``, bytes/s (used
            when ``nodes`` > 1).

    Returns:
        The :class:`NcclChoice` of least predicted time.

    >>> c = nccl_collective_s("all_reduce", 32768, 8, 252e9, "ampere", False)
    >>> c.name, round(c.time_s * 1e6, 1)
    ('NCCL ring/LL', 15.9)
    >>> nccl_collective_s("all_reduce", 2**30, 8, 378e9, "hopper", True).name
    'NCCL NVLS/Simple'
    """
    ll_cap = LL_CAP_BYTES_PER_S[generation]
    bus = bus_bytes_per_s
    if nodes > 1:
        ll_cap = _LL_CAP_NET_BYTES_PER_S[0 if nodes == 2 else 1]
        # NOTE: a node's rings share its NICs: each ring crosses a NIC once a node, so the
        # bus bandwidth across nodes is the node's whole NIC bandwidth (ranks a node x share).
        bus = min(bus, chips // nodes * net_bytes_per_s) if net_bytes_per_s > 0 else bus
    best: NcclChoice | None = None
    for algo, proto in _candidates(op, in_network and nodes == 1):
        i = _PROTOCOLS.index(proto)
        if algo == "NVLS":
            share = 5.0 / 6.0 * chips / (chips + 1)
        elif algo == "tree":
            share = 0.5
        else:
            share = chips / (2 * (chips - 1) if op == "all_reduce" else chips - 1)
        lat = _latency_us(op, algo, i, chips, nodes) * _US
        algbw = _busbw(op, algo, proto, bus, ll_cap) * share
        t = lat + nbytes / algbw
        if best is None or t < best.time_s:
            best = NcclChoice(algorithm=algo, protocol=proto, time_s=t, latency_s=lat)
    assert best is not None
    return best


#: An all-to-all's fixed latency: one send/recv step on NCCL's P2P path, taken as one ring step of
#: the Simple protocol (baseLat[Ring][Simple] 8.4 us + hwLat[NVLINK][Ring][Simple] 3.4 us, tuning.cc
#: above). Assumption: the P2P path has no entry in tuning.cc; checked against nccl-tests
#: alltoall_perf on an H20 node: 10.6 us at 128 B (deepseek-ai/DeepEP issue 303), within 12%.
A2A_BASE_LAT_S = (8.4 + 3.4) * _US
#: Each further node adds one network step (hwLat[NET][Ring][Simple] 14 us, same file).
A2A_NET_LAT_S = 14.0 * _US


def nccl_all_to_all_s(
    nbytes: float,
    chips: int,
    bus_bytes_per_s: float,
    *,
    chips_per_node: int | None = None,
    net_bytes_per_s: float = 0.0,
) -> NcclChoice:
    """An all-to-all of ``nbytes`` per rank as NCCL runs it: ``N-1`` grouped send/recv pairs.

    Each rank keeps ``1/N`` of its buffer and sends ``(N-1)/N`` of it, all peers at once. On one
    node every byte crosses the rank's NVLink bus ``B``; across nodes the ``(N - n)/N`` bound for
    the other nodes (``n`` ranks a node) crosses its NIC share ``B_net``, and the slower path
    sets the time (nccl-tests issue 130, S. Jeaugey: the inter-node share of the traffic "will
    determine the global time"; nccl-tests reports ``busbw = algbw x (N-1)/N``)::

        time = A2A_BASE_LAT_S [+ A2A_NET_LAT_S across nodes]
               + max((N-1)/N x S / B, (N-n)/N x S / B_net)

    Args:
        nbytes: Bytes each rank holds (and ends with), bytes.
        chips: Ranks taking part (>= 2).
        bus_bytes_per_s: One rank's NVLink bus bandwidth ``B``, bytes/s (> 0).
        chips_per_node: Ranks a node (None: all on one node).
        net_bytes_per_s: One rank's share of its node's NIC bandwidth, bytes/s (> 0 when the
            ranks span nodes).

    Returns:
        The :class:`NcclChoice` (algorithm ``p2p``, protocol ``Simple``).

    >>> c = nccl_all_to_all_s(2.6e6, 16, 378e9, chips_per_node=8, net_bytes_per_s=45e9)
    >>> c.name, round(c.time_s * 1e6, 1), round(c.latency_s * 1e6, 1)
    ('NCCL p2p/Simple', 54.7, 25.8)
    """
    n = chips
    per_node = min(chips_per_node or n, n)
    lat = A2A_BASE_LAT_S
    t = (n - 1) / n * nbytes / bus_bytes_per_s
    if per_node < n and net_bytes_per_s > 0:
        lat += A2A_NET_LAT_S
        t = max(t, (n - per_node) / n * nbytes / net_bytes_per_s)
    return NcclChoice(algorithm="p2p", protocol="Simple", time_s=lat + t, latency_s=lat)
