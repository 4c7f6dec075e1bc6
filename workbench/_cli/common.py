"""Arguments shared by the commands that map a model (map, run, review, compare ...)."""

from __future__ import annotations

import argparse
import fnmatch
import math
import re
import sys
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from workbench._cli.argtypes import count
from workbench._cli.argtypes import name as name_arg
from workbench._cli.commands import add_command
from workbench._files import write_text_safely
from workbench.errors import WorkbenchError
from workbench.hw.loader import load_hardware
from workbench.hw.schema import Hardware
from workbench.hw.stack import DEFAULT_STACK, decode_hardware, load_stack
from workbench.ir.graph import Graph
from workbench.mapper import ModelMapping, map_model
from workbench.models.config import MAX_SYSTEM_CHIPS, TransformerConfig, chips_problem
from workbench.models.footprint import (
    Footprint,
    check_graph_size,
    graph_footprint,
    position_refusal,
)
from workbench.options import FUSION_RULES, MapOptions, TileOverride

__all__ = [
    "add_mapping_command",
    "add_model_args",
    "add_options_args",
    "check_figures",
    "check_mapping",
    "flush_notes",
    "footprint_of",
    "graph_from_args",
    "hardware_from_args",
    "map_from_args",
    "note",
    "options_from_args",
    "stack_label",
    "write_output",
]

DEFAULT_MODEL = "llama2-7b"
DEFAULT_HARDWARE = "h100-sxm"
DEFAULT_SEQ = 2048
#: Largest --batch, --seq, --context and --chips accepted (far beyond any real workload; keeps
#: the size products of the cost model inside 64-bit arithmetic).
MAX_ARG = 2**31


def _add_repeatable(p: argparse.ArgumentParser, flag: str, metavar: str, help: str) -> None:
    """Add ``flag``: given any number of times, its values collected in a list (default [])."""
    p.add_argument(flag, action="append", default=[], metavar=metavar, help=help)


def _add_size(p: argparse.ArgumentParser, flag: str, default: int | None, help: str) -> None:
    """Add ``flag``, a workload size: a plain integer in 1..:data:`MAX_ARG`."""
    p.add_argument(flag, type=count(1, MAX_ARG), default=default, help=help)


def add_model_args(p: argparse.ArgumentParser) -> None:
    """Add --model/--hf-config/--onnx, --hardware and the workload slice flags."""
    src = p.add_mutually_exclusive_group()
    src.add_argument("--model", type=name_arg, help=f"preset name (default {DEFAULT_MODEL})")
    src.add_argument("--hf-config", type=name_arg, metavar="FILE", help="Hugging Face config.json")
    src.add_argument("--onnx", type=name_arg, metavar="FILE", help="ONNX model file")
    p.add_argument(
        "--hardware",
        type=name_arg,
        default=DEFAULT_HARDWARE,
        help=f"hardware profile name or YAML file (default {DEFAULT_HARDWARE})",
    )
    _add_repeatable(p, "--hardware-path", "DIR", "extra folder of hardware YAML files (repeatable)")
    p.add_argument("--phase", choices=("prefill", "decode"), default="prefill")
    _add_size(p, "--batch", None, "batch size (default 1; ONNX: sets symbolic dimensions only)")
    p.add_argument(
        "--override-batch",
        action="store_true",
        help="ONNX: replace a fixed leading input dimension with --batch too (reported)",
    )
    _add_size(
        p,
        "--seq",
        None,
        f"prompt length, tokens (default {DEFAULT_SEQ}, or the model's context if shorter)",
    )
    p.add_argument(
        "--allow-long-context",
        action="store_true",
        help="map a RoPE model past its trained context (refused otherwise)",
    )
    _add_size(p, "--context", None, "cached tokens for decode (default: --seq)")
    _add_size(
        p,
        "--chips",
        1,
        "tensor-parallel chips for decoder presets: 1 up to the model's attention heads "
        f"and the largest published system ({MAX_SYSTEM_CHIPS:,}); default 1",
    )


def add_options_args(p: argparse.ArgumentParser) -> None:
    """Add the mapping overrides (--dtype, --no-fusion, --layout, --launch, --tile ...)."""
    p.add_argument(
        "--dtype", type=name_arg, default=None, help="format for every kernel (default bf16)"
    )
    p.add_argument(
        "--weight-dtype", type=name_arg, default=None, help="weight-only format: int4, int8, fp8"
    )
    _add_repeatable(
        p, "--kernel-dtype", "GLOB=DTYPE", "force the format of matching kernels (repeatable)"
    )
    _add_repeatable(
        p, "--no-fusion", "RULE", "disable a fusion rule (repeatable; see --list-fusion-rules)"
    )
    p.add_argument("--layout", choices=("auto", "NCHW", "NHWC"), default="auto")
    p.add_argument(
        "--no-layout-propagation",
        action="store_true",
        help="convert layouts around every conv instead of once",
    )
    p.add_argument(
        "--stack",
        type=name_arg,
        default=None,
        metavar="NAME",
        help=f"software stack (stacks/NAME.yaml; default {DEFAULT_STACK}): its step overhead, "
        "attention class, GQA K/V sharing and launch mode",
    )
    p.add_argument(
        "--launch",
        choices=("eager", "graph"),
        default=None,
        help="kernel launches (default: the stack's; graph where it uses CUDA graphs)",
    )
    _add_repeatable(
        p, "--tile", "KERNEL=MxNxK", "force a tile for kernels matching a glob (repeatable)"
    )
    p.add_argument("--search", choices=("full", "heuristic"), default="full")
    p.add_argument(
        "--barrier-per-layer",
        action="store_true",
        help="add a device-wide barrier after every layer",
    )


def add_mapping_command(
    subs: argparse._SubParsersAction, name: str, func: Callable[[argparse.Namespace], int]
) -> argparse.ArgumentParser:
    """Add a command that maps a model: its texts, the model flags and the mapping overrides.

    Args:
        subs: The top-level parser's ``add_subparsers()`` action.
        name: The command, a key of :data:`workbench._cli.commands.COMMANDS`.
        func: Its handler (the parsed arguments -> exit status).

    Returns:
        The command's parser, for its own arguments.
    """
    p = add_command(subs, name, func)
    add_model_args(p)
    add_options_args(p)
    return p


def _positive(name: str, value: int | None) -> None:
    if value is not None and value <= 0:
        raise WorkbenchError(f"--{name} must be a positive integer, got {value}")
    if value is not None and value > MAX_ARG:
        raise WorkbenchError(f"--{name} {value} is above the supported {MAX_ARG:,}")


#: Notes of the running command, printed by the CLI once it succeeds (a failure shows only its
#: one error line).
NOTES: list[str] = []


def note(text: str) -> None:
    """Queue one ``workbench: note: ...`` line for stderr (a default the user did not choose)."""
    NOTES.append(" ".join(text.split()))


def flush_notes(show: bool = True) -> None:
    """Print (``show``) or drop the queued notes, one line each, and clear them."""
    if show:
        for text in NOTES:
            print(f"workbench: note: {text}", file=sys.stderr)
    NOTES.clear()


def _config_from_args(args: argparse.Namespace) -> TransformerConfig | None:
    """The transformer config the arguments name (None for ONNX, ResNet-50 and the MLP)."""
    if getattr(args, "hf_config", None):
        from workbench.models import config_from_hf

        return config_from_hf(args.hf_config)
    if getattr(args, "onnx", None):
        return None
    from workbench.models import PRESETS, list_models

    name = args.model or DEFAULT_MODEL
    if name not in list_models():
        raise WorkbenchError(f"--model: unknown model {name!r} (known: {', '.join(list_models())})")
    return PRESETS.get(name)


def seq_for(cfg: TransformerConfig, args: argparse.Namespace) -> tuple[int, int | None]:
    """``(seq, context)`` for ``cfg``: the default clamped to its context, and checked.

    Decode reads ``context`` (default ``seq``) cached tokens and adds one, so it needs
    ``context + 1`` positions. A learned-position model has no position past ``max_seq``; a
    RoPE model can run past it only with ``--allow-long-context``.
    """
    decode = cfg.causal and args.phase == "decode"
    seq, context = args.seq, args.context
    if seq is None:
        seq = DEFAULT_SEQ
        room = cfg.max_seq - 1 if decode and context is None else cfg.max_seq
        if seq > room:
            seq = room
            note(f"--seq defaults to {seq} for {cfg.name} (its context is {cfg.max_seq} tokens)")
    flag = "--context" if decode and context is not None else "--seq"
    # NOTE: the widgets apply the same rule (position_refusal); only the flag and the
    # --allow-long-context way out are the command line's own.
    why = position_refusal(cfg, phase=args.phase, seq=seq, context=context)
    if why:
        if cfg.position == "learned":
            raise WorkbenchError(f"{flag}: {why}")
        if not getattr(args, "allow_long_context", False):
            raise WorkbenchError(f"{flag}: {why} (pass --allow-long-context to map it anyway)")
        note(f"{cfg.name} mapped past its {cfg.max_seq}-token context (--allow-long-context)")
    return seq, context


def graph_from_args(args: argparse.Namespace) -> Graph:
    """Build the graph the arguments describe (preset, config.json or ONNX), size-checked."""
    for name in ("batch", "seq", "context", "chips"):
        _positive(name, getattr(args, name, None))
    dtype = args.dtype or "bf16"
    if getattr(args, "onnx", None):
        from workbench.models import from_onnx

        if getattr(args, "override_batch", False) and args.batch is None:
            raise WorkbenchError("--override-batch needs --batch N")
        graph = from_onnx(
            args.onnx, batch=args.batch, override_batch=getattr(args, "override_batch", False)
        )
        if not isinstance(graph, Graph):  # pragma: no cover - strict import returns a Graph
            raise WorkbenchError(f"--onnx {args.onnx}: import did not return a graph")
        batch_notes = graph.meta_dict().get("batch_notes")
        if batch_notes:
            note(f"--onnx {args.onnx}: {batch_notes}")
    else:
        cfg = _config_from_args(args)
        if cfg is None and (getattr(args, "chips", 1) or 1) > 1:
            raise WorkbenchError(
                f"--chips {args.chips}: tensor parallelism is modelled for transformer presets "
                f"and config.json models only, not {_source(args)}"
            )
        if cfg is None:
            from workbench.models import build_graph

            graph = build_graph(args.model, batch=args.batch or 1, dtype=dtype)
        else:
            from workbench.models.presets import graph_for_config

            seq, context = seq_for(cfg, args)
            _check_chips(cfg, getattr(args, "chips", 1) or 1)
            graph = graph_for_config(
                cfg, args.phase, args.batch or 1, seq, context, dtype, getattr(args, "chips", 1)
            )
    check_graph_size(graph, _source(args))
    return graph


def _check_chips(cfg: TransformerConfig, chips: int) -> None:
    """Refuse a tensor-parallel degree no real split uses; say how an uneven split pads.

    Megatron-style tensor parallelism splits attention by heads, so more chips than heads would
    leave chips without a head; beyond the largest published system nothing can be checked.
    """
    if chips <= 1:
        return
    problem = chips_problem(chips, cfg.name, cfg.heads)
    if problem:
        raise WorkbenchError(f"--chips {chips}: {problem}")
    from workbench.models._blocks import shard

    padding = shard(cfg, chips).padding
    if padding:
        note(
            f"--chips {chips} does not divide {cfg.name} evenly: padded {padding}; the padded "
            "rows are zeros that still cost time on the busiest chip"
        )


def _source(args: argparse.Namespace) -> str:
    if getattr(args, "onnx", None):
        return str(args.onnx)
    if getattr(args, "hf_config", None):
        return str(args.hf_config)
    return f"--model {args.model or DEFAULT_MODEL}"


def hardware_from_args(args: argparse.Namespace) -> Hardware:
    """Load the hardware profile the arguments name; refuse ``--chips`` it cannot link."""
    dirs = [Path(d) for d in getattr(args, "hardware_path", [])]
    hw = load_hardware(args.hardware, search_path=dirs or None)
    chips = getattr(args, "chips", 1) or 1
    if chips > 1 and not hw.interconnect.bandwidth_bytes_per_s > 0:
        raise WorkbenchError(
            f"--chips {chips}: {hw.name} has no chip-to-chip links (interconnect.links = "
            f"{hw.interconnect.links}); it runs on one chip only"
        )
    return hw


def map_from_args(args: argparse.Namespace) -> ModelMapping:
    """Map the model the arguments describe, with every check a result needs before printing.

    Loads the hardware (refusing ``--chips`` without links), builds the graph (sizes and context
    checked), maps it, refuses ``--tile``/``--kernel-dtype`` patterns that match no kernel, and
    checks the results for sanity (:func:`check_mapping`).
    """
    hw = hardware_from_args(args)
    options = options_from_args(args)
    graph = graph_from_args(args)
    if graph.meta_dict().get("phase") == "decode":
        hw = decode_hardware(load_stack(getattr(args, "stack", None)), hw)
    mapping = map_model(graph, hw, options)
    _check_patterns(options, mapping)
    check_mapping(mapping)
    return mapping


def _kernel_names_hint(mapping: ModelMapping) -> str:
    names = list(dict.fromkeys(layer_pattern(k.kernel.name) for k in mapping.kernels))
    shown = ", ".join(names[:8])
    return shown + (f" ... ({len(names)} patterns)" if len(names) > 8 else "")


def _check_patterns(options: MapOptions, mapping: ModelMapping) -> None:
    """Refuse a ``--tile`` or ``--kernel-dtype`` glob that matches no kernel of the mapping."""
    names = [k.kernel.name for k in mapping.kernels]
    flags = [("--tile", t.pattern) for t in options.tiles]
    flags += [("--kernel-dtype", g) for g, _ in options.dtype_overrides]
    for flag, glob in flags:
        if not any(fnmatch.fnmatchcase(n, glob) for n in names):
            raise WorkbenchError(
                f"{flag} {glob!r} matches no kernel; kernels are: {_kernel_names_hint(mapping)}"
            )


def check_figures(figures: dict[str, float], where: str) -> None:
    """Refuse to show a NaN, infinite or negative result figure.

    Args:
        figures: Name -> value of every figure about to be printed.
        where: What produced them (model on hardware), for the message.

    Raises:
        WorkbenchError: One line naming the figure; the result is not shown.
    """
    for name, value in figures.items():
        if not isinstance(value, int | float) or not math.isfinite(value) or value < 0:
            raise WorkbenchError(
                f"{where}: result check failed: {name} = {value!r} (must be finite and >= 0); "
                "not shown. The inputs are outside what the cost model handles"
            )


def check_mapping(mapping: ModelMapping) -> None:
    """Sanity of a mapping's results before any command prints them.

    Every total and every kernel's time is finite and non-negative, the step takes time, and
    HFU (padded work) is at least MFU (useful work).

    Raises:
        WorkbenchError: One line naming the figure that is wrong.
    """
    where = f"{mapping.graph.name} on {mapping.hardware.name}"
    check_figures(
        {
            "time_s": mapping.time_s,
            "mfu": mapping.mfu,
            "hfu": mapping.hfu,
            "tokens_per_s": mapping.tokens_per_s,
            "energy_j": mapping.energy_j,
            "power_w": mapping.power_w,
            "peak_flops": mapping.peak_flops,
        },
        where,
    )
    for k in mapping.kernels:
        c = k.cost
        check_figures(
            {"time_s": c.total_s, "compute_s": c.compute_s, "stall_s": c.stall_s},
            f"{where}: kernel {k.kernel.name}",
        )
    if not mapping.time_s > 0:
        raise WorkbenchError(f"{where}: result check failed: the step takes no time; not shown")
    if mapping.hfu < mapping.mfu * (1 - 1e-9):
        raise WorkbenchError(
            f"{where}: result check failed: HFU {mapping.hfu:.1%} < MFU {mapping.mfu:.1%} "
            "(padded work cannot be less than useful work); not shown"
        )


def footprint_of(mapping: ModelMapping) -> Footprint:
    """Memory one chip needs for the mapping's step against its capacity."""
    return graph_footprint(mapping.graph, mapping.hardware, mapping.options.weight_dtype)


def options_from_args(args: argparse.Namespace) -> MapOptions:
    """Build :class:`MapOptions` from the override flags and the ``--stack``'s figures.

    The stack (default :data:`~workbench.hw.stack.DEFAULT_STACK`) sets the step overhead, the
    attention class, GQA K/V sharing and the launch mode; ``--launch`` beats the stack's.
    """
    overrides = []
    for text in args.kernel_dtype:
        glob, sep, dt = text.partition("=")
        if not sep or not glob or not dt:
            raise WorkbenchError(f"--kernel-dtype {text!r}: expected GLOB=DTYPE")
        overrides.append((glob, dt))
    stack = load_stack(getattr(args, "stack", None))
    base = MapOptions(
        dtype=args.dtype,
        weight_dtype=args.weight_dtype,
        dtype_overrides=tuple(overrides),
        disabled_fusion=tuple(args.no_fusion),
        layout=args.layout,
        layout_propagation=not args.no_layout_propagation,
        tiles=tuple(TileOverride.parse(t) for t in args.tile),
        search=args.search,
        barrier_per_layer=args.barrier_per_layer,
        chips=getattr(args, "chips", 1),
    )
    options = stack.map_options(base)
    # NOTE: an explicit flag beats the stack, as every override beats a default
    return replace(options, launch=args.launch) if args.launch else options


def stack_label(args: argparse.Namespace) -> str:
    """``NAME`` or ``NAME (default)``: the stack the arguments map with."""
    name = getattr(args, "stack", None)
    return name if name else f"{DEFAULT_STACK} (default)"


def fusion_rules_text() -> str:
    """The fusion rules, one per line."""
    width = max(len(k) for k in FUSION_RULES)
    return "\n".join(f"{k:<{width}}  {v}" for k, v in FUSION_RULES.items()) + "\n"


def write_output(text: str, output: str | None) -> None:
    """Print ``text`` or write it to ``output`` safely (``workbench._files``)."""
    if not output:
        print(text, end="" if text.endswith("\n") else "\n")
        return
    write_text_safely(output, text, what="--output")


def layer_pattern(name: str) -> str:
    """Replace layer indices with ``*`` so identical layers group together."""
    return re.sub(r"\.(\d+)\.", ".*.", name)
