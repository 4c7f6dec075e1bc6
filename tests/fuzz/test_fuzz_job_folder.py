"""Bad job folders through ``workbench trace DIR`` and bad rank summaries (issue 31).

A folder of generated rank traces, some of them damaged (cut short, a byte replaced, the rank or
world size changed, an empty file, a hostile value in a duration): the command either reports
the job (exit 0, finite figures, one ``workbench: skipped rank file:`` line per file left out,
naming it) or refuses the folder in one line (exit 2). A rank summary dict coming back from a
worker with hostile values is read back or refused with a :class:`TraceError`, never half-built.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

from fuzz_contract import assert_contract, assert_sane_numbers, hostile_values, run_cli
from hypothesis import given
from hypothesis import strategies as st

from workbench.evidence import TraceError
from workbench.evidence.job import RankSummary, summarize_rank
from workbench.evidence.jobgen import write_job_folder

_DAMAGE = ("cut", "byte", "rank", "world", "empty", "dur")


@cache
def _clean(root: str) -> tuple[bytes, ...]:
    files = write_job_folder(Path(root) / "clean", ranks=3, steps=3, layers=2, seed=5)
    return tuple(f.read_bytes() for f in files)


def _damaged(text: bytes, how: str, at: float, value: object) -> bytes:
    if how == "cut":
        return text[: int(len(text) * at)]
    if how == "byte":
        i = int((len(text) - 1) * at)
        return text[:i] + bytes([int(at * 255)]) + text[i + 1 :]
    if how == "rank":
        return text.replace(b'"rank": ', b'"rank": 1', 1)
    if how == "world":
        return text.replace(b'"world_size": 3', b'"world_size": ' + json.dumps(value).encode(), 1)
    if how == "dur":
        return text.replace(b'"dur": 2.0', b'"dur": ' + json.dumps(value).encode(), 1)
    return b""


@given(
    damage=st.lists(
        st.tuples(st.sampled_from(_DAMAGE), st.floats(0.0, 1.0), hostile_values),
        min_size=1,
        max_size=3,
    )
)
def test_damaged_job_folder(tmp_path_factory, damage):
    root = tmp_path_factory.getbasetemp()
    clean = _clean(str(root))
    folder = tmp_path_factory.mktemp("job")
    damaged = {}
    for n, (how, at, value) in enumerate(damage):
        r = n % len(clean)
        damaged[r] = _damaged(damaged.get(r, clean[r]), how, at, value)
    for r, text in enumerate(clean):
        (folder / f"rank-{r}.json").write_bytes(damaged.get(r, text))
    out = assert_contract(run_cli("trace", str(folder), "--json"), names=(str(folder), "job"))
    if out.code == 0:
        doc = json.loads(out.out)
        assert_sane_numbers(doc)
        assert doc["job"]["step_s"] > 0
        skipped = [line for line in out.err.splitlines() if "skipped rank file" in line]
        assert len(skipped) == len(doc["skipped"])
        for line, s in zip(skipped, doc["skipped"], strict=True):
            assert Path(s["file"]).name in line


_KEYS = ("rank", "world_size", "wall_s", "idle_s", "collectives", "category_s", "steps")


@given(key=st.sampled_from((*_KEYS, "breakdown")), value=hostile_values)
def test_hostile_rank_summary(tmp_path_factory, key, value):
    clean = _clean(str(tmp_path_factory.getbasetemp()))
    assert clean
    d = summarize_rank(tmp_path_factory.getbasetemp() / "clean" / "rank-0.json").to_dict()
    if key in ("wall_s", "idle_s", "collectives", "category_s"):
        d["steps"][0][key] = value
    else:
        d[key] = value
    try:
        s = RankSummary.from_dict(d)
    except TraceError:
        return
    back = s.to_dict()
    assert_sane_numbers(back)
