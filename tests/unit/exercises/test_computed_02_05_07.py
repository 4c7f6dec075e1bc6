"""Lessons 02, 05 and 07's second exercises are computed, not read off (issue 28 point 1).

Each check passes the answer worked out from first principles here (not from the library's
expected value), fails a wrong one with the exercise's hint and then a graded hint, and what
would state the answer on the page waits for the check.
"""

import pytest

from workbench.exercises import ExerciseError, _check, lesson02, lesson05, lesson07
from workbench.hw import load_hardware


@pytest.fixture(autouse=True)
def _fresh_session(monkeypatch):
    """No exercise settled or tried before each test (the check state is per session)."""
    monkeypatch.setattr(_check, "_SETTLED", set())
    monkeypatch.setattr(_check, "_REVEALED", set())
    monkeypatch.setattr(_check, "_ATTEMPTS", {})
    monkeypatch.setattr(_check, "_LAST", {})


# --- lesson 02, Exercise 2: up_proj at decode batch 512 --------------------------------------

B, K, N = 512, 4096, 11008  # a batch of one-token rows; Llama-2-7B's hidden and FFN widths
#: FLOPs (2 per multiply-add) over the input, weight and output bytes, each moved once, in bf16
INTENSITY = 2 * B * K * N / (2 * (B * K + K * N + B * N))


def _side(answer, **kw):
    return lesson02.check_side_of_ridge(answer, batch=B, seq=128, **kw)


def test_side_of_ridge_passes_the_pair_computed_from_the_shapes():
    assert _side((INTENSITY, "compute"), strict=True).passed
    assert _side((round(INTENSITY), "compute-bound"), strict=True).passed  # within 1 %, a synonym


@pytest.mark.parametrize(
    ("wrong", "graded"),
    [
        ((INTENSITY / 2, "compute"), "part 1 of 2 is not right yet (part 1: too low"),
        ((INTENSITY, "bandwidth"), "part 2 of 2 is not right yet"),
        ((B, "compute"), "part 1 of 2 is not right yet (part 1: too high"),  # the weight alone
    ],
)
def test_side_of_ridge_fails_a_wrong_pair_with_the_hint_then_a_graded_one(wrong, graded):
    first = _side(wrong, strict=False)
    assert not first.passed
    assert first.hints == (lesson02._TEXT.render("side_of_ridge_hint"),)
    second = _side(wrong, strict=False)
    assert second.hints[1].startswith(graded)
    assert f"{INTENSITY:.3g}" not in " ".join(second.hints)  # the answer is never in a hint
    with pytest.raises(ExerciseError):
        _side(wrong, strict=True)


def test_side_of_ridge_agrees_with_the_roofline_against_the_ridge():
    # the exercise's reasoning (intensity against the bf16 ridge) gives the mapper's class
    ridge = load_hardware("h100-sxm").ridge_point("bf16")
    expected = _side(None, strict=False).expected
    assert expected[1] == ("compute" if ridge < INTENSITY else "bandwidth")
    assert 1.2 * ridge < INTENSITY  # not a borderline case the sustained rates could flip


def test_no_lesson02_table_holds_the_exercise_batch():
    # the decode table is batch 1: its up_proj row is not Exercise 2's GEMM
    row = lesson02.bound_table(phase="decode").loc["mlp.up_proj"]
    assert row["intensity"] < INTENSITY / 100


# --- lesson 05, Exercise 2: transforms without propagation ----------------------------------


def test_layout_transforms_counts_two_per_convolution_of_the_graph():
    from workbench.models import build_graph

    convs = sum(op.kind == "Conv2d" for op in build_graph("resnet50", batch=32).ops)
    assert convs == 53  # torchvision ResNet-50: the stem, 16 blocks x 3, 4 downsamples
    assert lesson05.check_layout_transforms(2 * convs, strict=True).passed
    wrong = lesson05.check_layout_transforms(convs, strict=False)
    assert wrong.hints == (lesson05._TEXT.render("layout_transforms_hint"),)
    second = lesson05.check_layout_transforms(convs, strict=False)
    assert second.hints[1].startswith("too low, by a small whole factor")


def test_the_layout_table_and_takeaway_wait_for_the_check():
    table = lesson05.layout_table()
    hidden = lesson05.layout_view(table)
    assert set(hidden["transforms"]) == {"(Exercise 2)"}
    assert hidden["total_ms"].equals(table["total_ms"])  # the times stay
    count = str(int(table.loc[("NHWC", False), "transforms"]))
    takeaway = lesson05.layout_takeaway_claim(table)
    assert takeaway.hidden
    assert count not in str(takeaway)
    # the pitfall never states NCHW's count (it equals the answer)
    assert f" {count} " not in str(lesson05.nchw_pitfall_claim(table))
    lesson05.check_layout_transforms(int(table.loc[("NHWC", False), "transforms"]))
    assert lesson05.layout_view(table).equals(table)
    assert not takeaway.hidden
    assert f"runs {count} of them" in str(takeaway)


# --- lesson 07, Exercise 2: the canary team's decision ---------------------------------------


def test_release_decision_under_the_team_criteria_is_computed_from_the_table():
    table = lesson07.criteria_table("barrier-per-layer", scale=4)
    assert "status" not in table.columns
    assert "decision" not in table.columns
    # the rule applied here to the table's own figures (percent strings)
    roll = flag = False
    for _, row in table.iterrows():
        if row["regression"] == "n/a" or "points" in row["regression"]:
            continue
        reg = float(row["regression"].rstrip("%"))
        noise = float(row["noise"].rstrip("%")) if row["noise"] != "-" else 0.0
        if reg <= noise:
            continue
        roll |= reg > float(row["roll_back_beyond"].rstrip("%"))
        flag |= reg > float(row["flag_beyond"].rstrip("%"))
    by_hand = "roll back" if roll else "ship behind a flag" if flag else "ship"
    assert by_hand == "ship behind a flag"
    assert lesson07.check_release_decision("barrier-per-layer", by_hand, scale=4, strict=True)


def test_release_decision_reading_the_panel_fails_with_the_hint_then_a_graded_one():
    panel = lesson07.panel_report("barrier-per-layer", simulate=True).decision
    assert panel == "roll back"  # the panel's built-in criteria: not the team's answer
    first = lesson07.check_release_decision("barrier-per-layer", panel, scale=4, strict=False)
    assert not first.passed
    assert "this team's thresholds, not the panel's" in first.hints[0]
    second = lesson07.check_release_decision("barrier-per-layer", panel, scale=4, strict=False)
    assert "the panel's headline applies the built-in" in second.hints[1]
    assert "ship behind a flag" not in repr(second).split("hint 2")[0]


def test_decision_claim_waits_for_the_team_check():
    claim = lesson07.decision_claim("barrier-per-layer", scale=4)
    assert claim.hidden
    assert "ship behind a flag" not in str(claim)
    lesson07.check_release_decision("barrier-per-layer", "flag", scale=4)  # a synonym
    assert "is **ship behind a flag**" in str(claim)
    assert "built-in criteria give **roll back**" in str(claim)


def test_dominant_claim_waits_for_exercise_1():
    m = lesson07.review_mapping("gpt2", "h100-sxm", phase="prefill", seq=512)
    claim = lesson07.dominant_claim(m)
    assert claim.hidden
    lesson07.check_dominant_bottleneck(m, lesson07.dominant_bottleneck(m))
    assert str(claim).startswith(f"**{lesson07.dominant_bottleneck(m)}** holds")


def test_scaled_guardrails_refuse_a_bad_scale():
    from workbench.errors import WorkbenchError
    from workbench.exercises._lesson07_release import scaled_guardrails

    assert scaled_guardrails(2).guardrails[0].rollback_at == pytest.approx(0.10)
    for bad in (0, -1, float("nan"), float("inf"), "4"):
        with pytest.raises(WorkbenchError, match="guardrail scale"):
            scaled_guardrails(bad)
