"""Lesson 09, compile-time scheduling against runtime autotuning: tables and self-checks.

The cost model's best plan (tile) for one kernel at many (batch, sequence) points and model
variants, and a measured autotune of a small kernel on the execution engine (NumPy here).
"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from workbench.cost.search import rank
from workbench.execution.backend import resolve_backend
from workbench.execution.measure import measure
from workbench.execution.run import make_inputs
from workbench.exercises._check import CheckResult, compare
from workbench.exercises._claims import Claim
from workbench.exercises._shared import hardware, mapping
from workbench.options import MapOptions
from workbench.tuning import TuneResult, sweep_best_plan
from workbench.tuning.autotune import tune_result

__all__ = [
    "autotune_kernel",
    "candidates_claim",
    "candidates_table",
    "check_distinct_plans",
    "check_model_pick_rank",
    "check_plan_prediction",
    "plan_claim",
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
    """Measure the cost model's best ``k`` tile shapes of one kernel on the execution engine.

    Candidates differ in ``(tile_m, tile_n, tile_k)``: the mapspace's runners-up that differ
    only in raster order or stages run the same NumPy calls, so timing them would rank noise.

    Args:
        model: Preset name.
        hw: Hardware profile the cost model ranks on.
        seq: Tokens (the GEMM's M).
        kernel: Kernel name.
        k: Tile shapes to time.
        repeats: Timed runs per candidate (median kept), after one warm-up.

    Returns:
        The :class:`TuneResult` (candidates in predicted order).
    """
    km = mapping(model, hw, seq=seq).kernel(kernel)
    seen: set[tuple[int, int, int]] = set()
    ranked = []
    for tiling, cost in rank(km.kernel, hardware(hw), MapOptions(), k=64):
        shape = (tiling.tile_m, tiling.tile_n, tiling.tile_k)
        if shape not in seen and tiling.fits:
            seen.add(shape)
            ranked.append((tiling, cost))
    ranked = ranked[:k]
    bk = resolve_backend(None)
    inputs = make_inputs(km.kernel, 0, bk)
    times = [measure(km.kernel, t, backend=bk, inputs=inputs, repeats=repeats) for t, _ in ranked]
    return tune_result(km.kernel.name, bk.name, ranked, times)


def candidates_table(result: TuneResult) -> pd.DataFrame:
    """The timed candidates: tile, split-K, predicted and measured time and rank."""
    return pd.DataFrame(
        [
            {
                "tile": c.tiling.shape,
                "split_k": c.tiling.split_k,
                "predicted_us": round(c.predicted_s * 1e6, 2),
                "measured_ms": round(c.measured.median_s * 1e3, 3),
                "predicted_rank": c.predicted_rank,
                "measured_rank": c.measured_rank,
            }
            for c in result.candidates
        ]
    )


def plan_claim(table: pd.DataFrame) -> Claim:
    """What the best tile does as M (batch x seq) grows, read from :func:`plan_table`.

    Args:
        table: A :func:`plan_table` frame.

    Returns:
        A Markdown sentence: the tile at the smallest and the largest M, and how many distinct
        tiles the table holds.
    """
    rows = sorted(((b * s, str(t)) for (b, s), t in table["best_tile"].items()), key=lambda r: r[0])
    (m_lo, t_lo), (m_hi, t_hi) = rows[0], rows[-1]
    lo = [int(v) for v in t_lo.split("x")]
    hi = [int(v) for v in t_hi.split("x")]
    if lo[0] < hi[0]:
        rows_text = f"a shorter tile ({lo[0]} rows against {hi[0]})"
    elif lo[0] == hi[0]:
        rows_text = f"the same tile_m ({lo[0]}: the engine's minimum, padded for small M)"
    else:
        rows_text = f"a taller tile ({lo[0]} rows against {hi[0]})"
    width = "narrower" if lo[1] < hi[1] else "wider" if lo[1] > hi[1] else "equally wide"
    return Claim(
        f"At M = {m_lo} the best tile is `{t_lo}`: {rows_text}, {width} in N ({lo[1]} against "
        f"{hi[1]}), so more tiles spread over the cores; at M = {m_hi} it is `{t_hi}`, which "
        f"reuses each operand tile more. The table holds {table['best_tile'].nunique()} distinct "
        "tiles: a plan tuned at one end is not the plan at the other."
    )


def candidates_claim(result: TuneResult, hw: str) -> Claim:
    """How the timed candidates differ and whether the model's pick won, from ``result``.

    Args:
        result: An :func:`autotune_kernel` result.
        hw: The profile the cost model predicted for.

    Returns:
        A Markdown sentence: the shapes, the spread of predicted times (µs on ``hw``) and
        whether the predicted first was the measured first.
    """
    cs = result.candidates
    shapes = ", ".join(f"`{c.tiling.shape}`" for c in cs)
    p = [c.predicted_s * 1e6 for c in cs]
    spread = (
        f"all predicted at {p[0]:.3g} µs on `{hw}` (the model cannot tell them apart)"
        if max(p) <= 1.01 * min(p)
        else f"predicted {min(p):.3g} to {max(p):.3g} µs on `{hw}`"
    )
    first = next(c for c in cs if c.predicted_rank == 1)
    won = "was" if first.measured_rank == 1 else "was not"
    return Claim(
        f"The {len(cs)} candidates are distinct tile shapes ({shapes}), {spread}; measured on "
        f"`{result.backend}` in this run, the model's pick {won} the fastest."
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
        hint2="write down each best_tile value the first time it appears, then count the list",
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


def check_plan_prediction(
    prediction: object,
    *,
    model: str = "llama2-7b",
    hw: str = "h100-sxm",
    first: tuple[int, int] = (1, 128),
    second: tuple[int, int] = (8, 16),
    kernel: str = "layers.0.mlp.up_proj",
    strict: bool | None = None,
) -> CheckResult:
    """A prediction: is the cost model's best tile of ``kernel`` the same at two shapes?

    The answer is ``same`` or ``different`` for the two (batch, sequence) points.

    Args:
        prediction: ``"same"`` or ``"different"`` (or a synonym).
        model: Preset name.
        hw: Hardware profile.
        first: The first (batch, sequence length in tokens) point.
        second: The second point.
        kernel: The kernel followed.
        strict: Raise on a wrong answer.
    """
    tiles = [
        sweep_best_plan(model, (b,), (s,), hardware(hw), kernel_name=kernel, progress=False)[0]
        for b, s in (first, second)
    ]
    return compare(
        f"best tile at batch x seq {first[0]}x{first[1]} and {second[0]}x{second[1]}",
        prediction,
        "same" if tiles[0].best_tile == tiles[1].best_tile else "different",
        synonyms={
            "same": ("equal", "identical", "unchanged", "yes"),
            "different": ("differs", "changes", "changed", "no"),
        },
        hint="the GEMM's shape is what the cost model sees: what are its M, N and K at each point?",
        hint2="one of same, different",
        strict=strict,
    )
