"""Slider or dropdown -> redrawn chart in the widget lessons, timed in the page (issue 12).

For each lesson one control is stepped back and forth (a slider by key presses, a dropdown by
picking an option); a MutationObserver on the chart stamps every change with
``performance.now()``; the latency of one step is the last chart mutation minus the user's
action. The test prints ``REDRAW <lesson> ...`` lines with p50/p95 and the spread, and asserts
only that every step redrew (no timing in assertions); ``benchmarks/bench_browser.py`` runs it
and reports the percentiles against the goal (p95 < 300 ms on 2 cores).

Lesson 12 also times one model change (a model not mapped yet: seconds, announced by the
panel's "computing" line), reported as ``SLOW`` and kept out of the percentiles.

Environment: ``WORKBENCH_REDRAW_STEPS`` (steps per lesson, default 20),
``WORKBENCH_REDRAW_LESSONS`` (comma-separated lesson numbers, default all).
"""

import os
import statistics
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from _lab import open_and_run, select, step_select, step_slider, widget_outputs

pytestmark = pytest.mark.browser
STEPS = int(os.environ.get("WORKBENCH_REDRAW_STEPS", "20"))

# lesson -> (notebook, control): ``("slider", keys)`` steps the first slider of the first
# charted widget; ``("select", label, (a, b))`` alternates a dropdown between two options.
CASES = {
    "01": ("01-operators-to-flops-and-bytes", ("slider", ("ArrowRight", "ArrowLeft"))),
    "10": ("10-latency-throughput-tails", ("slider", ("ArrowRight", "ArrowLeft"))),
    "11": ("11-choosing-a-platform", ("slider", ("ArrowRight", "ArrowLeft"))),
    "12": ("12-the-bandwidth-lens", ("select", "level", ("l2", "hbm"))),
    "13": ("13-dataflows-and-energy", ("select", "layer", ("alexnet conv1", "alexnet conv3"))),
}
WANTED = os.environ.get("WORKBENCH_REDRAW_LESSONS", ",".join(CASES)).split(",")


def _step(page, output, control, i):
    if control[0] == "slider":
        return step_slider(page, output, key=control[1][i % 2])
    _, label, options = control
    return step_select(page, output, label, options[i % 2])


def _line(lesson, what, samples):
    q = statistics.quantiles(samples, n=20, method="inclusive")
    return (
        f"REDRAW {lesson} {what} n={len(samples)} p50={statistics.median(samples):.0f} ms "
        f"p95={q[18]:.0f} ms min={min(samples):.0f} ms max={max(samples):.0f} ms "
        f"iqr={q[4]:.0f}-{q[14]:.0f} ms"
    )


@pytest.mark.parametrize("lesson", [w for w in CASES if w in WANTED])
def test_redraw_latency(jupyterlab, laptop_page, lesson):
    page, errors = laptop_page
    base, token = jupyterlab
    name, control = CASES[lesson]
    path = f"lessons/{name}.ipynb"
    open_and_run(page, base, token, path)
    output = widget_outputs(page).first
    output.scroll_into_view_if_needed()
    _step(page, output, control, 0)  # warms the caches a first redraw fills
    samples = []
    for i in range(1, STEPS + 1):
        t = _step(page, output, control, i)
        assert t["last_ms"] is not None, f"{lesson} step {i}: the chart did not redraw"
        samples.append(t["last_ms"])
    what = "slider->chart" if control[0] == "slider" else f"{control[1]}->chart"
    print("\n" + _line(lesson, what, samples))
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
    assert not errors, "JavaScript errors:\n" + "\n".join(errors)
