"""The loop-nest evaluator against Timeloop + Accelergy's published reference outputs.

Source: github.com/Accelergy-Project/timeloop-accelergy-exercises, commit
2d5510807128e9bd5f1cad0705cdf2ec4612fd4e, folder
``workspace/tutorial_exercises/01_accelergy_timeloop_2020_ispass/`` (the ISPASS 2020 tutorial).
Each case cites its exercise folder below; from it we take

* the architecture (``arch/*.yaml``) and the per-action energies Accelergy computed for it
  (``ref-output/*ERT_summary.yaml``: read / write / leak pJ of each component, compute pJ of the
  MAC) as the evaluator's *inputs*, written in our own format;
* the mapping (``map/*.map.yaml``, or the mapper's answer ``ref-output/*map.txt``) and the
  problem (``prob/*.yaml``) as inputs;
* the published figures we compare against, copied from ``ref-output/*stats.txt``: cycles, the
  reads / fills / updates of every tensor at every level (per instance), and the energy of each
  level in fJ per compute (the ``fJ/Compute`` block of the summary).

Cycles and every access count must match exactly; energy per level within 5 %.
"""

from __future__ import annotations

import pytest

from workbench.scheduling.nest_eval import Level, LevelMap, Problem, Tensor, evaluate

ROOT = "workspace/tutorial_exercises/01_accelergy_timeloop_2020_ispass/"
WT, IN, OUT = "Weights", "Inputs", "Outputs"
ALL = frozenset({WT, IN, OUT})

# --- problems (prob/*.yaml) -------------------------------------------------------------------
CONV1D = Problem(
    bounds=(("R", 3), ("P", 16)),
    tensors=(
        Tensor(WT, ((("R", 1),),)),
        Tensor(IN, ((("R", 1), ("P", 1)),)),
        Tensor(OUT, ((("P", 1),),), True),
    ),
)
CONV1D_OC = Problem(
    bounds=(("K", 32), ("R", 3), ("P", 16)),
    tensors=(
        Tensor(WT, ((("K", 1),), (("R", 1),))),
        Tensor(IN, ((("R", 1), ("P", 1)),)),
        Tensor(OUT, ((("K", 1),), (("P", 1),)), True),
    ),
)
CONV1D_OC_IC = Problem(
    bounds=(("C", 32), ("K", 32), ("R", 3), ("P", 16)),
    tensors=(
        Tensor(WT, ((("C", 1),), (("K", 1),), (("R", 1),))),
        Tensor(IN, ((("C", 1),), (("R", 1), ("P", 1)))),
        Tensor(OUT, ((("K", 1),), (("P", 1),)), True),
    ),
)
# VGG02_layer5 (06-mapper-convlayer-eyeriss/prob/VGG02_layer5.yaml) = the Eyeriss-like example
# design's default problem (timeloop+accelergy/prob/prob.yaml): stride and dilation 1.
VGG02_5 = Problem(
    bounds=(("C", 128), ("M", 256), ("R", 3), ("S", 3), ("N", 1), ("P", 56), ("Q", 56)),
    tensors=(
        Tensor(WT, ((("C", 1),), (("M", 1),), (("R", 1),), (("S", 1),))),
        Tensor(IN, ((("N", 1),), (("C", 1),), (("R", 1), ("P", 1)), (("S", 1), ("Q", 1)))),
        Tensor(OUT, ((("N", 1),), (("M", 1),), (("Q", 1),), (("P", 1),)), True),
    ),
)

# --- architectures (arch/*.yaml + ERT_summary.yaml, 40 nm) -------------------------------------
# regfile 64 x 8 bit: 0.42564 pJ read/write, 0.000861 pJ leak per cycle.
# SRAM 32768 x 64 bit (8 words of 8 bit per access): 43.353054 pJ read, 30.878292 pJ write.
# DRAM 256 bit (32 words per access): 2048 pJ read/write. intmac: 0.845 pJ per compute.
MAC_PJ = 0.845


def _rf(name: str, keeps: frozenset[str] = ALL) -> Level:
    return Level(name, keeps, 1, 0.42564, 0.42564, capacity_words=64, leak_pj=0.000861)


def _sram(name: str, keeps: frozenset[str] = ALL) -> Level:
    return Level(name, keeps, 8, 43.353054, 30.878292, capacity_words=32768 * 8, leak_pj=0.007972)


DRAM = Level("MainMemory", ALL, 32, 2048.0, 2048.0)

# 06-mapper-convlayer-eyeriss (32 nm ERT) and timeloop+accelergy/ref-output/intmac (45 nm ERT):
# (read, write, leak) pJ per component; block = width / datawidth of arch/eyeriss_like.yaml.
EYERISS_ERT = {
    "32nm": {
        "mac": 0.207692,
        "shared_glb": (18.183829, 14.137929, 0.005652),
        "ifmap_spad": (0.202442, 0.176713, 0.000101),
        "weights_spad": (1.976602, 1.881657, 0.001592),
        "psum_spad": (0.2513, 0.2191, 0.000134),
    },
    "45nm": {
        "mac": 0.315,
        "shared_glb": (32.342452, 26.121552, 0.003351),
        "ifmap_spad": (0.310924, 0.271902, 0.000154),
        "weights_spad": (3.005554, 2.861554, 0.002416),
        "psum_spad": (0.385026, 0.336188, 0.000204),
    },
}


def _eyeriss(tech: str) -> tuple[tuple[LevelMap, ...], float]:
    e = EYERISS_ERT[tech]

    def lv(name: str, keeps: set[str], block: int, words: int) -> Level:
        r, w, leak = e[name]
        return Level(name, frozenset(keeps), block, r, w, capacity_words=words, leak_pj=leak)

    # the mapper's answer, ref-output/timeloop-mapper.map.txt (same in both folders)
    nest = (
        LevelMap(Level("DRAM", ALL, 8, 512.0, 512.0), (("Q", 4), ("C", 4), ("P", 7), ("M", 4))),
        LevelMap(
            lv("shared_glb", {IN, OUT}, 8, 16384 * 8),
            (("M", 2), ("C", 4), ("P", 8)),
            (("Q", 14), ("M", 4), ("S", 3)),
        ),
        LevelMap(lv("ifmap_spad", {IN}, 2, 24)),
        LevelMap(lv("weights_spad", {WT}, 2, 384), (("R", 3), ("C", 8))),
        LevelMap(lv("psum_spad", {OUT}, 1, 16), (("M", 8),)),
    )
    return nest, e["mac"]


def _two(main: tuple, buf: tuple) -> tuple[LevelMap, ...]:
    return (LevelMap(_sram("MainMemory"), main), LevelMap(_rf("Buffer"), buf))


def _three(glb: tuple, rf: tuple, glb_keeps=ALL, rf_keeps=ALL, main=(), spatial=()) -> tuple:
    return (
        LevelMap(DRAM, main, spatial),
        LevelMap(_sram("GlobalBuffer", glb_keeps), glb),
        LevelMap(_rf("RegisterFile", rf_keeps), rf),
    )


# (exercise folder / reference output, problem, nest (loops outermost first), MAC pJ, reference)
# Timeloop permutations list loops innermost first; the tuples below are outermost first.
CASES = {
    "00-1level": (
        "timeloop/00-model-conv1d-1level/ref-output/timeloop-model.stats.txt",
        CONV1D,
        (LevelMap(_rf("Buffer"), (("P", 16), ("R", 3))),),
        MAC_PJ,
        {
            "cycles": 48,
            "counts": {
                ("Buffer", WT): (48, 0, 0),
                ("Buffer", IN): (48, 0, 0),
                ("Buffer", OUT): (32, 0, 48),
            },
            "fj": {"MACC": 845.0, "Buffer": 1561.54},
        },
    ),
    "01-2level-os": (
        "timeloop/01-model-conv1d-2level/ref-output/os/timeloop-model.stats.txt",
        CONV1D,
        _two((("R", 1), ("P", 16)), (("P", 1), ("R", 3))),
        MAC_PJ,
        {
            "cycles": 48,
            "counts": {
                ("Buffer", WT): (48, 3, 0),
                ("Buffer", IN): (48, 18, 0),
                ("Buffer", OUT): (32, 0, 48),
                ("MainMemory", WT): (3, 0, 0),
                ("MainMemory", IN): (18, 0, 0),
                ("MainMemory", OUT): (0, 0, 16),
            },
            "fj": {"MACC": 845.0, "Buffer": 1747.76, "MainMemory": 4907.32},
        },
    ),
    "01-2level-ws": (
        "timeloop/01-model-conv1d-2level/ref-output/ws/timeloop-model.stats.txt",
        CONV1D,
        _two((("P", 1), ("R", 3)), (("R", 1), ("P", 16))),
        MAC_PJ,
        {
            "cycles": 48,
            "counts": {
                ("Buffer", WT): (48, 3, 0),
                ("Buffer", IN): (48, 18, 0),
                ("Buffer", OUT): (32, 0, 48),
                ("MainMemory", WT): (3, 0, 0),
                ("MainMemory", IN): (18, 0, 0),
                ("MainMemory", OUT): (0, 0, 16),
            },
            "fj": {"MACC": 845.0, "Buffer": 1747.76, "MainMemory": 4907.32},
        },
    ),
}

_3LVL_COUNTS = {
    ("RegisterFile", WT): (1536, 96, 0),
    ("RegisterFile", IN): (1536, 288, 0),
    ("RegisterFile", OUT): (1024, 0, 1536),
    ("GlobalBuffer", WT): (96, 96, 0),
    ("GlobalBuffer", IN): (288, 18, 0),
    ("GlobalBuffer", OUT): (0, 0, 512),
    ("MainMemory", WT): (96, 0, 0),
    ("MainMemory", IN): (18, 0, 0),
    ("MainMemory", OUT): (0, 0, 512),
}
_3LVL_FJ = {"MACC": 845.0, "RegisterFile": 1667.95, "GlobalBuffer": 2950.9, "MainMemory": 26666.67}

CASES |= {
    "02-2level-no-tiling": (
        "timeloop/02-model-conv1d+oc-2level/ref-output/no-tiling/timeloop-model.stats.txt",
        CONV1D_OC,
        _two((("K", 32), ("R", 1), ("P", 16)), (("K", 1), ("P", 1), ("R", 3))),
        MAC_PJ,
        {
            "cycles": 1536,
            "counts": {
                ("Buffer", WT): (1536, 96, 0),
                ("Buffer", IN): (1536, 576, 0),
                ("Buffer", OUT): (1024, 0, 1536),
                ("MainMemory", WT): (96, 0, 0),
                ("MainMemory", IN): (576, 0, 0),
                ("MainMemory", OUT): (0, 0, 512),
            },
            "fj": {"MACC": 845.0, "Buffer": 1747.76, "MainMemory": 3665.44},
        },
    ),
    "02-2level-tiling": (
        "timeloop/02-model-conv1d+oc-2level/ref-output/tiling/timeloop-model.stats.txt",
        CONV1D_OC,
        _two((("K", 16), ("R", 1), ("P", 16)), (("K", 2), ("P", 1), ("R", 3))),
        MAC_PJ,
        {
            "cycles": 1536,
            "counts": {
                ("Buffer", WT): (1536, 96, 0),
                ("Buffer", IN): (1536, 288, 0),
                ("Buffer", OUT): (1024, 0, 1536),
                ("MainMemory", WT): (96, 0, 0),
                ("MainMemory", IN): (288, 0, 0),
                ("MainMemory", OUT): (0, 0, 512),
            },
            "fj": {"MACC": 845.0, "Buffer": 1667.95, "MainMemory": 2649.35},
        },
    ),
    "03-3level-bypass": (
        "timeloop/03-model-conv1d+oc-3level/ref-output/bypass/timeloop-model.stats.txt",
        CONV1D_OC,
        _three(
            (("K", 16), ("R", 1), ("P", 16)),
            (("K", 2), ("P", 1), ("R", 3)),
            glb_keeps=frozenset({WT, IN}),
            rf_keeps=frozenset({OUT}),
        ),
        MAC_PJ,
        {
            "cycles": 1536,
            "counts": {
                ("RegisterFile", OUT): (1024, 0, 1536),
                ("GlobalBuffer", WT): (1536, 96, 0),
                ("GlobalBuffer", IN): (1536, 18, 0),
                ("MainMemory", WT): (96, 0, 0),
                ("MainMemory", IN): (18, 0, 0),
                ("MainMemory", OUT): (0, 0, 512),
            },
            "fj": {
                "MACC": 845.0,
                "RegisterFile": 710.26,
                "GlobalBuffer": 11147.78,
                "MainMemory": 26666.67,
            },
        },
    ),
    "03-3level-no-bypass": (
        "timeloop/03-model-conv1d+oc-3level/ref-output/no-bypass/timeloop-model.stats.txt",
        CONV1D_OC,
        _three((("K", 16), ("R", 1), ("P", 16)), (("K", 2), ("P", 1), ("R", 3))),
        MAC_PJ,
        {"cycles": 1536, "counts": _3LVL_COUNTS, "fj": _3LVL_FJ},
    ),
    # 04: the reference run places the 16-way PE fan-out between MainMemory and GlobalBuffer
    # (ref-output/*/timeloop-model.map.txt: "inter_PE_spatial" above GlobalBuffer; the stats list
    # 16 GlobalBuffer instances), so the nest does the same.
    "04-spatial-C-partitioned": (
        "timeloop/04-model-conv1d+oc-3levelspatial/ref-output/cp/timeloop-model.stats.txt",
        CONV1D_OC_IC,
        _three((("C", 2), ("K", 32), ("R", 3)), (("P", 16),), spatial=(("C", 16),)),
        MAC_PJ,
        {
            "cycles": 3072,
            "counts": {
                ("RegisterFile", WT): (3072, 192, 0),
                ("RegisterFile", IN): (3072, 1152, 0),
                ("RegisterFile", OUT): (2560, 512, 3072),
                ("GlobalBuffer", WT): (192, 192, 0),
                ("GlobalBuffer", IN): (1152, 36, 0),
                ("GlobalBuffer", OUT): (512, 0, 1024),
                ("MainMemory", WT): (3072, 0, 0),
                ("MainMemory", IN): (576, 0, 0),
                ("MainMemory", OUT): (0, 0, 512),
            },
            "fj": {
                "MACC": 845.0,
                "RegisterFile": 1889.64,
                "GlobalBuffer": 4860.12,
                "MainMemory": 5416.67,
            },
        },
    ),
    "04-spatial-K-partitioned": (
        "timeloop/04-model-conv1d+oc-3levelspatial/ref-output/kp/timeloop-model.stats.txt",
        CONV1D_OC_IC,
        _three((("C", 32), ("K", 2), ("R", 3)), (("P", 16),), spatial=(("K", 16),)),
        MAC_PJ,
        {
            "cycles": 3072,
            "counts": {
                ("RegisterFile", WT): (3072, 192, 0),
                ("RegisterFile", IN): (3072, 1152, 0),
                ("RegisterFile", OUT): (3040, 992, 3072),
                ("GlobalBuffer", WT): (192, 192, 0),
                ("GlobalBuffer", IN): (1152, 576, 0),
                ("GlobalBuffer", OUT): (992, 0, 1024),
                ("MainMemory", WT): (3072, 0, 0),
                ("MainMemory", IN): (576, 0, 0),
                ("MainMemory", OUT): (0, 0, 512),
            },
            "fj": {
                "MACC": 845.0,
                "RegisterFile": 2022.65,
                "GlobalBuffer": 6380.31,
                "MainMemory": 5416.67,
            },
        },
    ),
    # 05: the mapper exercise; the nests are the mapper's answers (ref-output/*/...map.txt).
    "05-mapper-1mapping": (
        "timeloop/05-mapper-conv1d+oc-3level/ref-output/baked/timeloop-mapper.stats.txt",
        CONV1D_OC,
        _three((("K", 16), ("P", 16)), (("R", 3), ("K", 2))),
        MAC_PJ,
        {"cycles": 1536, "counts": _3LVL_COUNTS, "fj": _3LVL_FJ},
    ),
    "05-mapper-freebypass": (
        "timeloop/05-mapper-conv1d+oc-3level/ref-output/freebypass/timeloop-mapper.stats.txt",
        CONV1D_OC,
        _three((("K", 16), ("P", 16)), (("R", 3), ("K", 2)), glb_keeps=frozenset({IN})),
        MAC_PJ,
        {
            "cycles": 1536,
            "counts": {
                ("RegisterFile", WT): (1536, 96, 0),
                ("RegisterFile", IN): (1536, 288, 0),
                ("RegisterFile", OUT): (1024, 0, 1536),
                ("GlobalBuffer", IN): (288, 18, 0),
                ("MainMemory", WT): (96, 0, 0),
                ("MainMemory", IN): (18, 0, 0),
                ("MainMemory", OUT): (0, 0, 512),
            },
            "fj": {
                "MACC": 845.0,
                "RegisterFile": 1667.95,
                "GlobalBuffer": 1084.37,
                "MainMemory": 26666.67,
            },
        },
    ),
    "05-mapper-null-constraints": (
        "timeloop/05-mapper-conv1d+oc-3level/ref-output/null/timeloop-mapper.stats.txt",
        CONV1D_OC,
        _three((), (), frozenset(), frozenset(), main=(("P", 16), ("R", 3), ("K", 32))),
        MAC_PJ,
        {
            "cycles": 1536,
            "counts": {
                ("MainMemory", WT): (1536, 0, 0),
                ("MainMemory", IN): (1536, 0, 0),
                ("MainMemory", OUT): (1024, 0, 1536),
            },
            "fj": {
                "MACC": 845.0,
                "RegisterFile": 0.86,
                "GlobalBuffer": 7.97,
                "MainMemory": 234666.67,
            },
        },
    ),
}

_EYERISS_COUNTS = {
    ("psum_spad", OUT): (5490688, 215040, 5505024),
    ("weights_spad", WT): (5505024, 688128, 0),
    ("ifmap_spad", IN): (5505024, 286720, 0),
    ("shared_glb", IN): (12042240, 573440, 0),
    ("shared_glb", OUT): (12042240, 2408448, 12845056),
    ("DRAM", WT): (8257536, 0, 0),
    ("DRAM", IN): (573440, 0, 0),
    ("DRAM", OUT): (2408448, 0, 3211264),
}
CASES |= {
    "06-eyeriss-vgg02-layer5": (
        "timeloop/06-mapper-convlayer-eyeriss/ref-output/timeloop-mapper.stats.txt",
        VGG02_5,
        *_eyeriss("32nm"),
        {
            "cycles": 5505024,
            "counts": _EYERISS_COUNTS,
            "fj": {
                "mac": 207.69,
                "psum_spad": 478.44,
                "weights_spad": 1107.5,
                "ifmap_spad": 105.92,
                "shared_glb": 89.47,
                "DRAM": 1000.0,
            },
        },
    ),
    "eyeriss-like-default-intmac": (
        "timeloop+accelergy/ref-output/intmac/timeloop-mapper.stats.txt",
        VGG02_5,
        *_eyeriss("45nm"),
        {
            "cycles": 5505024,
            "counts": _EYERISS_COUNTS,
            "fj": {
                "mac": 315.0,
                "psum_spad": 733.55,
                "weights_spad": 1684.04,
                "ifmap_spad": 162.7,
                "shared_glb": 161.18,
                "DRAM": 1000.0,
            },
        },
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_cycles_and_access_counts_match_timeloop(case: str) -> None:
    """Cycles and every (level, tensor) read / fill / update count equal Timeloop's."""
    _, problem, nest, mac_pj, ref = CASES[case]
    stats = evaluate(problem, nest, mac_pj)
    assert stats.cycles == ref["cycles"]
    for (level, tensor), (r, f, u) in ref["counts"].items():
        got = (stats.reads[level, tensor], stats.fills[level, tensor], stats.updates[level, tensor])
        assert got == (r, f, u), f"{case} {level} {tensor}: ours {got}, Timeloop {(r, f, u)}"
    ours_kept = {
        k for k, v in stats.reads.items() if (v, stats.fills[k], stats.updates[k]) != (0, 0, 0)
    }
    assert ours_kept <= set(ref["counts"]), "a level holds a tensor the reference does not"


@pytest.mark.parametrize("case", sorted(CASES))
def test_energy_per_level_within_5_percent_of_timeloop(case: str) -> None:
    """Energy of each level (fJ per MAC, Timeloop's summary block) within 5 %."""
    _, problem, nest, mac_pj, ref = CASES[case]
    stats = evaluate(problem, nest, mac_pj)
    for level, fj in ref["fj"].items():
        ours = stats.fj_per_mac("mac" if level in ("MACC", "mac") else level, problem.macs)
        assert ours == pytest.approx(fj, rel=0.05), (
            f"{case} {level}: ours {ours:.2f} fJ, Timeloop {fj}"
        )
