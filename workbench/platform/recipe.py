"""Training recipes as data: ``workbench/platform/recipes/*.yaml``, loaded strictly.

A recipe says how a training job is run, independent of the model and the chip: its parallel
degrees, micro- and global batch, activation recomputation (none, selective, full), the optimizer,
the precision recipe (bf16, or FP8 GEMMs in the Transformer Engine convention), what overlaps
and how data-parallel state is sharded. Like hardware profiles and software stacks it is plain
YAML read by :func:`workbench.hw._yaml.load_strict` (duplicate keys, anchors, base-60 numbers
refused) and validated by a Pydantic model with ``extra="forbid"``; a bad file is one line naming
the file and the field. :meth:`TrainingRecipe.plan` turns it into a
:class:`~workbench.platform.training.TrainingPlan`.

    >>> r = load_recipe("fsdp-selective")
    >>> r.plan().dp_sharding, r.plan().selective
    ('full', 'every_other_gemm')
"""

from __future__ import annotations

import functools
import re
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from workbench._files import read_text_bounded
from workbench.errors import WorkbenchError
from workbench.hw._yaml import StrictYamlError, load_strict
from workbench.hw.stack import list_stacks
from workbench.platform._training_plan import SELECTIVE_POLICIES, TrainingPlan

__all__ = [
    "DEFAULT_TRAINING_STACK",
    "RecipeError",
    "TrainingRecipe",
    "list_recipes",
    "load_recipe",
    "parse_recipe",
]

#: The stack a recipe that names none is run under: eager PyTorch, one kernel per operator, with
#: the training figures the published corpus fits (its step efficiency) and sources (the compute
#: slowdown under overlapped collectives). The serving default (``pytorch-compile``) states no
#: training figure, so a step priced under it runs every kernel as mapped: issue 27's 90% MFU
#: promised where 45% was measured.
DEFAULT_TRAINING_STACK = "pytorch-eager"

_MAX_BYTES = 64 * 1024
_NAME = re.compile(r"^[a-z0-9][a-z0-9._-]{0,63}$")


class RecipeError(WorkbenchError):
    """A recipe file that cannot be used: one line naming the file and the field."""


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", strict=True)


class Parallelism(_Model):
    """Parallel degrees and schedule (chips = tensor x pipeline x data)."""

    tensor: int = Field(default=1, ge=1, le=1024, description="Tensor-parallel chips t.")
    pipeline: int = Field(default=1, ge=1, le=4096, description="Pipeline stages p.")
    data: int = Field(default=1, ge=1, le=1_000_000, description="Data-parallel replicas d.")
    interleave: int = Field(default=1, ge=1, le=64, description="Model chunks per stage v.")
    sequence_parallel: bool = Field(
        default=False, description="Norms and dropout split over the tensor-parallel chips."
    )


class Overlap(_Model):
    """Which collectives run under compute."""

    tensor: bool = Field(default=False, description="TP collectives hidden under the GEMMs.")
    pipeline: bool = Field(default=False, description="Pipeline sends asynchronous.")
    data: bool = Field(default=False, description="DP reduction under the backward.")


class Optimizer(_Model):
    """The optimizer step (memory-bound: fp32 master weights and two moments)."""

    name: Literal["adamw"] = Field(default="adamw", description="Only AdamW is costed.")
    clip_grad_norm: bool = Field(default=True, description="Global-norm gradient clipping.")


class TrainingRecipe(_Model):
    """One training recipe file."""

    schema_version: Literal[1] = Field(description="File format version.")
    name: str = Field(description="The recipe's name, equal to its file stem.")
    description: str = Field(default="", description="What the recipe is, in a sentence.")
    parallelism: Parallelism = Field(default_factory=Parallelism, description="Degrees.")
    micro_batch: int = Field(ge=1, le=65536, description="Sequences per micro-batch per replica.")
    global_batch: int = Field(ge=1, le=10_000_000, description="Sequences per optimizer step.")
    recompute: Literal["none", "selective", "full"] = Field(
        default="none", description="Activation recomputation in the backward."
    )
    selective_policy: str = Field(
        default="every_other_gemm",
        description=f"What selective recomputation re-runs: one of {SELECTIVE_POLICIES[1:]}.",
    )
    optimizer: Optimizer = Field(default_factory=Optimizer, description="The optimizer step.")
    precision: Literal["bf16", "fp8"] = Field(
        default="bf16",
        description="bf16, or fp8: the transformer layers' GEMMs (forward, dgrad, wgrad) in FP8 "
        "with their cast kernels, attention and the LM head in bf16 (Transformer Engine).",
    )
    overlap: Overlap = Field(default_factory=Overlap, description="What overlaps compute.")
    dp_sharding: Literal["none", "optimizer", "full"] = Field(
        default="none", description="none (all-reduce), optimizer (ZeRO-1), full (FSDP)."
    )
    grad_dtype: Literal["fp32", "bf16", "fp16"] = Field(
        default="fp32", description="Format gradients are reduced in."
    )
    attention: Literal["fused", "unfused"] = Field(
        default="fused", description="Fused (FlashAttention-style) or scores materialised."
    )
    stack: str | None = Field(
        default=None,
        description="The software stack the recipe's source ran (a stacks/*.yaml name): its "
        "fusions, attention class, compute slowdown under overlapped collectives and step "
        f"efficiency price the step. None: {DEFAULT_TRAINING_STACK}.",
    )
    sources: tuple[str, ...] = Field(
        default=(), strict=False, description="Where the recipe's figures come from."
    )

    def plan(self, overlap_slowdown: float = 0.0, compute_efficiency: float = 1.0) -> TrainingPlan:
        """The :class:`TrainingPlan` this recipe runs (the two figures: the stack's)."""
        p = self.parallelism
        selective = self.selective_policy if self.recompute == "selective" else "none"
        return TrainingPlan(
            tensor_parallel=p.tensor,
            pipeline_parallel=p.pipeline,
            data_parallel=p.data,
            micro_batch=self.micro_batch,
            global_batch=self.global_batch,
            interleave=p.interleave,
            sequence_parallel=p.sequence_parallel,
            recompute=1.0 if self.recompute == "full" else 0.0,
            selective=selective,
            tp_overlap=self.overlap.tensor,
            pp_overlap=self.overlap.pipeline,
            dp_overlap=self.overlap.data,
            dp_sharding=self.dp_sharding,
            grad_dtype=self.grad_dtype,
            attention=self.attention,
            overlap_slowdown=overlap_slowdown,
            compute_efficiency=compute_efficiency,
            clip_grad_norm=self.optimizer.clip_grad_norm,
            fp8=self.precision == "fp8",
        )


def recipes_dir() -> Path:
    """The folder of shipped recipes."""
    return Path(__file__).with_name("recipes")


def list_recipes() -> list[str]:
    """Names of the shipped recipes, sorted.

    >>> "fsdp-selective" in list_recipes()
    True
    """
    return sorted(f.stem for f in recipes_dir().glob("*.yaml") if f.is_file())


def load_recipe(name: str) -> TrainingRecipe:
    """A shipped recipe by name, or a recipe YAML file by path.

    Raises:
        RecipeError: An unknown name or a bad file, in one line.
    """
    if _NAME.match(name) and name in list_recipes():
        return _load_file(recipes_dir() / f"{name}.yaml")
    path = Path(name)
    if path.suffix in (".yaml", ".yml") and path.is_file():
        return _load_file(path)
    known = ", ".join(list_recipes())
    raise RecipeError(f"recipe {name!r} is not a known recipe or a YAML file (known: {known})")


@functools.lru_cache(maxsize=32)
def _load_file(path: Path) -> TrainingRecipe:
    try:
        text = read_text_bounded(path, _MAX_BYTES, what="recipe file")
    except WorkbenchError as exc:
        raise RecipeError(str(exc)) from None
    return parse_recipe(text, str(path), expect=path.stem)


def _where(loc: tuple[int | str, ...]) -> str:
    return ".".join(str(p) for p in loc) or "(top level)"


def parse_recipe(text: str, where: str = "recipe", expect: str | None = None) -> TrainingRecipe:
    """Validate one recipe's YAML text.

    Args:
        text: The YAML document.
        where: Name used in error messages.
        expect: The name the file must carry (its stem), if known.

    Raises:
        RecipeError: One line naming the file and the field.
    """
    try:
        data: Any = load_strict(text)
    except StrictYamlError as exc:
        raise RecipeError(f"{where}: {exc}") from None
    if not isinstance(data, dict):
        raise RecipeError(f"{where}: a recipe is a mapping of fields")
    try:
        recipe = TrainingRecipe.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        raise RecipeError(f"{where}: {_where(err['loc'])}: {err['msg']}") from None
    if recipe.selective_policy not in SELECTIVE_POLICIES[1:]:
        raise RecipeError(
            f"{where}: selective_policy: must be one of {', '.join(SELECTIVE_POLICIES[1:])}"
        )
    if recipe.stack is not None and recipe.stack not in list_stacks():
        raise RecipeError(f"{where}: stack: {recipe.stack!r} is not a shipped stack")
    if expect is not None and recipe.name != expect:
        raise RecipeError(f"{where}: name: {recipe.name!r} differs from the file's name {expect!r}")
    try:
        recipe.plan()
    except WorkbenchError as exc:
        raise RecipeError(f"{where}: {exc}") from None
    return recipe
