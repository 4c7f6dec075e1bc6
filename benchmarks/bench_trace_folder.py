"""Read a job's folder of rank traces beside Holistic Trace Analysis: time, and memory per worker.

Run: ``python benchmarks/bench_trace_folder.py [--ranks 64] [--rank-mb 200] [--no-hta]
[--no-dask] [--folder DIR]``.

The folder: ``--ranks`` generated Kineto rank traces of about ``--rank-mb`` MB each
(:func:`workbench.evidence.jobgen.write_job_folder`: synchronous data-parallel steps of GEMM,
elementwise and all-reduce kernels with their launch events; rank 1's GEMMs 1.3x slower, so
there is a straggler to find). The issue's folder is 64 ranks of 200 MB (12.8 GB on disk, and
HTA needs several times that in memory); the defaults, 8 ranks of 10 MB, run in about a minute
on two cores. The sizes used are printed first.

Each reader runs in its own child process, so the peak resident memory (``ru_maxrss``, MiB) of
one never counts another's:

- ``workbench`` in-process: :func:`workbench.platform.job_run.read_job` with ``workers=1`` (each
  rank read, reduced to a summary and dropped, one at a time);
- HTA 0.5's ``TraceAnalysis(trace_dir=...)`` on the same folder (it parses every rank into a
  DataFrame held together) with its temporal breakdown;
- ``workbench`` on a Dask ``LocalCluster`` of 2 worker processes (one thread each), the
  reduction mapped over the ranks as ``--scheduler`` does; each worker's own peak is read from
  the worker (``client.run``), and the same run on half the ranks shows that a worker's peak
  does not grow with the number of ranks (it holds one rank at a time).

Goal (issue 31): the peak per worker bounded regardless of the number of ranks (full folder
within 1.25x of the half folder's); time and memory are printed beside HTA's as ratios.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

_GOAL_BOUNDED = 1.25


def _peak_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: KiB


def _children_peak_mib() -> float:
    """The largest peak of this process's finished children (HTA parses ranks in a pool)."""
    return resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024


def _child(which: str, folder: str) -> None:
    """Read ``folder`` with one reader; print its figures as one JSON line."""
    if which == "hta":
        import logging

        logging.disable(logging.WARNING)
        from hta.trace_analysis import TraceAnalysis
    else:
        from workbench.platform.job_run import read_job
    base = _peak_mib()
    start = time.perf_counter()
    out: dict[str, object] = {}
    if which == "hta":
        analysis = TraceAnalysis(trace_dir=folder, include_last_profiler_step=True)
        analysis.get_temporal_breakdown(visualize=False)
        out["ranks"] = len(analysis.t.traces)
    elif which == "workbench":
        job = read_job(folder, workers=1)
        out["ranks"] = len(job.ranks)
        out["stragglers"] = [[s.rank, s.category] for s in job.stragglers]
    else:
        out.update(_dask(folder))
    out.update(seconds=time.perf_counter() - start, peak_mib=_peak_mib(), base_mib=base,
               child_peak_mib=_children_peak_mib())  # fmt: skip
    print(json.dumps(out))


def _dask(folder: str) -> dict[str, object]:
    """Reduce on a LocalCluster of 2 worker processes; each worker's own peak RSS."""
    import distributed

    from workbench.platform.job_run import read_job

    with (
        distributed.LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
        ) as cluster,
        distributed.Client(cluster) as client,
    ):
        before = client.run(_peak_mib)
        job = read_job(folder, scheduler=client)
        after = client.run(_peak_mib)
    return {
        "ranks": len(job.ranks),
        "stragglers": [[s.rank, s.category] for s in job.stragglers],
        "worker_peak_mib": max(after.values()),
        "worker_base_mib": max(before.values()),
    }


def _measure(which: str, folder: Path) -> dict:
    done = subprocess.run(
        [sys.executable, __file__, "--child", which, str(folder)],
        capture_output=True, text=True, check=False, env={**os.environ},
    )  # fmt: skip
    if done.returncode != 0:
        raise SystemExit(f"{which} failed on {folder}:\n{done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def _write(folder: Path, ranks: int, rank_mb: float) -> None:
    from workbench.evidence.jobgen import layers_for, write_job_folder

    steps, buckets = 6, 4
    layers = layers_for(int(rank_mb * 1e6), steps=steps, buckets=buckets)
    write_job_folder(folder, ranks=ranks, steps=steps, buckets=buckets, layers=layers,
                     jitter=0.02, slow=(1, "gemm", 1.3), seed=1)  # fmt: skip


def _run(root: Path, args: argparse.Namespace) -> None:
    """Write the folder under ``root``, read it with each reader and print the figures."""
    full, half = root / "full", root / "half"
    _write(full, args.ranks, args.rank_mb)
    half.mkdir(parents=True, exist_ok=True)
    for f in sorted(full.iterdir())[: max(args.ranks // 2, 1)]:
        os.link(f, half / f.name)
    size = sum(f.stat().st_size for f in full.iterdir()) / 1e6
    print(f"folder: {args.ranks} ranks of {args.rank_mb:g} MB asked, {size:,.0f} MB on disk")
    ours = _measure("workbench", full)
    print(f"workbench in-process {ours['seconds']:8.2f} s  peak {ours['peak_mib']:7.0f} MiB  "
          f"stragglers {ours['stragglers']}")  # fmt: skip
    if not args.no_hta:
        hta = _measure("hta", full)
        t, m = hta["seconds"] / ours["seconds"], hta["peak_mib"] / ours["peak_mib"]
        print(f"HTA TraceAnalysis    {hta['seconds']:8.2f} s  peak {hta['peak_mib']:7.0f} MiB  "
              f"(its largest parser process {hta['child_peak_mib']:.0f} MiB), {hta['ranks']} "
              f"ranks: {t:.1f}x the time, {m:.1f}x the peak memory of the workbench")  # fmt: skip
    if not args.no_dask:
        whole, part = _measure("dask", full), _measure("dask", half)
        ratio = whole["worker_peak_mib"] / part["worker_peak_mib"]
        print(f"LocalCluster 2 workers {whole['seconds']:6.2f} s  peak per worker "
              f"{whole['worker_peak_mib']:.0f} MiB on {whole['ranks']} ranks, "
              f"{part['worker_peak_mib']:.0f} MiB on {part['ranks']} ranks "
              f"({ratio:.2f}x): {'goal met' if ratio <= _GOAL_BOUNDED else 'GOAL NOT MET'} "
              f"(bounded: within {_GOAL_BOUNDED}x); stragglers {whole['stragglers']}")  # fmt: skip
        if whole["stragglers"] != ours["stragglers"]:
            print("GOAL NOT MET: the LocalCluster and in-process stragglers differ")


def main() -> None:
    """Generate the folder, read it with each reader, print the figures and the goal."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--ranks", type=int, default=8, help="ranks (issue: 64; default 8)")
    p.add_argument("--rank-mb", type=float, default=10.0, help="MB per rank (issue: 200)")
    p.add_argument("--no-hta", action="store_true", help="skip HTA")
    p.add_argument("--no-dask", action="store_true", help="skip the LocalCluster")
    p.add_argument("--folder", help="where to write the folder (default: a temporary one)")
    p.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.child:
        _child(*args.child)
        return
    root = Path(args.folder or tempfile.mkdtemp(prefix="wb-job-"))
    try:
        _run(root, args)
    finally:
        if not args.folder:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
