"""The sparse-tensor model against Timeloop/Sparseloop's ISCA 2021 tutorial reference outputs.

Source: github.com/Accelergy-Project/timeloop-accelergy-exercises, commit
800ca73098996f413126d2ede2ee211e471b7424, folder ``workspace/exercises/2021.isca/designs/``
(the ISCA 2021 "sparse tensors" tutorial; at the repository's head the same exercises live in
``workspace/example_designs/example_designs/sparseloop/``). Inputs and reference outputs are
copied unchanged into ``tests/data/timeloop_sparse/`` (README there: paths, licence).

The expected figures below were copied by hand from each case's ``ref-output/*stats.txt``
before the model was run; ``test_expected_figures_are_the_reference_files`` re-reads the files
so a typo here cannot pass. Per-action energies are read from each case's Accelergy ERT
(``ref-output/timeloop-model.ERT.yaml``) as they are.

Tolerances:

* cycles, computes and access counts: exact.
* energy, dense and gated runs: 0.005 pJ, half the last digit Timeloop prints (``6.72 pJ``).
* energy, skipped runs: Timeloop (this 2021 build) charges each *skipped* access a gated
  access's energy (0.00441 pJ): B's 1.73 pJ is 4 x 0.42018 + 12 x 0.00441, although a skipped
  read never happens. The model charges a skipped access nothing. That difference is at most
  12 x 0.00441 / 1.73 = 3.1 % (B) and 24 x 0.00441 / 3.05 = 3.5 % (Z), 1.7 % of the total: the
  tolerance is 4 % per tensor and 2 % in total, and a second assertion checks that the model
  plus that charge reproduces the printed figure within 0.005 pJ (so nothing else differs).
* gated computes: Timeloop 2021 reports ``Gated Computes (total): 0`` and charges a gated
  multiply nothing; the model counts the 12 multiplies it gates and prices them at the ERT's
  ``mac_gated`` in a separate ``mac_gated`` entry, left out of the energy compared here.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from workbench.scheduling.sparse import (
    SparseEinsum,
    SparseEnergy,
    SparseOpt,
    SparseStats,
    evaluate_sparse,
)

DATA = Path(__file__).resolve().parents[1] / "data" / "timeloop_sparse"
HALF_DIGIT_PJ = 0.005

DOT = SparseEinsum(outputs=1, reduction=16, leader_density=0.25, leader_elements=16)
DOT_DENSE = SparseEinsum(outputs=1, reduction=16, leader_density=1.0, leader_elements=16)

# --- expected figures, copied from ref-output/*stats.txt ---------------------------------------
# (folder, ref-output subfolder): cycles, actual computes, then per tensor the access counts
# (actual, gated, skipped reads; actual, gated, skipped updates; metadata reads) and energy (pJ).
EXPECTED = {
    "01.2.1-DUDU-dot-product": {
        "cycles": 16,
        "computes": 16,
        "mac_pj": 8.97,
        "access": {
            "A": ((16, 0, 0), (0, 0, 0), 0),
            "B": ((16, 0, 0), (0, 0, 0), 0),
            "Z": ((15, 0, 0), (16, 0, 0), 0),
        },
        "energy_pj": {"A": 6.72, "B": 6.72, "Z": 13.03},
        "total_pj": 35.44,
    },
    "01.2.2-SUDU-dot-product/no-optimization": {
        "cycles": 16,
        "computes": 16,
        "mac_pj": 8.97,
        "access": {
            "A": ((16, 0, 0), (0, 0, 0), 0),
            "B": ((16, 0, 0), (0, 0, 0), 0),
            "Z": ((15, 0, 0), (16, 0, 0), 0),
        },
        "energy_pj": {"A": 6.72, "B": 6.72, "Z": 13.03},
        "total_pj": 35.44,
    },
    "01.2.2-SUDU-dot-product/gating": {
        "cycles": 16,
        "computes": 4,
        "mac_pj": 2.24,
        "access": {
            "A": ((16, 0, 0), (0, 0, 0), 0),
            "B": ((4, 12, 0), (0, 0, 0), 0),
            "Z": ((3, 12, 0), (4, 12, 0), 0),
        },
        "energy_pj": {"A": 6.72, "B": 1.73, "Z": 3.05},
        "total_pj": 13.75,
    },
    "01.2.3-SCDU-dot-product": {
        "cycles": 4,
        "computes": 4,
        "mac_pj": 2.24,
        "access": {
            "A": ((4, 0, 0), (0, 0, 0), 4),
            "B": ((4, 0, 12), (0, 0, 0), 0),
            "Z": ((3, 0, 12), (4, 0, 12), 0),
        },
        "energy_pj": {"A": 2.41, "B": 1.73, "Z": 3.05},
        "total_pj": 9.43,
    },
}
CASES = {
    "01.2.1-DUDU-dot-product": (DOT_DENSE, SparseOpt(mode="dense")),
    # the same dense hardware fed A at density 0.25: nothing is saved without an optimisation
    "01.2.2-SUDU-dot-product/no-optimization": (DOT, SparseOpt(mode="dense")),
    "01.2.2-SUDU-dot-product/gating": (DOT, SparseOpt(mode="gating")),
    "01.2.3-SCDU-dot-product": (DOT, SparseOpt(mode="skipping", leader_format="cp")),
}
SKIPPED_CASES = {"01.2.3-SCDU-dot-product"}

# Cycles and actual computes of the larger exercises (the buffer-level counts below them).
# Their energies are not compared: they include fills from the backing store and UOP-CP
# metadata of two ranks, which the one-level model leaves out.
# spMspM: Z[m,n] += A[m,k] B[n,k], 8x8x8, A at 0.25, B at 0.5, both compressed (UOP-CP), both
# skipped on each other, Z skipped on both. conv1d: O[q] += W[s] I[q+s], S=3, Q=9, W at 0.33
# (RLE), I and O skipped on W; +oc: M=16 output channels, W at 0.3333; -spatial: M split 4 ways
# over four PEs.
LARGER = {
    "02.2.1-spMspM": (
        SparseEinsum(
            outputs=64, reduction=8, leader_density=0.25, leader_elements=64,
            follower_density=0.5, follower_elements=64,
        ),
        {"cycles": 64, "algorithmic": 512, "computes": 64, "z_reads": 56, "z_updates": 64},
    ),
    "03.2.1-conv1d": (
        SparseEinsum(outputs=9, reduction=3, leader_density=0.33, leader_elements=3),
        {"cycles": 9, "algorithmic": 27, "computes": 9, "b_reads": 9, "z_updates": 9},
    ),
    "03.2.2-conv1d+oc": (
        SparseEinsum(outputs=144, reduction=3, leader_density=0.3333, leader_elements=48),
        {"cycles": 144, "algorithmic": 432, "computes": 144},
    ),
    "03.2.3-conv1d+oc-spatial": (
        SparseEinsum(
            outputs=144, reduction=3, leader_density=0.3333, leader_elements=48, pes=4
        ),
        {"cycles": 36, "algorithmic": 432, "computes": 144},
    ),
}  # fmt: skip
# conv1d's Outputs: 18 algorithmic reads, Timeloop 5 actual / 13 skipped.
CONV1D_Z_READS = 5


# --- reading Timeloop's files as they are ------------------------------------------------------
def _stats_path(case: str) -> Path:
    folder, _, sub = case.partition("/")
    return DATA / folder / "ref-output" / sub / "timeloop-model.stats.txt"


def _ert(case: str) -> SparseEnergy:
    """Per-action pJ from the case's ERT: the buffer's read/write/gated/metadata, the MAC's."""
    path = _stats_path(case).with_name("timeloop-model.ERT.yaml")
    tables = {
        t["name"].split(".")[-1]: t["actions"]
        for t in yaml.safe_load(path.read_text())["ERT"]["tables"]
    }

    def pick(actions, name, args=None):
        return next(
            a["energy"]
            for a in actions
            if a["name"] == name and (args is None or a["arguments"] == args)
        )

    buf, mac = tables["Buffer"], tables["MAC"]
    names = {a["name"] for a in buf}
    if "gated_read" in names:
        read, write = pick(buf, "read"), pick(buf, "write")
        gated = pick(buf, "gated_read")
        meta = pick(buf, "metadata_read")
    else:  # the plain regfile: a gated access is one with no address or data change
        read = pick(buf, "read", {"address_delta": 1, "data_delta": 1})
        write = pick(buf, "write", {"address_delta": 1, "data_delta": 1})
        gated = pick(buf, "read", {"address_delta": 0, "data_delta": 0})
        meta = 0.0
    return SparseEnergy(
        read_pj=read, write_pj=write, gated_pj=gated, metadata_read_pj=meta,
        mac_pj=pick(mac, "mac_random"), mac_gated_pj=pick(mac, "mac_gated"),
    )  # fmt: skip


def _run(case: str) -> SparseStats:
    einsum, opt = CASES[case]
    return evaluate_sparse(einsum, opt, _ert(case))


# --- the comparisons ---------------------------------------------------------------------------
def test_expected_figures_are_the_reference_files():
    for case, want in EXPECTED.items():
        text = _stats_path(case).read_text()
        assert f"Cycles: {want['cycles']}\n" in text, case
        assert re.search(rf"Actual Computes \(total\)\s+: {want['computes']}\n", text), case
        assert f"Total topology energy: {want['total_pj']:.2f} pJ" in text, case
        assert re.search(r"Gated Computes \(total\)\s+: 0\n", text), case
    for case, (_, want) in LARGER.items():
        text = _stats_path(case).read_text()
        assert f"Cycles: {want['cycles']}\n" in text, case
        assert f"Algorithmic Computes (total) : {want['algorithmic']}\n" in text, case
        assert f"Actual Computes (total)      : {want['computes']}\n" in text, case


@pytest.mark.parametrize("case", list(EXPECTED))
def test_cycles_and_computes(case):
    st, want = _run(case), EXPECTED[case]
    assert st.cycles == want["cycles"]
    assert st.computes.actual == want["computes"]
    assert st.computes.algorithmic == 16


@pytest.mark.parametrize("case", list(EXPECTED))
def test_access_counts(case):
    st, want = _run(case), EXPECTED[case]
    for tensor, (reads, updates, meta) in want["access"].items():
        a = st.access[tensor]
        assert (a.actual_reads, a.gated_reads, a.skipped_reads) == reads, tensor
        assert (a.actual_updates, a.gated_updates, a.skipped_updates) == updates, tensor
        assert a.metadata_reads == meta, tensor


@pytest.mark.parametrize("case", list(EXPECTED))
def test_energy(case):
    st, want, energy = _run(case), EXPECTED[case], _ert(case)
    skipped = case in SKIPPED_CASES
    rel = 0.04 if skipped else 0.0
    assert st.energy_pj["mac"] == pytest.approx(want["mac_pj"], abs=HALF_DIGIT_PJ)
    for tensor, ref in want["energy_pj"].items():
        got = st.energy_pj[tensor]
        assert got == pytest.approx(ref, rel=rel, abs=HALF_DIGIT_PJ), tensor
        if skipped:  # Timeloop's charge for the skipped accesses, and nothing else, differs
            a = st.access[tensor]
            charge = (a.skipped_reads + a.skipped_updates) * energy.gated_pj
            assert got + charge == pytest.approx(ref, abs=HALF_DIGIT_PJ), tensor
    compared = sum(v for k, v in st.energy_pj.items() if k != "mac_gated")
    assert compared == pytest.approx(
        want["total_pj"], rel=0.02 if skipped else 0.0, abs=HALF_DIGIT_PJ
    )


def test_gating_counts_the_gated_multiplies_timeloop_leaves_out():
    st = _run("01.2.2-SUDU-dot-product/gating")
    assert st.computes.gated == 12
    assert st.energy_pj["mac_gated"] == pytest.approx(
        12 * _ert("01.2.2-SUDU-dot-product/gating").mac_gated_pj
    )


@pytest.mark.parametrize("case", list(LARGER))
def test_larger_exercises_cycles_and_computes(case):
    einsum, want = LARGER[case]
    opt = SparseOpt(mode="skipping", leader_format="cp" if "spMspM" in case else "rle")
    st = evaluate_sparse(einsum, opt, SparseEnergy.unit())
    assert st.cycles == want["cycles"]
    assert st.computes.algorithmic == want["algorithmic"]
    assert st.computes.actual == want["computes"]
    if "z_reads" in want:
        assert st.access["Z"].actual_reads == want["z_reads"]
    if "z_updates" in want:
        assert st.access["Z"].actual_updates == want["z_updates"]
    if "b_reads" in want:
        assert st.access["B"].actual_reads == want["b_reads"]


@pytest.mark.xfail(
    strict=True,
    reason="Timeloop rounds conv1d's skipped partial-sum reads up from the nominal density "
    "(ceil(18 x 0.67) = 13 skipped, 5 actual); the model keeps the structured fraction, 1 of 3 "
    "weights, of the 18 algorithmic reads (6 actual). Its multiplies, input reads and output "
    "updates, which use the same rule, match.",
)
def test_conv1d_output_reads():
    einsum, _ = LARGER["03.2.1-conv1d"]
    opt = SparseOpt(mode="skipping", leader_format="rle")
    st = evaluate_sparse(einsum, opt, SparseEnergy.unit())
    assert st.access["Z"].actual_reads == CONV1D_Z_READS
