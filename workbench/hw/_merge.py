"""Merge calibration rounds of one host into one profile (:func:`best_of`)."""

from __future__ import annotations

from workbench.hw.schema import Hardware

__all__ = ["best_of"]


def _best_pairs(seqs: list[tuple[tuple[int, float], ...]]) -> tuple[tuple[int, float], ...]:
    """Merge (size, rate) tables: the highest rate per size, sizes increasing."""
    best: dict[int, float] = {}
    for seq in seqs:
        for n, r in seq:
            best[n] = max(best.get(n, 0.0), r)
    return tuple(sorted(best.items()))


def _best_triples(
    seqs: list[tuple[tuple[int, int, float], ...]],
) -> tuple[tuple[int, int, float], ...]:
    """Merge (key, key, rate) tables: the highest rate per key pair, keys increasing."""
    best: dict[tuple[int, int], float] = {}
    for seq in seqs:
        for a, b, r in seq:
            best[a, b] = max(best.get((a, b), 0.0), r)
    return tuple((a, b, r) for (a, b), r in sorted(best.items()))


def _best_map(maps: list[dict[str, float]]) -> dict[str, float]:
    keys = {k for m in maps for k in m}
    return {k: max(m[k] for m in maps if k in m) for k in sorted(keys)}


def best_of(profiles: list[Hardware]) -> Hardware:
    """Merge calibration rounds: each rate its best (highest), each fixed cost its lowest.

    Other processes on a shared machine only ever slow a micro-benchmark down, so across rounds
    run at different moments the best figure is the machine's own. The native tile and the
    variance figures come from the round with the highest matmul rate.

    Args:
        profiles: Profiles from :func:`calibrate` on this machine (at least one).

    Returns:
        One profile; its ``assumptions`` say how many rounds were merged.
    """
    if not profiles:
        raise ValueError("best_of: no profiles")
    base = max(profiles, key=lambda h: h.peak_flops("fp32"))
    if len(profiles) == 1:
        return base
    me = base.matrix_engine.model_copy(
        update={
            "peak_flops_per_s": _best_map([h.matrix_engine.peak_flops_per_s for h in profiles]),
            "skinny_call_rates": _best_pairs([h.matrix_engine.skinny_call_rates for h in profiles]),
        }
    )
    vu = base.vector_unit.model_copy(
        update={
            "peak_flops_per_s": _best_map([h.vector_unit.peak_flops_per_s for h in profiles]),
            "kernel_flops_per_s": _best_map([h.vector_unit.kernel_flops_per_s for h in profiles]),
            "row_rates": {
                k: _best_pairs(
                    [h.vector_unit.row_rates[k] for h in profiles if k in h.vector_unit.row_rates]
                )
                for k in sorted({k for h in profiles for k in h.vector_unit.row_rates})
            },
            "gather_bytes_per_s": max(h.vector_unit.gather_bytes_per_s for h in profiles),
            "transpose_rates": _best_triples([h.vector_unit.transpose_rates for h in profiles]),
        }
    )
    levels = [
        lvl.model_copy(
            update={
                "bandwidth_bytes_per_s": max(h.memory[i].bandwidth_bytes_per_s for h in profiles)
            }
        )
        for i, lvl in enumerate(base.memory)
    ]
    fixed = ("kernel_launch_s", "graph_launch_s", "barrier_s", "tile_issue_s",
             "attention_block_issue_s", "attention_qtile_issue_s", "conv_setup_s")  # fmt: skip
    oh = base.overheads.model_copy(
        update={f: min(getattr(h.overheads, f) for h in profiles) for f in fixed}
    )
    note = (
        f"best of {len(profiles)} calibration rounds: highest rate and lowest fixed cost per "
        "figure (load from other processes only adds time); the figures above are one round's"
    )
    return base.model_copy(
        update={
            "matrix_engine": me,
            "vector_unit": vu,
            "memory": tuple(levels),
            "overheads": oh,
            "assumptions": (*base.assumptions, note),
        }
    )
