"""Solve the fitted figures of the attention classes from their calibration rows (issue 10).

Each figure is fitted to ONE calibration row of workbench/fidelity/data/published.yaml and then
tested by the held-out rows; this script prints the value that reproduces the row, to be copied
(rounded) beside its source:

* ``fa2`` softmax_exposed      <- attn.fa2.a100.peak   (workbench/cost/attention_class.py)
* ``fa3`` softmax_exposed      <- attn.fa3.h100.s16k   (workbench/cost/attention_class.py)
* h100-sxm software.attention_warp_mma_fraction <- attn.fa2.h100.peak (hardware/h100-sxm.yaml)

Run from the repository root: ``python scripts/fit_attention_classes.py``. The fractions sit on
top of the matrix engine's solved math rate (workbench/cost/efficiency.py), so rerun this after
any change to the GEMM model or a profile's efficiency, and copy the new figures.
"""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path

# NOTE: fit the checkout this script sits in, not whichever workbench the environment installed.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from workbench.cost import attention_class as ac
from workbench.fidelity.reproduce import reproduce
from workbench.fidelity.schema import load_corpus
from workbench.hw import load_hardware
from workbench.mapper import clear_cache


def _row(rid: str):
    return next(r for r in load_corpus().rows if r.id == rid)


def _solve(predict, target: float, lo: float, hi: float) -> float:
    """Bisection on a parameter that makes the predicted rate fall as it grows."""
    for _ in range(40):
        mid = (lo + hi) / 2
        clear_cache()
        if predict(mid) > target:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


def _class_fit(name: str, rid: str) -> float:
    row = _row(rid)
    hw = load_hardware(row.hardware)
    base = ac.CLASSES[name]

    def predict(e: float) -> float:
        ac.CLASSES[name] = replace(base, softmax_exposed=e)
        return reproduce(row, hw).predicted / 1e12

    e = _solve(predict, row.measured, 0.0, 1.0)
    ac.CLASSES[name] = replace(base, softmax_exposed=e)
    return e


def _warp_fit(rid: str) -> float:
    row = _row(rid)
    hw = load_hardware(row.hardware)

    def predict(f: float) -> float:
        sw = hw.software.model_copy(update={"attention_warp_mma_fraction": 1.0 - f})
        return reproduce(row, hw.model_copy(update={"software": sw})).predicted / 1e12

    return 1.0 - _solve(predict, row.measured, 0.0, 0.95)


def main() -> None:
    """Print each fitted figure with the row it comes from."""
    print(f"fa2 softmax_exposed = {_class_fit('fa2', 'attn.fa2.a100.peak'):.3f}")
    print(f"fa3 softmax_exposed = {_class_fit('fa3', 'attn.fa3.h100.s16k'):.3f}")
    print(f"h100 attention_warp_mma_fraction = {_warp_fit('attn.fa2.h100.peak'):.3f}")


if __name__ == "__main__":
    main()
