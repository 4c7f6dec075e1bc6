"""Output targets of every kind through the shared safe writer (issue 30).

``--output`` (and a run's ``--record``) may name a new file, a writable one, a read-only one, one
behind a link, a folder, a dangling link or a named pipe with no reader: the command writes the
new file or exits 2 in one line naming it, and never replaces a read-only file or a folder.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from fuzz_contract import assert_contract, fresh, run_cli
from hypothesis import given, settings
from hypothesis import strategies as st

KINDS = ("new", "writable", "read-only", "read-only-link", "folder", "dangling", "fifo")
MODES = (0o444, 0o400, 0o555, 0o000, 0o644)


def _target(folder: Path, kind: str, mode: int) -> tuple[Path, Path | None]:
    """The path to write, and the file that must survive unchanged (None: may be written)."""
    path = folder / "out.json"
    keep = folder / "keep.json"
    if kind == "new":
        return path, None
    if kind == "folder":
        path.mkdir()
        return path, path
    if kind == "dangling":
        path.symlink_to(folder / "elsewhere" / "x.json")
        return path, None
    if kind == "fifo":
        os.mkfifo(path)
        return path, None
    keep.write_text("old", encoding="utf-8")
    if kind == "writable":
        return keep, None
    keep.chmod(mode if mode & 0o222 == 0 else 0o444)
    if kind == "read-only-link":
        path.symlink_to(keep)
        return path, keep
    return keep, keep


@settings(max_examples=12, deadline=None)
@given(
    kind=st.sampled_from(KINDS), mode=st.sampled_from(MODES), flag=st.sampled_from(("map", "run"))
)
def test_every_kind_of_output_target(tmp_path, kind, mode, flag):
    folder = fresh(tmp_path, "out")
    folder.mkdir()
    path, keep = _target(folder, kind, mode)
    before = keep.read_bytes() if keep is not None and keep.is_file() else None
    option = "--output" if flag == "map" else "--record"
    try:
        argv = (flag, "--model", "mlp", "--hardware", "teaching", option, str(path))
        outcome = assert_contract(run_cli(*argv), names=("out.json", "keep.json"))
    finally:
        for p in folder.iterdir():
            if p.is_file() and not p.is_symlink():
                p.chmod(0o644)
    if keep is not None:
        assert outcome.code == 2, (kind, outcome)
        if before is not None:
            assert keep.read_bytes() == before
        else:
            assert stat.S_ISDIR(keep.stat().st_mode)
    leftovers = [p.name for p in folder.iterdir() if p.name not in ("out.json", "keep.json")]
    assert leftovers == [], leftovers
