"""The commands of the CLI: each one's help line and description, and how a command adds itself.

``workbench --help`` lists the help lines in the order of ``workbench.cli``'s registry and
``workbench COMMAND --help`` prints the description. The texts stand in one table so that the
command list reads as one page and every command registers through :func:`add_command`, the one
place a subcommand's parser is made.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

__all__ = ["COMMANDS", "CommandText", "add_command"]


@dataclass(frozen=True, slots=True)
class CommandText:
    """What ``--help`` says of one command.

    Attributes:
        help: The one line ``workbench --help`` lists.
        description: The paragraph ``workbench COMMAND --help`` opens with (None: the help line
            alone).
    """

    help: str
    description: str | None = None


#: Command name -> its help texts.
COMMANDS: dict[str, CommandText] = {
    "map": CommandText(
        "map a model onto hardware and print the mapping sheet",
        "Map a model (default: Llama-2-7B prefill, batch 1, seq 2048, bf16) onto a hardware "
        "profile (default: H100 SXM) and print the summary and mapping sheet.",
    ),
    "hardware": CommandText(
        "list and show accelerator profiles",
    ),
    "stacks": CommandText(
        "list the software stacks (stacks/*.yaml) and their figures",
        "One line per software stack: step and request overhead, attention class, GQA K/V "
        "sharing, CUDA graphs, host time per eager launch; each figure's origin (s: source, "
        "f: fitted, a: assumption).",
    ),
    "calibrate": CommandText(
        "measure this machine and write a hardware profile",
    ),
    "validate": CommandText(
        "predicted vs measured time of a kernel suite on this machine",
    ),
    "run": CommandText(
        "map a model and write a run record with locked tags (for triage)",
        "Map a model (same flags as `workbench map`) and write a run record: locked "
        "compiler/runtime/hardware/workload tags and per-kernel and per-model results. "
        "--execute also measures the first layer's GEMM kernels, scaled down, on this "
        "machine. --from-trace reads a measured run (Kineto/PyTorch profiler JSON or "
        ".json.gz, Nsight Systems SQLite export) instead; with --model/--hf-config/--onnx "
        "its kernels are matched to that model's mapping sheet on --hardware.",
    ),
    "trace": CommandText(
        "summarise a profiler trace, with an expected time for every measured kernel",
        "Read a Kineto (PyTorch profiler) or Nsight Systems trace: iterations, temporal "
        "breakdown, kernel time by category (and the share no rule classified), top kernels, "
        "memory copies by direction (bytes, bandwidth), and (when shapes were recorded) "
        "every kernel beside its expected time on the trace's GPU.",
    ),
    "triage": CommandText(
        "triage a regression between two run records",
        "Compare BASELINE and CANDIDATE run records: refuse mismatched tags, find the first "
        "failing execution mechanism and its owner, walk the debug branches, check the "
        "rollback guardrails and decide. Exit 0: ship (or ship behind a flag); 1: refused, "
        "cannot sign off or roll back; 2: bad input.",
    ),
    "scenario": CommandText(
        "practice regressions: list them, or write one (baseline.json, candidate.json)",
        "`workbench scenario list` shows the injected regressions; `workbench scenario NAME "
        "--out DIR` writes baseline.json, candidate.json and README.md.",
    ),
    "review": CommandText(
        "write a design-review pack (offline HTML + Markdown)",
        "With BASELINE and CANDIDATE (run records or profiler traces): the pack built around "
        "the regression between them. Without: map a model (same flags as `workbench map`), "
        "or re-map a run record with --record, and write the pack of one mapping. One "
        "standalone offline page plus a twin in the other format.",
    ),
    "sweep-latency": CommandText(
        "simulate serving at several loads: throughput against p50/p95/p99 latency",
        "Simulate one serving replica (step times from the mapper, runtime variance from the "
        "hardware profile) at several offered rates and report throughput, TTFT, TPOT and "
        "end-to-end latency percentiles, and the knee where p99 breaks the SLA.",
    ),
    "compare": CommandText(
        "compare platforms for a workload: fit, time, MFU, throughput at SLA, energy, risk",
        "Build the workload fit matrix (models x platforms) and print a shortlist.",
    ),
    "sweep": CommandText(
        "design-space sweep (hardware x model x batch x seq x dtype), resumable",
        "Map every point of the grid and append one JSON line per finished point to --out; a "
        "rerun skips the points already there. Runs on a local process pool, or on a Dask "
        "cluster with --scheduler.",
    ),
    "dataflow": CommandText(
        "Timeloop arch/problem/mapping files: model one mapping, or search",
    ),
    "train": CommandText(
        "cost one training step: forward, backward, optimizer and communication kernels",
        "Cost one optimizer step of training a preset under a training recipe on a hardware "
        "profile, and print every kernel of the busiest chip with its time, the step's parts "
        "and MFU / HFU with their counting convention.",
    ),
    "grade": CommandText(
        "grade students' lesson notebooks (exercises attempted, correct, hints used)",
        "Re-runs each notebook with an attempted exercise in a fresh kernel and records what "
        "its checks say (it executes the student's code: grade in a sandbox).",
    ),
    "lessons": CommandText(
        "copy the lessons into a working folder",
    ),
}


def add_command(
    subs: Any, name: str, func: Callable[[argparse.Namespace], int] | None = None
) -> argparse.ArgumentParser:
    """Add subcommand ``name`` with its texts from :data:`COMMANDS`; ``func`` handles it.

    Args:
        subs: The top-level parser's ``add_subparsers()`` action.
        name: A key of :data:`COMMANDS`.
        func: The handler, called with the parsed arguments and returning the exit status
            (None: the command sets its own, e.g. per action).

    Returns:
        The command's parser, for its own arguments.
    """
    text = COMMANDS[name]
    parser = subs.add_parser(name, help=text.help, description=text.description)
    if func is not None:
        parser.set_defaults(func=func)
    return parser
