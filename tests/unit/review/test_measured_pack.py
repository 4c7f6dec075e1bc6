"""A measured pair's pack leads with what an HTA / ``nsys stats`` reviewer expects (issue 26).

Two small Kineto traces (5 steps; GEMMs on stream 7, an all-reduce on stream 20, a copy), the
candidate's GEMMs 1.3x as long with every later activity shifted, read as ``workbench review``
reads them; the pack is written (HTML and Markdown) and read back.
"""

from __future__ import annotations

import html
import re

import pytest

from workbench.evidence import MeasuredKernel, read_trace_and_operators, write_kineto_trace
from workbench.report._comparison import write_comparison
from workbench.review.join.from_trace import record_from_trace
from workbench.review.pack.content import comparison_pack

_STEP_S = 10e-3
_EVIL = "gemm_<script>alert(1)</script>"


def _kernels(gemm_factor: float) -> list[MeasuredKernel]:
    """5 steps: two GEMMs (1 ms each), an all-reduce beside them, a copy, then idle."""
    out, extra = [], 0.0
    for step in range(5):
        t = 1.0 + step * _STEP_S + extra
        for n in range(2):
            dur = 1e-3 * gemm_factor
            name = _EVIL if n == 0 else "sm80_xmma_gemm_bf16_tn"
            out.append(_k(name, t, dur, 7, step))
            t += dur
            extra += 1e-3 * (gemm_factor - 1)
        out.append(_k("ncclDevKernel_AllReduce_Sum_bf16_RING_LL", t - 0.5e-3, 2e-3, 20, step))
        out.append(_k("Memcpy HtoD (Pinned -> Device)", t + 1.5e-3, 0.5e-3, 7, step, "memcpy"))
    return out


def _k(name: str, start: float, dur: float, stream: int, step: int, kind: str = "kernel"):
    category = "gemm" if "gemm" in name else "other"  # NOTE: names the written trace's cpu_op
    return MeasuredKernel(name=name, category=category, rule="", start_s=start, duration_s=dur,
                          device=0, stream=stream, iteration=step, kind=kind)  # fmt: skip


def _record(path):
    run, ops = read_trace_and_operators(path)
    return run, record_from_trace(run, None, operators=ops)


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    folder = tmp_path_factory.mktemp("pack")
    props = [{"id": 0, "name": "NVIDIA A100-SXM4-80GB", "computeMajor": 8, "computeMinor": 0}]
    sides = []
    for name, factor in (("a.json", 1.0), ("b.json", 1.3)):
        path = write_kineto_trace(folder / name, _kernels(factor), device_properties=props,
                                  cpu_ops=True)  # fmt: skip
        sides.append(_record(path))
    (ra, a), (rb, b) = sides
    pack = comparison_pack(a, b, simulate=False, traces=(ra, rb))
    page, md = write_comparison(pack, folder / "pack.html")
    return pack, page.read_text(encoding="utf-8"), md.read_text(encoding="utf-8")


def _sections(md: str) -> list[str]:
    return re.findall(r"^## (.+)$", md, flags=re.M)


def _md_table(md: str, heading_start: str) -> list[list[str]]:
    block = md.split(f"## {heading_start}", 1)[1].split("\n## ", 1)[0]
    lines = [line for line in block.splitlines() if line.startswith("|")]
    return [[c.strip() for c in line.strip("|").split("|")] for line in lines[2:]]


def test_first_page_is_the_measured_comparison(written):
    _, page, md = written
    heads = _sections(md)
    first = heads[heads.index("Headline") + 1 : heads.index("Headline") + 6]
    assert [h.split(" (")[0] for h in first] == [
        "Measured: step time, paired per step",
        "Measured: temporal breakdown of both runs",
        "Measured: slowdown by kernel category",
        "Measured: per stream",
        "Measured: top 10 operator deltas",
    ]
    text = html.unescape(re.sub(r"<[^>]+>", " ", page))
    for h in first:
        assert h in text  # NOTE: the HTML page holds the same sections


def test_step_row_is_paired_and_states_the_window_rule(written):
    _, _, md = written
    (row,) = _md_table(md, "Measured: step time")
    assert row[3] == "4 / 4 steady"
    assert row[4].startswith("paired over 4 steps: +600 us per step")
    assert "beyond the noise" in row[4]
    assert "the last step ends where its own GPU work ends" in row[5]


def test_breakdown_has_compute_communication_memory_idle_for_both(written):
    _, _, md = written
    rows = _md_table(md, "Measured: temporal breakdown")
    assert [r[0] for r in rows] == ["baseline", "candidate"]
    for r in rows:
        assert all(cell not in ("", "-") for cell in r)
    base, cand = rows
    assert (base[3], cand[3]) == ("2 ms", "2.6 ms")  # compute: the two GEMMs
    assert base[5] == cand[5] == "2 ms"  # communication: the all-reduce


def test_slowdown_by_category_names_gemm_first(written):
    _, _, md = written
    rows = _md_table(md, "Measured: slowdown by kernel category")
    assert rows[0][:5] == ["gemm", "2 ms", "2.6 ms", "600 us", "+30.0%"]
    assert {r[0] for r in rows} == {"gemm", "collective", "copy"}


def test_per_stream_and_operator_deltas(written):
    _, _, md = written
    streams = {(r[0], r[1]): r[4] for r in _md_table(md, "Measured: per stream")}
    assert streams == {("0", "7"): "600 us", ("0", "20"): "0 s"}
    ops = _md_table(md, "Measured: top 10 operator deltas")
    assert ops[0][0] == "aten::mm"
    assert ops[0][3] == "600 us"


def test_no_meaningless_rows_and_names_escaped(written):
    _, page, md = written
    for text in (page, md):
        assert "0 tokens/s" not in text
        assert "unknown unknown" not in text
    headline = _md_table(md, "Headline")
    assert [r[0] for r in headline] == ["step time"]
    assert "<script" not in page
    assert "gemm_&lt;script&gt;" in page
