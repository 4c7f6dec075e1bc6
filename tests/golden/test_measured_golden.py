"""Measured regressions injected into real public traces are called right (issue 26).

Each case of ``measured_cases.yaml`` (answers written before the first run) makes one kernel
family of a real HTA test trace slower, every later event shifted (``_inject.py``), reads both
sides as ``workbench run --from-trace`` does, triages them with no declared change and checks
the decision and the headline's kernel category. Run it alone with
``python tests/golden/test_measured_golden.py``.
"""

from __future__ import annotations

import sys
import tempfile
from functools import cache
from pathlib import Path

import pytest
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _inject import inject

from workbench.evidence import read_trace_and_operators
from workbench.review import triage
from workbench.review.join.from_trace import record_from_trace

HERE = Path(__file__).resolve().parent
DATA = HERE.parents[0] / "data" / "hta"
SPEC = yaml.safe_load((HERE / "measured_cases.yaml").read_text())
CASES = [(t, c) for t in SPEC["traces"] for c in SPEC["cases"]] + [
    (t, c) for t, cases in SPEC.get("trace_cases", {}).items() for c in cases
]
_TMP = Path(tempfile.mkdtemp(prefix="wb-measured-"))


def _record(path: Path):
    run, ops = read_trace_and_operators(path)
    return record_from_trace(run, None, operators=ops)


@cache
def _baseline(trace: str):
    return _record(DATA / f"{trace}.json.gz")


def verdict(trace: str, case: dict) -> tuple[str, str]:
    """``(decision, headline kernel)`` of one case."""
    out = _TMP / f"{trace}-{case['name']}.json.gz"
    inject(
        DATA / f"{trace}.json.gz",
        out,
        family=case["family"],
        factor=case["factor"],
        jitter=case.get("jitter", 0.0),
        seed=7,
        activities=tuple(case.get("activities", ("kernel",))),
    )
    report = triage(_baseline(trace), _record(out), simulate=False)
    anchor = report.first_failing.kernel if report.first_failing else ""
    return report.decision, anchor


def holds(trace: str, case: dict) -> tuple[bool, str]:
    decision, anchor = verdict(trace, case)
    want = case["category"]
    ok = decision in case["decision"] and (anchor.startswith(want) if want else not anchor)
    return ok, f"{trace} {case['name']}: {decision}, headline {anchor or 'none'}"


def _param(trace: str, case: dict):
    marks = [pytest.mark.xfail(strict=True, reason=case["xfail"])] if case.get("xfail") else []
    return pytest.param(trace, case, marks=marks, id=f"{trace}-{case['name']}")


@pytest.mark.parametrize(("trace", "case"), [_param(t, c) for t, c in CASES])
def test_measured_case_holds(trace, case):
    ok, line = holds(trace, case)
    assert ok, f"{line} (expected {case['decision']} on {case['category'] or 'nothing'})"


if __name__ == "__main__":
    results = [(holds(t, c), c) for t, c in CASES]
    for (ok, line), case in results:
        known = " (known disagreement, marked xfail)" if case.get("xfail") else ""
        print(("holds  " if ok else "FAILS  ") + line + ("" if ok else known))
    held = sum(ok for (ok, _), _ in results)
    known = [c["name"] for (ok, _), c in results if not ok and c.get("xfail")]
    unexpected = [c["name"] for (ok, _), c in results if ok == bool(c.get("xfail"))]
    note = (
        f" ({len(known)} known disagreement(s), marked xfail: {', '.join(known)})" if known else ""
    )
    print(f"golden measured triage: {held}/{len(results)} cases hold{note}")
    sys.exit(1 if unexpected else 0)
