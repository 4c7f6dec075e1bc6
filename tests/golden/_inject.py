"""Inject a regression into a real Kineto trace: one kernel family slower, later events shifted.

Each GPU kernel whose category is ``family`` runs ``factor`` times as long. The category is the
one the trace reader gives it (:func:`workbench.evidence.categories.classify` with the kernel's
launch shape: a kernel no name rule matches whose 1-D grid of 1-D blocks uses no shared memory
is ``elementwise``), so the regression injected is the one the reader measures. (Until issue
26's golden round the injector classified by name alone: on HTA's 16-rank A100 trace 45 of its
76 ms of elementwise kernel time are classified by shape, so "elementwise x1.3" stretched only
40% of the family, +1.6 ms per step instead of +3.9 ms.)

Timeline rule. Every event that starts after a stretched kernel ends (on any stream, CPU or GPU)
moves later by the extra time of all stretched kernels that ended before it. A host range (a
``ProfilerStep`` annotation, an operator, a runtime call such as ``cudaStreamSynchronize``)
moves its start by that rule and its end likewise: its end moves later by the extra time of all
stretched kernels that ended before its original end. A real slower run behaves so: the host
blocks on the GPU (at a synchronising call, at the latest at the step's end), so the step
annotation stretches to cover the shifted work, and every kernel the step launched stays
inside it. A GPU activity keeps its own start rule and duration (only the family's kernels
lengthen). (Until issue 26's last round only starts moved: a host step then ended before its
own last launches on a trace whose host waits for the GPU, and their kernels fell out of it.)

``jitter`` (a relative standard deviation) instead perturbs every kernel's duration by seeded
zero-mean noise: a control that must ship.
"""

from __future__ import annotations

import bisect
import gzip
import json
import random
from pathlib import Path

from workbench.evidence.categories import classify

_GPU = ("kernel", "gpu_memcpy", "gpu_memset", "Kernel", "Memcpy", "Memset")


def _kernels(events: list[dict], activities: tuple[str, ...] = ("kernel",)) -> list[dict]:
    return [e for e in events if e.get("ph") == "X" and e.get("cat") in activities]


def _dim3(value: object) -> tuple[int, int, int] | None:
    """A launch dimension ``[x, y, z]`` as the reader takes it, else None."""
    if isinstance(value, list) and len(value) == 3 and all(isinstance(v, int) for v in value):
        return (value[0], value[1], value[2])
    return None


def _family(event: dict) -> str:
    """The kernel category the trace reader gives an activity (a memcpy or memset is a copy)."""
    if event.get("cat") in ("gpu_memcpy", "gpu_memset"):
        return "copy"
    args = event.get("args") or {}
    smem = args.get("shared memory")
    return classify(
        event.get("name", ""),
        grid=_dim3(args.get("grid")),
        block=_dim3(args.get("block")),
        shared_memory_bytes=smem if isinstance(smem, int) else None,
    )[0]


def inject(
    src: Path,
    dst: Path,
    *,
    family: str = "",
    factor: float = 1.0,
    jitter: float = 0.0,
    seed: int = 0,
    activities: tuple[str, ...] = ("kernel",),
) -> Path:
    """Write ``src`` with the regression injected to ``dst`` (gzip when it ends in ``.gz``).

    ``activities``: the Kineto categories stretched (``gpu_memcpy`` and ``gpu_memset`` too for a
    copy regression whose copies are memcpy activities).
    """
    opener = gzip.open if src.suffix == ".gz" else open
    with opener(src, "rt", encoding="utf-8") as f:
        doc = json.load(f)
    events = doc["traceEvents"] if isinstance(doc, dict) else doc
    rng = random.Random(seed)
    ends, extra = [], []
    for k in sorted(_kernels(events, activities), key=lambda e: float(e["ts"])):
        dur = float(k["dur"])
        if jitter:
            k["dur"] = max(dur * (1 + rng.gauss(0, jitter)), 0.0)
        elif _family(k) == family:
            k["dur"] = dur * factor
            ends.append(float(k["ts"]) + dur)
            extra.append(dur * (factor - 1))
    if ends:
        cum = [0.0]
        for x in extra:
            cum.append(cum[-1] + x)
        for e in events:
            if "ts" in e:
                ts = float(e["ts"])
                e["ts"] = ts + cum[bisect.bisect_right(ends, ts)]
                # NOTE: a host range (a ProfilerStep, an op) ends later by what ended before its
                # end: its end is a later event too. A GPU activity keeps its own duration.
                if "dur" in e and e.get("cat") not in _GPU:
                    end = ts + float(e["dur"])
                    e["dur"] = end + cum[bisect.bisect_right(ends, end)] - e["ts"]
    out = gzip.open if dst.suffix == ".gz" else open
    with out(dst, "wt", encoding="utf-8") as f:
        json.dump(doc, f)
    return dst
