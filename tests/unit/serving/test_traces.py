import importlib.util
import json
from pathlib import Path

import numpy as np
import pytest

from workbench.serving import (
    ServingError,
    list_traces,
    load_builtin_trace,
    load_trace,
    poisson_arrivals,
    save_trace,
)

SCRIPT = Path(__file__).resolve().parents[3] / "scripts" / "make_traces.py"


def _doc(**overrides):
    doc = {
        "schema_version": 1,
        "kind": "workbench-serving-trace",
        "name": "t",
        "requests": {"arrival_s": [0.0, 0.5], "prompt_tokens": [10, 20], "output_tokens": [3, 4]},
    }
    return doc | overrides


def _write(tmp_path, text, name="trace.json"):
    path = tmp_path / name
    path.write_text(text)
    return path


def test_round_trip(tmp_path):
    w = poisson_arrivals(3.0, 50, 100, 20, seed=4)
    path = save_trace(w, tmp_path / "w.json", description="d", provenance={"seed": 4})
    back = load_trace(path)
    assert np.allclose(back.arrival_s, w.arrival_s, atol=1e-6)
    assert np.array_equal(back.prompt_tokens, w.prompt_tokens)
    assert np.array_equal(back.output_tokens, w.output_tokens)
    assert [p.name for p in tmp_path.iterdir()] == ["w.json"]  # no temporary left behind


@pytest.mark.parametrize(
    ("text", "match"),
    [
        (json.dumps(_doc())[:-20], "not valid JSON"),
        ("\x00\x01garbage", "not valid JSON"),
        (json.dumps(_doc(schema_version=99)), "newer"),
        (json.dumps(_doc(schema_version="1")), "schema_version"),
        (json.dumps(_doc(kind="something-else")), "not a workbench serving trace"),
        (json.dumps([1, 2, 3]), "not a workbench serving trace"),
        (json.dumps(_doc(requests=[])), "'requests'"),
        (json.dumps(_doc(requests={"arrival_s": [0.0]})), "prompt_tokens"),
        (
            json.dumps(
                _doc(
                    requests={
                        "arrival_s": [0, "x"],
                        "prompt_tokens": [1, 1],
                        "output_tokens": [1, 1],
                    }
                )
            ),
            "only numbers",
        ),
        (
            json.dumps(
                _doc(
                    requests={
                        "arrival_s": [1.0, 0.0],
                        "prompt_tokens": [1, 1],
                        "output_tokens": [1, 1],
                    }
                )
            ),
            "sorted",
        ),
        (
            json.dumps(
                _doc(requests={"arrival_s": [0.0], "prompt_tokens": [1.5], "output_tokens": [1]})
            ),
            "whole numbers",
        ),
    ],
)
def test_bad_trace_files_give_one_line_naming_the_file(tmp_path, text, match):
    path = _write(tmp_path, text)
    with pytest.raises(ServingError, match=match) as info:
        load_trace(path)
    message = str(info.value)
    assert "\n" not in message
    assert str(path) in message


def test_missing_file(tmp_path):
    with pytest.raises(ServingError, match="not found"):
        load_trace(tmp_path / "nope.json")


def test_builtin_traces_have_the_promised_shapes():
    assert set(list_traces()) >= {"production-chat", "synthetic-fixed"}
    fixed = load_builtin_trace("synthetic-fixed")
    assert set(fixed.prompt_tokens.tolist()) == {512}
    assert set(fixed.output_tokens.tolist()) == {128}
    prod = load_builtin_trace("production-chat")
    assert 2000 <= len(prod) <= 5000
    assert 500 < np.median(prod.prompt_tokens) < 700
    assert 4000 < np.percentile(prod.prompt_tokens, 99) < 8000
    assert prod.prompt_tokens.max() <= 8192
    assert 120 < np.median(prod.output_tokens) < 180
    assert prod.output_tokens.max() <= 2048
    gaps = np.diff(prod.arrival_s)
    assert gaps.std() / gaps.mean() > 1.5  # burstier than Poisson


def test_builtin_files_are_small():
    folder = Path(load_builtin_trace.__code__.co_filename).parent / "traces"
    for path in folder.glob("*.json"):
        assert path.stat().st_size < 500_000


def test_unknown_builtin_trace():
    with pytest.raises(ServingError, match="synthetic-fixed"):
        load_builtin_trace("nope")


def test_make_traces_reproduces_the_shipped_files(tmp_path):
    spec = importlib.util.spec_from_file_location("make_traces", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.main(["--check"]) == 0
    (tmp_path / "synthetic-fixed.json").write_text("{}")
    assert module.check(tmp_path) is False


def test_a_named_pipe_or_device_is_refused_without_blocking(tmp_path):
    import os

    fifo = tmp_path / "trace.json"
    os.mkfifo(fifo)
    with pytest.raises(ServingError, match="named pipe, not a regular file"):
        load_trace(fifo)
    with pytest.raises(ServingError, match="character device"):
        load_trace("/dev/zero")
