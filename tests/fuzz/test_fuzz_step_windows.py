"""Forged step-window text in records read from traces never reaches the terminal raw.

A record read from a trace carries the reader's window rule and warnings
(``measurement.window_rule``, ``measurement.warnings``); triage and review print them. A record
re-locked with hostile text there (or a wrong type) gets one line and exit 2, or is printed
escaped.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fuzz_contract import assert_contract, fresh, hostile_values, run_cli
from hypothesis import given
from hypothesis import strategies as st

from workbench.evidence import MeasuredKernel, write_kineto_trace
from workbench.review.records.store import _lock

TEXT = st.one_of(
    st.sampled_from(("\x1b[2J", "\x07", "\x1b]0;pwn\x07", "\u202eevil", "a\nb", "\udcff", "")),
    st.text(max_size=8),
)


@pytest.fixture(scope="module")
def trace_record(tmp_path_factory) -> tuple[Path, dict]:
    folder = tmp_path_factory.mktemp("windows")
    kernels = [
        MeasuredKernel(name="sm80_xmma_gemm_bf16_tn", category="gemm", rule="", device=0,
                       start_s=1.0 + step * 1e-2, duration_s=1e-3, stream=7, iteration=step)
        for step in range(5)
    ]  # fmt: skip
    trace = write_kineto_trace(folder / "t.json", kernels, cpu_ops=True)
    path = folder / "r.json"
    assert run_cli("run", "--from-trace", str(trace), "--record", str(path)).code == 0
    return path, json.loads(path.read_text())


def _relocked(base: dict, key: str, value) -> str:
    doc = json.loads(json.dumps(base))
    doc["measurement"][key] = value
    body = {k: v for k, v in doc.items() if k != "lock"}
    return json.dumps({**body, "lock": _lock(body)})


@given(key=st.sampled_from(("window_rule", "warnings")), text=TEXT, other=hostile_values)
def test_forged_window_text_is_refused_or_escaped(tmp_path, trace_record, key, text, other):
    base_path, base = trace_record
    for value in (text if key == "window_rule" else [text], other):
        cand = fresh(tmp_path, "cand.json")
        try:
            cand.write_text(_relocked(base, key, value), encoding="utf-8")
        except (UnicodeEncodeError, ValueError):  # NOTE: a lone surrogate is no JSON text
            continue
        for fmt in ("table", "json"):
            argv = ("triage", str(base_path), str(cand), "--format", fmt)
            outcome = assert_contract(run_cli(*argv), names=(cand.name,), allowed=(0, 1, 2))
            if fmt == "table":
                raw = [ch for ch in ("\x1b", "\x07", "\u202e") if ch in outcome.out]
                assert not raw, outcome.out
