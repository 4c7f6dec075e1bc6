"""Driving a lesson in JupyterLab: open, run all, measure widths, step a slider and time the redraw.

Shared by the browser tests and ``benchmarks/bench_browser.py``. Timing is read in the page: a
MutationObserver on the chart records ``performance.now()`` for every change; the step's time
is stamped when the key goes down; nothing here polls for a duration.
"""

import json
import time
import urllib.request

ALL_CELLS_RAN = """() => {
    const prompts = [...document.querySelectorAll('.jp-CodeCell .jp-InputArea-prompt')];
    return prompts.length > 0 && prompts.every(p => /\\[\\d+\\]/.test(p.textContent));
}"""
STARTED = """() => [...document.querySelectorAll('.jp-CodeCell .jp-InputArea-prompt')]
    .some(p => /\\[(\\*|\\d+)\\]/.test(p.textContent))"""

# Every output area of the notebook: elements whose right edge passes the output's right edge,
# and outputs that need a horizontal scrollbar (a wide widget or chart row).
TOO_WIDE = """() => {
    const bad = [];
    for (const out of document.querySelectorAll('.jp-Notebook .jp-OutputArea-output')) {
        const box = out.getBoundingClientRect();
        if (box.width === 0) continue;
        if (out.scrollWidth > out.clientWidth + 1) {
            bad.push({what: 'output scrolls', width: out.scrollWidth, cell: out.clientWidth,
                      text: out.innerText.slice(0, 80)});
        }
        for (const el of out.querySelectorAll('*')) {
            const r = el.getBoundingClientRect();
            if (r.width === 0 || r.height === 0) continue;
            if (r.right > box.right + 1) {
                const cls = el.className.baseVal ?? el.className;
                bad.push({what: el.tagName.toLowerCase() + '.' + cls,
                          width: Math.round(r.width), cell: Math.round(box.width),
                          text: (el.innerText || '').slice(0, 60)});
                break;
            }
        }
    }
    return bad;
}"""

# Install a MutationObserver on ``root``'s chart; stamp the step when the user acts (a key goes
# down on a slider, or a dropdown's value changes: ``event``).
WATCH = """(root, event) => {
    const target = root.querySelector('.vega-embed') || root;
    window.__wb = {t0: null, marks: []};
    const obs = new MutationObserver(() => {
        if (window.__wb.t0 !== null) window.__wb.marks.push(performance.now());
    });
    obs.observe(target, {subtree: true, childList: true, attributes: true, characterData: true});
    window.__wb.obs = obs;
    root.addEventListener(event || 'keydown', () => { window.__wb.t0 = performance.now(); },
                          {capture: true, once: true});
}"""
READ = """() => {
    const w = window.__wb; w.obs.disconnect();
    return {t0: w.t0, first: w.marks[0] ?? null, last: w.marks[w.marks.length - 1] ?? null,
            n: w.marks.length};
}"""


# True once the chart has changed and then stayed unchanged for ``quiet`` ms.
QUIET = """(quiet) => {
    const m = window.__wb.marks;
    return m.length > 0 && performance.now() - m[m.length - 1] >= quiet;
}"""


def settle(page, settle_ms, quiet_ms=600):
    """Let the redraw burst finish: return once the chart has been quiet for ``quiet_ms`` after
    a change, or after ``settle_ms`` at most (a chart that did not change waits the full time)."""
    try:
        page.wait_for_function(QUIET, arg=quiet_ms, timeout=settle_ms, polling=100)
    except Exception as exc:  # Playwright's TimeoutError: the chart never went quiet in time
        if "Timeout" not in type(exc).__name__:
            raise


def wait_kernel_idle(base, token, path, timeout_s=60.0):
    """Wait until the server has a session for ``path`` whose kernel is idle."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        with urllib.request.urlopen(f"{base}/api/sessions?token={token}", timeout=5) as resp:
            sessions = json.load(resp)
        if [s["kernel"]["execution_state"] for s in sessions if s["path"] == path] == ["idle"]:
            return
        time.sleep(0.25)
    raise TimeoutError(f"no idle kernel for {path} after {timeout_s} s")


def open_and_run(page, base, token, path, *, sidebar=True):
    """Open ``path`` (a fresh workspace), show the file browser, Run All, wait until all ran."""
    page.set_default_timeout(90_000)
    page.goto(f"{base}/lab/tree/{path}?reset&token={token}", wait_until="domcontentloaded")
    page.wait_for_selector(".jp-NotebookPanel .jp-Cell", state="attached")
    page.wait_for_selector(".jp-Notebook-ExecutionIndicator[data-status='idle']", state="attached")
    browser = page.locator("#filebrowser")
    if sidebar and not browser.is_visible():
        page.locator(".jp-SideBar [data-id='filebrowser']").first.click()
        browser.wait_for(state="visible")
    wait_kernel_idle(base, token, path)
    page.wait_for_timeout(500)  # the page's websocket to the kernel opens just after
    for _ in range(3):
        page.locator(".lm-MenuBar-itemLabel", has_text="Run").first.click()
        page.locator(".lm-Menu-itemLabel", has_text="Run All Cells").first.click()
        dialog = page.locator(".jp-Dialog .jp-mod-accept")
        if dialog.count():
            dialog.first.click()
        try:
            page.wait_for_function(STARTED, timeout=10_000)
            break
        except Exception:  # the kernel was still connecting
            continue
    page.wait_for_function(ALL_CELLS_RAN, timeout=90_000)
    page.wait_for_selector(".jp-Notebook-ExecutionIndicator[data-status='idle']", state="attached")


def widget_outputs(page):
    """Outputs holding a rendered widget with a chart."""
    return page.locator(".jp-OutputArea-output:has(.widget-vbox):has(.vega-embed svg)")


def too_wide(page):
    """Elements wider than their cell's output area, after scrolling every output into view."""
    for i in range(page.locator(".jp-Notebook .jp-Cell").count()):
        page.locator(".jp-Notebook .jp-Cell").nth(i).scroll_into_view_if_needed()
    page.wait_for_timeout(300)
    return page.evaluate(TOO_WIDE)


def step_slider(page, output, *, key="ArrowRight", settle_ms=1500):
    """Press ``key`` on the first slider of ``output``; return the redraw timing in ms.

    Returns:
        ``{"first_ms", "last_ms", "mutations", "value_before", "value_after"}``: milliseconds
        from the key press to the first and the last mutation of the chart (None when it did
        not redraw).
    """
    slider = output.locator(".widget-slider").first
    readout = slider.locator(".widget-readout")
    before = readout.inner_text()
    handle = slider.locator(".noUi-handle").first
    handle.scroll_into_view_if_needed()
    output.evaluate(WATCH, "keydown")
    handle.focus()
    page.keyboard.press(key)
    deadline = time.monotonic() + 20
    while readout.inner_text() == before and time.monotonic() < deadline:
        page.wait_for_timeout(50)
    page.wait_for_selector(".jp-Notebook-ExecutionIndicator[data-status='idle']", state="attached")
    settle(page, settle_ms)
    return {**_read(page), "value_before": before, "value_after": readout.inner_text()}


def _read(page):
    r = page.evaluate(READ)
    t0 = r["t0"]
    return {
        "first_ms": None if r["first"] is None or t0 is None else r["first"] - t0,
        "last_ms": None if r["last"] is None or t0 is None else r["last"] - t0,
        "mutations": r["n"],
    }


def select(output, label):
    """The ``<select>`` of the dropdown labelled ``label`` in ``output``."""
    return output.locator(f".widget-dropdown:has(label:text-is('{label}')) select").first


def step_select(page, output, label, option, *, settle_ms=1500, server=None):
    """Pick ``option`` in the dropdown labelled ``label``; return the redraw timing in ms.

    ``server`` (``(base, token, path)``): also wait until the server reports the kernel idle
    (a change that computes for seconds), before settling.

    Returns:
        As :func:`step_slider` (``value_before``/``value_after`` are the dropdown's values).
    """
    box = select(output, label)
    before = box.input_value()
    box.scroll_into_view_if_needed()
    output.evaluate(WATCH, "change")
    box.select_option(option)
    if server is not None:
        page.wait_for_timeout(500)  # the change reaches the kernel
        wait_kernel_idle(*server, timeout_s=180)
    page.wait_for_selector(".jp-Notebook-ExecutionIndicator[data-status='idle']", state="attached")
    settle(page, settle_ms)
    return {**_read(page), "value_before": before, "value_after": box.input_value()}
