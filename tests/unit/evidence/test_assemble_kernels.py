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
