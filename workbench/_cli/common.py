"""Arguments shared by the commands that map a model (map, run, review, compare ...)."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

from workbench._files import write_text_safely
from workbench.errors import WorkbenchError
from workbench.hw.loader import load_hardware
from workbench.hw.schema import Hardware
from workbench.ir.graph import Graph
from workbench.options import FUSION_RULES, MapOptions, TileOverride

__all__ = [
    "add_model_args",
    "add_options_args",
    "graph_from_args",
    "hardware_from_args",
    "options_from_args",
    "write_output",
]

DEFAULT_MODEL = "llama2-7b"
DEFAULT_HARDWARE = "h100-sxm"


def add_model_args(p: argparse.ArgumentParser) -> None:
    """Add --model/--hf-config/--onnx, --hardware and the workload slice flags."""
    src = p.add_mutually_exclusive_group()
    src.add_argument("--model", help=f"preset name (default {DEFAULT_MODEL})")
    src.add_argument("--hf-config", metavar="FILE", help="Hugging Face config.json")
    src.add_argument("--onnx", metavar="FILE", help="ONNX model file")
    p.add_argument(
        "--hardware",
        default=DEFAULT_HARDWARE,
        help=f"hardware profile name or YAML file (default {DEFAULT_HARDWARE})",
    )
    p.add_argument(
        "--hardware-path",
        action="append",
        default=[],
        metavar="DIR",
        help="extra folder of hardware YAML files (repeatable)",
    )
    p.add_argument("--phase", choices=("prefill", "decode"), default="prefill")
    p.add_argument("--batch", type=int, default=1, help="batch size (default 1)")
    p.add_argument("--seq", type=int, default=2048, help="prompt length, tokens (default 2048)")
    p.add_argument(
        "--context", type=int, default=None, help="cached tokens for decode (default: --seq)"
    )
    p.add_argument(
        "--chips", type=int, default=1, help="tensor-parallel chips for decoder presets (default 1)"
    )


def add_options_args(p: argparse.ArgumentParser) -> None:
    """Add the mapping overrides (--dtype, --no-fusion, --layout, --launch, --tile ...)."""
    p.add_argument("--dtype", default=None, help="format for every kernel (default bf16)")
    p.add_argument("--weight-dtype", default=None, help="weight-only format: int4, int8, fp8")
    p.add_argument(
        "--kernel-dtype",
        action="append",
        default=[],
        metavar="GLOB=DTYPE",
        help="force the format of matching kernels (repeatable)",
    )
    p.add_argument(
        "--no-fusion",
        action="append",
        default=[],
        metavar="RULE",
        help="disable a fusion rule (repeatable; see --list-fusion-rules)",
    )
    p.add_argument("--layout", choices=("auto", "NCHW", "NHWC"), default="auto")
    p.add_argument(
        "--no-layout-propagation",
        action="store_true",
        help="convert layouts around every conv instead of once",
    )
    p.add_argument("--launch", choices=("eager", "graph"), default="graph")
    p.add_argument(
        "--tile",
        action="append",
        default=[],
        metavar="KERNEL=MxNxK",
        help="force a tile for kernels matching a glob (repeatable)",
    )
    p.add_argument("--search", choices=("full", "heuristic"), default="full")
    p.add_argument(
        "--barrier-per-layer",
        action="store_true",
        help="add a device-wide barrier after every layer",
    )


def _positive(name: str, value: int | None) -> None:
    if value is not None and value <= 0:
        raise WorkbenchError(f"--{name} must be a positive integer, got {value}")


def graph_from_args(args: argparse.Namespace) -> Graph:
    """Build the graph the arguments describe (preset, config.json or ONNX)."""
    for name in ("batch", "seq", "context", "chips"):
        _positive(name, getattr(args, name, None))
    dtype = args.dtype or "bf16"
    if getattr(args, "hf_config", None):
        from workbench.models import from_hf_config

        return from_hf_config(
            args.hf_config,
            phase=args.phase,
            batch=args.batch,
            seq=args.seq,
            context=args.context,
            dtype=dtype,
            tensor_parallel=args.chips,
        )
    if getattr(args, "onnx", None):
        from workbench.models import from_onnx

        path = Path(args.onnx)
        if not path.is_file():
            raise WorkbenchError(f"--onnx {args.onnx}: no such file")
        return from_onnx(path, batch=args.batch)  # type: ignore[return-value]
    from workbench.models import build_graph

    return build_graph(
        args.model or DEFAULT_MODEL,
        phase=args.phase,
        batch=args.batch,
        seq=args.seq,
        context=args.context,
        dtype=dtype,
        tensor_parallel=args.chips,
    )


def hardware_from_args(args: argparse.Namespace) -> Hardware:
    """Load the hardware profile the arguments name."""
    dirs = [Path(d) for d in getattr(args, "hardware_path", [])]
    return load_hardware(args.hardware, search_path=dirs or None)


def options_from_args(args: argparse.Namespace) -> MapOptions:
    """Build :class:`MapOptions` from the override flags."""
    overrides = []
    for text in args.kernel_dtype:
        glob, sep, dt = text.partition("=")
        if not sep or not glob or not dt:
            raise WorkbenchError(f"--kernel-dtype {text!r}: expected GLOB=DTYPE")
        overrides.append((glob, dt))
    return MapOptions(
        dtype=args.dtype,
        weight_dtype=args.weight_dtype,
        dtype_overrides=tuple(overrides),
        disabled_fusion=tuple(args.no_fusion),
        layout=args.layout,
        layout_propagation=not args.no_layout_propagation,
        launch=args.launch,
        tiles=tuple(TileOverride.parse(t) for t in args.tile),
        search=args.search,
        barrier_per_layer=args.barrier_per_layer,
        chips=getattr(args, "chips", 1),
    )


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
