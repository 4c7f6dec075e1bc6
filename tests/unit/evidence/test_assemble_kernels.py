"""``assemble`` builds each MeasuredKernel without its keyword constructor (speed): same object."""

from __future__ import annotations

import dataclasses

import pytest

from workbench.evidence import MeasuredKernel
from workbench.evidence._assemble import Activity, _KernelDraft


def test_a_drafted_kernel_is_the_kernel_its_constructor_builds():
    a = Activity(
        name="k", kind="memcpy", start_s=1.5, duration_s=0.25, device=1, stream=7,
        correlation=9, grid=(1, 2, 3), block=(4, 5, 6), registers_per_thread=32,
        shared_memory_bytes=1024, bytes=4096,
    )  # fmt: skip
    kernel = _KernelDraft(a, "copy", "activity:memcpy", 3, 4, 1.25, 0.125)
    kernel.__class__ = MeasuredKernel  # type: ignore[assignment]
    built = MeasuredKernel(
        name="k", category="copy", rule="activity:memcpy", start_s=1.5, duration_s=0.25,
        device=1, stream=7, rank=3, iteration=4, grid=(1, 2, 3), block=(4, 5, 6),
        registers_per_thread=32, shared_memory_bytes=1024, correlation=9, kind="memcpy",
        bytes=4096, launch_start_s=1.25, launch_duration_s=0.125,
    )  # fmt: skip
    assert type(kernel) is MeasuredKernel
    for field in dataclasses.fields(MeasuredKernel):  # NOTE: an unset field raises here
        assert getattr(kernel, field.name) == getattr(built, field.name), field.name
    assert kernel == built
    assert hash(kernel) == hash(built)
    with pytest.raises(dataclasses.FrozenInstanceError):
        kernel.name = "other"  # type: ignore[misc]


def _kernel_event(name, ts_us, dur_us, stream, corr):
    args = {"correlation": corr, "stream": stream, "device": 0}
    return {"ph": "X", "cat": "kernel", "name": name, "pid": 0, "tid": stream, "ts": ts_us,
            "dur": dur_us, "args": args}  # fmt: skip


def test_kernels_overlapping_on_one_stream_are_clipped_not_summed(tmp_path):
    import json

    from workbench.evidence import read_trace

    events = [
        _kernel_event("volta_sgemm_a", 100.0, 50.0, 7, 1),
        _kernel_event("volta_sgemm_b", 120.0, 50.0, 7, 2),  # overlaps a by 30 us
        _kernel_event("volta_sgemm_c", 130.0, 10.0, 7, 3),  # wholly inside b
        _kernel_event("volta_sgemm_d", 120.0, 50.0, 8, 4),  # another stream: overlap is fine
    ]
    path = tmp_path / "t.json"
    path.write_text(json.dumps({"traceEvents": events}))
    run = read_trace(path)
    by_name = {k.name: k for k in run.kernels}
    assert by_name["volta_sgemm_a"].duration_s == pytest.approx(50e-6)
    assert by_name["volta_sgemm_b"].start_s == pytest.approx(150e-6)
    assert by_name["volta_sgemm_b"].duration_s == pytest.approx(20e-6)
    assert by_name["volta_sgemm_c"].duration_s == 0.0
    assert by_name["volta_sgemm_d"].duration_s == pytest.approx(50e-6)
    stream7 = sum(k.duration_s for k in run.kernels if k.stream == 7)
    assert stream7 == pytest.approx(70e-6)  # the stream's busy time, counted once
    (warning,) = [w for w in run.warnings if "same stream" in w]
    assert warning.startswith("2 GPU activities overlap")
