"""Wall time of `workbench triage` and `workbench review` as a user runs them (goal: < 3 s, < 8 s).

    python benchmarks/bench_review.py [--repeats N]

Each command is a fresh process (interpreter start-up and imports included, as a user pays them)
on the `epilogue-fusion` practice scenario and on a compound change (fusion off + an fp32
down_proj) recorded with `workbench run`. Prints the median and the range over the repeats, and
a bare `python -c pass` start-up in the same run as the baseline.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

GOALS_S = {"triage": 3.0, "review": 8.0}


def _timed(cmd: list[str]) -> float:
    t0 = time.perf_counter()
    subprocess.run(cmd, check=False, capture_output=True)
    return time.perf_counter() - t0


def _wb(*args: str) -> list[str]:
    return [sys.executable, "-m", "workbench", *args]


def _spread(xs: list[float]) -> str:
    return f"median {statistics.median(xs):.2f} s (range {min(xs):.2f}-{max(xs):.2f} s)"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        subprocess.run(_wb("scenario", "epilogue-fusion", "--out", str(d / "s")), check=True,
                       capture_output=True)  # fmt: skip
        subprocess.run(_wb("run", "--record", str(d / "b.json")), check=True, capture_output=True)
        subprocess.run(_wb("run", "--no-fusion", "gemm_epilogue", "--kernel-dtype",
                           "*down_proj*=fp32", "--record", str(d / "c.json")),
                       check=True, capture_output=True)  # fmt: skip
        pairs = {
            "epilogue-fusion": (d / "s" / "baseline.json", d / "s" / "candidate.json"),
            "compound": (d / "b.json", d / "c.json"),
        }
        start = [_timed([sys.executable, "-c", "pass"]) for _ in range(args.repeats)]
        print(f"python start-up (baseline): {_spread(start)}")
        for name, (b, c) in pairs.items():
            tri = [_timed(_wb("triage", str(b), str(c), "--changed", "compiler"))
                   for _ in range(args.repeats)]  # fmt: skip
            rev = [_timed(_wb("review", str(b), str(c), "--changed", "compiler",
                              "--out", str(d / f"{name}.html")))
                   for _ in range(args.repeats)]  # fmt: skip
            if not (d / f"{name}.html").exists():
                raise SystemExit(f"review {name}: no pack written (the command failed)")
            for what, xs in (("triage", tri), ("review", rev)):
                ok = "met" if statistics.median(xs) < GOALS_S[what] else "NOT met"
                print(f"{what} {name}: {_spread(xs)}; goal < {GOALS_S[what]:g} s: {ok}")


if __name__ == "__main__":
    main()
