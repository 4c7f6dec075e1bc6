"""Per micro-batch times of a group of kernels, and the kernels themselves, of a training step.

A :class:`Part` sums one group (a layer, the embedding, the LM head and its loss); its
:class:`StepKernel` rows keep every kernel by name so the mapping sheet can show them. A row's
``calls`` counts how often it runs per micro-batch until :func:`step_rows` turns the busiest
stage's rows into calls per optimizer step.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

__all__ = ["PHASES", "Part", "StepKernel", "kernel_part", "step_rows"]

#: Phases of a training step's kernels, in the order the sheet shows them.
PHASES = ("forward", "backward", "recompute", "optimizer", "communication")


@dataclass(frozen=True, slots=True, kw_only=True)
class StepKernel:
    """One kernel of a training step on the busiest chip.

    Attributes:
        name: The kernel (forward kernels by their op; ``.dgrad`` / ``.wgrad`` / ``.bwd`` for
            the backward; ``optimizer.*``; ``dp.*`` / ``tp.*`` / ``pp.*`` collectives).
        phase: One of :data:`PHASES` (``selective``: a forward kernel the selective policy
            re-runs, before :func:`step_rows` makes it a ``recompute`` row).
        calls: Times it runs per optimizer step (per micro-batch inside a :class:`Part`).
        time_s: Seconds per call, as mapped (communication: the full transfer, hidden or not).
        flops: Matrix FLOPs per call.
    """

    name: str
    phase: str
    calls: float
    time_s: float
    flops: float = 0.0

    @property
    def total_s(self) -> float:
        """Seconds over the step, ``calls x time_s``."""
        return self.calls * self.time_s


@dataclass(frozen=True, slots=True, kw_only=True)
class Part:
    """Per micro-batch times of a group of kernels (one layer, or the embedding or head)."""

    fwd_s: float = 0.0
    bwd_s: float = 0.0
    gemm_fwd_s: float = 0.0
    sel_s: float = 0.0  # forward kernels the selective policy re-runs
    coll_s: float = 0.0  # forward collectives (backward has as many)
    flops: float = 0.0  # forward matrix FLOPs
    sel_flops: float = 0.0  # matrix FLOPs the selective policy re-runs
    params: int = 0
    rows: tuple[StepKernel, ...] = ()

    def __add__(self, o: Part) -> Part:
        return Part(
            fwd_s=self.fwd_s + o.fwd_s,
            bwd_s=self.bwd_s + o.bwd_s,
            gemm_fwd_s=self.gemm_fwd_s + o.gemm_fwd_s,
            sel_s=self.sel_s + o.sel_s,
            coll_s=self.coll_s + o.coll_s,
            flops=self.flops + o.flops,
            sel_flops=self.sel_flops + o.sel_flops,
            params=self.params + o.params,
            rows=self.rows + o.rows,
        )

    def scaled(self, n: float) -> Part:
        """The group ``n`` times (``n`` layers on a stage)."""
        return Part(
            fwd_s=self.fwd_s * n,
            bwd_s=self.bwd_s * n,
            gemm_fwd_s=self.gemm_fwd_s * n,
            sel_s=self.sel_s * n,
            coll_s=self.coll_s * n,
            flops=self.flops * n,
            sel_flops=self.sel_flops * n,
            params=round(self.params * n),
            rows=tuple(replace(r, calls=r.calls * n) for r in self.rows),
        )

    def slowed(self, factor: float) -> Part:
        """The group with every compute kernel ``factor`` times longer (collectives as they are).

        How a stack's fitted training step efficiency ``e`` prices its kernels: ``factor = 1/e``
        (:mod:`workbench.platform.training`).
        """
        rows = tuple(
            r if r.phase == "communication" else replace(r, time_s=r.time_s * factor)
            for r in self.rows
        )
        return replace(self, fwd_s=self.fwd_s * factor, bwd_s=self.bwd_s * factor,
                       gemm_fwd_s=self.gemm_fwd_s * factor, sel_s=self.sel_s * factor,
                       rows=rows)  # fmt: skip


def kernel_part(name: str, t: float, *, flops: float = 0.0, bwd_s: float = 0.0,
                selective: bool = False, gemm: bool = False) -> Part:  # fmt: skip
    """The part of one forward kernel of ``t`` seconds, with its backward and recompute rows.

    Args:
        name: The kernel.
        t: Forward seconds per micro-batch.
        flops: Its matrix FLOPs.
        bwd_s: Its backward seconds (0: costed elsewhere, as the backward GEMMs are).
        selective: The selective recomputation policy re-runs it.
        gemm: It is matrix work (overlaps tensor-parallel collectives).
    """
    rows = [StepKernel(name=name, phase="forward", calls=1.0, time_s=t, flops=flops)]
    if bwd_s > 0:
        rows.append(StepKernel(name=f"{name}.bwd", phase="backward", calls=1.0, time_s=bwd_s))
    if selective:
        rows.append(StepKernel(name=name, phase="selective", calls=1.0, time_s=t, flops=flops))
    return Part(fwd_s=t, bwd_s=bwd_s, gemm_fwd_s=t if gemm else 0.0, sel_s=t if selective else 0.0,
                flops=flops, sel_flops=flops if selective else 0.0, rows=tuple(rows))  # fmt: skip


def step_rows(stage: Part, micro_batches: int, recompute: float) -> tuple[StepKernel, ...]:
    """The busiest stage's compute kernels per optimizer step.

    Forward and backward rows run once per micro-batch; every forward row is re-run a
    ``recompute`` fraction of the time, and the selective policy's rows the rest.
    """
    out: list[StepKernel] = []
    m = float(micro_batches)
    for r in stage.rows:
        if r.phase == "selective":
            if recompute < 1.0:
                out.append(replace(r, phase="recompute", calls=r.calls * m * (1.0 - recompute)))
            continue
        if r.phase == "communication":  # NOTE: forward, backward and the recomputed forward
            out.append(replace(r, calls=r.calls * m * (2.0 + recompute)))
            continue
        out.append(replace(r, calls=r.calls * m))
        if r.phase == "forward" and recompute > 0.0:
            out.append(replace(r, phase="recompute", calls=r.calls * m * recompute))
    return tuple(out)
