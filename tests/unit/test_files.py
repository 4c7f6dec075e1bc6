"""Safe writing and bounded reading (workbench._files): every case of issue 13's list."""

from __future__ import annotations

import errno
import json
import os
import stat
from pathlib import Path

import pytest

from workbench import _files
from workbench._files import (
    read_bounded,
    read_text_bounded,
    write_bytes_safely,
    write_text_safely,
)
from workbench.errors import WorkbenchError


def _leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.endswith(".tmp"))


def _one_line(exc: pytest.ExceptionInfo[WorkbenchError]) -> str:
    text = str(exc.value)
    assert "\n" not in text
    return text


def test_new_file_is_written_and_gets_the_umask_default_mode(tmp_path: Path) -> None:
    target = tmp_path / "out.txt"
    old = os.umask(0o022)
    try:
        write_text_safely(target, "héllo\n")
    finally:
        os.umask(old)
    assert target.read_text(encoding="utf-8") == "héllo\n"
    assert stat.S_IMODE(target.stat().st_mode) == 0o644
    assert _leftovers(tmp_path) == []


def test_existing_file_keeps_its_mode_and_is_replaced(tmp_path: Path) -> None:
    target = tmp_path / "out.bin"
    target.write_bytes(b"old")
    target.chmod(0o640)
    write_bytes_safely(target, b"new")
    assert target.read_bytes() == b"new"
    assert stat.S_IMODE(target.stat().st_mode) == 0o640


def test_symlink_is_followed_and_stays_a_link(tmp_path: Path) -> None:
    real = tmp_path / "real.txt"
    real.write_text("old", encoding="utf-8")
    real.chmod(0o604)
    link = tmp_path / "link.txt"
    link.symlink_to(real)
    write_text_safely(link, "new")
    assert link.is_symlink()
    assert real.read_text(encoding="utf-8") == "new"
    assert stat.S_IMODE(real.stat().st_mode) == 0o604


def test_dangling_symlink_creates_its_target(tmp_path: Path) -> None:
    link = tmp_path / "link.txt"
    link.symlink_to(tmp_path / "made.txt")
    write_text_safely(link, "x")
    assert link.is_symlink()
    assert (tmp_path / "made.txt").read_text(encoding="utf-8") == "x"


def test_symlink_loop_is_one_line(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    a.symlink_to(b)
    b.symlink_to(a)
    with pytest.raises(WorkbenchError) as exc:
        write_text_safely(a, "x")
    assert str(a) in _one_line(exc)


def test_dev_null_is_written_through_not_replaced() -> None:
    if not os.access("/dev/null", os.W_OK):
        pytest.skip("/dev/null is not writable here")
    write_bytes_safely("/dev/null", b"discarded")
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode)


def test_fifo_with_a_reader_is_written_through(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    try:
        write_bytes_safely(fifo, b"through the pipe")
        assert os.read(reader, 65536) == b"through the pipe"
    finally:
        os.close(reader)
    assert stat.S_ISFIFO(fifo.stat().st_mode)


def test_anonymous_pipe_via_dev_fd_is_written_through() -> None:
    reader, writer = os.pipe()
    try:
        write_bytes_safely(f"/dev/fd/{writer}", b"process substitution")
        assert os.read(reader, 65536) == b"process substitution"
    finally:
        os.close(reader)
        os.close(writer)


def test_fifo_without_a_reader_is_refused_without_hanging(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    with pytest.raises(WorkbenchError, match="no reader") as exc:
        write_bytes_safely(fifo, b"x")
    assert str(fifo) in _one_line(exc)
    assert stat.S_ISFIFO(fifo.stat().st_mode)


def test_directory_target_is_one_line(tmp_path: Path) -> None:
    with pytest.raises(WorkbenchError, match="is a directory") as exc:
        write_text_safely(tmp_path, "x", what="--output")
    assert _one_line(exc).startswith(f"--output {tmp_path}:")
    assert _leftovers(tmp_path) == []


def test_missing_folder_is_refused_or_made(tmp_path: Path) -> None:
    target = tmp_path / "no" / "such" / "out.txt"
    with pytest.raises(WorkbenchError, match="does not exist") as exc:
        write_text_safely(target, "x")
    assert str(target) in _one_line(exc)
    write_text_safely(target, "x", make_parents=True)
    assert target.read_text(encoding="utf-8") == "x"


def test_parent_that_is_a_file_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("", encoding="utf-8")
    with pytest.raises(WorkbenchError, match="not a folder") as exc:
        write_text_safely(tmp_path / "file" / "out.txt", "x", make_parents=True)
    _one_line(exc)


@pytest.mark.skipif(os.geteuid() == 0, reason="root ignores folder permissions")
def test_read_only_folder_is_one_line_and_keeps_the_old_file(tmp_path: Path) -> None:
    target = tmp_path / "out.txt"
    target.write_text("old", encoding="utf-8")
    tmp_path.chmod(0o555)
    try:
        with pytest.raises(WorkbenchError, match="permission denied") as exc:
            write_text_safely(target, "new")
        assert str(target) in _one_line(exc)
    finally:
        tmp_path.chmod(0o755)
    assert target.read_text(encoding="utf-8") == "old"
    assert _leftovers(tmp_path) == []


@pytest.mark.parametrize("victim", ["write", "fsync"])
def test_disk_full_is_one_line_old_target_intact_temp_removed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, victim: str
) -> None:
    target = tmp_path / "out.txt"
    target.write_text("old", encoding="utf-8")

    def full(*_args: object) -> int:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(_files.os, victim, full)
    with pytest.raises(WorkbenchError, match="disk full") as exc:
        write_text_safely(target, "new" * 1000, what="--output")
    monkeypatch.undo()
    assert _one_line(exc) == f"--output {target}: no space left on device (disk full)"
    assert target.read_text(encoding="utf-8") == "old"
    assert _leftovers(tmp_path) == []


def test_short_writes_are_completed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real_write = os.write

    def short(fd: int, data: bytes) -> int:
        return real_write(fd, bytes(data[:3]))

    monkeypatch.setattr(_files.os, "write", short)
    write_bytes_safely(tmp_path / "out", b"0123456789")
    monkeypatch.undo()
    assert (tmp_path / "out").read_bytes() == b"0123456789"


def test_read_bounded_reads_a_regular_file(tmp_path: Path) -> None:
    path = tmp_path / "in.yaml"
    path.write_bytes(b"abc")
    assert read_bounded(path, 3, "hardware file") == b"abc"
    assert read_text_bounded(path, 10) == "abc"


def test_read_bounded_refuses_too_large(tmp_path: Path) -> None:
    path = tmp_path / "big"
    path.write_bytes(b"x" * 2048)
    with pytest.raises(WorkbenchError, match=r"larger than the limit of 1\.0 KiB") as exc:
        read_bounded(path, 1024, "config")
    assert _one_line(exc).startswith(f"config {path}: is 2.0 KiB")


def test_read_bounded_refuses_fifo_without_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    with pytest.raises(WorkbenchError, match="named pipe, not a regular file") as exc:
        read_bounded(fifo, 100, "record")
    assert str(fifo) in _one_line(exc)


@pytest.mark.parametrize(
    ("path", "reason"),
    [("/dev/zero", "character device"), ("/", "is a directory")],
)
def test_read_bounded_refuses_devices_and_folders(path: str, reason: str) -> None:
    with pytest.raises(WorkbenchError, match=reason) as exc:
        read_bounded(path, 100)
    _one_line(exc)


def test_read_bounded_missing_and_bad_text(tmp_path: Path) -> None:
    with pytest.raises(WorkbenchError, match="file not found"):
        read_bounded(tmp_path / "nope", 10)
    bad = tmp_path / "bad.txt"
    bad.write_bytes(b"ok\xff")
    with pytest.raises(WorkbenchError, match="not valid utf-8 text at byte 2") as exc:
        read_text_bounded(bad, 10)
    _one_line(exc)


def test_read_only_file_system_is_one_line_temp_removed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "out.txt"
    target.write_text("old", encoding="utf-8")

    def read_only(*_args: object) -> None:
        raise OSError(errno.EROFS, "Read-only file system")

    monkeypatch.setattr(_files.os, "replace", read_only)
    with pytest.raises(WorkbenchError, match="read-only file system") as exc:
        write_text_safely(target, "new")
    monkeypatch.undo()
    assert str(target) in _one_line(exc)
    assert target.read_text(encoding="utf-8") == "old"
    assert _leftovers(tmp_path) == []


# --- through the CLI: `--output` of `workbench map` -------------------------------------------
def _map(capsys: pytest.CaptureFixture[str], output: str) -> tuple[int, str]:
    from workbench.cli import main

    code = main(["map", "--model", "gpt2", "--seq", "64", "--format", "json", "--output", output])
    return code, capsys.readouterr().err


def test_cli_output_to_dev_null_leaves_the_device(capsys: pytest.CaptureFixture[str]) -> None:
    if not os.access("/dev/null", os.W_OK):
        pytest.skip("/dev/null is not writable here")
    code, err = _map(capsys, "/dev/null")
    assert (code, err) == (0, "")
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode)


def test_cli_output_to_a_directory_is_one_line_exit_2(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, err = _map(capsys, str(tmp_path))
    assert code == 2
    assert err == f"workbench: error: --output {tmp_path}: is a directory\n"


def test_cli_output_through_a_symlink_keeps_link_and_mode(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    real = tmp_path / "real.json"
    real.write_text("old", encoding="utf-8")
    real.chmod(0o640)
    link = tmp_path / "out.json"
    link.symlink_to(real)
    code, _ = _map(capsys, str(link))
    assert code == 0
    assert link.is_symlink()
    assert json.loads(real.read_text(encoding="utf-8"))["model"]
    assert stat.S_IMODE(real.stat().st_mode) == 0o640


@pytest.mark.skipif(os.geteuid() != 0, reason="only root can give a file to another owner")
def test_root_keeps_the_owner_of_an_existing_file(tmp_path: Path) -> None:
    target = tmp_path / "theirs.txt"
    target.write_text("old", encoding="utf-8")
    os.chown(target, 1234, 5678)
    write_text_safely(target, "new")
    st = target.stat()
    assert (st.st_uid, st.st_gid) == (1234, 5678)
    assert target.read_text(encoding="utf-8") == "new"


@pytest.mark.parametrize("mode", [0o444, 0o400, 0o000])
@pytest.mark.parametrize("through_link", [False, True])
def test_a_read_only_file_is_refused_not_replaced(
    tmp_path: Path, mode: int, through_link: bool
) -> None:
    real = tmp_path / "keep.txt"
    real.write_text("old", encoding="utf-8")
    real.chmod(mode)
    target = tmp_path / "link.txt" if through_link else real
    if through_link:
        target.symlink_to(real)
    try:
        with pytest.raises(WorkbenchError, match="read-only file") as exc:
            write_text_safely(target, "new")
        assert str(target) in _one_line(exc)
    finally:
        real.chmod(0o644)
    assert real.read_text(encoding="utf-8") == "old"
    assert stat.S_IMODE(real.stat().st_mode) == 0o644
    assert _leftovers(tmp_path) == []
