"""Triage speed: one ``workbench triage`` process on the issue-18 compound regression.

Goal (issue 18): under 3 s on 2 cores for ``workbench triage`` (records already written).

    python benchmarks/bench_triage.py [--repeats 3]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

RUN = ["run", "--model", "llama2-7b", "--seq", "512", "--search", "heuristic"]
CAND = ["--no-fusion", "gemm_epilogue", "--kernel-dtype", "*down_proj*=fp32"]


def _cli(*args: str) -> float:
    """Seconds one ``python -m workbench`` process takes (output discarded)."""
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-m", "workbench", *args], check=False, capture_output=True)
    return time.perf_counter() - t0


def main() -> None:
    """Print the median wall time of a cold ``workbench triage`` process, seconds."""
    p = argparse.ArgumentParser()
    p.add_argument("--repeats", type=int, default=3)
    repeats = p.parse_args().repeats
    with tempfile.TemporaryDirectory() as tmp:
        a, b = Path(tmp) / "a.json", Path(tmp) / "b.json"
        _cli(*RUN, "--record", str(a))
        _cli(*RUN, *CAND, "--record", str(b))
        times = [_cli("triage", str(a), str(b), "--changed", "compiler") for _ in range(repeats)]
    print(f"workbench triage (fp32 down_proj + epilogue off, llama2-7b s512): "
          f"{statistics.median(times):.2f} s median of {repeats} (goal < 3 s)")  # fmt: skip


if __name__ == "__main__":
    main()
