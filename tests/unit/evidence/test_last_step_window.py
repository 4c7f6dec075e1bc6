"""The last step's window on a trace whose steps overlap on the GPU (issue 26, point 2).

HTA's public A100 trace (rank 0 of 16, tests/data/hta/README.md) runs steps of ~216 ms whose GPU
work goes on ~160 ms into the next step; the last step, with no next one to end its window,
spans 372 ms of its own work, longer than any step. It is no step period: the reader leaves it
out of the steps and says why, and the window rule in the output says so. (HTA's DLRM V100
trace overlaps too, but its last window, 166 ms, is no longer than its longest step: it stays.)
"""

from __future__ import annotations

from pathlib import Path

import pytest

from workbench.evidence import read_trace
from workbench.evidence.breakdown import step_windows

TRACE = Path(__file__).resolve().parents[2] / "data" / "hta" / "a100_16ranks_rank0.json.gz"


@pytest.fixture(scope="module")
def run():
    return read_trace(TRACE)


def test_the_pipelined_last_step_is_left_out_with_its_reason(run):
    assert [it.index for it in run.iterations] == [550, 551, 552, 553]
    assert [round(it.wall_s * 1e3) for it in run.steady_iterations] == [216, 216, 215]
    (note,) = [w for w in run.warnings if w.startswith("the last step (#554)")]
    assert "runs 372 ms from its first kernel" in note
    assert "the step before ran 160 ms past its start" in note
    assert "left out if steps overlap on the GPU and it outlasts all others" in run.window_rule
    assert run.interval_note() is None  # 3 steady steps remain: the interval stands


def test_a_last_window_no_longer_than_a_measured_step_stays():
    v100 = read_trace(TRACE.with_name("dlrm_v100_rank1.json.gz"))
    assert [it.index for it in v100.iterations][-1] == 1014
    assert not any(w.startswith("the last step") for w in v100.warnings)


def test_its_window_is_still_drawn_for_the_breakdown(run):
    windows = step_windows(run.kernels)
    assert windows[-1][0] == 554
    assert (windows[-1][2] - windows[-1][1]) * 1e3 == pytest.approx(372.3, abs=0.1)


def test_the_trace_command_states_the_rule_and_the_warning(capsys):
    from workbench.cli import main

    assert main(["trace", str(TRACE)]) == 0
    out = capsys.readouterr().out
    assert "left out if steps overlap on the GPU and it outlasts all others" in out
    assert "the last step (#554) is left out of the steps" in out
