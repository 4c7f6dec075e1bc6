"""Fidelity: the workbench's predictions against published, measured results.

``data/published.yaml`` holds the corpus (GEMM rates, attention kernels, LLM decode and prefill,
serving throughput, CNN throughput, training MFU), each row with its exact source and how the
workbench reproduces it. :func:`run_corpus` maps every row and reports predicted vs measured, the
error, the bottleneck class and the roofline floor check; ``workbench validate --published`` is
the command line face.

>>> from workbench.fidelity import load_corpus
>>> len(load_corpus().rows) >= 20
True
"""

from workbench.fidelity.reproduce import Reproduction, fit_step_overhead, reproduce
from workbench.fidelity.runner import SPLITS, CorpusReport, RowResult, run_corpus
from workbench.fidelity.schema import (
    CATEGORIES,
    Corpus,
    CorpusError,
    PublishedRow,
    load_corpus,
    parse_corpus,
)

__all__ = [
    "CATEGORIES",
    "SPLITS",
    "Corpus",
    "CorpusError",
    "CorpusReport",
    "PublishedRow",
    "Reproduction",
    "RowResult",
    "fit_step_overhead",
    "load_corpus",
    "parse_corpus",
    "reproduce",
    "run_corpus",
]
