"""Pin every published-corpus row's current prediction (tests/golden/published_pins.json).

Run it after an intended change to the cost model or the corpus; the golden test
tests/golden/test_published_corpus.py fails when a prediction moves more than the pinned
tolerance from its pin, so a model change shows up as a reviewed diff of this file, not as silent
drift.

    python scripts/pin_published.py            # rewrite the pins
    python scripts/pin_published.py --check    # exit 1 if any pin would change by > tolerance
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

from workbench.fidelity import run_corpus

PINS = Path(__file__).resolve().parents[1] / "tests" / "golden" / "published_pins.json"
#: Relative move of a prediction that fails the golden test.
TOLERANCE = 0.03


def current() -> dict[str, object]:
    """The pins document for the model and corpus as they are now."""
    report = run_corpus()
    return {
        "schema_version": 1,
        "tolerance": TOLERANCE,
        "note": "predictions in each row's published unit; rewrite: scripts/pin_published.py",
        "pins": {r.id: {"predicted": r.predicted, "unit": r.unit} for r in report.rows},
    }


def write(doc: dict[str, object], path: Path) -> None:
    """Write ``doc`` as JSON atomically (temporary file in the same folder, then rename)."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".pins-", suffix=".json")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(doc, f, indent=1, sort_keys=True)
            f.write("\n")
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def main(argv: list[str] | None = None) -> int:
    """Rewrite the pins (or, with --check, report which would move)."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="only report moves beyond tolerance")
    args = ap.parse_args(argv)
    doc = current()
    if args.check:
        old = json.loads(PINS.read_text(encoding="utf-8"))["pins"]
        moved = []
        for rid, pin in doc["pins"].items():  # type: ignore[attr-defined]
            was = old.get(rid, {}).get("predicted")
            if was is None or abs(pin["predicted"] / was - 1) > TOLERANCE:
                moved.append(f"{rid}: {was} -> {pin['predicted']:.4g}")
        print("\n".join(moved) or "all pins hold")
        return 1 if moved else 0
    write(doc, PINS)
    print(f"pinned {len(doc['pins'])} rows to {PINS}")  # type: ignore[arg-type]
    return 0


if __name__ == "__main__":
    sys.exit(main())
