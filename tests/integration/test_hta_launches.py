"""Host-side launch delay, runtime call time and queue length per stream against Holistic Trace
Analysis 0.5 on the same traces (issue 17): the generated traces of ``kineto_writer`` and the real
public ones in ``tests/data/hta``.

HTA's figures: ``get_cuda_kernel_launch_stats`` (per correlation id: ``cpu_duration``, the launch
call's duration, and ``launch_delay``, kernel start minus the call's end, clipped at 0), joined to
the stream of each GPU activity; ``get_queue_length_summary`` (per stream: the queue-length
series' samples described). Counts and the launch figures agree to rounding; the queue mean to
1% (HTA sorts a launch and a kernel start at the same instant in no fixed order, which changes
one sample in a tie).
"""

from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path

import pytest
from hta_oracle import hta_load, hta_load_file
from kineto_writer import KINDS

from workbench.evidence import MeasuredRun, read_trace
from workbench.evidence.launches import launch_stats

DATA = Path(__file__).parents[1] / "data" / "hta"
pytestmark = pytest.mark.filterwarnings(
    "ignore:The inplace keyword:Warning", "ignore:invalid value encountered:RuntimeWarning"
)


def _hta(analysis, rank: int) -> dict[int, dict[str, float]]:
    """Per stream: HTA's launch count, runtime call and delay means and medians (us), delay
    maximum (us), and queue-length count, mean, median and maximum."""
    stats = analysis.get_cuda_kernel_launch_stats(ranks=[rank], visualize=False)[rank]
    df = analysis.t.get_trace(rank)
    gpu = df[df["stream"].ge(0)][["correlation", "stream"]]
    joined = stats.merge(gpu, on="correlation")
    out: dict[int, dict[str, float]] = {}
    for stream, g in joined.groupby("stream"):
        out[int(stream)] = {
            "launches": len(g),
            "runtime_mean": float(g["cpu_duration"].mean()),
            "runtime_median": float(g["cpu_duration"].median()),
            "delay_mean": float(g["launch_delay"].mean()),
            "delay_median": float(g["launch_delay"].median()),
            "delay_max": float(g["launch_delay"].max()),
        }
    queue = analysis.get_queue_length_summary(ranks=[rank])
    for (_, stream), row in queue["queue_length"].iterrows():
        out[int(stream)] |= {
            "queue_samples": float(row["count"]),
            "queue_mean": float(row["mean"]),
            "queue_median": float(row["50%"]),
            "queue_max": float(row["max"]),
        }
    return out


def _ours(run: MeasuredRun) -> dict[int, dict[str, float]]:
    return {
        r.stream: {
            "launches": r.launches,
            "runtime_mean": r.runtime.mean * 1e6,
            "runtime_median": r.runtime.median * 1e6,
            "delay_mean": r.delay.mean * 1e6,
            "delay_median": r.delay.median * 1e6,
            "delay_max": r.delay.maximum * 1e6,
            "queue_samples": 2.0 * r.launches,
            "queue_mean": r.queue.mean,
            "queue_median": r.queue.median,
            "queue_max": r.queue.maximum,
        }
        for r in launch_stats(run)
        if r.stream is not None
    }


def _agree(ours, theirs, label):
    assert ours.keys() == theirs.keys(), label
    for stream, mine in ours.items():
        ref = theirs[stream]
        print(
            f"{label} stream {stream}: workbench {mine['launches']} launches, call "
            f"{mine['runtime_mean']:.2f} us, delay median {mine['delay_median']:.1f} us, queue "
            f"mean {mine['queue_mean']:.3f} max {mine['queue_max']:.0f}; HTA {ref['launches']} "
            f"launches, call {ref['runtime_mean']:.2f} us, delay median "
            f"{ref['delay_median']:.1f} us, queue mean {ref['queue_mean']:.3f} max "
            f"{ref['queue_max']:.0f}"
        )
        assert mine["launches"] == ref["launches"]
        assert mine["queue_samples"] == ref["queue_samples"]
        for key in ("runtime_mean", "runtime_median", "delay_mean", "delay_median", "delay_max"):
            # microseconds: Kineto writes ts/dur to 1 ns at best; HTA keeps them as read
            assert mine[key] == pytest.approx(ref[key], rel=1e-6, abs=1e-3), (stream, key)
        assert mine["queue_mean"] == pytest.approx(ref["queue_mean"], rel=0.01, abs=0.01)
        assert abs(mine["queue_median"] - ref["queue_median"]) <= 1, stream
        assert mine["queue_max"] == ref["queue_max"], stream


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_generated_traces_launches_match_hta(tmp_path, kind):
    trace = KINDS[kind]()
    path = trace.write(tmp_path / kind)
    _agree(_ours(read_trace(path)), _hta(hta_load(tmp_path / kind), trace.rank), kind)


def test_a_gpu_bound_trace_queues_and_a_cpu_bound_one_does_not(tmp_path):
    gpu = launch_stats(read_trace(KINDS["gpu_bound"]().write(tmp_path / "g")))
    cpu = launch_stats(read_trace(KINDS["cpu_bound"]().write(tmp_path / "c")))
    main = next(r for r in gpu if r.stream == 7)
    assert main.queue.maximum > 10
    assert main.delay.median > 1e-3  # the GPU runs milliseconds behind the host
    (only,) = cpu
    assert only.queue.maximum == 1
    assert only.delay.maximum < 10e-6


@pytest.mark.slow  # HTA parses each real trace once a session (~2-3 s each, shared)
@pytest.mark.parametrize(
    ("name", "rank"), [("dlrm_v100_rank1.json.gz", 1), ("dlrm_a100.json.gz", 3)]
)
def test_real_dlrm_traces_launches_match_hta(name, rank):
    run = read_trace(DATA / name)
    _agree(_ours(run), _hta(hta_load_file(DATA / name), rank), name)


def test_v100_main_stream_runs_tens_of_ms_behind_the_host():
    # The GPU lags the host (the lesson 06 pair): hundreds of operations queued on stream 7.
    rows = {r.stream: r for r in launch_stats(read_trace(DATA / "dlrm_v100_rank1.json.gz"))}
    assert rows[7].delay.median > 0.03
    assert rows[7].queue.mean > 100


def test_alexnet_whole_trace_launches_match_hta(tmp_path):
    shutil.copy(DATA / "alexnet_a100.json.gz", tmp_path / "alexnet_a100.json.gz")
    run = read_trace(DATA / "alexnet_a100.json.gz")
    # HTA has no ProfilerStep here and takes the whole trace: so do we, for the comparison.
    whole = dataclasses.replace(
        run, kernels=tuple(dataclasses.replace(k, iteration=0) for k in run.kernels)
    )
    _agree(_ours(whole), _hta(hta_load(tmp_path), 0), "alexnet (whole trace)")
