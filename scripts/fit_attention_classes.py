"""Solve every fitted figure from its calibration row and print it beside the shipped value.

The fits are workbench/fidelity/fits.py's ``FITS`` (data/fits.yaml, stacks/*.yaml): the
attention classes' softmax_exposed (``fa2`` <- attn.fa2.a100.peak, ``fa3`` <-
attn.fa3.h100.s16k), h100-sxm's attention_warp_mma_fraction (<- attn.fa2.h100.peak), the GEMM
efficiencies, FP8 format efficiencies, sustained HBM fractions and the stacks' fitted figures
(the TensorRT-LLM step overhead, stacks/*.yaml). Each shipped value (a profile field, a class
constant, a stack figure) must reproduce its fit; the golden test
``test_every_fit_reproduces_its_shipped_figure`` checks it. After a change to the GEMM model or a
profile, run this and copy (rounded) every figure whose ``solved`` moved.

    python scripts/fit_attention_classes.py
"""

from __future__ import annotations

import sys
from pathlib import Path

# NOTE: fit the checkout this script sits in, not whichever workbench the environment installed.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from workbench.fidelity.fits import shipped, solve_fits
from workbench.fidelity.schema import load_corpus
from workbench.hw import load_hardware


def main() -> None:
    """Print each fitted figure, the row it comes from, and the shipped value."""
    rows = load_corpus().rows
    profiles = {r.hardware: load_hardware(r.hardware) for r in rows}
    state = solve_fits(rows, profiles)
    ship = shipped(profiles, rows)
    for name, value in state.values.items():
        print(f"{name:<40} solved {value:.4g}  shipped {ship[name]:.4g}  <- {state.origin[name]}")


if __name__ == "__main__":
    main()
