"""Issue 32: lessons that agree with each other and with the physics (one test per point)."""

from __future__ import annotations

import re

import pytest

from workbench.exercises import lesson10, lesson11


@pytest.mark.parametrize("module", [lesson10, lesson11])
def test_every_instructed_latency_panel_value_is_a_position_its_slider_reaches(module):
    """Lesson 10's "set SLA ms to 20,000": a log slider's steps gave 19,953, never 20,000."""
    from workbench.ui.platform_panel import LatencyPanel

    panel = LatencyPanel(**module.PANEL, n_requests=200, rates=(1.0,), prepare=False)
    for move in module.widget_moves():
        control = panel.controls[move.control]
        if hasattr(control, "options") and "Slider" in type(control).__name__:
            values = [v for _, v in control.options] if isinstance(control.options[0], tuple) \
                else list(control.options)  # fmt: skip
            assert move.end in values, (move.control, move.end, values)
            assert move.start in values, (move.control, move.start, values)
        else:
            assert "Slider" not in type(control).__name__, (move.control, type(control))


def _figures(text: str) -> set[str]:
    return set(re.findall(r"\d[\d,.]*", text))


def test_lesson10_question_and_takeaway_rest_on_no_unstable_run():
    """Issue 32: the question quoted 7.78 served at 9 offered, a load whose queue grows."""
    points = lesson10.sweep("llama2-7b", "h100-sxm", lesson10.RATES)
    bad = [p for p in points if not p.stable]
    assert bad, "the lesson's sweep reaches an unstable load (the case this guards)"
    q = lesson10.question_claim(points, 15.0).text
    t = lesson10.takeaway_claim(points, 15.0, model="llama2-7b", hardware_name="h100-sxm").text
    table = lesson10.latency_table(points)
    for p in bad:
        quoted = {f"{p.mean_e2e_s:.3g}", f"{p.p99_e2e_s:.3g}", f"{p.achieved_rate_per_s:.3g}"}
        assert not quoted & _figures(q), (q, quoted)
        assert f"{p.p99_e2e_s:.3g}" not in _figures(t)
        row = table.loc[round(p.offered_rate_per_s, 2)]
        assert row["queue"] == "grows"
        assert (row[["mean_s", "p50_s", "p95_s", "p99_s", "p99_ttft_s"]] == "grows").all()
    u = lesson10.unstable_claim(points, model="llama2-7b", hardware_name="h100-sxm").text
    assert "no steady latency" in u
    assert f"{bad[0].mean_e2e_s:.3g} s" in u
