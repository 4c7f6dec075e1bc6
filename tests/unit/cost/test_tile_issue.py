"""The tile-issue strategy: chosen once per profile, and the only place hosts and chips differ."""

import ast
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

import workbench.cost as cost_pkg
from workbench.cost.issue import HardwareScheduled, SoftwareIssued, TileIssue, tile_issue
from workbench.cost.score_gemm import _batched_issue
from workbench.hw import load_hardware
from workbench.ir import ops as O
from workbench.ir.graph import Graph
from workbench.lowering import lower
from workbench.options import MapOptions
from workbench.scheduling.gemm import gemm_mapspace

OPTS = MapOptions(dtype="fp32")
COST = Path(cost_pkg.__file__).parent
#: Modules that score candidates: they call the strategy and never ask which one they got.
SCORERS = [*sorted(COST.glob("score_*.py")), COST / "scored.py", COST / "search.py"]
#: Names that say "is this a host?" when they appear in a condition.
HOST_MARKS = {
    "hardware_scheduled",
    "scheduling",
    "software_issued",
    "tile_issue_s",
    "attention_block_issue_s",
    "host",
    "is_host",
    "issue_free",
    "HardwareScheduled",
    "SoftwareIssued",
}


def _host_branches(source: str) -> list[str]:
    """Conditions (if, ternary, and/or, comparisons, isinstance) that mention a host marker."""
    found = []
    for node in ast.walk(ast.parse(source)):
        tests = []
        is_isinstance = isinstance(node, ast.Call) and getattr(node.func, "id", "") == "isinstance"
        if isinstance(node, (ast.If, ast.IfExp, ast.While)):
            tests.append(node.test)
        elif isinstance(node, (ast.BoolOp, ast.Compare)) or is_isinstance:
            tests.append(node)
        for test in tests:
            names = {getattr(n, "attr", getattr(n, "id", None)) for n in ast.walk(test)}
            if names & HOST_MARKS:
                found.append(f"line {test.lineno}: {ast.unparse(test)}")
    return found


def _host_imports(source: str) -> list[str]:
    """Imports of the host formulas (a scorer reaches them only through the strategy)."""
    return [
        f"line {n.lineno}: from {n.module} import ..."
        for n in ast.walk(ast.parse(source))
        if isinstance(n, ast.ImportFrom) and n.module == "workbench.cost.host"
    ]


@pytest.mark.parametrize("path", SCORERS, ids=lambda p: p.name)
def test_scorers_never_ask_if_host(path):
    source = path.read_text()
    assert _host_branches(source) == []
    assert _host_imports(source) == []


@pytest.mark.parametrize(
    "snippet",
    [
        "if hw.overheads.tile_issue_s > 0:\n    t = 1",
        "t = a if issue_free(hw) else b",
        "host = hw.overheads.tile_issue_s > 0 and block > 0",
        "ok = isinstance(ti, SoftwareIssued)",
        "drain = lat if issue == 0 or host else 0.0",
        'ok = isinstance(ti, HardwareScheduled) and kind != "generic"',
    ],
)
def test_the_contract_catches_a_host_branch(snippet):
    assert _host_branches(snippet)


def _linear(m: int, k: int, n: int) -> Graph:
    op = O.Linear(
        name="fc", inputs=("x",), tokens=(m,), in_features=k, out_features=n, dtype="fp32"
    )
    return Graph(name="g", ops=(op,))


def _with(hw, section: str, **fields):
    data = hw.model_dump()
    data[section].update(fields)
    return type(hw).model_validate(data)


def _styled(hw, scheduling: str, **overheads):
    data = hw.model_dump()
    data["overheads"].update(overheads)
    data["scheduling"] = scheduling
    return type(hw).model_validate(data)


@pytest.fixture(scope="module")
def chip():
    return load_hardware("teaching")


@pytest.fixture(scope="module")
def host(chip):
    return _styled(chip, "software_issued", tile_issue_s=2e-6, kernel_launch_s=1e-10)


def _terms(kernel, hw, ms, rows=64, cols=64, bw_core=1e11):
    return tile_issue(hw).gemm_terms(kernel, hw, ms, rows, cols, bw_core)


def test_the_strategy_follows_the_typed_scheduling_field(chip, host):
    assert tile_issue(chip) == HardwareScheduled()
    assert tile_issue(host) == SoftwareIssued(attention_engine=False)
    engine = _with(host, "overheads", attention_block_issue_s=1e-5)
    assert tile_issue(engine) == SoftwareIssued(attention_engine=True)
    assert tile_issue(chip).solves_math_rate
    assert not tile_issue(host).solves_math_rate
    # NOTE: the field decides, not tile_issue_s: a chip may pay a fixed cost per tile step.
    paying = _styled(chip, "hardware_scheduled", tile_issue_s=2e-6)
    assert tile_issue(paying) == HardwareScheduled()


def test_the_interface_stays_small():
    methods = [n for n in vars(TileIssue) if not n.startswith("_") and callable(vars(TileIssue)[n])]
    assert len(methods) <= 8, methods


def test_hardware_scheduled_leaves_the_padded_tile_as_the_work(chip):
    kernel = lower(_linear(100, 64, 40), chip, OPTS)[0]
    ms = gemm_mapspace(kernel, chip)
    ti = tile_issue(chip)
    t_k = np.full(ms.shape, 1e-6)
    work, out = ti.gemm_step(kernel, chip, ms, t_k, ms.tm, ms.tn)
    assert work is ms.padded_flops
    assert out is t_k
    terms = _terms(kernel, chip, ms)
    assert terms.store_drain_s == chip.offchip.latency_s
    assert terms.epilogue_s == terms.gather_s == 0.0
    assert not terms.issue_per_tile
    assert ti.streaming(kernel, chip).serial_s == 0.0
    util = np.ones(1)
    assert ti.row_compute_s(kernel, chip, 1e9, util).tolist() == [
        1e9 / chip.vector_flops(kernel.dtype)
    ]
    assert ti.classify(kernel, chip, 1.0, 0.9, ("compute", "e")) == ("compute", "e")
    assert ti.attention_block_s(kernel, chip, None, "fa2", None) is None


def test_hardware_split_k_pays_latency_and_partials_only_when_split(chip, host):
    kernel = lower(_linear(64, 4096, 64), chip, OPTS)[0]
    ms = gemm_mapspace(kernel, chip)
    fix = np.broadcast_to(_terms(kernel, chip, ms).split_fixup_s, ms.shape)
    split = np.broadcast_to(ms.split, ms.shape)
    assert (fix[split == 1] == 0).all()
    assert (fix[split > 1] > 0).all()
    assert _terms(kernel, host, ms).split_fixup_s.tolist() == [0.0]


def test_a_systolic_array_pays_its_fill_skew_once_per_tile():
    tpu = load_hardware("tpu-v5e")
    me = tpu.matrix_engine
    kernel = lower(_linear(128, 128, 128), tpu, MapOptions())[0]
    ms = gemm_mapspace(kernel, tpu)
    assert _terms(kernel, tpu, ms).fill_skew_s == pytest.approx(me.fold_skew_cycles / me.clock_hz)
    assert SoftwareIssued().gemm_terms(kernel, tpu, ms, 64, 64, 1e11).fill_skew_s == 0.0


def test_software_issued_calls_run_the_exact_slice(host):
    kernel = lower(_linear(100, 64, 40), host, OPTS)[0]
    ms = gemm_mapspace(kernel, host)
    t_k = np.ones(np.shape(ms.padded_flops))
    work, out = tile_issue(host).gemm_step(kernel, host, ms, t_k, ms.tm, ms.tn)
    true = 2.0 * 100 * 64 * 40
    assert np.all(work == true)
    # Without call-rate tables the K-step shrinks by exactly true / padded (plus the
    # accumulator's traffic, which is positive).
    assert np.all(out >= true / np.maximum(ms.padded_flops, 1))
    assert np.any(np.asarray(ms.padded_flops) > true)


def test_software_issued_batches_issue_once_per_output_tile(host):
    kernel = lower(_linear(8, 64, 64), host, OPTS)[0]
    assert _terms(kernel, host, gemm_mapspace(kernel, host)).issue_per_tile
    pipeline, issued = np.array([10.0]), np.array([4.0])
    assert kernel.gemm.batch == 1
    assert _batched_issue(kernel, pipeline, issued, True) == (pipeline, issued)
    four = replace(kernel, gemm=replace(kernel.gemm, batch=4))
    assert _batched_issue(four, pipeline, issued, False) == (pipeline, issued)
    new_pipeline, issue_s = _batched_issue(four, pipeline, issued, True)
    assert issue_s.tolist() == [1.0]  # 4 s of steps issued once for 4 batch entries
    assert new_pipeline.tolist() == [7.0]  # the pipeline trades the 4 s for the 1 s


def _attention_ms(hw):
    from workbench.scheduling.attention import attention_mapspace

    op = O.Attention(
        name="att", inputs=("q", "k", "v"), batch=1, heads=2, kv_heads=2, q_len=128,
        kv_len=128, head_dim=64, dtype="fp32",
    )  # fmt: skip
    kernel = lower(Graph(name="g", ops=(op,)), hw, OPTS)[0]
    return kernel, attention_mapspace(kernel, hw)


def test_software_issued_attention_overlaps_fa3_only_without_an_engine(host):
    engine = _with(host, "overheads", attention_block_issue_s=1e-5)
    kernel, ms = _attention_ms(host)
    t_mm = np.full(np.shape(ms.padded_flops), 1e-6)
    for hw in (host, engine):
        ti = tile_issue(hw)
        fa3 = ti.attention_block_s(kernel, hw, ms, "fa3", t_mm)
        fa2 = ti.attention_block_s(kernel, hw, ms, "fa2", t_mm)
        assert fa3 is not None  # the host runs the generic loop whatever the class
        assert fa2 is not None
        assert (np.asarray(fa3) < fa2).all() if hw is host else (fa3 == fa2).all()


def test_software_issued_classes_from_a_time_split_unless_capacity(host):
    kernel = lower(_linear(48, 64, 40), host, OPTS)[0]
    ti = tile_issue(host)
    assert ti.classify(kernel, host, 1e-5, 0.9e-5, ("compute", "e"))[0] == "overhead"
    assert ti.classify(kernel, host, 1e-5, 0.9e-5, ("capacity", "e")) == ("capacity", "e")
    assert not _terms(kernel, host, gemm_mapspace(kernel, host)).misaligned


def test_software_issued_uses_the_calibrated_vector_rate(host):
    rated = _with(host, "vector_unit", kernel_flops_per_s={"elementwise": 1e9})
    kernel = lower(_linear(48, 64, 40), rated, OPTS)[0]
    ms = gemm_mapspace(kernel, rated)
    assert _terms(kernel, rated, ms).epilogue_s == pytest.approx(kernel.vector_flops / 1e9)
    util = np.ones(1)
    assert HardwareScheduled().row_compute_s(kernel, rated, 1e9, util).tolist() == [
        1e9 / rated.vector_flops(kernel.dtype)
    ]
