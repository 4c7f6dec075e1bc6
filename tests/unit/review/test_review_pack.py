import dataclasses
import itertools
import re

import pytest

from workbench.hw import load_hardware
from workbench.mapper import map_model
from workbench.models import build_graph
from workbench.report.review_pack import review_markdown, review_pack

EVIL = "<script>alert(1)</script>"


@pytest.fixture(scope="module")
def evil_mapping():
    graph = build_graph("mlp")
    graph = dataclasses.replace(graph, name=f"mlp {EVIL}")
    return map_model(graph, load_hardware("h100-sxm"))


@pytest.fixture(scope="module")
def page(evil_mapping):
    return review_pack(evil_mapping, simulate=False)


def test_untrusted_model_name_is_escaped(page):
    assert EVIL not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page


def test_page_is_offline(page):
    assert not re.search(r"<script[^>]*\bsrc\s*=", page, re.IGNORECASE)


def test_page_has_every_section(page):
    for heading in (
        "Mapping sheet",
        "Roofline",
        "Bandwidth lens",
        "stall fraction by layer type",
        "Owners",
        "Debug branches",
        "Validation matrix",
        "Rollback criteria",
    ):
        assert heading in page


def test_markdown_twin_has_sections_and_computed_figures(evil_mapping):
    md = review_markdown(evil_mapping, simulate=False)
    assert "## Rollback criteria" in md
    assert "ML compiler engineer" in md
    from workbench._format import fmt_percent

    assert fmt_percent(evil_mapping.mfu) in md  # MFU as a percentage, not a raw fraction


# --- the regression pack ----------------------------------------------------------------------
HOSTILE = "x<!--<script>alert(1)</script>"


def _records(hw_name="h100-sxm", model_name=None):
    from workbench.options import MapOptions
    from workbench.review import record_from_mapping

    hw = load_hardware("h100-sxm")
    if hw_name != hw.name:
        hw = hw.model_copy(update={"name": hw_name})
    out = []
    for opts in (MapOptions(), MapOptions(disabled_fusion=("gemm_epilogue",))):
        rec = record_from_mapping(map_model(build_graph("gpt2", seq=256), hw, opts))
        if model_name:
            w = dataclasses.replace(rec.tags.workload, model=model_name)
            rec = dataclasses.replace(rec, tags=dataclasses.replace(rec.tags, workload=w))
        out.append(rec)
    return out


@pytest.fixture(scope="module")
def regression_pack():
    from workbench.review.pack.content import comparison_pack

    return comparison_pack(*_records(), changed="compiler")


REGRESSION_SECTIONS = (
    "Decision",
    "Headline",
    "First failing mechanism",
    "Proving artifact",
    "Declared change",
    "Attribution",
    "Per-kernel diff",
    "Per layer type, and the unexplained remainder",
    "Before/after timeline",
    "Bandwidth lens",
    "Ownership",
    "Debug branches",
    "Validation matrix (pass/fail per slice)",
    "Rollback criteria",
    "Reproducer commands",
)


def test_regression_pack_has_every_section_offline(regression_pack):
    from workbench.report.review_pack import comparison_html

    page = comparison_html(regression_pack)
    for heading in REGRESSION_SECTIONS:
        assert f"<h2>{heading}" in page, heading
    assert not re.search(r"<script[^>]*\bsrc\s*=", page, re.IGNORECASE)
    assert "@media print" in page


def test_regression_pack_content_is_computed(regression_pack):
    r = regression_pack.report
    assert r.decision == "roll back"
    assert r.first_failing.mechanism == "fusion_broken"
    tables = {h.split(":")[0]: rows for h, rows, _ in regression_pack.tables}
    headline = {row["metric"]: row for row in tables["Headline"]}
    assert {"step time", "MFU", "p99 latency"} <= set(headline)
    assert "bootstrap" in headline["p99 latency"]["evidence"]
    assert headline["quality error"]["evidence"].startswith("missing")
    owners = [row for row in tables["Ownership"] if row["owner"] == "assigned"]
    assert [o["role"] for o in owners] == ["ML compiler engineer"]
    matrix = tables["Validation matrix (pass/fail per slice)"]
    assert {row["status"] for row in matrix} <= {"pass", "fail", "unknown", "trade-off"}
    assert matrix[0]["status"] == "fail"
    reproducers = tables["Reproducer commands (run from the pack's folder)"]
    commands = [row["command"] for row in reproducers]
    assert commands[1].startswith("workbench run --model gpt2")
    assert "--no-fusion gemm_epilogue" in commands[1]
    assert {v for v, _ in regression_pack.lens} >= {"baseline", "candidate"}
    assert regression_pack.timeline


@pytest.mark.parametrize("where", ["model", "hardware"])
def test_hostile_names_hide_no_section(where):
    from workbench.report.review_pack import comparison_html, comparison_markdown
    from workbench.review.pack.content import comparison_pack

    recs = _records(**({"model_name": HOSTILE} if where == "model" else {"hw_name": HOSTILE}))
    pack = comparison_pack(*recs, changed="compiler", simulate=False)
    page = comparison_html(pack)
    md = comparison_markdown(pack)
    assert "<!--" not in page.split("<body>", 1)[1]
    assert "<script>alert" not in page
    for heading in ("Decision", "Headline", "Ownership", "Rollback criteria", "Reproducer"):
        assert f"<h2>{heading}" in page
        assert f"## {heading}" in md
    assert "<!--" not in md
    assert "<script" not in md
    assert "&lt;!--&lt;script&gt;" in md


def test_review_cli_out_md_does_not_clobber(tmp_path, capsys):
    from workbench.cli import main
    from workbench.review import save_record

    base, cand = _records()
    b, c = save_record(base, tmp_path / "b.json"), save_record(cand, tmp_path / "c.json")
    out = tmp_path / "pack.md"
    code = main(["review", str(b), str(c), "--changed", "compiler", "--out", str(out)])
    assert code == 1  # roll back
    assert "pack.md and" in capsys.readouterr().out
    md, page = out.read_text(), (tmp_path / "pack.html").read_text()
    assert md.startswith("# gemm_epilogue fusion off: step time +")  # the title names the change
    assert page.startswith("<!doctype html>")
    assert "## First failing mechanism" in md
    html_out = tmp_path / "other.html"
    assert main(["review", str(b), str(c), "--changed", "compiler", "--out", str(html_out)]) == 1
    assert html_out.read_text().startswith("<!doctype html>")
    assert (tmp_path / "other.md").read_text().startswith("# gemm_epilogue fusion off")


def test_one_run_review_md_suffix_does_not_clobber(tmp_path, capsys):
    from workbench.cli import main

    out = tmp_path / "one.md"
    assert main(["review", "--model", "mlp", "--out", str(out)]) == 0
    assert out.read_text().startswith("# Design review")
    assert (tmp_path / "one.html").read_text().startswith("<!doctype html>")


def test_review_of_two_traces(tmp_path):
    from workbench.cli import main
    from workbench.options import MapOptions
    from workbench.review.scenarios.synthetic import write_synthetic_trace

    hw = load_hardware("h100-sxm")
    mb = map_model(build_graph("gpt2", seq=256), hw)
    mc = map_model(build_graph("gpt2", seq=256), hw, MapOptions(launch="eager"))
    b = write_synthetic_trace(mb, tmp_path / "b.json", seed=1)
    c = write_synthetic_trace(mc, tmp_path / "c.json", seed=2, jitter=0.03)
    out = tmp_path / "t.html"
    argv = ["review", str(b), str(c), "--model", "gpt2", "--seq", "256", "--no-simulate"]
    assert main([*argv, "--out", str(out)]) in (0, 1)
    page = out.read_text()
    assert "at the traces&#x27; own timestamps, gaps included" in page
    # Times carry units and shares are percent in the tables: no e-notation a reader must decode.
    twin = out.with_suffix(".md").read_text()
    rows = [line for line in twin.splitlines() if line.startswith("| layers.")]
    assert rows
    assert not [line for line in rows if re.search(r"\d\.?\d*e-\d", line)]
    assert all(re.search(r"\d (ns|us|ms|s) \|", line) for line in rows)


def test_review_of_something_neither_record_nor_trace_is_one_line(tmp_path, capsys):
    from workbench.cli import main

    foreign = tmp_path / "foreign.json"
    foreign.write_text('{"hello": "world"}')
    assert main(["review", str(foreign), str(foreign), "--out", str(tmp_path / "p.html")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert "nor is it a workbench run record" in err
    assert not (tmp_path / "p.html").exists()


def test_timeline_from_trace_timestamps_keeps_the_gaps(tmp_path):
    from workbench.evidence import read_trace
    from workbench.review import comparison_pack, record_from_trace, synthetic_scenario_traces

    pair = synthetic_scenario_traces("epilogue-fusion", tmp_path)
    runs = (read_trace(pair.baseline_trace), read_trace(pair.candidate_trace))
    recs = [
        record_from_trace(r, m)
        for r, m in zip(runs, (pair.baseline_mapping, pair.candidate_mapping), strict=True)
    ]
    pack = comparison_pack(*recs, changed=pair.changed, simulate=False, traces=runs)
    rows = [r for r in pack.timeline if r["side"] == "baseline"]
    assert all(r["source"].startswith("trace timestamps") for r in pack.timeline)
    assert rows[0]["start_s"] == 0.0
    gaps = [b["start_s"] - a["end_s"] for a, b in itertools.pairwise(rows)]
    assert gaps
    assert all(g > 0 for g in gaps)  # the launch gaps the trace shows are kept
