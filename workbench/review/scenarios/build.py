"""Practice scenarios: a baseline and a candidate run with one injected regression each.

Every scenario is built from :class:`~workbench.options.MapOptions` overrides on a preset model,
so it is reproducible and the comparator (the baseline) is stable. ``expected_mechanism`` and
``expected_owner`` are what triage must find; the README written next to the records describes
the injected change, never the answer.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from workbench._files import write_text_safely
from workbench.errors import WorkbenchError
from workbench.hw.loader import load_hardware
from workbench.hw.stack import load_stack
from workbench.mapper import ModelMapping, map_model
from workbench.models import build_graph
from workbench.options import MapOptions, TileOverride
from workbench.review.records.store import RunRecord, record_from_mapping, save_record

__all__ = [
    "SCENARIOS",
    "Scenario",
    "build_scenario",
    "get_scenario",
    "scenario_mappings",
    "write_scenario",
]


@dataclass(frozen=True, slots=True, kw_only=True)
class Scenario:
    """One injected regression.

    Attributes:
        name: Short name (CLI argument).
        title: One line.
        story: What changed, as the release notes would say it (not the answer).
        model, phase, batch, seq, context, hardware: The workload slice and profile.
        baseline: Options of the baseline run.
        candidate: Options of the candidate run.
        changed: The tag group the change belongs to (pass as ``--changed``).
        expected_mechanism: The mechanism class triage must name.
        expected_owner: The owner role triage must name (default ownership table).
    """

    name: str
    title: str
    story: str
    model: str
    phase: str
    batch: int
    seq: int
    context: int | None
    hardware: str
    baseline: MapOptions
    candidate: MapOptions
    changed: str
    expected_mechanism: str
    expected_owner: str


_COMPILER = "ML compiler engineer"
_RUNTIME = "runtime systems engineer"
_LONG_SEQ = 1024
#: The default stack's host time per eager launch (Inductor's launcher): what the serving stack
#: pays once it launches kernels one by one, and what ``workbench run --launch eager`` records.
_EAGER_HOST_S = load_stack().map_options().launch_host_s


def _seq_tile(seq: int) -> TileOverride:
    """The injected heuristic: attention tiles of seq/2 x seq/2 (fits at 512, spills at 1024)."""
    return TileOverride(pattern="*.attn.sdpa", m=seq // 2, n=seq // 2, k=64)


SCENARIOS: dict[str, Scenario] = {
    s.name: s
    for s in (
        Scenario(
            name="epilogue-fusion",
            title="Compiler upgrade: GPT-2 prefill got slower",
            story="A compiler release reworked the GEMM epilogue pass; the candidate maps with "
            "the new compiler (gemm_epilogue rule disabled), everything else is unchanged.",
            model="gpt2",
            phase="prefill",
            batch=1,
            seq=512,
            context=None,
            hardware="h100-sxm",
            baseline=MapOptions(),
            candidate=MapOptions(disabled_fusion=("gemm_epilogue",)),
            changed="compiler",
            expected_mechanism="fusion_broken",
            expected_owner=_COMPILER,
        ),
        Scenario(
            name="long-seq-tile",
            title="New attention tile heuristic: long prompts regress",
            story=f"A new heuristic sizes attention tiles from the sequence length (seq/2 x "
            f"seq/2); it was validated at 512 tokens. The candidate runs at {_LONG_SEQ} tokens.",
            model="gpt2",
            phase="prefill",
            batch=1,
            seq=_LONG_SEQ,
            context=None,
            hardware="h100-sxm",
            baseline=MapOptions(),
            candidate=MapOptions(tiles=(_seq_tile(_LONG_SEQ),)),
            changed="compiler",
            expected_mechanism="tile_spills_sram",
            expected_owner=_COMPILER,
        ),
        Scenario(
            name="barrier-per-layer",
            title="Runtime change: decode latency up",
            story="A runtime build turned on a debugging option (a device-wide barrier after "
            "every layer); the candidate decodes with that build.",
            model="gpt2",
            phase="decode",
            batch=1,
            seq=512,
            context=512,
            hardware="h100-sxm",
            baseline=MapOptions(),
            candidate=MapOptions(barrier_per_layer=True),
            changed="runtime",
            expected_mechanism="launch_sync_overhead",
            expected_owner=_RUNTIME,
        ),
        Scenario(
            name="attention-fp32",
            title="Quantization plan edit: attention accuracy fix",
            story="To fix an accuracy report, the quantization plan now pins *.attn.sdpa to "
            "fp32; the rest of the model stays bf16.",
            model="gpt2",
            phase="prefill",
            batch=1,
            seq=1024,
            context=None,
            hardware="h100-sxm",
            baseline=MapOptions(),
            candidate=MapOptions(dtype_overrides=(("*.attn.sdpa", "fp32"),)),
            changed="compiler",
            expected_mechanism="precision_fallback",
            expected_owner=_COMPILER,
        ),
        Scenario(
            name="conv-layout",
            title="ResNet-50 after a layout-pass refactor",
            story="The layout pass was refactored: it no longer propagates the matrix engine's "
            "layout between convolutions (layout propagation off, layout_fold rule disabled).",
            model="resnet50",
            phase="inference",
            batch=1,
            seq=0,
            context=None,
            hardware="h100-sxm",
            baseline=MapOptions(),
            candidate=MapOptions(layout_propagation=False, disabled_fusion=("layout_fold",)),
            changed="compiler",
            expected_mechanism="layout_transform_inserted",
            expected_owner=_COMPILER,
        ),
        Scenario(
            name="eager-launch",
            title="Serving stack update: small-batch decode slower",
            story="The serving stack update dropped CUDA-graph capture for decode: kernels are "
            "launched one by one from the host (launch mode eager).",
            model="gpt2",
            phase="decode",
            batch=1,
            seq=512,
            context=512,
            hardware="h100-sxm",
            baseline=MapOptions(),
            candidate=MapOptions(launch="eager", launch_host_s=_EAGER_HOST_S),
            changed="runtime",
            expected_mechanism="launch_sync_overhead",
            expected_owner=_RUNTIME,
        ),
        Scenario(
            name="unchanged",
            title="Control: a rebuild with no change",
            story="The candidate is a rebuild of the baseline with identical settings.",
            model="gpt2",
            phase="prefill",
            batch=1,
            seq=512,
            context=None,
            hardware="h100-sxm",
            baseline=MapOptions(),
            candidate=MapOptions(),
            changed="compiler",
            expected_mechanism="",
            expected_owner="",
        ),
    )
}


def get_scenario(name: str) -> Scenario:
    """The scenario called ``name``."""
    try:
        return SCENARIOS[name]
    except KeyError:
        raise WorkbenchError(
            f"scenario {name!r}: unknown (known: {', '.join(SCENARIOS)})"
        ) from None


def scenario_mappings(name: str) -> tuple[ModelMapping, ModelMapping]:
    """Map the scenario's baseline and candidate; returns the two mappings."""
    s = get_scenario(name)
    hw = load_hardware(s.hardware)
    if s.phase == "inference":
        graph = build_graph(s.model, batch=s.batch)
    else:
        graph = build_graph(s.model, s.phase, batch=s.batch, seq=s.seq, context=s.context)
    return map_model(graph, hw, s.baseline), map_model(graph, hw, s.candidate)


def build_scenario(name: str) -> tuple[RunRecord, RunRecord]:
    """Map the scenario's baseline and candidate; returns their run records."""
    base, cand = scenario_mappings(name)
    return record_from_mapping(base), record_from_mapping(cand)


def readme_text(s: Scenario) -> str:
    """The README of a scenario folder: the injected change and how to triage it."""
    return (
        f"# Scenario {s.name}: {s.title}\n\n{s.story}\n\n"
        f"- workload: {s.model} {s.phase}, batch {s.batch}"
        + (f", context {s.context}" if s.context else f", seq {s.seq}" if s.seq else "")
        + f" on {s.hardware}\n- the change belongs to the **{s.changed}** tag group\n\n"
        "Find the first failing execution mechanism and its owner:\n\n"
        f"    workbench triage baseline.json candidate.json --changed {s.changed}\n"
    )


def write_scenario(name: str, out: str | Path) -> tuple[Path, Path, Path]:
    """Write ``baseline.json``, ``candidate.json`` and ``README.md`` into folder ``out``.

    Returns:
        The three paths.
    """
    s = get_scenario(name)
    folder = Path(out)
    if folder.exists() and not folder.is_dir():
        raise WorkbenchError(f"--out {folder}: exists and is not a folder")
    folder.mkdir(parents=True, exist_ok=True)
    base, cand = build_scenario(name)
    paths = (folder / "baseline.json", folder / "candidate.json", folder / "README.md")
    save_record(base, paths[0])
    save_record(cand, paths[1])
    write_text_safely(paths[2], readme_text(s), what="--out")
    return paths
