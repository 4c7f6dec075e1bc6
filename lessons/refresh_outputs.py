"""Re-execute lessons and keep only the outputs nbval compares (cells tagged nbval-check-output).

When the cost model changes, the checked tables and Claim sentences change with it and nbval
fails until the stored outputs are refreshed. Review the diff: a Claim that now reads
differently is the lesson's text following the numbers.

Run: python lessons/refresh_outputs.py 02 10      (lesson numbers; none = every lesson)
"""

import sys
from pathlib import Path

import nbformat
from nbclient import NotebookClient

LESSONS = Path(__file__).resolve().parent


def refresh(path: Path, timeout_s: int = 180) -> int:
    """Execute ``path`` in place; strip every output but the checked ones. Returns errors."""
    nb = nbformat.read(path, as_version=4)
    NotebookClient(nb, timeout=timeout_s, store_widget_state=False,
                   extra_arguments=["--IPKernelApp.log_level=ERROR"],
                   resources={"metadata": {"path": str(LESSONS)}}).execute()  # fmt: skip
    errors = 0
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        errors += sum(o.get("output_type") == "error" for o in cell.outputs)
        cell.metadata.pop("execution", None)
        if "nbval-check-output" not in cell.metadata.get("tags", []):
            cell.outputs = []
            cell.execution_count = None
    nb.metadata.pop("widgets", None)
    nbformat.write(nb, path)
    return errors


def main(argv: list[str]) -> None:
    """Refresh the lessons whose two-digit numbers are in ``argv`` (all when empty)."""
    paths = sorted(LESSONS.glob("[0-9][0-9]-*.ipynb"))
    if argv:
        paths = [p for p in paths if p.name[:2] in argv]
    for p in paths:
        print(f"{p.name}: {refresh(p)} errors")


if __name__ == "__main__":
    main(sys.argv[1:])
