"""``workbench calibrate``: measure this machine and write it as a hardware profile."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from workbench._cli.argtypes import add_blas_threads, name
from workbench._cli.commands import add_command

__all__ = ["register"]


def register(subparsers: Any) -> None:
    """Add the ``calibrate`` command."""
    parser = add_command(subparsers, "calibrate", _calibrate)
    parser.add_argument(
        "--output",
        type=Path,
        default=None,
        metavar="FILE",
        help="default host.yaml (gpu.yaml with --backend cupy)",
    )
    parser.add_argument(
        "--backend",
        choices=("numpy", "cupy"),
        default="numpy",
        help="numpy: this host (default); cupy: the CUDA device, via CuPy",
    )
    parser.add_argument("--quick", action="store_true", help="a few seconds, small sizes")
    parser.add_argument(
        "--name",
        type=name,
        default=None,
        help="profile name (default host; gpu with --backend cupy): one printable line",
    )
    add_blas_threads(
        parser,
        "BLAS threads while measuring (default 1, as workbench validate; 0 = library default)",
    )


def _calibrate_gpu(args: argparse.Namespace) -> int:
    from workbench.execution.gpu_probe import probe_gpu
    from workbench.hw.calibrate import gpu_profile, write_profile

    hw = gpu_profile(probe_gpu(quick=args.quick), name=args.name or "gpu")
    path = write_profile(hw, args.output or Path("gpu.yaml"))
    peaks = ", ".join(f"{k} {v / 1e12:.3g}" for k, v in hw.matrix_engine.peak_flops_per_s.items())
    print(
        f"wrote {path}: matmul TFLOP/s {peaks}, {hw.matrix_engine.cores} SMs, "
        f"HBM copy {hw.offchip.bandwidth_bytes_per_s / 1e9:.4g} GB/s, "
        f"launch {hw.overheads.kernel_launch_s * 1e6:.3g} us"
    )
    print(f"see it with: workbench hardware show {path}")
    return 0


def _calibrate(args: argparse.Namespace) -> int:
    if args.backend == "cupy":
        return _calibrate_gpu(args)
    from workbench.execution.probe import probe_engine
    from workbench.execution.threads import blas_threads
    from workbench.hw.calibrate import calibrate, write_profile

    with blas_threads(args.blas_threads or None):
        hw = calibrate(quick=args.quick, name=args.name or "host", engine=probe_engine)
    path = write_profile(hw, args.output or Path("host.yaml"))
    print(
        f"wrote {path}: fp32 {hw.peak_flops('fp32') / 1e9:.3g} GFLOP/s, "
        f"{hw.sram.name} {hw.sram.capacity_bytes // 1024} KiB per core, "
        f"DRAM {hw.offchip.bandwidth_bytes_per_s / 1e9:.3g} GB/s, "
        f"launch {hw.overheads.kernel_launch_s * 1e6:.3g} us, "
        f"tile issue {hw.overheads.tile_issue_s * 1e6:.3g} us, cores {hw.matrix_engine.cores}"
    )
    print(f"see it with: workbench hardware show {path}")
    return 0
