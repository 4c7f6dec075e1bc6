"""Slider -> redrawn chart in lesson 01's explorer, timed in the page (issue 12).

The batch slider is stepped back and forth (batch 2 <-> 4, both fit the chip) by key presses; a
MutationObserver on the roofline stamps every change with ``performance.now()``; the latency of
one step is the last chart mutation minus the key press. The test prints p50/p95 and asserts only
that every step redrew (no timing in assertions); ``benchmarks/bench_browser.py`` runs it and
reports the percentiles against the goal (p95 < 300 ms on 2 cores).
"""

import os
import statistics
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from _lab import open_and_run, step_slider, widget_outputs

pytestmark = pytest.mark.browser
STEPS = int(os.environ.get("WORKBENCH_REDRAW_STEPS", "20"))


def test_explorer_redraw_latency(jupyterlab, laptop_page):
    page, errors = laptop_page
    base, token = jupyterlab
    open_and_run(page, base, token, "lessons/01-operators-to-flops-and-bytes.ipynb")
    output = widget_outputs(page).first
    output.scroll_into_view_if_needed()
    step_slider(page, output, key="ArrowRight")  # batch 1 -> 2, warms the schedule cache
    samples = []
    for i in range(STEPS):
        t = step_slider(page, output, key="ArrowRight" if i % 2 == 0 else "ArrowLeft")
        assert t["last_ms"] is not None, f"step {i}: the chart did not redraw"
        samples.append(t["last_ms"])
    q = statistics.quantiles(samples, n=20, method="inclusive")
    print(
        f"\nREDRAW slider->chart n={len(samples)} p50={statistics.median(samples):.0f} ms "
        f"p95={q[18]:.0f} ms max={max(samples):.0f} ms"
    )
    assert not errors, "JavaScript errors:\n" + "\n".join(errors)
