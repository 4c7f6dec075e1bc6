import json

import pytest

from workbench.cli import main


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_default_map_prints_summary_and_sheet(capsys):
    code, out, _ = run(capsys, "map", "--seq", "256")
    assert code == 0
    assert "llama2-7b prefill" in out
    assert "MFU" in out
    assert "layers.*.attn.q_proj" in out


def test_json_contract(capsys):
    code, out, _ = run(capsys, "map", "--model", "gpt2", "--seq", "128", "--format", "json")
    assert code == 0
    doc = json.loads(out)
    assert {"model", "hardware", "options", "totals", "kernels"} <= set(doc)
    totals = doc["totals"]
    for key in ("time_s", "mfu", "tokens_per_s", "stall_fraction_by_layer_type"):
        assert key in totals
    row = doc["kernels"][0]
    for key in (
        "kernel",
        "ops",
        "layer_type",
        "engine",
        "dtype",
        "layout",
        "tile",
        "stages",
        "sram_bytes",
        "sram_capacity_bytes",
        "fusion",
        "flops",
        "intensity",
        "time_s",
        "share",
        "bottleneck",
        "expected_bottleneck",
    ):
        assert key in row
    assert sum(r["time_s"] for r in doc["kernels"]) == pytest.approx(totals["time_s"])


@pytest.mark.parametrize("fmt", ["csv", "md", "html"])
def test_other_formats_write_files_atomically(capsys, tmp_path, fmt):
    out = tmp_path / f"sheet.{fmt}"
    code, _, _ = run(
        capsys, "map", "--model", "gpt2", "--seq", "64", "--format", fmt, "--output", str(out)
    )
    assert code == 0
    text = out.read_text()
    assert "attn" in text
    assert not list(tmp_path.glob(".*"))  # no temp file left behind


def test_overrides_change_the_mapping(capsys):
    _, base, _ = run(capsys, "map", "--model", "gpt2", "--seq", "512", "--format", "json")
    _, off, _ = run(
        capsys,
        "map",
        "--model",
        "gpt2",
        "--seq",
        "512",
        "--format",
        "json",
        "--no-fusion",
        "flash_attention",
        "--launch",
        "eager",
        "--tile",
        "*mlp.up_proj=64x64x32",
    )
    b, o = json.loads(base), json.loads(off)
    assert o["totals"]["time_s"] > b["totals"]["time_s"]
    assert o["options"]["disabled_fusion"] == ["flash_attention"]
    up = next(r for r in o["kernels"] if r["kernel"] == "layers.0.mlp.up_proj")
    assert up["tile"] == "64x64x32"
    assert up["tile_source"] == "override"


def test_list_fusion_rules(capsys):
    code, out, _ = run(capsys, "map", "--list-fusion-rules")
    assert code == 0
    assert "gemm_epilogue" in out
    assert "flash_attention" in out


@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        (["map", "--model", "nope"], "unknown model"),
        (["map", "--hardware", "nope"], "nope"),
        (["map", "--dtype", "fp7"], "unknown dtype"),
        (["map", "--no-fusion", "bogus"], "unknown fusion rule"),
        (["map", "--batch", "0"], "--batch"),
        (["map", "--tile", "abc"], "MxNxK"),
        (["map", "--onnx", "/nonexistent.onnx"], "/nonexistent.onnx"),
        (["map", "--output", "/nonexistent/dir/x.json"], "does not exist"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(capsys, argv, needle):
    code, _out, err = run(capsys, *argv)
    assert code == 2
    assert needle in err
    assert err.count("\n") == 1
    assert "Traceback" not in err


def test_help_lists_every_subcommand(capsys):
    assert main(["--help"]) == 0
    out = capsys.readouterr().out
    for cmd in ("map", "hardware", "calibrate"):
        assert cmd in out
