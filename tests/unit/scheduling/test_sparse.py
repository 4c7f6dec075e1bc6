"""The sparse-tensor model: accounting identities, formats, load imbalance, pruning, bad input.

The per-action energies the lesson uses are checked against Accelergy's ERT file they cite.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
import yaml

from workbench.errors import WorkbenchError
from workbench.exercises.lesson14 import ENERGY
from workbench.scheduling.sparse import (
    SparseEinsum,
    SparseEnergy,
    SparseOpt,
    break_even_density,
    evaluate_sparse,
    expected_max_binomial,
    format_bits,
    magnitude_prune,
)

ERT = (
    Path(__file__).resolve().parents[2]
    / "data/timeloop_sparse/01.2.3-SCDU-dot-product/ref-output/timeloop-model.ERT.yaml"
)
OPTS = (
    SparseOpt(mode="dense"),
    SparseOpt(mode="gating"),
    SparseOpt(mode="skipping", leader_format="cp"),
    SparseOpt(mode="skipping", leader_format="bitmask", structured=False),
)


def test_lesson_energies_are_the_ert():
    tables = {t["name"]: t["actions"] for t in yaml.safe_load(ERT.read_text())["ERT"]["tables"]}
    buf = {a["name"]: a["energy"] for a in tables["PE.Buffer"]}
    mac = {a["name"]: a["energy"] for a in tables["PE.MAC"]}
    assert (ENERGY.read_pj, ENERGY.write_pj) == (buf["read"], buf["write"])
    assert ENERGY.gated_pj == buf["gated_read"] == buf["gated_write"]
    assert ENERGY.metadata_read_pj == buf["metadata_read"]
    assert (ENERGY.mac_pj, ENERGY.mac_gated_pj) == (mac["mac_random"], mac["mac_gated"])


@pytest.mark.parametrize("opt", OPTS, ids=lambda o: f"{o.mode}-{o.leader_format}")
@pytest.mark.parametrize("density", [0.05, 0.3, 0.5, 1.0])
def test_counts_add_up_and_skipping_is_never_slower(opt, density):
    e = SparseEinsum(outputs=64, reduction=48, leader_density=density, pes=8)
    st = evaluate_sparse(e, opt, ENERGY)
    c = st.computes
    assert c.actual + c.gated + c.skipped == pytest.approx(c.algorithmic) == 64 * 48
    b, z = st.access["B"], st.access["Z"]
    assert b.actual_reads + b.gated_reads + b.skipped_reads == pytest.approx(64 * 48)
    assert z.actual_updates + z.gated_updates + z.skipped_updates == pytest.approx(64 * 48)
    assert z.actual_reads + z.gated_reads + z.skipped_reads == pytest.approx(64 * 48 - 64)
    assert all(v >= 0 and math.isfinite(v) for v in st.energy_pj.values())
    dense = evaluate_sparse(e, SparseOpt(mode="dense"), ENERGY)
    assert st.cycles <= dense.cycles
    if opt.mode != "skipping":
        assert st.cycles == dense.cycles  # gating never saves time
    if opt.mode == "gating" and density < 1:
        assert st.total_pj < dense.total_pj


def test_unstructured_zeros_cost_cycles_structured_do_not():
    e = SparseEinsum(outputs=256, reduction=512, leader_density=0.25, leader_elements=16, pes=64)
    un = evaluate_sparse(
        e, SparseOpt(mode="skipping", leader_format="cp", structured=False), ENERGY
    )
    st = evaluate_sparse(e, SparseOpt(mode="skipping", leader_format="cp"), ENERGY)
    assert st.cycles == 512
    assert un.cycles > 512 * 1.02


def test_expected_max_binomial_against_sampling():
    rng = np.random.default_rng(1)
    draws = rng.binomial(200, 0.3, size=(20000, 16)).max(axis=1).mean()
    assert expected_max_binomial(200, 0.3, 16) == pytest.approx(draws, rel=0.005)
    assert expected_max_binomial(200, 0.3, 1) == pytest.approx(60)


def test_formats_break_even_where_the_bits_cross():
    for fmt in ("bitmask", "cp", "rle"):
        d = break_even_density(64, 8, fmt)
        below, above = format_bits(64, d - 0.05, 8, fmt), format_bits(64, d + 0.05, 8, fmt)
        assert below < 64 * 8 < above, fmt
    assert format_bits(64, 0.25, 8, "cp") == 16 * (8 + 6)
    assert format_bits(64, 0.25, 8, "bitmask") == 64 + 16 * 8


def test_magnitude_prune_keeps_the_largest():
    w = np.random.default_rng(0).standard_normal((32, 16))
    p = magnitude_prune(w, 0.25)
    assert np.count_nonzero(p) == 128
    assert np.abs(w[p == 0]).max() <= np.abs(p[p != 0]).min()
    assert np.array_equal(p[p != 0], w[p != 0])


@pytest.mark.parametrize(
    ("make", "needle"),
    [
        (lambda: SparseEinsum(outputs=10, reduction=4, leader_density=0.0), "leader_density"),
        (lambda: SparseEinsum(outputs=10, reduction=4, leader_density=float("nan")), "density"),
        (lambda: SparseEinsum(outputs=10, reduction=4, leader_density=0.5, pes=3), "pes"),
        (lambda: SparseEinsum(outputs=0, reduction=4, leader_density=0.5), "outputs"),
        (lambda: SparseOpt(mode="skipping"), "compressed"),
        (lambda: SparseOpt(mode="dense", leader_format="cp"), "uncompressed"),
        (lambda: SparseOpt(mode="fast"), "mode"),  # type: ignore[arg-type]
        (lambda: format_bits(64, 0.5, 8, "zip"), "format"),  # type: ignore[arg-type]
        (
            lambda: SparseEnergy(
                read_pj=-1, write_pj=1, gated_pj=0, metadata_read_pj=0, mac_pj=1, mac_gated_pj=0
            ),
            "read_pj",
        ),
    ],
)
def test_bad_input_is_one_clear_line(make, needle):
    with pytest.raises(WorkbenchError, match=needle) as err:
        make()
    assert "\n" not in str(err.value)
