import json

import pytest

from workbench.cli import main


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


SL = ("sweep-latency", "--model", "gpt2", "--requests", "300", "--max-batch", "8")


def test_sweep_latency_json_contract(capsys):
    code, out, _ = run(capsys, *SL, "--rates", "5,50,5000", "--sla-ms", "3000", "--format", "json")
    assert code == 0
    doc = json.loads(out)
    assert [p["offered_rate_per_s"] for p in doc["points"]] == [5.0, 50.0, 5000.0]
    for p in doc["points"]:
        lat = p if p["stable"] else p["replay_latency_s"]  # unstable: no steady figures
        for m in ("ttft", "tpot", "e2e"):
            assert lat[f"p50_{m}_s"] <= lat[f"p95_{m}_s"] <= lat[f"p99_{m}_s"]
        assert p["achieved_rate_per_s"] > 0
        assert p["throughput_per_s"] > 0
    knee = doc["knee"]
    assert knee["metric"] == "p99_e2e_s"
    assert knee["sla_s"] == 3.0
    assert knee["first_break_rate_per_s"] == 5000.0


def test_sweep_latency_table_marks_knee_and_writes_chart(capsys, tmp_path):
    chart = tmp_path / "c.svg"
    code, out, _ = run(capsys, *SL, "--rates", "5,5000", "--sla-ms", "3000", "--chart", str(chart))
    assert code == 0
    assert "knee: 5.000 req/s (served " in out
    assert "saturated (achieved " in out
    units = ["req/s", "req/s", "req/s", "tok/s", "ms", "ms", "ms", "ms", "ms"]
    assert any(line.split() == units for line in out.splitlines())
    assert chart.stat().st_size > 1000


def test_sweep_latency_saturated_load_is_not_ok_even_within_the_sla(capsys):
    code, out, _ = run(capsys, *SL, "--rates", "5,5000", "--sla-ms", "1e9")
    assert code == 0
    row = next(line for line in out.splitlines() if line.lstrip().startswith("5000.000"))
    assert "saturated (achieved " in row
    assert " req/s of offered " in row
    assert not row.endswith("OK")
    assert "knee: 5.000 req/s" in out
    code, out, _ = run(capsys, *SL, "--rates", "5,5000", "--sla-ms", "1e9", "--format", "json")
    doc = json.loads(out)
    assert [p["status"] for p in doc["points"]] == ["ok", "saturated"]
    assert [p["stable"] for p in doc["points"]] == [True, False]
    assert doc["knee"]["first_break_status"] == "saturated"
    low = doc["points"][0]
    assert low["sustained_rate_per_s"] >= 0.95 * low["window_arrival_rate_per_s"]


def test_sweep_latency_quotes_no_steady_latency_for_an_unstable_load(capsys):
    """Issue 32: a load served below its offered rate prints "grows", not a mean or percentile."""
    code, out, _ = run(capsys, *SL, "--rates", "5,5000", "--sla-ms", "3000")
    assert code == 0
    row = next(line for line in out.splitlines() if line.lstrip().startswith("5000.000"))
    assert row.split()[4:9] == ["grows"] * 5
    assert "unstable, the queue grows" in row
    assert "no steady value exists" in out
    code, out, _ = run(capsys, *SL, "--rates", "5,5000", "--sla-ms", "3000", "--format", "json")
    low, high = json.loads(out)["points"]
    assert low["stable"]
    assert low["p99_e2e_s"] > 0
    assert "replay_latency_s" not in low
    assert not high["stable"]
    assert high["p99_e2e_s"] is None
    assert high["mean_e2e_s"] is None
    assert high["replay_latency_s"]["p99_e2e_s"] > 0
    assert high["replay_requests"] == 300
    assert "no steady value" in high["unstable_note"]


def test_sweep_latency_images(capsys):
    code, out, _ = run(
        capsys,
        "sweep-latency",
        "--model",
        "resnet50",
        "--requests",
        "300",
        "--sla-ms",
        "50",
        "--format",
        "json",
    )
    assert code == 0
    doc = json.loads(out)
    assert doc["batching"] == "dynamic"
    assert doc["points"][0]["p99_ttft_s"] is None


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (("--rates", "1,x"), "--rates"),
        (("--rates", "-1"), "--rates"),
        (("--trace", "nofile.json"), "--trace"),
        (("--max-batch", "0"), "--max-batch"),
        (("--chart", "x.pdf"), "--chart"),
    ],
)
def test_sweep_latency_bad_input_exit_2(capsys, argv, message):
    code, _, err = run(capsys, *SL, *argv)
    assert code == 2
    assert message in err
    assert len(err.strip().splitlines()) == 1


def test_compare_json_contract_and_shortlist(capsys):
    code, out, _ = run(
        capsys,
        "compare",
        "--model",
        "gpt2",
        "--hardware",
        "h100-sxm",
        "l4",
        "--requests",
        "300",
        "--max-batch",
        "8",
        "--sla-ms",
        "5000",
        "--format",
        "json",
    )
    assert code == 0
    doc = json.loads(out)
    assert [r["hardware"] for r in doc["rows"]] == ["h100-sxm", "l4"]
    for key in (
        "fits",
        "memory_bytes",
        "dominant",
        "step_s",
        "mfu",
        "throughput_at_sla",
        "energy_per_item_j",
        "perf_per_watt",
        "risk",
        "score",
    ):
        assert key in doc["rows"][0]
    assert "rank" in doc["rank_rule"]
    assert all(s["model"] == "gpt2" for s in doc["shortlist"])


def test_compare_table_refuses_70b_on_one_chip_and_accepts_tp(capsys):
    code, out, _ = run(
        capsys, "compare", "--model", "llama2-70b", "--hardware", "h100-sxm", "--requests", "100"
    )
    assert code == 0
    assert " NO " in out
    assert "none meets the SLA" in out
    code, out, _ = run(
        capsys,
        "compare",
        "--model",
        "llama2-70b",
        "--hardware",
        "h100-sxm",
        "--tensor-parallel",
        "4",
        "--requests",
        "100",
        "--sla-metric",
        "tpot",
        "--sla-ms",
        "100",
    )
    assert code == 0
    assert "tp4" in out
    assert " yes " in out


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (("--model", "nope"), "--model"),
        (("--chips", "0"), "--chips"),
        (("--chips", "3", "--tensor-parallel", "2"), "--chips"),
        (("--model", "resnet50", "--tensor-parallel", "2"), "--tensor-parallel"),
        (("--hardware", "no-such-chip"), "no-such-chip"),
    ],
)
def test_compare_bad_input_exit_2(capsys, argv, message):
    code, _, err = run(capsys, "compare", "--requests", "50", *argv)
    assert code == 2
    assert message in err
    assert len(err.strip().splitlines()) == 1


def test_sweep_cli_resumes(capsys, tmp_path):
    out = tmp_path / "r.jsonl"
    base = (
        "sweep",
        "--hardware",
        "h100-sxm",
        "--model",
        "gpt2",
        "--batch",
        "1,2",
        "--seq",
        "64",
        "--dtype",
        "bf16,fp8",
        "--out",
        str(out),
        "--workers",
        "1",
    )
    code, text, _ = run(capsys, *base, "--limit", "3")
    assert code == 0
    assert text.startswith("3 points written, 0 already done, 4")
    code, text, _ = run(capsys, *base)
    assert code == 0
    assert text.startswith("1 points written, 3 already done")
    lines = out.read_text().splitlines()
    assert len(lines) == 5
    assert len({json.loads(x)["key"] for x in lines[1:]}) == 4


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (("--batch", "0"), "--batch"),
        (("--seq", "a"), "--seq"),
        (("--phase", "train"), "--phase"),
        (("--model", "nope"), "--model"),
        (("--scheduler", "garbage"), "not a scheduler address"),
        (("--connect-timeout", "0"), "--connect-timeout"),
    ],
)
def test_sweep_bad_input_exit_2(capsys, tmp_path, argv, message):
    base = {"--hardware": "h100-sxm", "--model": "gpt2", "--out": str(tmp_path / "r.jsonl")}
    args = ["sweep"]
    for k, v in base.items():
        if k not in argv:
            args += [k, v]
    code, _, err = run(capsys, *args, *argv)
    assert code == 2
    assert message in err
    assert len(err.strip().splitlines()) == 1


def test_second_sweep_on_a_locked_out_is_one_line_exit_2(capsys, tmp_path):
    from workbench.platform._sweep_file import locked

    out = tmp_path / "r.jsonl"
    argv = ("sweep", "--hardware", "h100-sxm", "--model", "gpt2", "--seq", "64", "--out", str(out))
    with locked(out):
        code, text, err = run(capsys, *argv, "--workers", "1")
    assert (code, text) == (2, "")
    assert err.startswith(f"workbench: error: --out {out}: another sweep is writing it")
    assert len(err.strip().splitlines()) == 1
