"""Lessons stay thin (DESIGN.md): every computation lives in workbench/, a cell calls it.

Parses each notebook as JSON (nbformat) without running it: code cells have no def/class/for/
while except in cells tagged ``exercise``, imports come only from ``workbench``, every lesson has
the required sections, a live widget, two or three exercises each followed by a library check,
and the committed file keeps outputs only where nbval compares them.
"""

import ast
import re
from pathlib import Path

import nbformat
import pytest

LESSONS = Path(__file__).resolve().parents[2] / "lessons"
EXPECTED = [
    "01-operators-to-flops-and-bytes.ipynb",
    "02-hardware-model-and-roofline.ipynb",
    "03-tiling-and-wave-quantization.ipynb",
    "04-fusion-boundaries.ipynb",
    "05-quantization-and-layouts.ipynb",
    "06-regression-triage.ipynb",
    "07-senior-design-review.ipynb",
    "08-attention-and-bandwidth.ipynb",
    "09-scheduling-vs-autotuning.ipynb",
    "10-latency-throughput-tails.ipynb",
    "11-choosing-a-platform.ipynb",
    "12-the-bandwidth-lens.ipynb",
    "13-dataflows-and-energy.ipynb",
    "14-sparsity-on-spatial-arrays.ipynb",
]
# Markdown headings every lesson has (case-insensitive substrings of a heading line).
SECTIONS = [
    "what this lesson teaches",
    "the senior-engineer question",
    "live widget",
    "exercise",
    "key takeaways",
    "pitfalls",
]
LOOPS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.For, ast.AsyncFor, ast.While)
PATHS = [LESSONS / name for name in EXPECTED]
# Every lesson, including later ones: the thinness and output rules apply to all of them.
ALL = sorted(LESSONS.glob("[0-9][0-9]-*.ipynb"))


def _cells(path, kind):
    nb = nbformat.read(path, as_version=4)
    return [c for c in nb.cells if c.cell_type == kind]


def _tags(cell):
    return set(cell.get("metadata", {}).get("tags", []))


def test_every_lesson_exists():
    found = sorted(p.name for p in LESSONS.glob("[0-9][0-9]-*.ipynb"))
    assert found == EXPECTED


@pytest.mark.parametrize("path", ALL, ids=lambda p: p.name[:2])
def test_code_cells_are_thin(path):
    for i, cell in enumerate(_cells(path, "code")):
        tree = ast.parse(cell.source)
        for node in ast.walk(tree):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                names = (
                    [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module]
                )
                for name in names:
                    assert (name or "").split(".")[0] == "workbench", (
                        f"{path.name} code cell {i} imports {name!r}: lessons import workbench only"
                    )
            if "exercise" not in _tags(cell):
                assert not isinstance(node, LOOPS), (
                    f"{path.name} code cell {i} has a {type(node).__name__}: move the logic into "
                    "workbench/ (only cells tagged 'exercise' may hold def/class/loops)"
                )


@pytest.mark.parametrize("path", PATHS, ids=lambda p: p.name[:2])
def test_required_sections(path):
    headings = [
        line.lstrip("#").strip().lower()
        for cell in _cells(path, "markdown")
        for line in cell.source.splitlines()
        if line.startswith("#")
    ]
    for section in SECTIONS:
        assert any(section in h for h in headings), f"{path.name}: no '{section}' heading"


@pytest.mark.parametrize("path", PATHS, ids=lambda p: p.name[:2])
def test_live_widget_and_exercise_triads(path):
    code = _cells(path, "code")
    assert any(
        re.search(
            r"\b(MappingExplorer|TilingLab|TriagePanel|LatencyPanel|LensPanel|DataflowPanel|SparsityPanel)\(",
            c.source,
        )
        for c in code
    ), f"{path.name}: no live widget from workbench.ui"
    triads = 0
    for i, cell in enumerate(code):
        if "exercise" in _tags(cell):
            assert i + 1 < len(code), f"{path.name}: exercise cell {i} has no check after it"
            assert re.search(r"\bcheck_\w+\(", code[i + 1].source), (
                f"{path.name}: the cell after exercise cell {i} does not call a check_...()"
            )
            triads += 1
    # two or three exercises, plus at most one "predict first" committed before the reveal
    assert 2 <= triads <= 4, f"{path.name}: {triads} exercises (want two to four)"


PREDICTS = {"01", "02", "03", "04", "05", "06", "07", "08", "09", "10", "11", "12", "13", "14"}


@pytest.mark.parametrize(
    "path", [p for p in ALL if p.name[:2] in PREDICTS], ids=lambda p: p.name[:2]
)
def test_a_prediction_is_committed_before_the_lesson_reveals_it(path):
    # issue 20: at least one prediction the student commits before the widget or table shows it
    nb = nbformat.read(path, as_version=4)
    text = [c.source for c in nb.cells]
    asks = [i for i, t in enumerate(text) if re.search(r"(?i)predict", t) and "###" in t]
    assert asks, f"{path.name}: no prediction exercise"


@pytest.mark.parametrize("path", ALL, ids=lambda p: p.name[:2])
def test_outputs_stripped_except_checked(path):
    for i, cell in enumerate(_cells(path, "code")):
        if "nbval-check-output" in _tags(cell):
            assert cell.outputs, f"{path.name} code cell {i} is checked but has no stored output"
        else:
            assert not cell.outputs, f"{path.name} code cell {i}: strip its outputs"
        assert not {"nbval-check-output", "nbval-ignore-output"} <= _tags(cell)


@pytest.mark.parametrize("path", ALL, ids=lambda p: p.name[:2])
def test_no_saved_widget_state(path):
    # Saved widget state embeds the offline chart JavaScript (~1 MB per notebook) and stale
    # values; lessons rebuild their widgets when run.
    nb = nbformat.read(path, as_version=4)
    assert "widgets" not in nb.metadata, f"{path.name}: strip metadata.widgets before committing"
    assert path.stat().st_size < 200_000, f"{path.name}: {path.stat().st_size} bytes"
