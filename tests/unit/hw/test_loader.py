import re
from pathlib import Path

import pytest

from workbench.errors import HardwareError
from workbench.hw import hardware_dirs, hardware_hash, list_hardware, load_hardware
from workbench.hw.loader import ENV_VAR, builtin_dir, json_schema

TEACHING = (builtin_dir() / "teaching.yaml").read_text()


def _write(tmp_path: Path, text: str, name: str = "chip.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def _error(tmp_path: Path, text: str) -> str:
    path = _write(tmp_path, text)
    with pytest.raises(HardwareError) as info:
        load_hardware(path)
    message = str(info.value)
    assert "\n" not in message
    assert message.startswith(f"{path}: ")
    return message[len(f"{path}: ") :]


def test_teaching_profile_loads_by_name():
    hw = load_hardware("teaching")
    assert hw.name == "teaching"
    assert hw.ridge_point("bf16") == pytest.approx(100.0)


def test_bad_yaml_syntax_names_the_line(tmp_path):
    msg = _error(tmp_path, "schema_version: 1\nname: [x, y\nvendor: z\n")
    assert re.fullmatch(r"line 3: YAML syntax error: .+", msg), msg


def test_duplicate_key_names_key_and_line(tmp_path):
    text = TEACHING.replace("  cores: 16 ", "  cores: 16\n  cores: 8 ", 1)
    msg = _error(tmp_path, text)
    line = text.splitlines().index("  cores: 8                     # didactic assumption") + 1
    assert msg == f"line {line}: duplicate key 'cores'"


def test_unknown_field(tmp_path):
    msg = _error(tmp_path, TEACHING.replace("  cores: 16", "  cores: 16\n  colour: red", 1))
    assert msg == "matrix_engine.colour: unknown field"


def test_missing_field(tmp_path):
    text = "\n".join(ln for ln in TEACHING.splitlines() if not ln.startswith("vendor:"))
    assert _error(tmp_path, text) == "vendor: required field missing"


def test_negative_bandwidth_names_the_level_index(tmp_path):
    text = TEACHING.replace("bandwidth_bytes_per_s: 4.0e12", "bandwidth_bytes_per_s: -4.0e12")
    assert _error(tmp_path, text) == "memory[2].bandwidth_bytes_per_s: must be > 0"


def test_bad_dtype_key(tmp_path):
    msg = _error(tmp_path, TEACHING.replace("    tf32: 50.0e12", "    fp9: 50.0e12", 1))
    assert msg.startswith("matrix_engine.peak_flops_per_s: unknown dtype 'fp9'")


def test_wrong_type(tmp_path):
    msg = _error(tmp_path, TEACHING.replace("  cores: 16", "  cores: many", 1))
    assert msg == "matrix_engine.cores: must be an integer, not a string"


def test_wrong_schema_version(tmp_path):
    msg = _error(tmp_path, TEACHING.replace("schema_version: 1", "schema_version: 2"))
    assert msg == "schema_version: this workbench reads 1, file has 2"


def test_empty_file(tmp_path):
    assert _error(tmp_path, "# only a comment\n").startswith("empty file")


def test_top_level_not_a_mapping(tmp_path):
    msg = _error(tmp_path, "- 1\n- 2\n")
    assert msg == "top level must be a mapping of hardware fields, got list"


def test_no_per_core_sram_level(tmp_path):
    text = TEACHING.replace("kind: sram, scope: per_core", "kind: cache, scope: per_core")
    assert _error(tmp_path, text).startswith("memory: needs one level with kind 'sram'")


def test_bad_literal(tmp_path):
    text = TEACHING.replace("kind: cache, scope: shared", "kind: cache, scope: global")
    assert _error(tmp_path, text) == "memory[2].scope: must be one of 'per_core' or 'shared'"


def test_several_errors_are_counted_on_one_line(tmp_path):
    text = TEACHING.replace("  cores: 16", "  cores: 0", 1).replace("tdp_w: 400.0", "tdp_w: -1")
    assert _error(tmp_path, text) == "matrix_engine.cores: must be > 0 (+1 more)"


def test_unknown_profile_name_lists_known_ones():
    with pytest.raises(HardwareError) as info:
        load_hardware("h900")
    message = str(info.value)
    assert message.startswith("unknown hardware 'h900' (known: ")
    assert "h100-sxm" in message
    assert "teaching" in message


def test_missing_file(tmp_path):
    with pytest.raises(HardwareError, match=r"no such hardware file"):
        load_hardware(tmp_path / "nope.yaml")


def test_env_var_folder_adds_and_overrides_profiles(tmp_path, monkeypatch):
    _write(tmp_path, TEACHING.replace("name: teaching", "name: mine"), "mine.yaml")
    monkeypatch.setenv(ENV_VAR, str(tmp_path))
    assert "mine" in list_hardware()
    assert load_hardware("mine").name == "mine"
    assert hardware_dirs()[0] == tmp_path


def test_search_path_comes_after_env_and_before_builtin(tmp_path, monkeypatch):
    env, extra = tmp_path / "env", tmp_path / "extra"
    env.mkdir()
    extra.mkdir()
    monkeypatch.setenv(ENV_VAR, str(env))
    assert hardware_dirs([extra]) == [env, extra, builtin_dir()]
    _write(extra, TEACHING.replace("tdp_w: 400.0", "tdp_w: 123.0"), "teaching.yaml")
    assert load_hardware("teaching", [extra]).power.tdp_w == 123.0
    assert load_hardware("teaching").power.tdp_w == 400.0


def test_cache_sees_edits(tmp_path):
    path = _write(tmp_path, TEACHING)
    assert load_hardware(path).power.tdp_w == 400.0
    path.write_text(TEACHING.replace("tdp_w: 400.0", "tdp_w: 401.0"))
    assert load_hardware(path).power.tdp_w == 401.0


def test_exponent_without_dot_is_a_float(tmp_path):
    path = _write(tmp_path, TEACHING.replace("clock_hz: 1.0e9", "clock_hz: 1e9"))
    assert load_hardware(path).matrix_engine.clock_hz == 1e9


def test_hardware_hash_is_stable_and_content_based(tmp_path):
    a = load_hardware("teaching")
    b = load_hardware(_write(tmp_path, TEACHING))
    c = load_hardware(_write(tmp_path, TEACHING.replace("idle_w: 50.0", "idle_w: 51.0"), "c.yaml"))
    assert hardware_hash(a) == hardware_hash(b)
    assert hardware_hash(a) != hardware_hash(c)
    assert re.fullmatch(r"[0-9a-f]{64}", hardware_hash(a))


def test_json_schema_forbids_extra_fields():
    schema = json_schema()
    assert schema["additionalProperties"] is False
    assert "schema_version" in schema["required"]


@pytest.mark.parametrize("field", ["name", "vendor", "description"])
def test_profile_text_with_control_or_bidi_characters_is_refused(tmp_path, field):
    import yaml

    doc = yaml.safe_load(TEACHING)
    doc[field] = "a\nb\x1b[2J\u202e"
    assert f"{field}: holds a control" in _error(tmp_path, yaml.safe_dump(doc))


def test_calibrate_refuses_a_name_with_control_characters(capsys):
    from workbench.cli import main

    assert main(["calibrate", "--quick", "--name", "a\nb\x1b[2J"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1
    assert "--name" in err[0]
    assert "\x1b" not in err[0]
