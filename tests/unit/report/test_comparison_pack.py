"""The regression review pack reads like a review document (issue 18's pack defects).

Each test names the defect it guards: raw unitless numbers, a title naming no change, a kernel
diff of one family sorted as strings, proving rows for the headline cause only, '+'-joined owner
lists, the profile's whole ``sources`` prose, no provenance, absolute reproducer paths, timelines
that ignore streams.
"""

from __future__ import annotations

import dataclasses
import hashlib
import html
import os
import re

import pytest

from workbench.hw import load_hardware
from workbench.mapper import map_model
from workbench.models import build_graph
from workbench.options import MapOptions
from workbench.report.review_pack import comparison_html, comparison_markdown
from workbench.review import record_from_mapping, save_record
from workbench.review.diagnosis.attribution import DiffRow
from workbench.review.pack.content import comparison_pack

#: What a reader must never have to decode: long decimals, e-notation, Python's None.
RAW = re.compile(r"\d\.\d{5,}|\de[-+]\d|\bNone\b|\bnan\b|\binf\b|[bsc]None")


def _pair(opts: MapOptions, hw_b: str = "h100-sxm", hw_c: str = "h100-sxm", **graph):
    g = build_graph("gpt2", seq=256, **graph)
    base = record_from_mapping(map_model(g, load_hardware(hw_b)))
    cand = record_from_mapping(map_model(g, load_hardware(hw_c), opts))
    return base, cand


@pytest.fixture(scope="module")
def compound():
    """fp32 down_proj (compiler, ML compiler engineer) + eager launches (runtime owner)."""
    opts = MapOptions(launch="eager", dtype_overrides=(("*down_proj*", "fp32"),))
    return comparison_pack(*_pair(opts), changed=("compiler", "runtime"), simulate=False)


def _visible_text(page: str) -> str:
    body = page.split("<body>", 1)[1]
    body = re.sub(r"<title>.*?</title>", " ", body, flags=re.S)  # SVG tooltips are not shown
    return html.unescape(re.sub(r"<[^>]+>", " ", body))


def _tables(pack):
    return {h.split(" (")[0].split(":")[0]: rows for h, rows, _ in pack.tables}


def test_no_raw_float_formatting_anywhere(compound):
    md, page = comparison_markdown(compound), comparison_html(compound)
    assert not RAW.findall(md), RAW.findall(md)[:5]
    assert not RAW.findall(_visible_text(page)), RAW.findall(_visible_text(page))[:5]


def test_headline_figures_carry_units_and_signed_changes(compound):
    rows = {r["metric"]: r for r in _tables(compound)["Headline"]}
    step = rows["step time"]
    assert re.fullmatch(r"[\d.]+ (ms|us)", step["baseline"])
    assert re.fullmatch(r"\+\d+(\.\d+)?%", step["change"])
    assert rows["MFU"]["baseline"].endswith("%")
    assert rows["throughput"]["baseline"].endswith("tokens/s")
    assert rows["MFU"]["change"].startswith("-")  # slower: MFU fell


def test_title_names_the_changes_and_the_figure(compound):
    from workbench._format import fmt_change

    h = compound.report.headline()
    assert compound.title.startswith("fp32 down_proj + launch graph -> eager: step time +")
    assert compound.title.endswith(f": step time {fmt_change(h['change'])}")


def test_kernel_diff_is_grouped_by_family_with_counts(compound):
    fams = _tables(compound)["Per-kernel diff, grouped by family"]
    names = [f["family"] for f in fams]
    assert len(names) == len(set(names))  # one row per family, not 15 copies of one
    top = fams[0]
    assert top["family"] == "layers.*.mlp.down_proj"
    assert top["count"] == 12  # gpt2: 12 layers
    assert top["layers"] == "0-11"
    per_kernel = [d for d in compound.report.diff if d.level == "kernel"]
    want = sum(
        d.delta_s for d in per_kernel if re.fullmatch(r"layers\.\d+\.mlp\.down_proj", d.name)
    )
    assert top["delta_s"] == pytest.approx(want)


def test_family_rows_sort_naturally_and_range_the_layers():
    from workbench.review.pack.causes import family_rows, natural_key

    rows = [
        DiffRow(name=f"layers.{i}.x", level="kernel", baseline_s=1.0, candidate_s=2.0,
                delta_s=1.0, share=0.1, mechanism="fusion_broken")
        for i in (10, 2, 1, 0, 11, 3)
    ] + [DiffRow(name="layers.7.y", level="kernel", baseline_s=1.0, candidate_s=7.0,
                 delta_s=6.0, share=0.6, mechanism=None)]  # fmt: skip
    out = family_rows(rows)
    assert [f["family"] for f in out] == ["layers.*.x", "layers.*.y"]
    assert out[0]["family"] == "layers.*.x"  # equal deltas: natural order breaks the tie
    assert out[1]["layers"] == "7"
    assert out[0]["layers"] == "0-3, 10-11"
    assert sorted(["layers.10.a", "layers.2.a", "layers.1.a"], key=natural_key) == [
        "layers.1.a",
        "layers.2.a",
        "layers.10.a",
    ]


def test_every_material_cause_has_proving_rows_and_an_owner(compound):
    att = compound.report.attribution
    material = [s for s in att.shares if s.share >= 0.05]
    assert len(material) == 2
    causes = _tables(compound)["Material causes"]
    assert [c["cause"] for c in causes] == ["fp32 down_proj", "launch graph -> eager"]
    assert [c["share"] for c in causes] == pytest.approx([s.share for s in material])
    proof = _tables(compound)["Proving artifact"]
    shown = {row["cause"] for row in proof}
    assert shown == {"precision_fallback", "launch_sync_overhead"}
    fp32 = [r for r in proof if r["cause"] == "precision_fallback" and r["side"] == "candidate"]
    assert fp32[0]["dtype"] == "fp32"
    assert fp32[0]["kernel"].endswith("mlp.down_proj")


def test_owners_assigned_with_their_mechanisms_roster_in_appendix(compound):
    owners = _tables(compound)["Ownership"]
    assert [o["role"] for o in owners] == ["ML compiler engineer", "runtime systems engineer"]
    assert "precision_fallback (" in owners[0]["mechanisms"]
    assert "launch_sync_overhead (" in owners[1]["mechanisms"]
    roster = _tables(compound)["Appendix"]
    assert len(roster) == 5
    md = comparison_markdown(compound)
    assert "fusion_broken+" not in md
    assert md.index("## Appendix: ownership roster") > md.index("## Provenance")


def test_hardware_change_shows_differing_figures_not_the_sources_prose():
    pack = comparison_pack(*_pair(MapOptions(), hw_c="h200"), changed="hardware", simulate=False)
    rows = _tables(pack)["Declared change"]
    names = [r["name"] for r in rows]
    assert not any(n.startswith("sources") for n in names)
    assert any("bandwidth_bytes_per_s" in n for n in names)
    bw = next(r for r in rows if r["name"].endswith("hbm].bandwidth_bytes_per_s"))
    assert bw["before"].endswith("B/s")
    assert bw["after"].endswith("B/s")
    ref = next(r for r in rows if r["name"].startswith("profile sources"))
    assert pack.report.baseline.tags.hardware.hardware_hash[:12] in ref["before"]
    h200 = load_hardware("h200")
    md = comparison_markdown(pack)
    for s in h200.sources:
        assert str(s)[:60] not in md
    assert pack.title.startswith("h100-sxm -> h200: step time ")


def test_workload_change_reads_without_none():
    g = build_graph("gpt2", seq=256)
    hw = load_hardware("h100-sxm")
    base = record_from_mapping(map_model(g, hw))
    cand = record_from_mapping(map_model(build_graph("gpt2", seq=512), hw))
    pack = comparison_pack(base, cand, changed="workload", simulate=False)
    md = comparison_markdown(pack)
    assert not re.search(r"[bsc]None|\bNone\b", md)


def test_provenance_and_relative_reproducers(tmp_path, compound, monkeypatch):
    from workbench import __version__
    from workbench.cli import main

    base, cand = compound.report.baseline, compound.report.candidate
    runs = tmp_path / "runs"
    runs.mkdir()
    b, c = save_record(base, runs / "b.json"), save_record(cand, runs / "c.json")
    out_dir = tmp_path / "packs"
    out_dir.mkdir()
    out = out_dir / "p.md"
    argv = ["review", str(b), str(c), "--changed", "compiler", "--changed", "runtime"]
    assert main([*argv, "--no-simulate", "--out", str(out)]) == 1
    md = out.read_text()
    assert str(tmp_path) not in md  # no absolute path anywhere
    assert "workbench triage ../runs/b.json ../runs/c.json --changed compiler" in md
    assert "--out p.md" in md
    assert "--record ../runs/b.json" in md  # the baseline run writes the record the pack read
    sha = hashlib.sha256(b.read_bytes()).hexdigest()
    assert sha in md
    assert __version__ in md
    assert base.tags.hardware.hardware_hash in md
    commit = re.search(r"git commit \(this pack\) \| ([0-9a-f]{40}|not a checkout) \|", md)
    assert commit is not None
    monkeypatch.chdir(out_dir)  # the commands resolve from the pack's folder
    assert os.path.exists(os.path.join("..", "runs", "b.json"))


def test_git_commit_fails_soft(tmp_path):
    from workbench.review.pack.meta import git_commit

    assert git_commit(tmp_path) == "not a checkout"


# --- timelines per stream, temporal breakdown ----------------------------------------------------
def _run_two_streams(name: str = "gemm_kernel"):
    from workbench.evidence import MeasuredKernel, MeasuredRun
    from workbench.evidence.run import IterationStats

    ks = (
        MeasuredKernel(name=name, category="gemm", rule="name~gemm", start_s=0.0,
                       duration_s=4e-3, stream=7, iteration=0),
        MeasuredKernel(name="nccl_allreduce", category="collective", rule="name~nccl",
                       start_s=1e-3, duration_s=5e-3, stream=13, iteration=0),
        MeasuredKernel(name=name, category="gemm", rule="name~gemm", start_s=8e-3,
                       duration_s=1e-3, stream=7, iteration=0),
    )  # fmt: skip
    its = (IterationStats(index=0, wall_s=10e-3, kernel_s=7e-3, gap_s=3e-3, copy_s=0.0),)
    return MeasuredRun(source="t.json", format="kineto", tags=(), kernels=ks, iterations=its)


def test_iteration_lanes_are_per_stream_with_overlap():
    from workbench.report._timeline_svg import iteration_lanes, lanes_svg
    from workbench.report.charts.timeline import overlap_intervals

    caption, lanes = iteration_lanes(_run_two_streams())
    assert [label for label, _ in lanes] == ["stream 13", "stream 7"]
    over = overlap_intervals(lanes)
    assert [(s, e) for s, e, _ in over] == [pytest.approx((1e-3, 4e-3))]
    svg = lanes_svg(lanes, caption)
    assert svg.count(">overlap</text>") == 1  # the overlap lane's label, once
    assert "iteration 0" in caption


def test_temporal_breakdown_adds_up_to_the_wall():
    from workbench.report._timeline_svg import temporal_breakdown

    tb = temporal_breakdown(_run_two_streams())
    # NOTE: evidence's rule: the step window runs from the first start to the last end (0-9 ms),
    # whatever wall time the hand-made IterationStats claims
    assert tb["wall_s"] == pytest.approx(9e-3)
    assert tb["compute_s"] == pytest.approx(5e-3)  # 0-4 ms and 8-9 ms
    assert tb["non_compute_s"] == pytest.approx(2e-3)  # 4-6 ms: the all-reduce not under a GEMM
    assert tb["idle_s"] == pytest.approx(2e-3)  # 6-8 ms
    assert tb["compute_s"] + tb["non_compute_s"] + tb["idle_s"] == pytest.approx(tb["wall_s"])


def test_measured_pack_shows_streams_and_breakdown_escaped():
    evil = "k<script>alert(1)</script>"
    run = _run_two_streams(evil)
    pack = comparison_pack(*_pair(MapOptions(launch="eager")), changed="runtime", simulate=False)
    pack = dataclasses.replace(pack, traces=(run, run))
    page, md = comparison_html(pack), comparison_markdown(pack)
    assert "Measured timeline per stream: baseline" in page
    assert "Temporal breakdown" in page
    assert "## Temporal breakdown" in md
    assert "<script" not in page
    assert "k&lt;script&gt;" in page
    row = next(r for h, rows, _ in [(h, r, c) for h, r, c in _extra(pack)] for r in rows)
    assert row["idle_share"] == "22.2%"  # 2 ms idle in the 9 ms step window (evidence's rule)


def _extra(pack):
    from workbench.report._comparison import extra_tables

    return extra_tables(pack)


def test_page_is_static_and_offline(compound):
    page = comparison_html(compound)
    assert "<script" not in page
    assert not re.search(r"\b(src|href)\s*=", page)
    assert "@media print" in page
    assert "max-width:1280px" in page
    long = next(k for k in re.findall(r'title="([^"]+)"', page) if len(k) > 44)
    assert long


def test_decode_headline_leads_with_bandwidth_utilisation():
    g = build_graph("gpt2", phase="decode", seq=256, context=256)
    hw = load_hardware("h100-sxm")
    base = record_from_mapping(map_model(g, hw))
    cand = record_from_mapping(map_model(g, hw, MapOptions(launch="eager")))
    pack = comparison_pack(base, cand, changed="runtime", simulate=False)
    metrics = [r["metric"] for r in _tables(pack)["Headline"]]
    assert metrics.index("MBU (off-chip bandwidth utilisation)") < metrics.index("MFU")
    mbu = _tables(pack)["Headline"][metrics.index("MBU (off-chip bandwidth utilisation)")]
    assert mbu["baseline"].endswith("%")
    assert mbu["change"].startswith("-")  # the same bytes in more time


def test_layer_timeline_svg_escapes_kernel_names():
    from workbench.report._timeline_svg import lanes_svg, layer_lanes

    rows = [
        {"side": "baseline", "kernel": "<img src=x onerror=alert(1)>", "start_s": 0.0,
         "end_s": 1e-6, "source": "predicted", "stream": "in order (predicted)"},
    ]  # fmt: skip
    svg = lanes_svg(layer_lanes(rows), "layers.0 <b>")
    assert "<img" not in svg
    assert "&lt;img src=x" in svg
    assert "layers.0 &lt;b&gt;" in svg


def test_one_run_pack_has_no_raw_floats_nor_plus_joined_lists():
    from workbench.report.review_pack import review_markdown

    md = review_markdown(map_model(build_graph("mlp"), load_hardware("h100-sxm")), simulate=False)
    assert not RAW.findall(md), RAW.findall(md)[:5]
    assert "fusion_broken+" not in md
