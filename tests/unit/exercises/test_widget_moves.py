"""Every drag a lesson instructs is one the explorer carries out (issue 20)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from workbench.errors import WorkbenchError
from workbench.exercises import lesson08
from workbench.ui.explorer import BATCHES, SEQS, refusal

LESSONS = Path(__file__).resolve().parents[3] / "lessons"
CALL = re.compile(r'widget_claim\("([\w.-]+)", "([\w.-]+)", batch=(\d+)\)')


def _calls() -> list[tuple[str, str, int, str]]:
    out = []
    for nb in sorted(LESSONS.glob("*.ipynb")):
        for cell in json.loads(nb.read_text())["cells"]:
            for m in CALL.finditer("".join(cell["source"])):
                out.append((m[1], m[2], int(m[3]), nb.name[:2]))
    return out


CALLS = _calls()


def test_the_lessons_instruct_drags():
    assert {lesson for *_, lesson in CALLS} >= {"01", "02", "08"}


@pytest.mark.parametrize(("model", "hw", "batch", "lesson"), CALLS)
def test_every_instructed_setting_is_accepted_by_the_explorer(model, hw, batch, lesson):
    for move in lesson08.widget_moves(model, hw, batch=batch):
        assert move.start in (SEQS if move.slider == "seq" else BATCHES)
        assert move.end in (SEQS if move.slider == "seq" else BATCHES)
        for b, s in move.settings():
            assert refusal(model, hw, "decode", b, s, "bf16") == "", (lesson, move)
    text = lesson08.widget_claim(model, hw, batch=batch).text
    seq_move, batch_move = lesson08.widget_moves(model, hw, batch=batch)
    assert f"to {seq_move.end:,} at batch {batch}" in text
    assert f"from 1 to {batch_move.end} at seq" in text


def test_a_drag_past_the_context_is_clipped_to_it():
    seq_move, _ = lesson08.widget_moves("llama2-7b", "h100-sxm", batch=1)
    # llama2-7b has 4,096 positions: decode at 4,096 cached tokens needs 4,097 (the check of
    # ``workbench map``, one implementation), so the farthest power of two is 2,048
    assert seq_move.end == 2048
    assert "needs 4097 positions" in refusal("llama2-7b", "h100-sxm", "decode", 1, 4096, "bf16")
    assert refusal("llama2-7b", "h100-sxm", "decode", 1, 8192, "bf16")


def test_a_batch_drag_stops_where_the_cache_still_fits():
    _, batch_move = lesson08.widget_moves("llama2-7b", "h100-sxm", batch=1)
    assert not refusal("llama2-7b", "h100-sxm", "decode", batch_move.end, 2048, "bf16")
    assert refusal("llama2-7b", "h100-sxm", "decode", batch_move.end * 2, 2048, "bf16")


def test_an_exercise_at_a_refused_setting_is_an_error():
    with pytest.raises(WorkbenchError, match="context is 4096 tokens"):
        lesson08.check_decode_bottleneck(
            "compute", model="llama2-7b", hardware_name="h100-sxm", context=8192
        )


@pytest.mark.parametrize(("model", "hw", "batch", "lesson"), CALLS)
def test_the_explorer_carries_out_every_instructed_drag(model, hw, batch, lesson):
    # the instruction performed on the lesson's own widget: the chart changes, no refusal
    from workbench.ui import MappingExplorer

    for move in lesson08.widget_moves(model, hw, batch=batch):
        (b0, s0), (b1, s1) = move.settings()
        ex = MappingExplorer(model=model, hardware=hw, phase="decode", batch=b0, seq=s0)
        before = ex.mapping.time_s
        slider = ex.controls[move.slider]
        slider.value = move.end
        assert ex.error == "", (lesson, move, ex.error)
        assert (ex.controls["batch"].value, ex.controls["seq"].value) == (b1, s1)
        assert ex.mapping.time_s != before
