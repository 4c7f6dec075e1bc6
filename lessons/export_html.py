"""Export lessons to HTML pages that work offline (no CDN script, charts as static SVG figures).

``jupyter nbconvert --to html`` links require.js and MathJax from cdnjs; this runs nbconvert with
the package's ``offline`` template instead (see :func:`workbench.report.export.export_notebook`).
The same with nbconvert itself: ``jupyter nbconvert --to html --template offline
--TemplateExporter.extra_template_basedirs=DIR lesson.ipynb``, where DIR is
``workbench.report.export.TEMPLATES`` (``workbench/report/templates``).

Run: python lessons/export_html.py [--no-execute] [--out DIR] 01 12   (lesson numbers; none = all)
"""

import argparse
from pathlib import Path

from workbench.report.export import export_notebook

LESSONS = Path(__file__).resolve().parent


def main() -> None:
    """Execute and export the chosen lessons to ``--out`` (default ``build/lessons-html``)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("lessons", nargs="*", help="two-digit lesson numbers (none: all)")
    parser.add_argument("--out", type=Path, default=LESSONS.parent / "build" / "lessons-html")
    parser.add_argument("--no-execute", action="store_true", help="export the stored outputs")
    args = parser.parse_args()
    paths = sorted(LESSONS.glob("[0-9][0-9]-*.ipynb"))
    chosen = [p for p in paths if not args.lessons or p.name[:2] in args.lessons]
    for path in chosen:
        out = export_notebook(path, args.out / f"{path.stem}.html", execute=not args.no_execute)
        print(f"{path.name} -> {out}")


if __name__ == "__main__":
    main()
