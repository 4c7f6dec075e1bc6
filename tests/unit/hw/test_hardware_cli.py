import json

import pytest

from workbench.cli import main
from workbench.hw.loader import builtin_dir


def test_list_prints_every_profile_with_ridge(capsys):
    assert main(["hardware", "list"]) == 0
    out = capsys.readouterr().out
    assert "bf16 TFLOP/s" in out
    h100 = next(line for line in out.splitlines() if line.startswith("h100-sxm"))
    assert h100.split()[-3:] == ["989.4", "3350.0", "295.3"]


def test_list_json(capsys):
    assert main(["hardware", "list", "--format", "json"]) == 0
    rows = {r["name"]: r for r in json.loads(capsys.readouterr().out)}
    assert rows["a100-80gb"]["bf16_peak_flops_per_s"] == 312e12
    assert rows["teaching"]["ridge_point_bf16_flop_per_byte"] == pytest.approx(100.0)


def test_show_table_has_every_section(capsys):
    assert main(["hardware", "show", "h100-sxm"]) == 0
    out = capsys.readouterr().out
    for section in ("compute", "memory", "interconnect", "overheads", "power", "sources"):
        assert f"\n{section}\n" in out
    assert "228 KiB" in out  # smem, converted for display
    assert "3.35 TB/s" in out


def test_show_json_round_trips(capsys):
    assert main(["hardware", "show", "tpu-v5e", "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["matrix_engine"]["peak_flops_per_s"]["bf16"] == 197e12


def test_show_a_file_and_a_user_folder(tmp_path, capsys):
    text = (builtin_dir() / "teaching.yaml").read_text().replace("name: teaching", "name: mine")
    (tmp_path / "mine.yaml").write_text(text)
    assert main(["hardware", "show", str(tmp_path / "mine.yaml")]) == 0
    assert capsys.readouterr().out.startswith("mine (")
    assert main(["hardware", "list", "--hardware-path", str(tmp_path)]) == 0
    assert any(line.startswith("mine ") for line in capsys.readouterr().out.splitlines())


def test_bad_name_is_one_line_exit_2(capsys):
    assert main(["hardware", "show", "h900"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert err.startswith("workbench: error: unknown hardware 'h900' (known: ")


def test_bad_file_is_one_line_exit_2(tmp_path, capsys):
    bad = tmp_path / "bad.yaml"
    bad.write_text("schema_version: 1\nname: x\nname: y\n")
    assert main(["hardware", "show", str(bad)]) == 2
    err = capsys.readouterr().err
    assert err == f"workbench: error: {bad}: line 3: duplicate key 'name'\n"
