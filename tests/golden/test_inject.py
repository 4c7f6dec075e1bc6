"""The golden injector makes the regression it names, as the trace reader measures it.

``_inject.py`` is the instrument of the measured and job goldens; two defects of it once read
as tool disagreements (issue 26): kernels classified by name alone (the reader also classifies
by launch shape, so an "elementwise" injection stretched part of the family), and host ranges
that kept their length (kernels fell out of their step). Each test reads the injected trace back
with the reader the goldens use.
"""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _inject import inject

from workbench.evidence import read_trace

RANK1 = Path(__file__).resolve().parents[1] / "data" / "hta_job" / "sampled_rank-1.json.gz"


def _sums(path: Path) -> dict[str, float]:
    out: dict[str, float] = {}
    for k in read_trace(path).kernels:
        out[k.category] = out.get(k.category, 0.0) + k.duration_s
    return out


@pytest.mark.parametrize(("family", "factor"), [("elementwise", 1.3), ("gemm", 1.5)])
def test_family_stretched_as_the_reader_classifies(family, factor, tmp_path) -> None:
    out = inject(RANK1, tmp_path / "x.json.gz", family=family, factor=factor)
    before, after = _sums(RANK1), _sums(out)
    assert after[family] == pytest.approx(before[family] * factor, rel=1e-9)
    for cat in set(before) - {family}:
        assert after[cat] == pytest.approx(before[cat], rel=1e-9), cat


def test_steps_keep_every_kernel_they_launched(tmp_path) -> None:
    out = inject(RANK1, tmp_path / "x.json.gz", family="gemm", factor=1.5)
    base, cand = read_trace(RANK1), read_trace(out)
    assert Counter(k.iteration for k in cand.kernels) == Counter(k.iteration for k in base.kernels)
    # NOTE: the step stretches by the extra GEMM time, as a slower GPU would stretch it
    extra = _sums(out)["gemm"] - _sums(RANK1)["gemm"]
    grown = sum(c.wall_s - b.wall_s for b, c in zip(base.iterations, cand.iterations, strict=True))
    assert 0 < grown <= extra * (1 + 1e-9)
