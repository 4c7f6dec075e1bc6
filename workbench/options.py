"""Options of a mapping run: the overrides every decision accepts.

Precedence for every decision (tile, fusion, dtype, layout): an explicit override here beats the
search, and the search beats the default heuristic. Lessons and regression scenarios are built
from these overrides, so each is recorded in the mapping and in run records.
"""

from __future__ import annotations

import fnmatch
import re
from dataclasses import dataclass

from workbench.errors import OptionsError, WorkbenchError
from workbench.ir.dtypes import canonical

__all__ = ["FUSION_RULES", "MapOptions", "TileOverride"]

#: Fusion rules the planner knows, with what each does. All are on by default.
FUSION_RULES: dict[str, str] = {
    "gemm_epilogue": "fold bias, activation, residual add and quantize into the producing GEMM's "
    "epilogue (the GEMM output never round-trips through off-chip memory)",
    "elementwise_chain": "run a chain of elementwise ops as one kernel "
    "(intermediates stay on chip)",
    "norm_elementwise": "fold the elementwise op (or quantize) after a norm into the norm kernel",
    "flash_attention": "fused attention: QK^T, softmax and PV in one kernel; scores never leave "
    "SRAM (off: three kernels with the score matrix in off-chip memory)",
    "layout_fold": "fold a data-layout transform into the producing kernel's store",
}


#: Largest side of a forced tile, elements: far past any library's CTA tile (CUTLASS ships 64,
#: 128 and 256) or any SRAM's reach, low enough that tile counts and padded work stay exact.
MAX_TILE_SIDE = 65_536
#: A plain ASCII decimal (no sign, underscore or other scripts' digits), up to 19 digits.
DIGITS = re.compile(r"[0-9]{1,19}")
#: Most pipeline stages a forced tile may ask for (real kernels use 2 to 8).
MAX_STAGES = 64
#: Most chips a mapping may be spread over.
MAX_CHIPS = 1 << 20


def _kind(value: object) -> str:
    return type(value).__name__


def _check_count(what: str, value: object, hi: int) -> None:
    """``value`` is an ``int`` (not a bool) in ``1..hi``, else :class:`OptionsError`."""
    if not isinstance(value, int) or isinstance(value, bool):
        raise OptionsError(f"{what}: expected an integer, got {_kind(value)} {value!r:.60}")
    if not 1 <= value <= hi:
        shown = f"{value}" if abs(value) < 10**20 else f"about 10**{len(str(abs(value))) - 1}"
        raise OptionsError(f"{what}: {shown} is outside 1..{hi:,}")


def _check_seconds(what: str, value: object, hi: float) -> None:
    """``value`` is None or a finite real number of seconds in ``0..hi``."""
    if value is None:
        return
    if not isinstance(value, int | float) or isinstance(value, bool):
        raise OptionsError(f"{what}: expected seconds (a number), got {_kind(value)}")
    if not 0.0 <= value <= hi:
        raise OptionsError(f"{what} must be a number in 0..{hi:g} s, got {value!r}")


def _tuple(what: str, value: object, item: type | tuple[type, ...]) -> tuple[object, ...]:
    """``value`` as a tuple whose items are ``item``s (a list is taken; a str is refused)."""
    if not isinstance(value, tuple | list):
        raise OptionsError(f"{what}: expected a tuple, got {_kind(value)} {value!r:.60}")
    bad = next((v for v in value if not isinstance(v, item)), None)
    if bad is not None:
        raise OptionsError(f"{what}: an item is {_kind(bad)} {bad!r:.60}")
    return tuple(value)


@dataclass(frozen=True, slots=True, kw_only=True)
class TileOverride:
    """Force the tile of every kernel whose name matches ``pattern`` (fnmatch glob).

    For GEMM-like kernels ``m, n, k`` are the tile sizes; for fused attention ``m`` is the query
    tile and ``n`` the key/value tile (``k`` is ignored). ``split_k`` and ``stages``, when given,
    are forced too; otherwise they are still searched.
    """

    pattern: str
    m: int
    n: int
    k: int
    split_k: int | None = None
    stages: int | None = None

    @classmethod
    def parse(cls, text: str) -> TileOverride:
        """Parse ``KERNEL=MxNxK`` (as given to ``--tile``).

        >>> TileOverride.parse("*.mlp.up=128x256x64").n
        256
        """
        pattern, _, dims = text.partition("=")
        sides = dims.lower().split("x")
        if not pattern or len(sides) != 3:
            raise OptionsError(f"--tile {text!r}: expected KERNEL=MxNxK, e.g. '*q_proj=128x128x64'")
        if not all(DIGITS.fullmatch(v) and 1 <= int(v) <= MAX_TILE_SIDE for v in sides):
            raise OptionsError(
                f"--tile {text!r}: tile sizes must be plain integers in 1..{MAX_TILE_SIDE:,} "
                "(the largest CTA tile side a GEMM library ships is 256)"
            )
        m, n, k = (int(v) for v in sides)
        return cls(pattern=pattern, m=m, n=n, k=k)

    def __post_init__(self) -> None:
        if not isinstance(self.pattern, str) or not self.pattern:
            raise OptionsError(
                f"TileOverride.pattern: expected a non-empty glob, got {self.pattern!r}"
            )
        for side in ("m", "n", "k"):
            _check_count(f"TileOverride.{side}", getattr(self, side), MAX_TILE_SIDE)
        for extra, hi in (("split_k", MAX_TILE_SIDE), ("stages", MAX_STAGES)):
            if getattr(self, extra) is not None:
                _check_count(f"TileOverride.{extra}", getattr(self, extra), hi)

    def matches(self, kernel_name: str) -> bool:
        """Whether this override applies to ``kernel_name``."""
        return fnmatch.fnmatchcase(kernel_name, self.pattern)


@dataclass(frozen=True, slots=True, kw_only=True)
class MapOptions:
    """How to map a graph. Every field is an override of a decision the mapper would make.

    Attributes:
        dtype: Compute/storage format for every kernel (``None``: each op's own dtype).
        weight_dtype: Weight-only format for Linear weights (``"int4"``, ``"int8"``), or None.
        dtype_overrides: ``(glob, dtype)`` pairs forcing the format of matching kernels
            (e.g. ``("*.attn.sdpa", "fp32")``); later pairs win.
        disabled_fusion: Names from :data:`FUSION_RULES` to switch off.
        layout: Conv activation layout the kernels use: ``"auto"`` (the matrix engine's
            preferred layout), ``"NCHW"`` or ``"NHWC"``.
        layout_propagation: Keep the chosen layout across consecutive kernels (one transform at
            the graph input). Off: every conv converts its input and converts back.
        launch: ``"eager"`` (a host launch per kernel) or ``"graph"`` (captured graph replay).
        launch_host_s: Host time per kernel launched eagerly, seconds: the software stack's
            framework dispatch plus the driver's submission (a PyTorch eager op ~20 us, an
            Inductor kernel launched without CUDA graphs ~8 us; ``stacks/*.yaml``
            ``eager_launch_s``). None: the profile's ``overheads.kernel_launch_s`` (the
            driver's submission alone, as a C++ runtime pays). Read in eager mode, and for the
            launch a device-wide sync exposes.
        tiles: Forced tiles (beats the search).
        search: ``"full"`` (evaluate the whole mapspace) or ``"heuristic"`` (the default tile).
        barrier_per_layer: Add a device-wide barrier after every layer (a debugging sync).
        chips: Chips the graph is spread over (for energy and perf/W; collectives come from the
            graph).
        attention_kernel: Fused-attention class to cost (``"generic"``, ``"fa2"``, ``"fa3"`` or
            ``"serial"``, see workbench/cost/attention_class.py); None = the
            one the profile's software stack ships (``software.attention_kernel``).
        overlap_collectives: Overlap each tensor-parallel all-reduce with the GEMM that produces
            it, decomposed into chunks (Megatron/Transformer Engine TP comm overlap; Wang et al.,
            ASPLOS 2023): only the part longer than that GEMM is exposed. Off: serial, as in
            decode engines.
        gqa_kv_sharing: The decode attention kernel shares each K/V read across the query heads
            of a GQA group (FlashDecoding, FlashAttention pack_gqa, later TensorRT-LLM). Off: it
            reads the KV head from off-chip memory once per query head, as TensorRT-LLM's
            generation kernel (MMHA) did before v0.7 (NVIDIA/TensorRT-LLM issue 407; PR 524,
            2023-12: "MMHA optimization for MQA and GQA").
        step_overhead_s: Host time of the serving stack per LLM prefill/decode step outside its
            kernels (scheduler, sampling, stop checks, a Python generation loop), seconds: a
            property of the software stack, not the chip. None: the profile's
            ``overheads.step_s``.
    """

    dtype: str | None = None
    weight_dtype: str | None = None
    dtype_overrides: tuple[tuple[str, str], ...] = ()
    disabled_fusion: tuple[str, ...] = ()
    layout: str = "auto"
    layout_propagation: bool = True
    launch: str = "graph"
    launch_host_s: float | None = None
    tiles: tuple[TileOverride, ...] = ()
    search: str = "full"
    barrier_per_layer: bool = False
    chips: int = 1
    attention_kernel: str | None = None
    overlap_collectives: bool = False
    step_overhead_s: float | None = None
    gqa_kv_sharing: bool = True

    def __post_init__(self) -> None:
        self._check_types()
        for rule in self.disabled_fusion:
            if rule not in FUSION_RULES:
                raise OptionsError(
                    f"--no-fusion {rule!r}: unknown fusion rule (known: {', '.join(FUSION_RULES)})"
                )
        try:
            self._canonical_formats()
        except OptionsError:
            raise
        except WorkbenchError as exc:  # NOTE: an unknown format: the one documented type
            raise OptionsError(str(exc)) from None
        if self.layout not in ("auto", "NCHW", "NHWC"):
            raise OptionsError(f"--layout {self.layout!r}: expected auto, NCHW or NHWC")
        if self.launch not in ("eager", "graph"):
            raise OptionsError(f"--launch {self.launch!r}: expected eager or graph")
        if self.search not in ("full", "heuristic"):
            raise OptionsError(f"search {self.search!r}: expected full or heuristic")
        if self.chips < 1:
            raise OptionsError(f"chips must be >= 1, got {self.chips}")
        if self.attention_kernel not in (None, "generic", "fa2", "fa3", "serial"):
            raise OptionsError(
                f"attention kernel {self.attention_kernel!r}: expected generic, fa2, fa3 or serial"
            )

    def _canonical_formats(self) -> None:
        """``dtype``, ``weight_dtype`` and the overrides' formats in their canonical names."""
        if self.dtype is not None:
            object.__setattr__(self, "dtype", canonical(self.dtype, where="--dtype"))
        if self.weight_dtype is not None:
            wd = canonical(self.weight_dtype, where="--weight-dtype")
            if wd not in ("int4", "int8", "fp8_e4m3", "fp8_e5m2"):
                raise OptionsError(
                    f"--weight-dtype {wd!r}: weight-only formats are int4, int8, fp8"
                )
            object.__setattr__(self, "weight_dtype", wd)
        fixed = tuple(
            (g, canonical(d, where=f"dtype override {g!r}")) for g, d in self.dtype_overrides
        )
        object.__setattr__(self, "dtype_overrides", fixed)

    def _check_types(self) -> None:
        """Every field of its documented type and range (:class:`OptionsError` naming it)."""
        for flag in ("layout_propagation", "barrier_per_layer", "overlap_collectives",
                     "gqa_kv_sharing"):  # fmt: skip
            if not isinstance(getattr(self, flag), bool):
                raise OptionsError(f"MapOptions.{flag}: expected True or False")
        for text in ("dtype", "weight_dtype", "attention_kernel"):
            value = getattr(self, text)
            if value is not None and not isinstance(value, str):
                raise OptionsError(f"MapOptions.{text}: expected a str or None, got {_kind(value)}")
        for text in ("layout", "launch", "search"):
            if not isinstance(getattr(self, text), str):
                raise OptionsError(f"MapOptions.{text}: expected a str")
        _check_count("MapOptions.chips", self.chips, MAX_CHIPS)
        _check_seconds("MapOptions.step_overhead_s", self.step_overhead_s, 1e3)
        _check_seconds("MapOptions.launch_host_s", self.launch_host_s, 1.0)
        object.__setattr__(self, "tiles", _tuple("MapOptions.tiles", self.tiles, TileOverride))
        fusion = _tuple("MapOptions.disabled_fusion", self.disabled_fusion, str)
        object.__setattr__(self, "disabled_fusion", fusion)
        pairs = _tuple("MapOptions.dtype_overrides", self.dtype_overrides, (tuple, list))
        fixed: list[tuple[str, str]] = []
        for pair in pairs:
            if not (
                isinstance(pair, tuple | list)
                and len(pair) == 2
                and all(isinstance(v, str) for v in pair)
            ):
                raise OptionsError(
                    "MapOptions.dtype_overrides: expected (glob, dtype) pairs of str"
                )
            fixed.append((pair[0], pair[1]))
        object.__setattr__(self, "dtype_overrides", tuple(fixed))

    def fusion_enabled(self, rule: str) -> bool:
        """Whether fusion ``rule`` is on."""
        return rule not in self.disabled_fusion

    def dtype_for(self, kernel_name: str, default: str) -> str:
        """The compute format of a kernel: a matching override, else :attr:`dtype`, else default."""
        chosen = self.dtype or default
        for glob, dt in self.dtype_overrides:
            if fnmatch.fnmatchcase(kernel_name, glob):
                chosen = dt
        return chosen

    def tile_for(self, kernel_name: str) -> TileOverride | None:
        """The last forced tile whose pattern matches ``kernel_name``, if any."""
        found = None
        for t in self.tiles:
            if t.matches(kernel_name):
                found = t
        return found

    def as_tags(self) -> dict[str, object]:
        """Plain-data view for run records and cache keys."""
        tags: dict[str, object] = {
            "dtype": self.dtype,
            "weight_dtype": self.weight_dtype,
            "dtype_overrides": [list(p) for p in self.dtype_overrides],
            "disabled_fusion": sorted(self.disabled_fusion),
            "layout": self.layout,
            "layout_propagation": self.layout_propagation,
            "launch": self.launch,
            "tiles": [
                f"{t.pattern}={t.m}x{t.n}x{t.k}"
                + (f" split_k={t.split_k}" if t.split_k else "")
                + (f" stages={t.stages}" if t.stages else "")
                for t in self.tiles
            ],
            "search": self.search,
            "barrier_per_layer": self.barrier_per_layer,
            "chips": self.chips,
        }
        if self.attention_kernel:
            tags["attention_kernel"] = self.attention_kernel
        if self.overlap_collectives:
            tags["overlap_collectives"] = True
        if self.step_overhead_s is not None:
            tags["step_overhead_s"] = self.step_overhead_s
        if self.launch == "eager" and self.launch_host_s is not None:
            tags["launch_host_s"] = self.launch_host_s
        if not self.gqa_kv_sharing:
            tags["gqa_kv_sharing"] = False
        return tags
