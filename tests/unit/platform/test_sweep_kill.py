"""A killed ``workbench sweep --workers 2`` leaves no workers and no resource tracker running.

Each case starts a real sweep in a subprocess, waits until its two pool workers and the
multiprocessing resource tracker exist, sends a signal to the sweep process only, and checks that
every one of those processes is gone (exited or a zombie awaiting its reaper) within a bounded
wait. The waits are bounds on a hang, not timings: the machine may be slow.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

psutil = pytest.importorskip("psutil")

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(sys.platform != "linux", reason="process tree checks use Linux semantics"),
]

_START_BOUND_S = 180.0  # spawn + import of two workers on a loaded 2-core machine
_EXIT_BOUND_S = 60.0


def _gone(proc: psutil.Process) -> bool:
    try:
        return proc.status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def _kind(proc: psutil.Process) -> str:
    try:
        cmd = " ".join(proc.cmdline())
    except psutil.Error:
        return ""
    if "resource_tracker" in cmd:
        return "tracker"
    if "spawn_main" in cmd:
        return "worker"
    return ""


def _wait_for_children(parent: psutil.Process) -> list[psutil.Process]:
    deadline = time.monotonic() + _START_BOUND_S
    while time.monotonic() < deadline:
        kids = parent.children(recursive=True)
        kinds = [_kind(k) for k in kids]
        if kinds.count("worker") >= 2 and "tracker" in kinds:
            return kids
        if not parent.is_running() or parent.status() == psutil.STATUS_ZOMBIE:
            break
        time.sleep(0.2)
    pytest.fail("the sweep did not start two workers and a resource tracker")


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT, signal.SIGKILL])
def test_killed_sweep_leaves_no_processes(tmp_path: Path, signum: int) -> None:
    out = tmp_path / "r.jsonl"
    argv = [sys.executable, "-m", "workbench", "sweep", "--hardware", "h100-sxm", "a100-80gb",
            "--model", "llama2-7b", "gpt2", "--batch", ",".join(str(b) for b in range(1, 65)),
            "--seq", "128,256,512", "--workers", "2", "--out", str(out)]  # fmt: skip
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    # NOTE: stderr to a file, not a pipe: orphaned workers would hold a pipe open.
    errfile = tmp_path / "stderr.txt"
    with errfile.open("wb") as err_fh:
        sweep = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=err_fh, env=env)
    kids: list[psutil.Process] = []
    try:
        kids = _wait_for_children(psutil.Process(sweep.pid))
        sweep.send_signal(signum)
        sweep.wait(timeout=_EXIT_BOUND_S)
        deadline = time.monotonic() + _EXIT_BOUND_S
        while time.monotonic() < deadline and not all(_gone(k) for k in kids):
            time.sleep(0.2)
        left = [f"{k.pid} {_kind(k)}" for k in kids if not _gone(k)]
        assert not left, f"still running after the sweep died: {left}"
        if signum != signal.SIGKILL:
            assert sweep.returncode == 128 + signum
            lines = errfile.read_text().strip().splitlines()
            assert lines[-1].startswith(f"workbench: sweep interrupted by {signum.name}")
        if out.exists():  # every line written is whole; the file resumes
            for line in out.read_text().splitlines():
                json.loads(line)
    finally:
        for proc in [*kids, psutil.Process(sweep.pid) if sweep.poll() is None else None]:
            if proc is not None and not _gone(proc):
                proc.kill()
        sweep.wait(timeout=30)
