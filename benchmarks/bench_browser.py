"""Control -> redrawn chart latency in JupyterLab + headless Chromium (goal p95 < 300 ms, 2 cores).

Runs ``tests/browser/test_redraw_latency.py`` and its ``_b`` half (JupyterLab, Debian Chromium via
Playwright; the timing is taken in the page by a MutationObserver, from the user's action on the
control to the last change of the chart) and prints p50/p95 and the spread per lesson over settings
already shown, then the first visits of new settings (the goal is checked on both): 01 (the
explorer's batch slider), 10 and 11 (the LatencyPanel's batch slider), 12 (the LensPanel's level
dropdown) and 13 (the DataflowPanel's layer dropdown); plus lesson 12's model change, a slow path
announced by a "computing" line, reported apart.

Run: python benchmarks/bench_browser.py [steps] [lessons, e.g. 01,12]
"""

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def main() -> None:
    steps = sys.argv[1] if len(sys.argv) > 1 else "20"
    env = {**os.environ, "WORKBENCH_REDRAW_STEPS": steps}
    if len(sys.argv) > 2:
        env["WORKBENCH_REDRAW_LESSONS"] = sys.argv[2]
    files = ["tests/browser/test_redraw_latency.py", "tests/browser/test_redraw_latency_b.py"]
    cmd = [sys.executable, "-m", "pytest", *files, "-q", "-s", "-p", "no:cacheprovider"]
    run = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, check=False)
    lines = [x for x in run.stdout.splitlines() if x.startswith(("REDRAW", "SLOW"))]
    if not lines or run.returncode:
        print(run.stdout[-3000:], run.stderr[-2000:], sep="\n")
    for line in lines:
        if line.startswith("SLOW"):
            print(line)
            continue
        p95 = float(re.search(r"p95=(\d+)", line).group(1))  # type: ignore[union-attr]
        new = re.search(r"new settings \(\d+\): ([\d, ]+) ms", line)
        worst = max([p95, *(float(t) for t in new.group(1).split(","))] if new else [p95])
        verdict = "met" if worst < 300 else "NOT met"
        print(f"{line.removeprefix('REDRAW ')}  [goal p95 < 300 ms: {verdict}]")
    print(f"({os.cpu_count()} CPUs)")
    if not lines or run.returncode:
        sys.exit(run.returncode or 1)


if __name__ == "__main__":
    main()
