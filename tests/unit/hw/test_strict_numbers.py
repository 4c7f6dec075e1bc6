"""Hardware numbers are finite, of their declared type, in range; impossible profiles refused.

Each case mutates the teaching profile in one place and checks the one line that names it.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from workbench.errors import HardwareError
from workbench.hw import load_hardware
from workbench.hw.loader import builtin_dir

TEACHING = (builtin_dir() / "teaching.yaml").read_text()
SRAM = "{name: sram, kind: sram, scope: per_core, capacity_bytes: 1048576,"


def _error(tmp_path: Path, text: str, name: str = "chip.yaml") -> str:
    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(HardwareError) as info:
        load_hardware(path)
    message = str(info.value)
    assert "\n" not in message
    assert str(path) in message
    return message


@pytest.mark.parametrize(
    ("old", "new", "needle"),
    [
        ("  cores: 16", "  cores: true", "matrix_engine.cores: must be an integer, not a boolean"),
        ("  cores: 16", "  cores: '16'", "matrix_engine.cores: must be an integer, not a string"),
        ("  cores: 16", "  cores: 16.5", "matrix_engine.cores: must be an integer"),
        ("    bf16: 100.0e12", "    bf16: .nan", "peak_flops_per_s: bf16: must be a finite"),
        ("    bf16: 100.0e12", "    bf16: .inf", "peak_flops_per_s: bf16: must be a finite"),
        ("    bf16: 100.0e12", "    bf16: '1e14'", "bf16: must be a number, not a string"),
        ("latency_s: 500.0e-9}", "latency_s: .inf}", "memory[3].latency_s: must be a finite"),
        ("capacity_bytes: 16000000000", "capacity_bytes: 1" + "0" * 400, "out of range"),
        ("capacity_bytes: 16000000000", "capacity_bytes: 1.6e10", "must be an integer"),
        (SRAM, SRAM.replace("1048576", "1"), "no tile fits"),
        ("  graph_capture: true", "  graph_capture: 1", "must be true or false"),
    ],
)
def test_numbers_are_finite_typed_and_in_range(tmp_path, old, new, needle):
    assert old in TEACHING
    assert needle in _error(tmp_path, TEACHING.replace(old, new, 1))


def test_empty_peak_map_and_dataflows_are_refused(tmp_path):
    lines = TEACHING.splitlines()
    start = lines.index(next(x for x in lines if x.startswith("  peak_flops_per_s:")))
    end = next(i for i in range(start + 1, len(lines)) if not lines[i].startswith("    "))
    empty = "\n".join([*lines[:start], "  peak_flops_per_s: {}", *lines[end:]]) + "\n"
    assert "peak_flops_per_s" in _error(tmp_path, empty)
    assert "dataflows" in _error(
        tmp_path, TEACHING.replace("  cores: 16", "  cores: 16\n  dataflows: []", 1)
    )


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("x: " + "[" * 1000 + "]" * 1000 + "\n", "nested deeper"),
        ("? [a, b]\n: 1\n", "key must be a plain name"),
        ("a: &x [1]\nb: *x\n", "aliases are not allowed"),
    ],
    ids=["deep", "list-key", "alias"],
)
def test_hostile_yaml_is_one_line(tmp_path, text, needle):
    assert needle in _error(tmp_path, text + TEACHING if "?" in text else TEACHING + text)


def test_pipe_and_device_are_refused_without_blocking(tmp_path):
    fifo = tmp_path / "pipe.yaml"
    os.mkfifo(fifo)
    with pytest.raises(HardwareError, match="named pipe"):
        load_hardware(fifo)
    with pytest.raises(HardwareError, match="character device"):
        load_hardware("/dev/zero")
    big = tmp_path / "big.yaml"
    big.write_text(TEACHING + "#" * (2 << 20))
    with pytest.raises(HardwareError, match="limit"):
        load_hardware(big)


EFF = "  efficiency: 1.0"
VEC = "vector_unit:\n"
SOFT = "  fused_attention: true"


@pytest.mark.parametrize(
    ("old", "new", "needle"),
    [
        (EFF, "  efficiency: 1.0e-300", "matrix_engine.efficiency: 1e-300 is below the physical"),
        (EFF, EFF + "\n  efficiency_shape: [-4096, 4096, 4096]", "efficiency_shape: every side"),
        (EFF, EFF + "\n  call_rates: [[64, 0.0]]", "call_rates: rates must be finite and > 0"),
        (EFF, EFF + "\n  call_rates: [[128, 1.0e12], [64, 2.0e12]]", "call_rates: sides must"),
        (VEC, VEC + "  kernel_flops_per_s: {not_a_class: 1.0e12}\n", "unknown kernel class"),
        (SOFT, SOFT + "\n  attention_warp_mma_fraction: true", "must be a number, not a boolean"),
        # NOTE: the one strict loader refuses a base-60 number itself (it was a string, then
        # refused by the schema as "must be an integer, not a string")
        ("capacity_bytes: 16000000000", "capacity_bytes: 1:30", "'1:30' is a YAML 1.1 base-60"),
    ],
)
def test_figures_a_file_could_misread_are_refused(tmp_path, old, new, needle):
    """Issue 19: each of these was accepted and ignored, misread or crashed the mapper."""
    assert old in TEACHING
    assert needle in _error(tmp_path, TEACHING.replace(old, new, 1))
