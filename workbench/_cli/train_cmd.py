"""``workbench train``: one optimizer step of training, as a mapping sheet with MFU and HFU.

The model is a preset, the chip a hardware profile, the job a training recipe
(``workbench/platform/recipes/*.yaml`` or a YAML file), the software a stack (its attention
class, launch, fusion rules and the compute slowdown under overlapped collectives).
"""

from __future__ import annotations

import argparse
from typing import Any

from workbench._cli.argtypes import count
from workbench._cli.argtypes import name as name_arg
from workbench._cli.commands import add_command
from workbench._cli.common import write_output
from workbench.errors import WorkbenchError
from workbench.hw import load_hardware
from workbench.hw.stack import load_stack, training_figures
from workbench.models import PRESETS
from workbench.options import MapOptions
from workbench.platform.recipe import DEFAULT_TRAINING_STACK, list_recipes, load_recipe
from workbench.platform.training import training_step, training_utilisation
from workbench.report.training_sheet import training_sheet_json, training_sheet_text

__all__ = ["register", "run"]


def register(subs: Any) -> None:
    """Add the ``train`` subcommand."""
    p = add_command(subs, "train", run)
    p.add_argument("--model", type=name_arg, default="llama3-8b", help="preset name")
    p.add_argument("--hardware", type=name_arg, default="h100-sxm", help="hardware profile")
    p.add_argument(
        "--recipe",
        type=name_arg,
        default="fsdp-selective",
        help=f"training recipe name ({', '.join(list_recipes())}) or YAML file",
    )
    p.add_argument(
        "--stack",
        type=name_arg,
        default=None,
        help=f"stack (default: the recipe's, else {DEFAULT_TRAINING_STACK})",
    )
    p.add_argument("--seq", type=count(1, 1 << 22), default=4096, help="sequence length, tokens")
    p.add_argument("--dtype", default="bf16", help="activation format (default bf16)")
    p.add_argument("--format", choices=("table", "json"), default="table")
    p.add_argument("--output", metavar="FILE", help="write to FILE instead of stdout")


def _stack_name(given: str | None, recipe_stack: str | None) -> tuple[str, str]:
    """The stack a step is priced under and where that choice came from.

    ``--stack`` wins; else the stack the recipe's source ran; else the training default (eager
    PyTorch with its fitted step efficiency), never the serving default, which states no
    training figure.
    """
    if given is not None:
        return given, "--stack"
    if recipe_stack is not None:
        return recipe_stack, "the recipe's"
    return DEFAULT_TRAINING_STACK, "the training default"


def run(args: argparse.Namespace) -> int:
    """Handle ``workbench train``."""
    cfg = PRESETS.get(args.model)
    if cfg is None:
        raise WorkbenchError(f"--model {args.model!r} is not a preset")
    hw = load_hardware(args.hardware)
    recipe = load_recipe(args.recipe)
    name, origin = _stack_name(args.stack, recipe.stack)
    stack = load_stack(name)
    slow, eff = training_figures(stack)
    plan = recipe.plan(overlap_slowdown=slow, compute_efficiency=eff)
    options = stack.map_options(MapOptions())
    try:
        step = training_step(cfg, hw, plan, seq=args.seq, dtype=args.dtype, options=options)
    except WorkbenchError as exc:  # NOTE: a plan the model cannot take: name the recipe
        raise WorkbenchError(f"recipe {args.recipe}: {exc}") from None
    util = training_utilisation(cfg, hw, plan, step, seq=args.seq, dtype=args.dtype)
    title = (
        f"training step: {cfg.name} on {hw.name} x {plan.chips} chips, recipe {recipe.name}, "
        f"stack {stack.name} ({origin}), seq {args.seq}, {args.dtype}"
        + (" (FP8 GEMMs, Transformer Engine convention)" if plan.fp8 else "")
    )
    if args.format == "json":
        meta = {"model": cfg.name, "hardware": hw.name, "recipe": recipe.name,
                "stack": stack.name, "stack_from": origin, "seq": args.seq,
                "dtype": args.dtype}  # fmt: skip
        text = training_sheet_json(step, util, meta)
    else:
        text = training_sheet_text(step, util, title)
    write_output(text, args.output)
    return 0
