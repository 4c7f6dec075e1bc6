"""Pin each published-corpus row's in-sample and cross-validated error (published_pins.json).

Run it after an intended change to the cost model or the corpus; the golden test
tests/golden/test_published_corpus.py fails when a prediction moves more than the pinned
tolerance from its pin (in sample, and predicted without its own publication by the
leave-one-source-out re-fit, workbench/fidelity/crossval.py), so a model change shows up as a
reviewed diff of tests/golden/published_pins.json, not as silent drift.

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

from workbench.fidelity.crossval import CrossValidation, cross_validate

PINS = Path(__file__).resolve().parents[1] / "tests" / "golden" / "published_pins.json"
#: Relative move of a prediction that fails the golden test.
TOLERANCE = 0.03


def current(cv: CrossValidation | None = None) -> dict[str, object]:
    """The pins document for the model and corpus as they are now (``cv``: already computed)."""
    cv = cv or cross_validate()
    loso = {r.id: r for r in cv.loso.rows}
    return {
        "schema_version": 2,
        "tolerance": TOLERANCE,
        "note": "predictions in each row's published unit; error = predicted / measured - 1, "
        "in sample and leave-one-source-out (loso_); rewrite: scripts/pin_published.py",
        "pins": {
            r.id: {
                "predicted": r.predicted,
                "error": r.error,
                "loso_predicted": loso[r.id].predicted,
                "loso_error": loso[r.id].error,
                "unit": r.unit,
            }
            for r in cv.in_sample.rows
        },
    }


def moves(doc: dict[str, object], old: dict[str, dict[str, float]]) -> list[str]:
    """Rows whose in-sample or cross-validated prediction moved more than the tolerance."""
    out = []
    for rid, pin in doc["pins"].items():  # type: ignore[attr-defined]
        for key in ("predicted", "loso_predicted"):
            was = old.get(rid, {}).get(key)
            if was is None or abs(pin[key] / was - 1) > TOLERANCE:
                out.append(f"{rid} {key}: {was} -> {pin[key]:.4g}")
    return out


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
        moved = moves(doc, json.loads(PINS.read_text(encoding="utf-8"))["pins"])
        print("\n".join(moved) or "all pins hold")
        return 1 if moved else 0
    write(doc, PINS)
    print(f"pinned {len(doc['pins'])} rows to {PINS}")  # type: ignore[arg-type]
    return 0


if __name__ == "__main__":
    sys.exit(main())
