"""The redraw-latency check of ``test_redraw_latency.py`` and ``test_redraw_latency_b.py``
(one check, its lessons split over two files so ``--dist loadfile`` runs them side by side).
See ``test_redraw_latency.py`` for what is timed and how. For these five lessons it is also the
layout check of ``_lesson_checks.py`` (no output wider than its cell at 1,366 px, a screenshot),
so each lesson is opened and run once in the browser suite, not twice."""

import os
import statistics
from pathlib import Path

from _instruction_hooks import perform_instructions
from _lab import open_and_run, select, step_select, step_slider, too_wide, widget_outputs

ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"

#: Back-and-forth steps per lesson: 10 in the test suite (every step must redraw), 20 when
#: ``benchmarks/bench_browser.py`` runs it for the percentiles.
STEPS = int(os.environ.get("WORKBENCH_REDRAW_STEPS", "10"))

# lesson -> (notebook, control, tour, back-and-forth). A slider control is the first slider of
# the first charted widget, stepped by key presses; a dropdown is ``("select", label)``. The
# tour visits settings the page has not shown yet (a new setting: what a student meets first);
# the back-and-forth then alternates two settings already shown.
CASES = {
    "01": ("01-operators-to-flops-and-bytes", ("slider",),
           ("ArrowRight",) * 3, ("ArrowLeft", "ArrowRight")),  # batch 1 -> 8, then 4 <-> 8
    "10": ("10-latency-throughput-tails", ("slider",),
           ("ArrowLeft",) * 3, ("ArrowRight", "ArrowLeft")),  # max batch 32 -> 4, then 8 <-> 4
    "11": ("11-choosing-a-platform", ("slider",),
           ("ArrowRight",) * 2, ("ArrowLeft", "ArrowRight")),  # max batch 16 -> 64, 32 <-> 64
    "12": ("12-the-bandwidth-lens", ("select", "level"), ("l2", "smem"), ("hbm", "l2")),
    "13": ("13-dataflows-and-energy", ("select", "layer"),
           ("alexnet conv1", "alexnet conv2", "alexnet conv5"), ("alexnet conv3", "alexnet conv1")),
}  # fmt: skip
#: The lessons of ``test_redraw_latency.py``; the others are in ``test_redraw_latency_b.py``.
FIRST_FILE = ("01", "10", "11")
WANTED = os.environ.get("WORKBENCH_REDRAW_LESSONS", ",".join(CASES)).split(",")


def _step(page, output, control, arg):
    if control[0] == "slider":
        return step_slider(page, output, key=arg)
    return step_select(page, output, control[1], arg)


def _line(lesson, what, samples, new):
    q = statistics.quantiles(samples, n=20, method="inclusive")
    return (
        f"REDRAW {lesson} {what} n={len(samples)} p50={statistics.median(samples):.0f} ms "
        f"p95={q[18]:.0f} ms min={min(samples):.0f} ms max={max(samples):.0f} ms "
        f"iqr={q[4]:.0f}-{q[14]:.0f} ms; new settings ({len(new)}): "
        + ", ".join(f"{t:.0f}" for t in new)
        + " ms"
    )


def check_redraw(page, errors, base, token, lesson):
    """Run All; no output wider than its cell; step the control through its tour and back and
    forth, and every step redraws the chart."""
    name = CASES[lesson][0]
    try:
        wide = _run_steps(page, errors, base, token, lesson)
        # the lesson's instructions, on the widget already open (issue 20)
        output = widget_outputs(page).first
        server = (base, token, f"lessons/{name}.ipynb")
        for line in perform_instructions(page, output, lesson, server):
            print(f"INSTRUCTION {line}")
        ARTIFACTS.mkdir(exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / f"lesson{lesson}-1366.png"))
    except Exception:
        ARTIFACTS.mkdir(exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / f"lesson{lesson}-failure.png"), full_page=True)
        raise
    assert not wide, f"{name}: elements wider than their cell at 1366 px: {wide}"
    assert not errors, "JavaScript errors:\n" + "\n".join(errors)


def _run_steps(page, errors, base, token, lesson):
    """Open and run the lesson, return what is too wide, then time every step of its tour."""
    name, control, tour, pair = CASES[lesson]
    path = f"lessons/{name}.ipynb"
    open_and_run(page, base, token, path)
    wide = too_wide(page)
    output = widget_outputs(page).first
    output.scroll_into_view_if_needed()
    new, samples = [], []
    for i, arg in enumerate([*tour, *(pair[i % 2] for i in range(STEPS))]):
        t = _step(page, output, control, arg)
        assert t["value_after"] != t["value_before"], f"{lesson} step {i}: {arg} changed nothing"
        assert t["last_ms"] is not None, f"{lesson} step {i}: the chart did not redraw"
        (new if i < len(tour) else samples).append(t["last_ms"])
    what = "slider->chart" if control[0] == "slider" else f"{control[1]}->chart"
    print("\n" + _line(lesson, what, samples, new))
    if lesson == "12":
        slow = step_select(page, output, "model", "mistral-7b", server=(base, token, path))
        assert slow["last_ms"] is not None, "12: the chart did not redraw for a new model"
        other = "hbm" if select(output, "level").input_value() == "l2" else "l2"
        t = step_select(page, output, "level", other)  # cheap again after it
        print(
            f"SLOW 12 model->chart (a model not mapped yet; the panel says 'computing'): lens "
            f"drawn {slow['first_ms']:.0f} ms, rings {slow['last_ms']:.0f} ms after the pick; "
            f"a level change after it {t['last_ms']:.0f} ms"
        )
    return wide
