"""The one strict YAML loader (workbench.hw._yaml): each refusal, and every shipped file loads."""

import time
from pathlib import Path

import pytest

from workbench.errors import HardwareError
from workbench.fidelity import CorpusError, load_corpus
from workbench.hw import list_hardware, load_hardware
from workbench.hw._yaml import StrictYamlError, load_strict
from workbench.hw.loader import _parse_yaml
from workbench.hw.stack import list_stacks, load_stack, parse_stack

ROOT = Path(__file__).resolve().parents[3]
BOMB = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"{n}: &{n} [{', '.join(['*' + p] * 9)}]\n" for p, n in zip("abcdefgh", "bcdefghi", strict=True)
)


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("a: 1\nb: 2\na: 3\n", "line 3: duplicate key 'a'"),
        ("? [a, b]\n: 1\n", "line 1: a mapping key must be a plain name"),
        ("? {a: 1}\n: 1\n", "line 1: a mapping key must be a plain name"),
        ("t: 1:30\n", "line 1: '1:30' is a YAML 1.1 base-60 number"),
        ("t: 190:20:30.15\n", "base-60"),
        ("a: &x [1]\nb: *x\n", "line 1: anchors and aliases are not allowed"),
        ("a: &x 1\n", "anchors and aliases are not allowed"),  # an anchor alone, too
        ("x: " + "[" * 40 + "]" * 40 + "\n", "nested deeper than 32 levels"),
        ("a: [1\n", "line 2: YAML syntax error"),
    ],
    ids=[
        "duplicate",
        "list-key",
        "map-key",
        "base60",
        "base60-float",
        "alias",
        "anchor",
        "deep",
        "syntax",
    ],
)
def test_each_refusal_is_one_line(text, needle):
    with pytest.raises(StrictYamlError) as err:
        load_strict(text)
    assert needle in str(err.value)
    assert "\n" not in str(err.value)


def test_numbers_read_as_yaml_1_2():
    doc = load_strict("a: 1e12\nb: 12\nc: -3\nd: 0x10\ne: 2.5e-3\nf: '1:30'\ng: 0b1\nh: 0:30\n")
    assert doc == {"a": 1e12, "b": 12, "c": -3, "d": 16, "e": 2.5e-3, "f": "1:30", "g": "0b1",
                   "h": "0:30"}  # fmt: skip
    assert isinstance(doc["a"], float)
    assert isinstance(doc["b"], int)


def test_an_alias_bomb_fails_at_once():
    t0 = time.perf_counter()
    with pytest.raises(StrictYamlError, match="line 1: anchors and aliases"):
        load_strict(BOMB)
    assert time.perf_counter() - t0 < 1.0


def test_an_alias_bomb_in_the_corpus_folder_is_one_line_naming_the_file(tmp_path, monkeypatch):
    from workbench.fidelity import schema

    folder = tmp_path / "published.d"
    folder.mkdir()
    bomb = folder / "bomb.yaml"
    bomb.write_text(BOMB)
    monkeypatch.setattr(schema, "EXTRA_DIR", folder)
    t0 = time.perf_counter()
    with pytest.raises(CorpusError) as err:
        load_corpus()
    assert time.perf_counter() - t0 < 10.0  # the shipped published.yaml is read first
    msg = str(err.value)
    assert msg.startswith(f"{bomb}: line 1: anchors and aliases are not allowed")
    assert "\n" not in msg


@pytest.mark.parametrize(
    ("text", "needle"),
    [("a: 1\na: 2\n", "duplicate key 'a'"), ("a: &x 1\nb: *x\n", "aliases"), ("a: 1:30\n", "base")],
)
def test_hardware_stacks_and_review_tables_share_it(text, needle):
    with pytest.raises(HardwareError, match=needle):
        _parse_yaml(text, "x.yaml")  # hardware, stacks and review/decision/_config.py use it
    with pytest.raises(HardwareError, match=f"my.yaml: line .*{needle}"):
        parse_stack(text, "my.yaml")


def test_every_shipped_file_still_loads():
    assert len(list_hardware()) == len(list((ROOT / "hardware").glob("*.yaml")))
    for name in list_hardware():
        assert load_hardware(name).name
    assert len(list_stacks()) == len(list((ROOT / "stacks").glob("*.yaml")))
    for name in list_stacks():
        assert load_stack(name).name == name
    assert len(load_corpus().rows) > 100
    for path in (ROOT / "workbench" / "review" / "data").glob("*.yaml"):
        assert isinstance(load_strict(path.read_text()), dict)


# --- GPU names -> profiles: a data file loaded strictly ------------------------------------------
def test_the_device_table_loads_and_every_profile_is_shipped():
    from workbench.hw.devices import load_device_profiles, profile_for_device

    table = load_device_profiles()
    assert [name for _, name in table][:3] == ["v100-sxm2", "t4", "a100-80gb"]
    assert all(name in list_hardware() for _, name in table)
    assert profile_for_device("NVIDIA H200") == "h200"  # H200 is tried before H100
    assert profile_for_device("AMD Instinct MI300X") == "mi300x"


@pytest.mark.parametrize(
    ("body", "needle"),
    [
        ("  - pattern: 'H100'\n    profile: h100-sxm\n    pattern: 'x'\n", "duplicate key"),
        ("  - pattern: '(H100'\n    profile: h100-sxm\n", "devices[0].pattern: not a regular"),
        ("  - pattern: 'H100'\n    profile: no-such-chip\n", "not a shipped hardware profile"),
        ("  - pattern: 'H100'\n    profile: h100-sxm\n    vendor: x\n", "devices[0].vendor"),
        ("  - &a {pattern: 'H100', profile: h100-sxm}\n", "anchors and aliases"),
    ],
)
def test_a_bad_device_table_is_one_line_naming_the_file(tmp_path, body, needle):
    from workbench.hw.devices import load_device_profiles

    path = tmp_path / "devices.yaml"
    path.write_text("schema_version: 1\ndevices:\n" + body)
    with pytest.raises(HardwareError) as err:
        load_device_profiles(path)
    msg = str(err.value)
    assert msg.startswith(str(path))
    assert needle in msg
    assert "\n" not in msg
