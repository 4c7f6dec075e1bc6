"""The regression review pack in headless Chromium at a 1,366 x 768 laptop viewport.

A pack is built from two synthetic traces (so the measured sections, the per-stream timelines
and the temporal breakdown, are on the page) and opened from disk. The page must not be wider
than the viewport (it was 1,621 px), must show every section, and its visible text must carry
no raw float formatting (long decimals, e-notation, ``None``). Page errors fail the test. A
screenshot of the whole page is left in ``test-artifacts/review_pack.png``.
"""

import re
from pathlib import Path

import pytest

ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"

pytestmark = pytest.mark.browser

#: What a reader must never have to decode.
RAW = re.compile(r"\d\.\d{5,}|\de[-+]\d|\bNone\b|\bNaN\b|\bnan\b|\binf\b|[bsc]None")

SECTIONS = (
    "Decision",
    "Headline",
    "Measured: step time, paired per step",
    "Measured: temporal breakdown of both runs",
    "Measured: slowdown by kernel category",
    "Measured: per stream",
    "Measured: top 10 operator deltas",
    "Material causes",
    "First failing mechanism",
    "Proving artifact",
    "Declared change",
    "Attribution",
    "Per-kernel diff, grouped by family",
    "Per layer type",
    "Temporal breakdown of the measured runs",
    "Bandwidth lens",
    "Before/after timeline",
    "Measured timeline per stream: baseline",
    "Measured timeline per stream: candidate",
    "Ownership",
    "Debug branches",
    "Validation matrix",
    "Rollback criteria",
    "Reproducer commands",
    "Provenance",
    "Appendix: ownership roster",
)


@pytest.fixture
def pack_file(tmp_path):
    from workbench.evidence import read_trace
    from workbench.report.review_pack import write_comparison
    from workbench.review import comparison_pack, record_from_trace, synthetic_scenario_traces

    pair = synthetic_scenario_traces("epilogue-fusion", tmp_path)
    runs = (read_trace(pair.baseline_trace), read_trace(pair.candidate_trace))
    recs = [
        record_from_trace(r, m)
        for r, m in zip(runs, (pair.baseline_mapping, pair.candidate_mapping), strict=True)
    ]
    out = tmp_path / "pack" / "review.html"
    out.parent.mkdir()
    pack = comparison_pack(
        *recs,
        changed=pair.changed,
        simulate=False,
        traces=runs,
        inputs=(str(pair.baseline_trace), str(pair.candidate_trace)),
        out=out,
    )
    write_comparison(pack, out)
    return out


def test_review_pack_fits_a_laptop_and_reads_as_a_review(laptop_page, pack_file):
    page, errors = laptop_page
    page.goto(pack_file.as_uri())
    page.wait_for_load_state("load")
    width = page.evaluate("() => document.documentElement.scrollWidth")
    headings = page.evaluate("() => [...document.querySelectorAll('h2')].map(h => h.innerText)")
    text = page.evaluate("() => document.body.innerText")
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "review_pack.png"), full_page=True)
    assert width <= 1366, f"page is {width} px wide at a 1,366 px viewport"
    missing = [s for s in SECTIONS if not any(h.startswith(s) for h in headings)]
    assert not missing, f"sections missing: {missing}"
    # A measured pair's first page: the measured sections follow the headline (issue 26).
    at = [next(i for i, h in enumerate(headings) if h.startswith(s)) for s in SECTIONS[1:7]]
    assert at == sorted(at), headings
    raw = RAW.findall(text)
    assert not raw, f"raw float formatting on the page: {raw[:8]}"
    assert not errors, errors
    # Tables scroll inside their own box: none pokes out of the body.
    wide = page.evaluate(
        """() => [...document.querySelectorAll('.wb-table, .wb-svg')]
            .filter(b => b.getBoundingClientRect().right
                    > document.body.getBoundingClientRect().right + 1)
            .map(b => b.previousElementSibling ? b.previousElementSibling.innerText : '?')"""
    )
    assert not wide, wide
