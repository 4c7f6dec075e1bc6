"""Lesson 03, tiling to SRAM and wave quantization: tables and self-checks.

The wave and tile figures come from the mapper with a forced tile (``TileOverride`` with
``split_k=1``), reproducing the examples of NVIDIA's *Matrix Multiplication Background User's
Guide* (A100, 108 SMs, 256x128 tiles).
"""

from __future__ import annotations

import itertools

import pandas as pd

from workbench._format import fmt_capacity, fmt_time
from workbench.cost.model import Cost
from workbench.exercises._check import CheckResult
from workbench.exercises._claims import Claim
from workbench.exercises._shared import hardware
from workbench.exercises._text import LessonText
from workbench.ir import Graph, Linear
from workbench.mapper import ModelMapping, map_model
from workbench.options import MapOptions, TileOverride
from workbench.report.charts.tiles import storage_rows
from workbench.scheduling.tiling import Tiling, accumulator_capacity

__all__ = [
    "accumulator_claim",
    "check_tiles",
    "check_waves",
    "fit_table",
    "gemm_mapping",
    "padding_claim",
    "search_claim",
    "split_k_claim",
    "tile_size_claim",
    "tile_summary",
    "tile_table",
    "wave_claim",
    "wave_rule_claim",
    "wave_table",
]

_TEXT = LessonText("lesson03")


def gemm_mapping(
    *,
    m: int,
    n: int,
    k: int,
    tile: tuple[int, int] | None = None,
    tile_k: int = 64,
    hardware_name: str = "a100-80gb",
    dtype: str = "fp16",
    split_k: int = 1,
) -> ModelMapping:
    """Map one ``M x K @ K x N`` GEMM, optionally with a forced ``tile`` and ``split_k``.

    Args:
        m: Rows of the output (elements).
        n: Columns of the output (elements).
        k: Reduction depth (elements).
        tile: ``(tile_m, tile_n)`` to force, or None to let the search choose.
        tile_k: K depth of a forced tile (elements).
        hardware_name: Profile name.
        dtype: Operand format.
        split_k: K slices of a forced tile (1: no split-K).

    Returns:
        The mapping of the one-kernel graph (kernel ``gemm``).
    """
    op = Linear(name="gemm", inputs=("a",), tokens=(m,), in_features=k, out_features=n, dtype=dtype)
    graph = Graph(name=f"gemm {m}x{n}x{k}", ops=(op,))
    tiles: tuple[TileOverride, ...] = ()
    if tile is not None:
        tiles = (TileOverride(pattern="gemm", m=tile[0], n=tile[1], k=tile_k, split_k=split_k),)
    return map_model(graph, hardware(hardware_name), MapOptions(tiles=tiles))


def accumulator_claim(hardware_name: str = "a100-80gb") -> Claim:
    """How much of a core's register file the search gives the fp32 accumulators (an assumption).

    Returns:
        Markdown: the accumulator capacity against the register file (binary units, percent),
        from :func:`workbench.scheduling.tiling.accumulator_capacity`.
    """
    hw = hardware(hardware_name)
    regs = next((m.capacity_bytes for m in hw.memory
                 if m.kind == "register" and m.scope == "per_core"), 0)  # fmt: skip
    acc = accumulator_capacity(hw)
    if not acc:
        return _TEXT.claim("accumulator_in_sram", hardware_name=hardware_name)
    return _TEXT.claim(
        "accumulator",
        hardware_name=hardware_name,
        accumulators=fmt_capacity(acc),
        registers=fmt_capacity(regs),
        share=acc / regs,
    )


def fit_table(
    tiles: tuple[tuple[int, int, int], ...],
    *,
    m: int = 2048,
    n: int = 11008,
    k: int = 4096,
    hardware_name: str = "a100-80gb",
) -> pd.DataFrame:
    """Per-core storage of forced GEMM tiles against capacity: SRAM and register file.

    Args:
        tiles: ``(tile_m, tile_n, tile_k)`` triples.
        m: Rows of the output (elements).
        n: Columns of the output (elements).
        k: Reduction depth (elements).
        hardware_name: Profile name.

    Returns:
        A frame indexed by tile with ``sram`` and ``registers`` (used / capacity, binary units)
        and ``fits`` (both stores, as the mapspace checks).
    """
    rows = []
    for tm, tn, tk in tiles:
        t = gemm_mapping(m=m, n=n, k=k, tile=(tm, tn), tile_k=tk,
                         hardware_name=hardware_name).kernels[0].tiling  # fmt: skip
        store = storage_rows(t, hardware(hardware_name))
        row: dict[str, object] = {"tile": t.shape}
        for r, col in zip(store, ("sram", "registers"), strict=False):
            row[col] = f"{r['used']} / {r['capacity']}"
        row["fits"] = all(r["fits"] for r in store)
        rows.append(row)
    return pd.DataFrame(rows).set_index("tile")


def tile_summary(tiling: Tiling, cost: Cost) -> pd.DataFrame:
    """One tile as a one-row frame: shape, split-K, SRAM use (binary units), tiles, waves, time.

    Returns:
        A frame indexed by the tile shape.
    """
    row = {
        "split_k": tiling.split_k,
        "sram": f"{fmt_capacity(tiling.sram_bytes)} / {fmt_capacity(tiling.sram_capacity_bytes)}",
        "registers": fmt_capacity(tiling.register_bytes),
        "tiles": tiling.tiles,
        "waves": tiling.waves,
        "wave_efficiency": f"{tiling.wave_efficiency:.0%}",
        "predicted": fmt_time(cost.total_s),
        "bottleneck": cost.bottleneck,
    }
    return pd.DataFrame([row], index=pd.Index([tiling.shape], name="tile"))


def wave_claim(table: pd.DataFrame) -> Claim:
    """The wave cliff in a :func:`wave_table`: where the time jumps and how throughput recovers.

    Returns:
        Markdown: the first row that needs one more full wave than the row before, the work and
        time ratios across that step, and the throughput before, after and at the last row.
    """
    ns = list(table.index)
    for a, b in itertools.pairwise(ns):
        if table.loc[b, "full_waves"] > table.loc[a, "full_waves"]:
            ta, tb = table.loc[a, "time_us"], table.loc[b, "time_us"]
            return _TEXT.claim(
                "wave_cliff",
                a=a,
                b=b,
                work_ratio=b / a,
                tiles_a=table.loc[a, "tiles"],
                tiles_b=table.loc[b, "tiles"],
                time_ratio=tb / ta,
                time_a=ta,
                time_b=tb,
                tflops_a=table.loc[a, "tflops"],
                tflops_b=table.loc[b, "tflops"],
                tflops_last=table.loc[ns[-1], "tflops"],
                n_last=ns[-1],
            )
    return _TEXT.claim("no_wave_cliff")


def search_claim(
    *, m: int, n: int, k: int, tile: tuple[int, int] = (256, 128), hardware_name: str = "a100-80gb"
) -> Claim:
    """What the mapper's own search does with a GEMM, against a forced tile (no split-K).

    Args:
        m: Rows of the output (elements).
        n: Columns of the output (elements).
        k: Reduction depth (elements).
        tile: The forced ``(tile_m, tile_n)`` to compare with.
        hardware_name: Profile name.

    Returns:
        A Markdown sentence: the searched tile, its split-K, tiles, waves and wave efficiency,
        and its predicted time against the forced tile's (microseconds).
    """
    forced = gemm_mapping(m=m, n=n, k=k, tile=tile, hardware_name=hardware_name)
    found = gemm_mapping(m=m, n=n, k=k, hardware_name=hardware_name)
    f, s = forced.kernels[0].tiling, found.kernels[0].tiling
    return _TEXT.claim(
        "search",
        searched=s,
        forced=f,
        forced_tile=tile,
        time_us=found.time_s * 1e6,
        forced_time_us=forced.time_s * 1e6,
    )


def tile_size_claim(
    tiles: tuple[tuple[int, int, int], tuple[int, int, int]] = ((128, 128, 64), (256, 128, 64)),
    *,
    m: int = 2048,
    n: int = 11008,
    k: int = 4096,
    hardware_name: str = "a100-80gb",
) -> Claim:
    """What a bigger tile changes: off-chip bytes, tile count and time, for two forced tiles.

    The tiles are ordered by volume (``tile_m x tile_n x tile_k``); the sentence compares the
    bigger with the smaller.

    Returns:
        Markdown bullet: per tile, the off-chip traffic (MB), tiles and predicted time (µs),
        with the directions read from the numbers.
    """
    out = []
    for tm, tn, tk in sorted(tiles, key=lambda t: t[0] * t[1] * t[2]):
        mp = gemm_mapping(m=m, n=n, k=k, tile=(tm, tn), tile_k=tk, hardware_name=hardware_name)
        km = mp.kernels[0]
        out.append((km.tiling.shape, km.cost.bytes_at(mp.hardware.offchip.name),
                    km.tiling.tiles, mp.time_s))  # fmt: skip
    (sa, ba, na, ta), (sb, bb, nb, tb) = out
    return _TEXT.claim(
        "tile_size",
        reads_less=bb < ba,
        fewer=nb < na,
        m=m,
        n=n,
        k=k,
        small_shape=sa,
        small_mb=ba / 1e6,
        small_tiles=na,
        big_shape=sb,
        big_mb=bb / 1e6,
        bytes_ratio=bb / ba,
        big_tiles=nb,
        faster=tb < ta,
        big_us=tb * 1e6,
        small_us=ta * 1e6,
    )


def _waves(w: float) -> str:
    return _TEXT.render("waves", count=w)


def wave_rule_claim(table: pd.DataFrame) -> Claim:
    """Time follows launched waves, not tiles or fractional waves (read from :func:`wave_table`).

    Returns:
        Markdown bullets: the first row past a whole number of waves (its last wave's use and
        its time against the row before), and two rows with different fractional waves and the
        same launched waves with their times.
    """
    ns = list(table.index)
    lines = []
    for a, b in itertools.pairwise(ns):
        if table.loc[b, "full_waves"] > table.loc[a, "full_waves"]:
            ta, tb = table.loc[a, "time_us"], table.loc[b, "time_us"]
            lines.append(
                _TEXT.render(
                    "wave_rule_step",
                    b=b,
                    waves_b=_waves(table.loc[b, "waves"]),
                    last_util=table.loc[b, "last_wave_util"],
                    time_ratio=tb / ta,
                    a=a,
                    waves_a=_waves(table.loc[a, "waves"]),
                )
            )
            break
    spread = {w: g for w, g in table.groupby("full_waves") if g["waves"].max() > g["waves"].min()}
    if spread:
        w, g = max(spread.items(), key=lambda kv: kv[1]["waves"].max() - kv[1]["waves"].min())
        lo, hi = g["waves"].idxmin(), g["waves"].idxmax()
        lines.append(
            _TEXT.render(
                "wave_rule_spread",
                lo=lo,
                hi=hi,
                waves_lo=_waves(g.loc[lo, "waves"]),
                waves_hi=_waves(g.loc[hi, "waves"]),
                launched=w,
                time_lo=g.loc[lo, "time_us"],
                time_hi=g.loc[hi, "time_us"],
                same=abs(g.loc[hi, "time_us"] / g.loc[lo, "time_us"] - 1) < 0.01,
                time_ratio=g.loc[hi, "time_us"] / g.loc[lo, "time_us"],
            )
        )
    return Claim("\n".join(lines)) if lines else _TEXT.claim("no_wave_cliff")


def padding_claim(table: pd.DataFrame) -> Claim:
    """Tile quantization from :func:`tile_table`: the padded share of the worst shape."""
    best, worst = table["wasted"].idxmin(), table["wasted"].idxmax()
    return _TEXT.claim("padding", best=best, worst=worst, rows=table.to_dict("index"))


def split_k_claim(
    *,
    small: tuple[int, int, int] = (2304, 1664, 4096),
    large: tuple[int, int, int] = (8192, 8192, 4096),
    tile: tuple[int, int] = (256, 128),
    split: int = 2,
    hardware_name: str = "a100-80gb",
) -> Claim:
    """What forcing ``split``-way split-K does to a GEMM with a near-empty last wave and a big one.

    Returns:
        Markdown bullet: per GEMM, waves and predicted time without and with split-K, and the
        partial-sum traffic it adds per level (MB), with the direction read from the times.
    """
    parts, faster = [], []
    for m, n, k in (small, large):
        one = gemm_mapping(m=m, n=n, k=k, tile=tile, hardware_name=hardware_name)
        sk = gemm_mapping(m=m, n=n, k=k, tile=tile, hardware_name=hardware_name, split_k=split)
        k1, k2 = one.kernels[0], sk.kernels[0]
        levels = [lv.name for lv in one.hardware.memory[1:]]
        added = {lv: k2.cost.bytes_at(lv) - k1.cost.bytes_at(lv) for lv in levels}
        grew = ", ".join(_TEXT.render("split_k_bytes", mb=v / 1e6, level=lv)
                         for lv, v in added.items() if v > 0)  # fmt: skip
        faster.append(sk.time_s < one.time_s)
        parts.append(
            _TEXT.render(
                "split_k_part",
                m=m,
                n=n,
                k=k,
                waves_before=k1.tiling.waves,
                waves_after=k2.tiling.waves,
                us_before=one.time_s * 1e6,
                us_after=sk.time_s * 1e6,
                faster=faster[-1],
                grew=grew,
            )
        )
    return _TEXT.claim(
        "split_k",
        split=split,
        tile_m=tile[0],
        tile_n=tile[1],
        parts="; ".join(parts),
        small_faster=faster[0],
        large_faster=faster[1],
    )


def wave_table(
    *,
    m: int,
    k: int,
    ns: tuple[int, ...],
    tile: tuple[int, int] = (256, 128),
    hardware_name: str = "a100-80gb",
    dtype: str = "fp16",
) -> pd.DataFrame:
    """Tiles, waves and predicted throughput of a GEMM as N grows, with a forced tile.

    Args:
        m: Rows of the output (elements).
        k: Reduction depth (elements).
        ns: Values of N (elements).
        tile: ``(tile_m, tile_n)``.
        hardware_name: Profile name.
        dtype: Operand format.

    Returns:
        A frame indexed by ``n`` with ``tiles``, ``waves`` (tiles over cores, fractional, rounded
        to 0.001), ``full_waves`` (launched waves), ``last_wave_util`` (busy fraction of the last
        wave), ``time_us`` (predicted, microseconds) and ``tflops`` (achieved, 1e12 FLOP/s).
    """
    cores = hardware(hardware_name).matrix_engine.cores
    rows = []
    for n in ns:
        mp = gemm_mapping(m=m, n=n, k=k, tile=tile, hardware_name=hardware_name, dtype=dtype)
        km = mp.kernels[0]
        last = km.tiling.tiles - (km.tiling.waves - 1) * cores
        rows.append(
            {
                "n": n,
                "tiles": km.tiling.tiles,
                "waves": round(km.tiling.tiles / cores, 3),
                "full_waves": km.tiling.waves,
                "last_wave_util": round(last / cores, 3),
                "time_us": round(mp.time_s * 1e6, 1),
                "tflops": round(km.kernel.flops / km.cost.total_s / 1e12, 1),
            }
        )
    return pd.DataFrame(rows).set_index("n")


def tile_table(
    shapes: tuple[tuple[int, int], ...],
    *,
    tile: tuple[int, int] = (128, 128),
    k: int = 4096,
    hardware_name: str = "a100-80gb",
) -> pd.DataFrame:
    """Tile quantization: output tiles and padded work for each ``(M, N)`` output shape.

    Args:
        shapes: ``(M, N)`` pairs (elements).
        tile: ``(tile_m, tile_n)``.
        k: Reduction depth (elements).
        hardware_name: Profile name.

    Returns:
        A frame indexed by ``"MxN"`` with ``tiles``, ``useful_flops`` and ``padded_flops``
        (FLOP) and ``wasted`` (fraction of padded work that is padding, rounded to 0.001).
    """
    rows = []
    for m, n in shapes:
        km = gemm_mapping(m=m, n=n, k=k, tile=tile, hardware_name=hardware_name).kernels[0]
        useful = km.kernel.matmul_flops
        rows.append(
            {
                "shape": f"{m}x{n}",
                "tiles": km.tiling.tiles,
                "useful_flops": useful,
                "padded_flops": km.tiling.padded_flops,
                "wasted": round(1 - useful / km.tiling.padded_flops, 3),
            }
        )
    return pd.DataFrame(rows).set_index("shape")


def check_tiles(
    answer: int,
    *,
    m: int,
    n: int,
    tile: tuple[int, int],
    hardware_name: str = "a100-80gb",
    strict: bool | None = None,
) -> CheckResult:
    """Check the number of output tiles the mapper launches for an ``M x N`` output.

    Args:
        answer: The learner's tile count.
        m: Rows of the output (elements).
        n: Columns of the output (elements).
        tile: ``(tile_m, tile_n)``.
        hardware_name: Profile name.
        strict: Raise on a wrong answer.

    Returns:
        The check result; expected is the forced-tile mapping's ``tiling.tiles``.
    """
    km = gemm_mapping(m=m, n=n, k=4096, tile=tile, hardware_name=hardware_name).kernels[0]
    return _TEXT.check(
        "tiles", f"tiles[{m}x{n} / {tile[0]}x{tile[1]}]", answer, km.tiling.tiles, strict=strict
    )


def check_waves(
    answer: float,
    *,
    m: int,
    n: int,
    k: int,
    tile: tuple[int, int],
    hardware_name: str = "a100-80gb",
    strict: bool | None = None,
) -> CheckResult:
    """Check the (fractional) number of waves: tiles over cores, within 0.1 %.

    Args:
        answer: The learner's waves (e.g. 0.917).
        m: Rows of the output (elements).
        n: Columns of the output (elements).
        k: Reduction depth (elements).
        tile: ``(tile_m, tile_n)``.
        hardware_name: Profile name.
        strict: Raise on a wrong answer.

    Returns:
        The check result; expected is ``tiling.tiles / matrix_engine.cores``.
    """
    km = gemm_mapping(m=m, n=n, k=k, tile=tile, hardware_name=hardware_name).kernels[0]
    expected = km.tiling.tiles / hardware(hardware_name).matrix_engine.cores
    return _TEXT.check(
        "waves",
        f"waves[{m}x{n}x{k} / {tile[0]}x{tile[1]}]",
        answer,
        expected,
        rel_tol=1e-3,
        strict=strict,
    )
