"""Collectives on the chip-to-chip fabric: the all-reduce algorithm each topology runs.

An all-reduce of ``S`` bytes per chip over ``N`` chips, with ``b`` the sustained one-direction
bandwidth of one link (``link_bandwidth_bytes_per_s x sustained_fraction``), ``L`` the links of a
chip, ``l`` the per-step latency and ``c`` the fixed latency of one collective call
(``collective_latency_s``: launch, protocol set-up and the final flag wait that every algorithm
pays once, whatever its step count)::

    switch (NVSwitch, one ring over all links):  c + 2 (N-1)/N x S / (L b)   + 2 (N-1) l
    switch with in-network reduction (NVLS):     min(ring, c_nvls + S / (L b) + 2 l)
        (each chip sends its data to the switch once and receives the sum once; c_nvls is the
        in-network algorithm's own fixed latency, ``in_network_latency_s``. Like NCCL, which
        predicts each algorithm's time and runs the fastest, a small message takes the ring's
        low-latency protocol and a large one the switch reduction.)
    ring (a bidirectional ring, both links):     c + 2 (N-1)/N x S / (L b)   + 2 (N-1) l
    full-mesh (P links to each peer of a mesh):  c + 2 (N-1)/N x S / ((N-1) P b) + 2 l
        (P = L / (mesh_size - 1): a Gaudi 3 box wires 3 of its 21 scale-up ports to each of 7
        peers, so 2 chips share 3 links, not 21)
    torus-kd (k dimensions; a bidirectional ring per dimension, reduce-scatter dimension by
              dimension then all-gather back, with the data cut into k parts that start on
              different dimensions, so every link is busy at once):
        c + sum over d of 2 (n_d - 1)/n_d x S_d / (L b) + 2 (n_d - 1) l,
        S_d = S / (n_1 ... n_{d-1})

with ``N = n_1 x ... x n_k`` as near-equal factors (a 2x2 slice for 4 chips on a 2-D torus).

A GPU profile that names its ``interconnect.nccl_generation`` on a switch fabric is costed by
NCCL's own model instead (workbench/cost/nccl.py): the fastest of ring, tree and NVLS with the
LL, LL128 and Simple protocols, each with its fixed and per-step latency and its share of the
bus bandwidth; its all-to-all is NCCL's grouped send/recv, with the P2P path's latency floor.
Where the chips outnumber a node (``interconnect.scale_out.chips_per_node``), the same model
takes NCCL's inter-node steps and the slower of the NVLink bus and the chip's NIC share.
"""

from __future__ import annotations

from dataclasses import replace

from workbench._format import fmt_bytes, fmt_time
from workbench.cost.bottleneck import classify
from workbench.cost.model import Cost, energy, launch_and_sync
from workbench.cost.nccl import nccl_all_to_all_s, nccl_collective_s
from workbench.hw.schema import Hardware
from workbench.lowering.kernel import Kernel
from workbench.scheduling.tiling import Tiling

__all__ = [
    "all_gather_s",
    "all_reduce_s",
    "all_to_all_s",
    "collective_cost",
    "mesh_links_per_peer",
    "torus_dims",
]


def torus_dims(chips: int, k: int) -> tuple[int, ...]:
    """Near-equal factors of ``chips`` over ``k`` torus dimensions, largest first.

    >>> torus_dims(4, 2), torus_dims(8, 3), torus_dims(6, 2)
    ((2, 2), (2, 2, 2), (3, 2))
    """
    dims = [1] * k
    rest = chips
    for d in range(k):
        target = round(rest ** (1 / (k - d)))
        f = next(
            (x for x in sorted(range(1, rest + 1), key=lambda x: abs(x - target)) if rest % x == 0),
            rest,
        )
        dims[d], rest = f, rest // f
    return tuple(sorted(dims, reverse=True))


def _link_bw(hw: Hardware) -> float:
    ic = hw.interconnect
    return ic.link_bandwidth_bytes_per_s * ic.sustained_fraction


def mesh_links_per_peer(hw: Hardware) -> float:
    """Links a full-mesh chip has to each peer: ``links / (mesh_size - 1)`` (1 per peer by default).

    >>> from workbench.hw import load_hardware
    >>> mesh_links_per_peer(load_hardware("gaudi3")), mesh_links_per_peer(load_hardware("mi300x"))
    (3.0, 1.0)
    """
    ic = hw.interconnect
    peers = (ic.mesh_size or ic.links + 1) - 1
    return ic.links / peers if peers > 0 else 0.0


def _ring(nbytes: float, n: int, hw: Hardware) -> tuple[float, float]:
    """(time, its latency part) of a ring all-reduce over all links, seconds."""
    ic = hw.interconnect
    lat = ic.collective_latency_s + 2 * (n - 1) * ic.latency_s
    return lat + 2 * (n - 1) / n * nbytes / (ic.links * _link_bw(hw)), lat


def _nccl(op: str, nbytes: float, n: int, hw: Hardware) -> tuple[float, float, str] | None:
    """NCCL's own choice and time on a one-node NVLink fabric, or None where it does not apply."""
    ic = hw.interconnect
    if ic.nccl_generation is None or ic.topology != "switch":
        return None
    bus = ic.links * _link_bw(hw)
    per_node, net = _scale_out(n, hw)
    if op == "all_to_all":
        c = nccl_all_to_all_s(nbytes, n, bus, chips_per_node=per_node, net_bytes_per_s=net)
    else:
        nodes = -(-n // per_node)
        c = nccl_collective_s(op, nbytes, n, bus, ic.nccl_generation, ic.in_network_reduction,
                              nodes=nodes, net_bytes_per_s=net)  # fmt: skip
    return c.time_s, c.latency_s, c.name


def _scale_out(n: int, hw: Hardware) -> tuple[int, float]:
    """(chips a node, one chip's sustained NIC share in bytes/s) for ``n`` chips (0: one node)."""
    so = hw.interconnect.scale_out
    if so is None or n <= so.chips_per_node:
        return n, 0.0
    return so.chips_per_node, so.bandwidth_bytes_per_s * so.sustained_fraction


def _all_reduce(nbytes: float, n: int, hw: Hardware) -> tuple[float, float, str]:
    """(time, latency part, algorithm) of the all-reduce the fabric runs (see module doc)."""
    ic = hw.interconnect
    b, lat = _link_bw(hw), ic.latency_s
    topo = ic.topology
    nccl = _nccl("all_reduce", nbytes, n, hw)
    if nccl is not None:
        return nccl
    if topo == "switch" and ic.in_network_reduction:
        ring, ring_lat = _ring(nbytes, n, hw)
        nvls_lat = ic.in_network_latency_s + 2 * lat
        nvls = nvls_lat + nbytes / (ic.links * b)
        if nvls <= ring:
            return nvls, nvls_lat, "NVLink-switch in-network reduction (NVLS)"
        return ring, ring_lat, "ring over all links"
    if topo == "full-mesh":
        used = (n - 1) * mesh_links_per_peer(hw)
        fixed = ic.collective_latency_s + 2 * lat
        t = fixed + 2 * (n - 1) / n * nbytes / (used * b)
        peers = f"{n - 1} peer" + "s" * (n > 2)
        return t, fixed, f"direct to {peers} ({used:g} links)"
    if topo.startswith("torus-") and topo[6:-1].isdigit():
        k = int(topo[6:-1])
        t, fixed, size = ic.collective_latency_s, ic.collective_latency_s, nbytes
        dims = torus_dims(n, k)
        for nd in dims:
            if nd > 1:
                t += 2 * (nd - 1) / nd * size / (ic.links * b) + 2 * (nd - 1) * lat
                fixed += 2 * (nd - 1) * lat
                size /= nd
        shape = "x".join(str(d) for d in dims)
        return t, fixed, f"{k}-D torus {shape}, bidirectional ring per dimension"
    ring, ring_lat = _ring(nbytes, n, hw)
    return ring, ring_lat, "ring over all links"


def all_reduce_s(nbytes: float, chips: int, hw: Hardware) -> tuple[float, str]:
    """Time of an all-reduce of ``nbytes`` per chip over ``chips`` chips, and its algorithm.

    Args:
        nbytes: Bytes each chip holds (and ends with), bytes.
        chips: Chips taking part.
        hw: Platform (its interconnect).

    Returns:
        ``(seconds, algorithm name)``; ``inf`` without links.

    >>> from workbench.hw import load_hardware
    >>> t, algo = all_reduce_s(1e9, 8, load_hardware("h100-sxm"))
    >>> algo, round(t * 1e3, 2)
    ('NCCL NVLS/Simple', 3.59)
    >>> t, algo = all_reduce_s(8192, 8, load_hardware("h100-sxm"))  # a decode step's activations
    >>> algo, round(t * 1e6, 1)
    ('NCCL ring/LL', 15.2)
    """
    ic = hw.interconnect
    if chips <= 1:
        return 0.0, "none"
    if ic.links <= 0 or _link_bw(hw) <= 0:
        return float("inf"), "none"
    t, _, algo = _all_reduce(nbytes, chips, hw)
    return t, algo


def all_gather_s(out_bytes: float, chips: int, hw: Hardware) -> float:
    """Ring all-gather of ``out_bytes`` output per chip: ``c + (N-1)/N x out / (L b) + (N-1) l``."""
    ic = hw.interconnect
    n, b = chips, _link_bw(hw)
    if n <= 1:
        return 0.0
    if ic.links <= 0 or b <= 0:
        return float("inf")
    nccl = _nccl("all_gather", out_bytes, n, hw)
    if nccl is not None:
        return nccl[0]
    net = (n - 1) / n * out_bytes / (ic.links * b)
    return ic.collective_latency_s + net + (n - 1) * ic.latency_s


def all_to_all_s(nbytes: float, chips: int, hw: Hardware) -> float:
    """All-to-all of ``nbytes`` per chip (each peer gets a ``1/N`` slice), seconds.

    NCCL runs it as ``N-1`` concurrent send/recv pairs, so the cost is the bytes each of a
    chip's links must carry, plus the fixed call latency ``c`` and the per-hop latency ``l``::

        switch:        c + (N-1)/N x S / (L b) + l          (every peer one hop away)
        full-mesh:     c + S/N / (P b) + l                  (P links to each peer)
        ring / torus:  c + S/N x sum_d min(d, N-d) / (L b) + N/2 l
                       (a slice to the peer d steps away crosses min(d, N-d) links of a
                       bidirectional ring; a torus is costed as one ring over all chips,
                       an upper bound for k > 1 dimensions)

    On a fabric that runs NCCL (``nccl_generation`` on a switch), NCCL's P2P model instead
    (:func:`workbench.cost.nccl.nccl_all_to_all_s`: its latency floor, and the NICs across nodes).

    >>> from workbench.hw import load_hardware
    >>> round(all_to_all_s(142.6e6, 2, load_hardware("v100-sxm2")) * 1e3, 2)  # DLRM's exchange
    0.6
    >>> round(all_to_all_s(2.6e6, 16, load_hardware("h100-sxm")) * 1e6, 1)  # two DGX nodes
    54.7
    """
    ic = hw.interconnect
    n, b = chips, _link_bw(hw)
    if n <= 1 or nbytes <= 0:
        return 0.0
    if ic.links <= 0 or b <= 0:
        return float("inf")
    nccl = _nccl("all_to_all", nbytes, n, hw)
    if nccl is not None:
        return nccl[0]
    if ic.topology == "switch":
        link_s = (n - 1) / n * nbytes / (ic.links * b)
    elif ic.topology == "full-mesh":
        link_s = nbytes / n / (mesh_links_per_peer(hw) * b)
    else:
        hops = sum(min(d, n - d) for d in range(1, n))
        link_s = nbytes / n * hops / (ic.links * b)
    return _all_to_all_latency_s(n, hw) + link_s


def _all_to_all_latency_s(n: int, hw: Hardware) -> float:
    """The part of an all-to-all over ``n`` chips that no byte count changes, seconds."""
    ic = hw.interconnect
    nccl = _nccl("all_to_all", 0.0, n, hw) if ic.links > 0 and _link_bw(hw) > 0 else None
    if nccl is not None:
        return nccl[1]
    hops = 1 if ic.topology in ("switch", "full-mesh") else n / 2
    return ic.collective_latency_s + hops * ic.latency_s


def collective_cost(
    kernel: Kernel, hw: Hardware, launch: str, host_s: float | None = None
) -> tuple[Tiling, Cost]:
    """The (trivial) tiling and the cost of a collective kernel, its algorithm in the evidence.

    Args:
        kernel: A collective kernel (``link_bytes`` is what a ring would send per chip).
        hw: Platform.
        launch: ``"eager"`` or ``"graph"``.
        host_s: Host time per eager launch, seconds (None: the profile's ``kernel_launch_s``).

    Returns:
        ``(Tiling, Cost)``; the class is ``interconnect`` unless launch or sync dominate.
    """
    n = kernel.chips
    if kernel.engine_reason.startswith("AllGather"):
        # NOTE: link_bytes is a ring's (N-1)/N x output per chip.
        net = all_gather_s(kernel.link_bytes * n / max(n - 1, 1), n, hw)
        lat = all_gather_s(0.0, n, hw) if n > 1 else 0.0
        algo = "ring all-gather"
    elif kernel.engine_reason.startswith("AllToAll"):
        # NOTE: link_bytes is (N-1)/N x the tensor each chip holds.
        net = all_to_all_s(kernel.link_bytes * n / max(n - 1, 1), n, hw)
        lat = _all_to_all_latency_s(n, hw) if n > 1 else 0.0
        algo = "all-to-all (send/recv pairs)"
        if _nccl("all_to_all", 0.0, n, hw) is not None:
            algo = "NCCL all-to-all (send/recv pairs, Simple)"
    elif n > 1 and hw.interconnect.links > 0 and _link_bw(hw) > 0:
        # NOTE: link_bytes is a ring all-reduce's 2 (N-1)/N x tensor bytes per chip.
        net, lat, algo = _all_reduce(kernel.link_bytes * n / (2 * (n - 1)), n, hw)
    else:
        net, algo = all_reduce_s(kernel.link_bytes, n, hw)
        lat = 0.0
    launch_s, sync_s = launch_and_sync(
        net, hw, launch=launch, host_s=host_s, drains=kernel.barriers
    )
    tiling = Tiling(
        tile_m=1, tile_n=1, tile_k=1, source="heuristic", sram_capacity_bytes=hw.sram.capacity_bytes
    )
    total = net + launch_s + sync_s
    e = energy(hw, dtype=kernel.dtype, matmul_flops=0, vector_flops=kernel.vector_flops,
               traffic={}, link_bytes=kernel.link_bytes * 1.0, seconds=total)  # fmt: skip
    cost = Cost(network_s=net, exec_s=net, launch_s=launch_s, sync_s=sync_s, total_s=total,
                energy_j=e)  # fmt: skip
    cls, evidence = classify(kernel, tiling, cost, hw)
    if cls == "interconnect":
        evidence = (
            f"interconnect-bound: {fmt_bytes(kernel.link_bytes)} per chip over {n} chips, "
            f"{algo}: {fmt_time(net)}, of which {fmt_time(min(lat, net))} is latency "
            "(fixed per call and per step)"
        )
    else:
        evidence = f"{evidence}; algorithm: {algo}"
    return tiling, replace(cost, bottleneck=cls, evidence=evidence)
