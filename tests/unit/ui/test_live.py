import ipywidgets as widgets
import pytest

from workbench.ui._live import busy


def _fail_while_busy(status, controls, seen):
    with busy(status, controls, "a <slow> thing"):
        seen.append((status.value, [c.disabled for c in controls]))
        raise RuntimeError("boom")


def test_busy_shows_the_line_disables_and_restores_even_on_error():
    status = widgets.HTML()
    a, b = widgets.Dropdown(options=("x",)), widgets.Dropdown(options=("x",), disabled=True)
    seen: list = []
    with pytest.raises(RuntimeError, match="boom"):
        _fail_while_busy(status, [a, b], seen)
    assert seen == [("<i>computing: a &lt;slow&gt; thing...</i>", [True, True])]
    assert status.value == ""
    assert not a.disabled
    assert b.disabled  # each control gets its own state back
