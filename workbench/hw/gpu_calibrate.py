"""Turn a CUDA device's measured figures into a hardware profile.

The figures come from :func:`workbench.execution.gpu_probe.probe_gpu` (``workbench calibrate
--backend cupy``); this module only receives that plain dict, so it imports neither CuPy nor the
execution layer. Measured: the matrix-engine peaks (achieved ``cupy.matmul`` rates, so
``efficiency`` stays 1), SM count, shared memory per SM, L2 and HBM capacity, HBM bandwidth (a
device-to-device copy) and the kernel launch cost. Everything else is an assumption and is
listed in the profile's ``assumptions``.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from pydantic import ValidationError

from workbench.errors import HardwareError, first_invalid
from workbench.hw.schema import SCHEMA_VERSION, Hardware

__all__ = ["GPU_SOURCE", "NO_INTERCONNECT", "gpu_profile"]

GPU_SOURCE = "measured on this machine by workbench calibrate --backend cupy"
#: The interconnect of a calibrated profile: one device measured, no chip-to-chip links.
NO_INTERCONNECT = {
    "links": 0,
    "link_bandwidth_bytes_per_s": 0.0,
    "latency_s": 0.0,
    "topology": "none",
}

# Assumed figures (Hopper-class defaults; see the h200 profile and its sources).
_TILE = (64, 8, 16)  # wgmma m64nNk16 (PTX ISA), as hardware/h200.yaml
_SMEM_PER_SM = 228 * 1024  # H100/H200: 228 KiB per SM
_REGS_PER_SM = 256 * 1024  # 64 K 32-bit registers per SM
_CLOCK_HZ = 1.5e9
_SMEM_BYTES_PER_CLK = 128  # per SM
_L2_OVER_HBM = 1.7  # hardware/h200.yaml: 8.2 / 4.8 TB/s
_TDP_W = 700.0  # H100/H200 SXM board power
_PJ_PER_BYTE = {"registers": 0.075, "smem": 0.75, "l2": 3.75, "hbm": 32.0}  # h200.yaml
_TF32_OVER_VECTOR = 7.4  # H100 SXM: 494.7 tf32 / 66.9 fp32 vector TFLOP/s


def _need(figures: dict[str, Any], key: str) -> Any:
    if key not in figures:
        raise HardwareError(f"gpu_profile: figures lack {key!r} (expected probe_gpu's output)")
    return figures[key]


def _positive(value: Any, where: str) -> float:
    v = float(value)
    if not v > 0:
        raise HardwareError(f"gpu_profile: {where}: must be > 0, got {value!r}")
    return v


def _memory(
    dev: dict[str, Any], hbm_bw: float, sms: int, clock: float, assumed: list[str]
) -> list[dict[str, Any]]:
    smem = int(dev.get("smem_per_sm_bytes", 0) or 0)
    if smem <= 0:
        smem = _SMEM_PER_SM
        assumed.append(f"shared memory per SM {smem // 1024} KiB (H100/H200 figure; not reported)")
    l2 = int(dev.get("l2_bytes", 0) or 0)
    if l2 <= 0:
        l2 = 50 * 2**20
        assumed.append("L2 50 MiB (H100/H200 figure; not reported)")
    smem_bw = _SMEM_BYTES_PER_CLK * sms * clock
    l2_bw = _L2_OVER_HBM * hbm_bw
    assumed += [
        f"register file {_REGS_PER_SM // 1024} KiB per SM, bandwidth 3x shared memory",
        f"shared memory bandwidth {smem_bw / 1e12:.3g} TB/s = {_SMEM_BYTES_PER_CLK} B/clk/SM "
        "x SMs x clock (not measured)",
        f"L2 bandwidth {l2_bw / 1e12:.3g} TB/s = {_L2_OVER_HBM} x the measured copy bandwidth "
        "(ratio of hardware/h200.yaml's L2 and HBM figures; not measured)",
        "per-level energy (pJ/byte) copied from hardware/h200.yaml (scaled 45 nm figures)",
    ]
    rows = (
        ("registers", "register", "per_core", _REGS_PER_SM, 3 * smem_bw),
        ("smem", "sram", "per_core", smem, smem_bw),
        ("l2", "cache", "shared", l2, max(l2_bw, hbm_bw)),
        ("hbm", "dram", "shared", int(_need(dev, "total_memory_bytes")), hbm_bw),
    )
    return [
        {"name": n, "kind": k, "scope": s, "capacity_bytes": c, "bandwidth_bytes_per_s": bw,
         "energy_pj_per_byte": _PJ_PER_BYTE[n]}
        for n, k, s, c, bw in rows
    ]  # fmt: skip


def gpu_profile(figures: dict[str, Any], *, name: str = "gpu") -> Hardware:
    """Build a :class:`Hardware` from a GPU probe's figures.

    Args:
        figures: :func:`workbench.execution.gpu_probe.probe_gpu`'s output: ``device`` (with
            ``name``, ``sm_count``, ``total_memory_bytes``; optional ``l2_bytes``,
            ``smem_per_sm_bytes``, ``clock_hz``; 0 = not reported), ``matmul_flops_per_s``
            (dtype -> FLOP/s), ``copy_bytes_per_s`` (bytes/s), ``launch_s`` (seconds) and
            ``notes``.
        name: Profile name.

    Returns:
        A validated profile; measured figures are achieved rates (FLOP/s, bytes/s, seconds),
        and every assumed figure is listed in ``assumptions``.

    Raises:
        HardwareError: A figure is missing or not positive (one line naming it).
    """
    dev = _need(figures, "device")
    peaks = {k: _positive(v, f"matmul_flops_per_s.{k}") for k, v in
             _need(figures, "matmul_flops_per_s").items()}  # fmt: skip
    if not peaks:
        raise HardwareError("gpu_profile: matmul_flops_per_s is empty")
    hbm_bw = _positive(_need(figures, "copy_bytes_per_s"), "copy_bytes_per_s")
    launch = _positive(_need(figures, "launch_s"), "launch_s")
    sms = int(_positive(_need(dev, "sm_count"), "device.sm_count"))
    assumed: list[str] = [
        f"native tile {_TILE[0]}x{_TILE[1]}x{_TILE[2]} (Hopper wgmma m64nNk16 shape; not measured)"
    ]
    clock = float(dev.get("clock_hz", 0) or 0)
    if clock <= 0:
        clock = _CLOCK_HZ
        assumed.append(f"clock {clock / 1e9:.3g} GHz (not reported by the runtime)")
    if "fp32" in peaks:
        vector = peaks["fp32"]
        assumed.append("vector fp32 peak = the measured fp32 cupy.matmul rate (SGEMM runs on the "
                       "CUDA cores without tensor cores)")  # fmt: skip
    else:
        vector = min(peaks.values()) / _TF32_OVER_VECTOR
        assumed.append(f"vector fp32 peak = slowest matmul rate / {_TF32_OVER_VECTOR} (H100 tf32 "
                       "to fp32 vector ratio; fp32 matmul not measured)")  # fmt: skip
    levels = _memory(dev, hbm_bw, sms, clock, assumed)
    idle = 0.1 * _TDP_W
    energy = {k: (_TDP_W - idle) / v * 1e12 for k, v in peaks.items()}
    energy.setdefault("fp32", (_TDP_W - idle) / vector * 1e12)
    assumed += [
        "graph launch 0.375x and barrier 0.5x the measured launch (ratios of hardware/h200.yaml)",
        f"power: TDP {_TDP_W:.0f} W and idle 10% (H100/H200 SXM class, not measured); pJ/FLOP = "
        "(TDP - idle) / measured rate per dtype",
        "no chip-to-chip links modelled (one device measured)",
        "software: CUDA stack maturity 0.95, fused attention and graph capture available",
    ]
    when = datetime.now(UTC).isoformat(timespec="seconds")
    quick = " --quick" if figures.get("quick") else ""
    data = {
        "schema_version": SCHEMA_VERSION,
        "name": name,
        "vendor": "this machine's GPU",
        "description": f"{dev.get('name', 'GPU')} measured by workbench calibrate --backend cupy"
        f"{quick} at {when}",
        "scheduling": "hardware_scheduled",  # NOTE: the GPU's schedulers issue its tiles
        "matrix_engine": {
            "cores": sms,
            "native_tile_m": _TILE[0],
            "native_tile_n": _TILE[1],
            "native_tile_k": _TILE[2],
            "clock_hz": clock,
            "peak_flops_per_s": peaks,
        },
        "vector_unit": {"peak_flops_per_s": {"fp32": vector}},
        "memory": levels,
        "interconnect": dict(NO_INTERCONNECT),
        "overheads": {
            "kernel_launch_s": launch,
            "graph_launch_s": 0.375 * launch,
            "barrier_s": 0.5 * launch,
        },
        "power": {"tdp_w": _TDP_W, "idle_w": idle, "energy_pj_per_flop": energy},
        "software": {
            "maturity": 0.95,
            "fused_attention": True,
            "graph_capture": True,
            "notes": "assumption: CUDA stack (cuBLAS, FlashAttention, CUDA graphs)",
        },
        "sources": (GPU_SOURCE,),
        "assumptions": (*figures.get("notes", ()), *assumed),
    }
    try:
        return Hardware.model_validate(data)
    except ValidationError as exc:
        raise HardwareError(f"gpu_profile: {first_invalid(exc)}") from None
