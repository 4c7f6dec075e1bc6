"""Lesson 09, compile-time scheduling against runtime autotuning: tables and self-checks.

The cost model's best plan (tile) for one kernel at many (batch, sequence) points and model
variants, and a measured autotune of a small kernel on the execution engine (NumPy here).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import pandas as pd

from workbench.cost.model import Bottleneck, Cost
from workbench.cost.search import rank
from workbench.errors import WorkbenchError
from workbench.exercises._check import CheckResult
from workbench.exercises._claims import Claim, gated
from workbench.exercises._lesson09_host import (
    HostTune,
    candidates_frame,
    gemm_products,
    host_autotune,
)
from workbench.exercises._shared import hardware, mapping
from workbench.exercises._text import LessonText
from workbench.mapper import KernelMapping
from workbench.options import MapOptions, TileOverride
from workbench.report.charts.tiles import forced_tile
from workbench.scheduling.tiling import Tiling
from workbench.tuning import sweep_best_plan

__all__ = [
    "LAB",
    "LAB_MOVES",
    "LabSetting",
    "LabStep",
    "autotune_kernel",
    "candidates_claim",
    "candidates_table",
    "check_distinct_plans",
    "check_plan_prediction",
    "check_tile_products",
    "check_waves",
    "lab_claim",
    "lab_prediction",
    "lab_steps",
    "like_with_like_claim",
    "measured_pitfall_claim",
    "plan_claim",
    "plan_table",
    "products_claim",
    "shape_takeaway_claim",
    "static_plan_claim",
    "variant_claim",
    "variant_table",
]


_TEXT = LessonText("lesson09")


@dataclass(frozen=True, slots=True, kw_only=True)
class LabSetting:
    """The tiling lab's constructor arguments (prefill, batch 1, bf16: the lab's defaults).

    Attributes:
        model: Preset name.
        kernel: The GEMM kernel under study.
        hardware: Hardware profile name.
        seq: Tokens (the GEMM's M).
    """

    model: str
    kernel: str
    hardware: str
    seq: int


#: The tiling lab as the lesson builds it (``TilingLab(model=..., kernel=..., ...)``).
LAB = LabSetting(model="gpt2", kernel="layers.0.mlp.up_proj", hardware="h100-sxm", seq=64)
#: The slider moves the lesson instructs, in order, each from where the previous one left.
LAB_MOVES: tuple[tuple[str, int], ...] = (("tile_n", 128), ("tile_n", 32))
#: The lab's sliders: a setting is ``(tile_m, tile_n, tile_k, stages, split_k)``.
_LAB_CONTROLS = ("tile_m", "tile_n", "tile_k", "stages", "split_k")


def plan_table(
    model: str,
    hardware_name: str,
    *,
    batches: Sequence[int],
    seqs: Sequence[int],
    kernel: str = "layers.0.mlp.up_proj",
) -> pd.DataFrame:
    """The cost model's best tile of ``kernel`` at every (batch, seq) (compile-time plan)."""
    rows = sweep_best_plan(
        model, batches, seqs, hardware(hardware_name), kernel_name=kernel, progress=False
    )
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
    models: Sequence[str],
    hardware_name: str,
    *,
    seq: int = 512,
    kernel: str = "layers.0.mlp.up_proj",
) -> pd.DataFrame:
    """The best tile of the same layer in different model variants at one shape."""
    rows = []
    for m in models:
        km = mapping(m, hardware_name, seq=seq).kernel(kernel)
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


def plan_claim(table: pd.DataFrame) -> Claim:
    """What the best tile does as M (batch x seq) grows, read from :func:`plan_table`.

    Args:
        table: A :func:`plan_table` frame.

    Returns:
        A Markdown sentence: the tile at the smallest and the largest M, and how many distinct
        tiles the table holds; hidden until Exercise 1 (that count) is solved or revealed.
    """
    rows = sorted(((b * s, str(t)) for (b, s), t in table["best_tile"].items()), key=lambda r: r[0])
    (m_lo, t_lo), (m_hi, t_hi) = rows[0], rows[-1]
    lo = [int(v) for v in t_lo.split("x")]
    hi = [int(v) for v in t_hi.split("x")]
    claim = _TEXT.claim(
        "plan",
        m_lo=m_lo,
        tile_lo=t_lo,
        rows_lo=lo[0],
        rows_hi=hi[0],
        cols_lo=lo[1],
        cols_hi=hi[1],
        m_hi=m_hi,
        tile_hi=t_hi,
        distinct=table["best_tile"].nunique(),
    )
    # NOTE: its count of distinct tiles answers Exercise 1.
    return gated(claim, after=DISTINCT_EXERCISE, label="Exercise 1")


#: Exercise 1's name (its check and the claim it gates).
DISTINCT_EXERCISE = "distinct_plans"


def check_distinct_plans(
    answer: int, *, table: pd.DataFrame, strict: bool | None = None
) -> CheckResult:
    """Check how many different best tiles a plan table holds."""
    return _TEXT.check(
        "distinct_plans",
        DISTINCT_EXERCISE,
        answer,
        int(table["best_tile"].nunique()),
        strict=strict,
    )


def check_plan_prediction(
    prediction: object,
    *,
    model: str = "llama2-7b",
    hardware_name: str = "h100-sxm",
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
        hardware_name: Hardware profile name.
        first: The first (batch, sequence length in tokens) point.
        second: The second point.
        kernel: The kernel followed.
        strict: Raise on a wrong answer.
    """
    tiles = [
        sweep_best_plan(
            model, (b,), (s,), hardware(hardware_name), kernel_name=kernel, progress=False
        )[0]
        for b, s in (first, second)
    ]
    return _TEXT.check(
        "plan_prediction",
        f"best tile at batch x seq {first[0]}x{first[1]} and {second[0]}x{second[1]}",
        prediction,
        "same" if tiles[0].best_tile == tiles[1].best_tile else "different",
        synonyms={
            "same": ("equal", "identical", "unchanged", "yes"),
            "different": ("differs", "changes", "changed", "no"),
        },
        strict=strict,
    )


# --- the tiling lab's instructions, predicted as the lab predicts ------------------------------


@dataclass(frozen=True, slots=True)
class LabStep:
    """One lab instruction: set slider ``control`` to ``value``, from ``before`` to ``after``.

    ``before`` and ``after`` are the sliders' values ``(tile_m, tile_n, tile_k, stages,
    split_k)``.
    """

    control: str
    value: int
    before: tuple[int, int, int, int, int]
    after: tuple[int, int, int, int, int]

    @property
    def instruction(self) -> str:
        """The instruction as the lesson says it (Markdown)."""
        return _TEXT.render("lab_instruction", control=self.control, value=self.value)


def _lab_kernel(lab: LabSetting) -> KernelMapping:
    # NOTE: the lab maps build_graph(model, phase="prefill", batch=1, seq=seq) with no options.
    return mapping(lab.model, lab.hardware, seq=lab.seq).kernel(lab.kernel)


def lab_prediction(
    setting: tuple[int, int, int, int, int], *, lab: LabSetting = LAB
) -> tuple[Tiling, Cost]:
    """The lab's prediction at slider values ``setting`` (its own forced-tile ranking)."""
    m, n, k, stages, split_k = setting
    km = _lab_kernel(lab)
    forced = forced_tile(km.kernel.name, m, n, k, split_k=split_k, stages=stages)
    return rank(km.kernel, hardware(lab.hardware), MapOptions(tiles=(forced,)), k=1)[0]


def lab_steps(
    moves: tuple[tuple[str, int], ...] = LAB_MOVES, *, lab: LabSetting = LAB
) -> tuple[LabStep, ...]:
    """The lab instructions as data, from the searched tiling the lab starts at.

    Raises:
        WorkbenchError: An unknown slider, or a move that changes nothing.
    """
    t = _lab_kernel(lab).tiling
    at: tuple[int, int, int, int, int] = (t.tile_m, t.tile_n, t.tile_k, t.stages, t.split_k)
    steps = []
    for control, value in moves:
        if control not in _LAB_CONTROLS:
            raise WorkbenchError(f"the tiling lab has no slider {control!r}")
        i = _LAB_CONTROLS.index(control)
        values = list(at)
        values[i] = value
        nxt = (values[0], values[1], values[2], values[3], values[4])
        if nxt == at:
            raise WorkbenchError(f"the instruction {control} -> {value} changes nothing")
        steps.append(LabStep(control, value, at, nxt))
        at = nxt
    return tuple(steps)


def _binding_bytes(t: Tiling, c: Cost) -> tuple[str, float]:
    b = Bottleneck.parse(c.bottleneck)
    level = b.level if b.is_bandwidth else ""
    return level, dict(t.traffic).get(level, 0.0)


def lab_claim(moves: tuple[tuple[str, int], ...] = LAB_MOVES, *, lab: LabSetting = LAB) -> Claim:
    """What each of :func:`lab_steps` does to the lab's tiles, SRAM use and predicted time.

    Returns:
        A Markdown list: per step, tiles on the cores, SRAM (KiB of capacity), predicted time
        (µs) before and after, and the reason read from the numbers (fewer tiles than cores, or
        more traffic at the binding level); then what **Measure** does.
    """
    lines = []
    cores = hardware(lab.hardware).matrix_engine.cores
    for step in lab_steps(moves, lab=lab):
        (ta, ca), (tb, cb) = (
            lab_prediction(step.before, lab=lab),
            lab_prediction(step.after, lab=lab),
        )
        slower = cb.total_s > ca.total_s
        level, bytes_a = _binding_bytes(ta, ca)
        _, bytes_b = _binding_bytes(tb, cb)
        busy_a, busy_b = min(ta.tiles, cores), min(tb.tiles, cores)
        if busy_b != busy_a and (busy_b < busy_a) == slower:
            why = "cores"
        elif level and bytes_b != bytes_a and (bytes_b > bytes_a) == slower:
            why = "traffic"
        else:
            why = "unknown"
        lines.append(
            _TEXT.render(
                "lab_step",
                instruction=f"{step.instruction[0].upper()}{step.instruction[1:]}",
                tiles_after=tb.tiles,
                cores=cores,
                tiles_before=ta.tiles,
                sram_after=tb.sram_bytes / 1024,
                sram_capacity=tb.sram_capacity_bytes / 1024,
                sram_before=ta.sram_bytes / 1024,
                us_after=cb.total_s * 1e6,
                us_before=ca.total_s * 1e6,
                slower=slower,
                why=why,
                level=level,
                traffic_ratio=bytes_b / bytes_a if why == "traffic" else None,
            )
        )
    steps = lab_steps(moves, lab=lab)
    start_s = lab_prediction(steps[0].before, lab=lab)[1].total_s
    ends = [lab_prediction(st.after, lab=lab)[1].total_s for st in steps]
    if start_s < min(ends):
        lines.append(_TEXT.render("lab_no_gain", us=start_s * 1e6))
    lines.append(_TEXT.render("lab_measure"))
    return Claim("\n".join(lines))


# --- claims on the plan tables -----------------------------------------------------------------


def variant_claim(table: pd.DataFrame) -> Claim:
    """What the model variants change, read from :func:`variant_table`.

    Returns:
        Markdown: whether the best tile differs between variants, and the range of waves and
        wave efficiency.
    """
    tiles = table["best_tile"].unique()
    w, e = table["waves"], table["wave_efficiency"]
    return _TEXT.claim(
        "variant",
        tiles=list(tiles),
        variants=len(table),
        waves_min=w.min(),
        waves_max=w.max(),
        efficiency_min=e.min(),
        efficiency_max=e.max(),
    )


def _tiles_by(table: pd.DataFrame, fixed: str) -> list[str]:
    """For each value of ``fixed`` (``batch`` or ``seq``), the tiles along the other axis."""
    other = "batch" if fixed == "seq" else "seq"
    out = []
    for value, g in table["best_tile"].groupby(level=fixed):
        if g.nunique() > 1:
            out.append(
                _TEXT.render(
                    "tiles_by",
                    fixed=fixed,
                    value=value,
                    other=other,
                    along=[str(v) for v in g.index.get_level_values(other)],
                    tiles=list(g),
                )
            )
    return out


def shape_takeaway_claim(plans: pd.DataFrame, variants: pd.DataFrame) -> Claim:
    """Which of batch, sequence and model width move the best tile, read from the tables.

    Returns:
        A Markdown bullet: the rows where batch (at a fixed sequence) and sequence (at a fixed
        batch) change the tile, and whether the variants' tiles differ.
    """
    by_batch = _tiles_by(plans, "seq")  # the tile along batch, at one sequence length
    by_seq = _tiles_by(plans, "batch")  # the tile along the sequence, at one batch
    moved = [name for name, rows in (("batch", by_batch), ("sequence", by_seq)) if rows]
    return _TEXT.claim(
        "shape_takeaway",
        moved=moved,
        where=[rows[0] for rows in (by_batch, by_seq) if rows],
        width_moves=variants["best_tile"].nunique() > 1,
    )


def _forced_ratio(
    model: str, hardware_name: str, kernel: str, tile: Tiling, batch: int, seq: int
) -> float:
    """Predicted time of ``kernel`` at (batch, seq) with ``tile``'s shape forced, over its best."""
    own = mapping(model, hardware_name, batch=batch, seq=seq).kernel(kernel)
    forced = TileOverride(pattern=kernel, m=tile.tile_m, n=tile.tile_n, k=tile.tile_k)
    _, cost = rank(own.kernel, hardware(hardware_name), MapOptions(tiles=(forced,)), k=1)[0]
    return cost.total_s / own.cost.total_s


def static_plan_claim(
    model: str = "llama2-7b",
    hardware_name: str = "h100-sxm",
    *,
    tuned_at: tuple[int, int] = (1, 16),
    shapes: tuple[tuple[int, int], ...] = ((8, 128), (1, 2048), (64, 2048)),
    kernel: str = "layers.0.mlp.up_proj",
) -> Claim:
    """The cost of shipping the tile tuned at one shape for every shape, predicted.

    The best tile at ``tuned_at`` (batch, tokens) is forced at each of ``shapes`` (stages and
    split-K still searched) and set against that shape's own best; and the other way round, the
    best tile of the last shape forced at ``tuned_at``.

    Returns:
        A Markdown bullet: per shape, the shipped tile's predicted time over the best tile's,
        and the reverse ratio.
    """
    tile = mapping(model, hardware_name, batch=tuned_at[0], seq=tuned_at[1]).kernel(kernel).tiling
    parts = [
        _TEXT.render(
            "static_part",
            ratio=_forced_ratio(model, hardware_name, kernel, tile, b, s),
            batch=b,
            seq=s,
        )
        for b, s in shapes
    ]
    last = (
        mapping(model, hardware_name, batch=shapes[-1][0], seq=shapes[-1][1]).kernel(kernel).tiling
    )
    back = _forced_ratio(model, hardware_name, kernel, last, *tuned_at)
    cls = (
        mapping(model, hardware_name, batch=tuned_at[0], seq=tuned_at[1])
        .kernel(kernel)
        .cost.bottleneck
    )
    return _TEXT.claim(
        "static_plan",
        batch=tuned_at[0],
        seq=tuned_at[1],
        tile=tile.shape,
        parts=parts,
        last_batch=shapes[-1][0],
        last_seq=shapes[-1][1],
        last_tile=last.shape,
        free=back < 1.005,  # NOTE: within half a percent the tile costs nothing
        back=back,
        bottleneck=cls,
    )


# --- section 3: measured on this host (not checked by nbval: times differ between runs) -------


#: Rank a kernel's tiles on the calibrated host profile and time them here: one BLAS thread, a
#: warm-up and ``repeats`` timed runs each, ties within the p10-p90 spread left unranked, the same
#: tiles predicted on ``gpu`` for comparison only (the lesson's name for
#: :func:`workbench.exercises._lesson09_host.host_autotune`).
autotune_kernel = host_autotune


def candidates_table(tune: HostTune) -> pd.DataFrame:
    """The timed candidates: host prediction, measured median and p10-p90, ranks, GPU prediction."""
    return candidates_frame(tune)


def _order(tune: HostTune, seconds: Sequence[float]) -> list[str]:
    pairs = sorted(zip(seconds, (c.tiling.shape for c in tune.result.candidates), strict=True))
    return [shape for _, shape in pairs]


def candidates_claim(tune: HostTune) -> Claim:
    """What the measurement can and cannot rank, and how the host model's order fares.

    Returns:
        A Markdown sentence: how close the host model's top two are predicted, whether their
        measurements overlap, whether the model's pick is measurably fastest, tied or slower,
        and Spearman's rho over the ranks the measurement resolves.
    """
    r = tune.result
    cs = r.candidates
    pick = cs[0]
    tied = [c.tiling.shape for c in r.tied_best]
    verdict = ("tied" if len(tied) > 1 else "won") if pick in r.tied_best else "lost"
    return _TEXT.claim(
        "host_candidates",
        n=len(cs),
        runs=len(pick.measured.samples),
        first=cs[0].tiling.shape,
        second=cs[1].tiling.shape if len(cs) > 1 else cs[0].tiling.shape,
        gap=(cs[1].predicted_s / cs[0].predicted_s - 1) if len(cs) > 1 else 0.0,
        top_tied=len(cs) > 1 and cs[1].measured_rank == cs[0].measured_rank,
        verdict=verdict,
        tied=tied,
        slower=r.gain_over_model,
        rho=r.spearman,
        rho_note=r.spearman_note,
    )


def like_with_like_claim(tune: HostTune) -> Claim:
    """The same tiles ordered by the GPU profile and by the host profile (only one is checked here).

    The measurement on this host checks the host profile's order; the GPU's is about a GPU.

    Returns:
        A Markdown sentence: both predicted orders and whether they agree.
    """
    host_order = _order(tune, [c.predicted_s for c in tune.result.candidates])
    gpu_order = _order(tune, tune.gpu_s)
    return _TEXT.claim(
        "like_with_like",
        gpu=tune.gpu,
        gpu_order=gpu_order,
        host_order=host_order,
        same=gpu_order == host_order,
    )


def products_claim(tune: HostTune, gpu_tile: Tiling) -> Claim:
    """Tile products each candidate issues on the host, and the GPU's pick's (after Exercise 2).

    Args:
        tune: A :func:`autotune_kernel` result.
        gpu_tile: The GPU profile's searched tiling of the same kernel.

    Returns:
        A Markdown sentence, hidden until Exercise 2 is solved or revealed.
    """
    parts = [
        _TEXT.render(
            "products_part", shape=c.tiling.shape, products=gemm_products(tune.kernel, c.tiling)
        )
        for c in tune.result.candidates
    ]
    claim = _TEXT.claim(
        "products",
        parts=parts,
        gpu=tune.gpu,
        gpu_shape=gpu_tile.shape,
        gpu_products=gemm_products(tune.kernel, gpu_tile),
    )
    return gated(claim, after=PRODUCTS_EXERCISE, label="Exercise 2")


def measured_pitfall_claim(tune: HostTune) -> Claim:
    """The run-to-run spread of the model's pick, and the cross-machine comparison pitfall.

    Returns:
        Markdown bullets: the pick's p10-p90 interval over its median, and its measured median
        against the GPU profile's prediction for the same tile.
    """
    pick = tune.result.candidates[0]
    m = pick.measured
    return _TEXT.claim(
        "measured_pitfall",
        runs=len(m.samples),
        spread=m.spread,
        gpu=tune.gpu,
        gap=m.median_s / tune.gpu_s[0] if tune.gpu_s[0] else 0.0,
    )


# --- exercise 2: tile products on the host -----------------------------------------------------

#: Exercise 2's name (its check and the claim it gates).
PRODUCTS_EXERCISE = "host tile products of the GPU pick"


def check_tile_products(
    answer: int,
    *,
    model: str = "gpt2",
    hardware_name: str = "h100-sxm",
    seq: int = 64,
    kernel: str = "layers.0.mlp.up_proj",
    strict: bool | None = None,
) -> CheckResult:
    """Check how many small matrix products ``hardware_name``'s best tile issues on the host.

    The host engine runs a GEMM as one product per (tile_m, tile_n, tile_k) block
    (:mod:`workbench.execution.gemm`), each paying the host's tile-issue cost; the learner
    counts them for the GPU profile's searched tile.
    """
    km = mapping(model, hardware_name, seq=seq).kernel(kernel)
    return _TEXT.check(
        "products", PRODUCTS_EXERCISE, answer, gemm_products(km.kernel, km.tiling), strict=strict
    )


# --- exercise 3: tiles and waves from first principles ----------------------------------------


def check_waves(
    answer: tuple[int, int],
    *,
    model: str = "llama2-7b",
    hardware_name: str = "h100-sxm",
    batch: int = 1,
    seq: int = 2048,
    kernel: str = "layers.0.mlp.up_proj",
    strict: bool | None = None,
) -> CheckResult:
    """Check ``(tiles, waves)`` of ``kernel``'s searched tiling at one shape.

    The expected values are the mapper's (``tiling.tiles``, ``tiling.waves``); the learner
    derives them from the GEMM's shape, the tile in the plan table and the core count.
    """
    t = mapping(model, hardware_name, batch=batch, seq=seq).kernel(kernel).tiling
    return _TEXT.check(
        "waves",
        f"tiles_and_waves[{kernel},b{batch},s{seq}]",
        answer,
        (t.tiles, t.waves),
        strict=strict,
    )
