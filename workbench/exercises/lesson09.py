"""Lesson 09, compile-time scheduling against runtime autotuning: tables and self-checks.

The cost model's best plan (tile) for one kernel at many (batch, sequence) points and model
variants, and a measured autotune of a small kernel on the execution engine (NumPy here).
"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from workbench.exercises._check import CheckResult, compare
from workbench.exercises._shared import hardware, mapping
from workbench.tuning import TuneResult, autotune, sweep_best_plan

__all__ = [
    "autotune_kernel",
    "candidates_table",
    "check_distinct_plans",
    "check_model_pick_rank",
    "plan_table",
    "variant_table",
]


def plan_table(
    model: str,
    hw: str,
    *,
    batches: Sequence[int],
    seqs: Sequence[int],
    kernel: str = "layers.0.mlp.up_proj",
) -> pd.DataFrame:
    """The cost model's best tile of ``kernel`` at every (batch, seq) (compile-time plan)."""
    rows = sweep_best_plan(model, batches, seqs, hardware(hw), kernel_name=kernel, progress=False)
    return pd.DataFrame(
        [
            {
                "batch": r.batch,
                "seq": r.seq,
                "best_tile": r.best_tile,
                "predicted_us": round(r.predicted_s * 1e6, 2),
            }
            for r in rows
        ]
    ).set_index(["batch", "seq"])


def variant_table(
    models: Sequence[str], hw: str, *, seq: int = 512, kernel: str = "layers.0.mlp.up_proj"
) -> pd.DataFrame:
    """The best tile of the same layer in different model variants at one shape."""
    rows = []
    for m in models:
        km = mapping(m, hw, seq=seq).kernel(kernel)
        g = km.kernel.gemm
        rows.append(
            {
                "model": m,
                "gemm": f"{g.m}x{g.n}x{g.k}" if g else "",
                "best_tile": km.tiling.shape,
                "waves": km.tiling.waves,
                "wave_efficiency": round(km.tiling.wave_efficiency, 3),
            }
        )
    return pd.DataFrame(rows).set_index("model")


def autotune_kernel(
    model: str,
    hw: str,
    *,
    seq: int = 64,
    kernel: str = "layers.0.mlp.up_proj",
    k: int = 3,
    repeats: int = 3,
) -> TuneResult:
    """Measure the cost model's top-``k`` tilings of one kernel on the execution engine."""
    km = mapping(model, hw, seq=seq).kernel(kernel)
    return autotune(km.kernel, hardware(hw), k=k, repeats=repeats, progress=False)


def candidates_table(result: TuneResult) -> pd.DataFrame:
    """The timed candidates: tile, predicted and measured time and rank."""
    return pd.DataFrame(
        [
            {
                "tile": c.tiling.shape,
                "predicted_us": round(c.predicted_s * 1e6, 2),
                "measured_ms": round(c.measured.median_s * 1e3, 3),
                "predicted_rank": c.predicted_rank,
                "measured_rank": c.measured_rank,
            }
            for c in result.candidates
        ]
    )


def check_distinct_plans(
    answer: int, *, table: pd.DataFrame, strict: bool | None = None
) -> CheckResult:
    """Check how many different best tiles a plan table holds."""
    return compare(
        "distinct_plans",
        answer,
        int(table["best_tile"].nunique()),
        hint="count the different values in the best_tile column",
        hint2="plans['best_tile'].nunique()",
        strict=strict,
    )


def check_model_pick_rank(
    answer: float, *, result: TuneResult, strict: bool | None = None
) -> CheckResult:
    """Check the measured rank of the cost model's first choice (1 = it was fastest)."""
    expected = result.candidates[0].measured_rank if result.candidates else 1.0
    return compare(
        "model_pick_rank",
        answer,
        expected,
        hint="find predicted_rank 1 and read its measured_rank",
        hint2="the row whose predicted_rank is 1; its measured_rank is an integer",
        strict=strict,
    )
