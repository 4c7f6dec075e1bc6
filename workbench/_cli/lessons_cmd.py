"""``workbench lessons copy DIR``: a student's working copy of the lessons.

Students work in the copy, so JupyterLab's autosave (which writes every output into the file
it has open) never touches the shipped ``lessons/*.ipynb``, and ``git pull`` of an update never
conflicts with a student's work. The copy refuses to overwrite: an existing file is kept and
named, so re-running after an update adds only the lessons the student has not started.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from workbench._cli.commands import add_command
from workbench.errors import WorkbenchError

__all__ = ["lesson_files", "register"]


def register(subparsers: Any) -> None:
    """Add the ``lessons`` command (``lessons copy DIR``)."""
    parser = add_command(subparsers, "lessons")
    subs = parser.add_subparsers(dest="lessons_command", metavar="ACTION", required=True)
    copy = subs.add_parser(
        "copy",
        help="copy every lesson notebook into DIR (never overwriting a file already there)",
    )
    copy.add_argument("dir", type=Path, metavar="DIR", help="the working folder (created)")
    copy.add_argument(
        "--from",
        dest="source",
        type=Path,
        default=None,
        metavar="FOLDER",
        help="the shipped lessons (default: lessons/ beside the package, else ./lessons)",
    )
    copy.set_defaults(func=_copy)


def lesson_files(source: Path | None = None) -> list[Path]:
    """The shipped lesson notebooks, ``NN-*.ipynb`` in ``source``.

    Args:
        source: The folder; None: ``lessons/`` beside the package (a checkout or an editable
            install), else ``./lessons`` (a checkout with the package installed from it, as on
            Binder).
    """
    import workbench

    beside = Path(workbench.__file__).resolve().parents[1] / "lessons"
    folder = source or (beside if beside.is_dir() else Path("lessons"))
    found = sorted(folder.glob("[0-9][0-9]-*.ipynb"))
    if not found:
        raise WorkbenchError(
            f"lessons: no lesson notebooks in {folder} (give --from, a checkout's lessons/)"
        )
    return found


def _copy(args: argparse.Namespace) -> int:
    from workbench._files import write_bytes_safely

    target: Path = args.dir
    if target.exists() and not target.is_dir():
        raise WorkbenchError(f"{target}: exists and is not a folder")
    target.mkdir(parents=True, exist_ok=True)
    copied, kept = [], []
    for src in lesson_files(args.source):
        dst = target / src.name
        if dst.exists():
            kept.append(dst.name)
            continue
        write_bytes_safely(dst, src.read_bytes(), what="lesson copy")
        copied.append(dst.name)
    print(f"copied {len(copied)} lessons into {target}" + (f"; kept {len(kept)} already there "
          f"({', '.join(kept)})" if kept else ""))  # fmt: skip
    print(f"open them with: jupyter lab {target}")
    return 0
