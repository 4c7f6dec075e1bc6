"""The typed scheduling style: stated by every profile, defaulted soundly, checked, hashed."""

from pathlib import Path

import pytest

from workbench.errors import HardwareError
from workbench.hw import hardware_hash, list_hardware, load_hardware
from workbench.hw.loader import builtin_dir

TEACHING = (builtin_dir() / "teaching.yaml").read_text()
STATED = next(line for line in TEACHING.splitlines(keepends=True) if line.startswith("scheduling:"))


def _profile(tmp_path: Path, *, scheduling: str | None, tile_issue_s: float | None) -> Path:
    text = TEACHING.replace(STATED, "" if scheduling is None else f"scheduling: {scheduling}\n")
    if tile_issue_s is not None:
        text = text.replace("overheads:\n", f"overheads:\n  tile_issue_s: {tile_issue_s!r}\n")
    path = tmp_path / f"chip-{scheduling}-{tile_issue_s}.yaml"
    path.write_text(text)
    return path


def _error(path: Path) -> str:
    with pytest.raises(HardwareError) as info:
        load_hardware(path)
    message = str(info.value)
    assert "\n" not in message
    assert message.startswith(f"{path}: ")
    return message[len(f"{path}: ") :]


def test_the_teaching_text_states_its_style():
    assert STATED.startswith("scheduling: hardware_scheduled")


@pytest.mark.parametrize("name", list_hardware())
def test_every_builtin_profile_states_hardware_scheduled(name):
    text = (builtin_dir() / f"{name}.yaml").read_text()
    assert "\nscheduling: hardware_scheduled" in text
    hw = load_hardware(name)
    assert hw.scheduling == "hardware_scheduled"
    assert hw.hardware_scheduled


@pytest.mark.parametrize(
    ("tile_issue_s", "style"), [(None, "hardware_scheduled"), (2e-6, "software_issued")]
)
def test_a_file_without_the_field_keeps_what_its_tile_issue_cost_meant(
    tmp_path, tile_issue_s, style
):
    hw = load_hardware(_profile(tmp_path, scheduling=None, tile_issue_s=tile_issue_s))
    assert hw.scheduling == style


def test_software_issued_needs_a_tile_issue_cost(tmp_path):
    msg = _error(_profile(tmp_path, scheduling="software_issued", tile_issue_s=None))
    assert msg.startswith("scheduling: 'software_issued' needs overheads.tile_issue_s > 0"), msg


def test_an_unknown_style_is_one_line(tmp_path):
    msg = _error(_profile(tmp_path, scheduling="gpu", tile_issue_s=None))
    assert msg.startswith("scheduling: must be one of"), msg


def test_a_hardware_scheduled_chip_may_pay_a_cost_per_tile_step(tmp_path):
    hw = load_hardware(_profile(tmp_path, scheduling="hardware_scheduled", tile_issue_s=2e-6))
    assert hw.hardware_scheduled
    assert hw.overheads.tile_issue_s == 2e-6


def test_stating_the_default_keeps_the_hash_and_another_style_changes_it(tmp_path):
    stated = load_hardware("teaching")
    left_out = load_hardware(_profile(tmp_path, scheduling=None, tile_issue_s=None))
    assert hardware_hash(stated) == hardware_hash(left_out)
    host = load_hardware(_profile(tmp_path, scheduling="software_issued", tile_issue_s=2e-6))
    host_default = load_hardware(_profile(tmp_path, scheduling=None, tile_issue_s=2e-6))
    paying = load_hardware(_profile(tmp_path, scheduling="hardware_scheduled", tile_issue_s=2e-6))
    assert hardware_hash(host) == hardware_hash(host_default)
    assert hardware_hash(paying) != hardware_hash(host)
