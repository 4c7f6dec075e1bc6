"""Memory copies by direction: calls, bytes, time and bandwidth per steady iteration (issue 17)."""

from __future__ import annotations

import pytest

from workbench.evidence import MeasuredKernel, read_trace, write_kineto_trace
from workbench.evidence.copies import copies_by_direction, copy_direction


def _copy(name, start_s, duration_s, it, nbytes, kind="memcpy"):
    return MeasuredKernel(name=name, category="copy", rule="", start_s=start_s,
                          duration_s=duration_s, device=0, stream=8, iteration=it, kind=kind,
                          bytes=nbytes)  # fmt: skip


def _run(tmp_path, copies, steps=3):
    gemm = [
        MeasuredKernel(name="sm90_xmma_gemm_bf16", category="gemm", rule="", start_s=0.01 * i,
                       duration_s=1e-3, device=0, stream=7, iteration=i)
        for i in range(steps)
    ]  # fmt: skip
    kernels = sorted([*gemm, *copies], key=lambda k: k.start_s)
    return read_trace(write_kineto_trace(tmp_path / "t.json", kernels))


@pytest.mark.parametrize(
    ("name", "kind", "direction"),
    [
        ("Memcpy HtoD (Pageable -> Device)", "memcpy", "HtoD"),
        ("Memcpy DtoH (Device -> Pinned)", "memcpy", "DtoH"),
        ("Memcpy DtoD", "memcpy", "DtoD"),
        ("Memcpy PtoP (Device -> Device)", "memcpy", "PtoP"),
        ("memcpy htod", "memcpy", "HtoD"),
        ("Memset (Device)", "memset", "memset"),
        ("Memcpy", "memcpy", "memcpy"),
        ("Memcpy HtoDtoH", "memcpy", "memcpy"),
    ],
)
def test_the_direction_is_the_one_the_name_states(name, kind, direction):
    assert copy_direction(name, kind) == direction


def test_bytes_time_and_bandwidth_per_steady_iteration(tmp_path):
    copies = []
    for it in range(3):
        t = 0.01 * it + 2e-3
        # 1 MB in 100 us (10 GB/s) and 3 MB in 100 us (30 GB/s) HtoD; a 1 KB DtoH; a memset
        copies += [
            _copy("Memcpy HtoD (Pinned -> Device)", t, 1e-4, it, 10**6),
            _copy("Memcpy HtoD (Pinned -> Device)", t + 2e-4, 1e-4, it, 3 * 10**6),
            _copy("Memcpy DtoH (Device -> Pinned)", t + 4e-4, 1e-5, it, 1000),
            _copy("Memset (Device)", t + 5e-4, 2e-6, it, 4096, kind="memset"),
        ]
    run = _run(tmp_path, copies)
    assert len(run.steady_iterations) == 2  # the warm-up step is left out
    by = {c.direction: c for c in copies_by_direction(run)}
    assert set(by) == {"HtoD", "DtoH", "memset"}
    h = by["HtoD"]
    assert h.calls == 2
    assert h.bytes == 4 * 10**6
    assert h.time_s == pytest.approx(2e-4)
    # the duration-weighted mean of 10 and 30 GB/s, not their plain mean of 20 GB/s per copy...
    assert h.bandwidth_bytes_per_s == pytest.approx(20e9)
    assert by["DtoH"].bandwidth_bytes_per_s == pytest.approx(1000 / 1e-5)
    assert by["memset"].bytes == 4096
    assert list(by) == ["HtoD", "DtoH", "memset"]  # the most time first


def test_copies_without_a_size_count_but_never_make_a_rate(tmp_path):
    copies = []
    for it in range(3):
        t = 0.01 * it + 2e-3
        copies += [
            _copy("Memcpy DtoD (Device -> Device)", t, 1e-4, it, None),
            _copy("Memcpy HtoD (Pinned -> Device)", t + 2e-4, 0.0, it, 10**6),
        ]
    by = {c.direction: c for c in copies_by_direction(_run(tmp_path, copies))}
    assert by["DtoD"].calls == 1
    assert by["DtoD"].unsized_calls == 1
    assert by["DtoD"].bandwidth_bytes_per_s is None
    assert by["DtoD"].time_s == pytest.approx(1e-4)
    # a sized copy that took no measurable time: no rate, never an infinite one
    assert by["HtoD"].bandwidth_bytes_per_s is None


def test_a_run_without_copies_has_none(tmp_path):
    assert copies_by_direction(_run(tmp_path, [])) == ()
