"""``workbench trace FILE [--hardware H] [--on H2] [--against B] [--json]`` (issue 17)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parents[1] / "review"))
from shaped_trace import ADD, MM, SGEMM, TENSOROP, write_shaped_trace

from workbench.cli import main
from workbench.review.join.trace_summary import TRACE_KEYS, short_name

ADD_CALL = ("aten::add", [[4096, 4096], [4096, 4096], []], ["float", "float", "Scalar"])
VARIED = [0.0, 6e-3, 1e-3, 9e-3, 2e-3, 7e-3]  # idle per step, s: steps vary by ~9 ms


def run(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def _one_error_line(err):
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("workbench: error: ")
    return lines[0]


@pytest.fixture
def shaped(tmp_path):
    calls = [(*MM, [(TENSOROP, 4e-3)]), (*ADD_CALL, [(ADD, 1e-3)])]
    return write_shaped_trace(tmp_path / "a.json", calls, steps=4)


def test_the_expected_table_leads_then_iterations_breakdown_categories_top(capsys, shaped):
    code, out, _ = run(capsys, "trace", shaped)
    assert code == 0
    lines = out.splitlines()
    assert lines[0].startswith(f"trace {shaped} on NVIDIA A100-SXM4-80GB")
    assert lines[1].startswith("these 2 kernels lose ")
    assert "against what the a100-80gb profile says it should do" in lines[1]
    order = [
        next(i for i, line in enumerate(lines) if line.startswith(p))
        for p in ("these", "iterations:", "temporal breakdown", "kernel time by", "top kernels")
    ]
    assert order == sorted(order)
    assert "iterations: 4 steps" in out
    assert "over 3 steady-state steps" in out
    assert "warm-up step" in out


def test_json_has_the_documented_keys_and_figures(capsys, shaped):
    code, out, _ = run(capsys, "trace", shaped, "--json")
    assert code == 0
    doc = json.loads(out)
    assert tuple(doc) == TRACE_KEYS
    it = doc["iterations"]
    assert it["count"] == 4
    assert len(it["per_iteration_s"]) == 4
    assert it["warmup_s"] == pytest.approx(it["per_iteration_s"][0])
    assert doc["by_category"]["gemm"] == pytest.approx(4e-3)
    assert doc["by_category"]["elementwise"] == pytest.approx(1e-3)
    (rank,) = doc["temporal_breakdown"]
    assert {"idle_pct", "compute_pct", "non_compute_pct", "idle_s"} <= set(rank)
    rows = doc["expected"]["rows"]
    assert rows[0]["lost_s"] >= rows[1]["lost_s"]
    assert {r["format"] for r in rows} == {"tf32", "fp32"}
    assert doc["top_kernels"][0]["name"] == TENSOROP
    assert doc["top_kernels"][0]["rule"]  # the classification rule that matched
    code, again, _ = run(capsys, "trace", shaped, "--format", "json")
    assert json.loads(again) == doc


def test_what_if_on_another_profile(capsys, shaped):
    code, out, _ = run(capsys, "trace", shaped, "--on", "h100-sxm")
    assert code == 0
    assert "what-if on h100-sxm" in out
    code, out, _ = run(capsys, "trace", shaped, "--on", "h100-sxm", "--json")
    w = json.loads(out)["what_if"]
    assert 0 < w["expected_s"] < w["expected_here_s"]


def test_hardware_chosen_explicitly(capsys, shaped):
    code, out, _ = run(capsys, "trace", shaped, "--hardware", "v100-sxm2", "--json")
    assert code == 0
    assert json.loads(out)["expected"]["hardware"] == "v100-sxm2"


def test_no_shapes_says_so(capsys, tmp_path):
    path = write_shaped_trace(tmp_path / "n.json", [(*MM, [(SGEMM, 4e-3)])], shapes=False)
    code, out, _ = run(capsys, "trace", path)
    assert code == 0
    assert "expected vs measured: not available (the trace recorded no shapes" in out


def test_control_characters_and_long_names_are_made_safe(capsys, tmp_path):
    evil = "gemm\x1b[31mRED\nkernel\x07"
    long = "void at::native::" + "templated_kernel<" * 100 + "float" + ">" * 100 + "(int)"
    calls = [(*MM, [(evil, 3e-3)]), (*ADD_CALL, [(long, 2e-3)])]
    path = write_shaped_trace(tmp_path / "e.json", calls, device="GPU\x1b[2J\r")
    code, _, err = run(capsys, "trace", path)  # no profile for that GPU: the error escapes it
    assert code == 2
    assert "GPU\\x1b[2J\\r" in _one_error_line(err)
    code, out, _ = run(capsys, "trace", path, "--hardware", "a100-80gb")
    assert code == 0
    assert "\x1b" not in out
    assert "\x07" not in out
    assert "\r" not in out
    assert "\\x1b[31mRED\\nkernel" in out
    assert max(len(line) for line in out.splitlines()) < 260
    code, out, _ = run(capsys, "trace", path, "--hardware", "a100-80gb", "--json")
    names = {k["name"] for k in json.loads(out)["top_kernels"]}
    assert long in names  # the full name in the JSON
    assert len(short_name(long)) <= 64


@pytest.mark.parametrize(
    ("argv", "what"),
    [
        (("trace", ""), "FILE: an empty value"),
        (("trace", "/nonexistent/t.json"), "/nonexistent/t.json"),
        (("trace", "CORRUPT"), "corrupt.json"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(capsys, tmp_path, argv, what):
    corrupt = tmp_path / "corrupt.json"
    corrupt.write_text('{"traceEvents": [{"ph": "X", "cat": "kernel"')
    argv = tuple(str(corrupt) if a == "CORRUPT" else a for a in argv)
    code, _, err = run(capsys, *argv)
    assert code == 2
    assert what in _one_error_line(err)


def test_unknown_profile_is_one_line(capsys, shaped):
    code, _, err = run(capsys, "trace", shaped, "--hardware", "no-such-gpu")
    assert code == 2
    assert "no-such-gpu" in _one_error_line(err)
    code, _, err = run(capsys, "trace", shaped, "--against", "")
    assert code == 2
    assert "--against: an empty value" in _one_error_line(err)


def test_a_gpu_without_a_profile_asks_for_hardware(capsys, tmp_path):
    path = write_shaped_trace(tmp_path / "x.json", [(*MM, [(SGEMM, 4e-3)])], device="Acme NPU")
    code, _, err = run(capsys, "trace", path)
    assert code == 2
    assert "--hardware" in _one_error_line(err)


def test_a_corrupt_shape_is_said_and_never_printed_as_an_expectation(capsys, tmp_path):
    huge = ("aten::mm", [[8192, 8192], [8192, 8192]], ["float", "float"])
    only = write_shaped_trace(tmp_path / "c.json", [(*huge, [(SGEMM, 10e-6)])], steps=3)
    code, out, _ = run(capsys, "trace", only)
    assert code == 0
    head = out.split("iterations:")[0]
    assert "no kernel has an expectation on the a100-80gb profile" in head
    assert "warning: left out as corrupt: kernel rows whose shapes cannot have run" in head
    assert "no expectation (operator not modelled or no shapes): gemm 10 us" in head
    mixed = write_shaped_trace(
        tmp_path / "m.json", [(*huge, [(SGEMM, 10e-6)]), (*ADD_CALL, [(ADD, 1e-3)])], steps=3
    )
    code, out, _ = run(capsys, "trace", mixed)
    head = out.split("iterations:")[0]
    assert head.startswith("trace ")
    assert "these 1 kernels lose" in head
    assert "warning: left out as corrupt" in head


def test_each_file_is_parsed_once(capsys, shaped, tmp_path, monkeypatch):
    """Kernels and operators come from one pass over each file (not one pass each)."""
    from workbench.evidence import _jsonstream

    parsed = []
    real = _jsonstream.ChromeTraceStream.__init__

    def counted(self, chunks, where, on_meta):
        parsed.append(where)
        real(self, chunks, where, on_meta)

    monkeypatch.setattr(_jsonstream.ChromeTraceStream, "__init__", counted)
    assert run(capsys, "trace", shaped)[0] == 0
    assert parsed == [str(shaped)]
    other = write_shaped_trace(tmp_path / "b.json", [(*MM, [(TENSOROP, 5e-3)])], steps=4)
    parsed.clear()
    assert run(capsys, "trace", shaped, "--against", other)[0] == 0
    assert parsed == [str(shaped), str(other)]


@pytest.mark.parametrize("separators", [(",", ":"), None])
def test_a_one_line_trace_gives_the_same_document(capsys, shaped, separators):
    doc = json.loads(shaped.read_text())
    shaped.write_text(json.dumps(doc, separators=separators))  # NOTE: same name (it is shown)
    _, one_line, _ = run(capsys, "trace", shaped, "--json")
    shaped.write_text(json.dumps(doc, indent=1))
    _, indented, _ = run(capsys, "trace", shaped, "--json")
    assert json.loads(one_line) == json.loads(indented)


def test_a_truncated_one_line_trace_is_one_line_and_exit_2(capsys, shaped, tmp_path):
    text = json.dumps(json.loads(shaped.read_text()), separators=(",", ":"))
    cut = tmp_path / "cut.json"
    cut.write_text(text[: len(text) * 2 // 3])
    code, out, err = run(capsys, "trace", cut)
    assert code == 2
    assert out == ""
    line = _one_error_line(err)
    assert str(cut) in line
    assert "truncated JSON" in line


@pytest.mark.parametrize("flag", ["--on", "--hardware", "--against"])
@pytest.mark.parametrize("value", ["", "  "])
def test_an_empty_profile_or_trace_is_refused_not_ignored(capsys, shaped, flag, value):
    code, out, err = run(capsys, "trace", shaped, flag, value)
    assert code == 2
    assert out == ""
    assert f"{flag}: an empty value is not allowed" in _one_error_line(err)
