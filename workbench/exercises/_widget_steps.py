"""A lesson's typed explorer instructions as data: single-control steps the widget carries out.

"Switch **hardware** to `a100-80gb`" is an :class:`ExplorerStep`: one control of
:class:`workbench.ui.MappingExplorer` set to one value, starting where the previous step left the
widget. The claim about a step is computed from :meth:`ExplorerSetting.mapping`, which maps a
setting exactly as the explorer maps its controls (``build_graph(model, phase, batch, seq,
dtype)`` on the profile, the unticked fusion rules disabled), and a setting the explorer refuses
(:func:`workbench.platform.fit.setting_refusal`, the explorer's own check) is an error here, so a
lesson cannot instruct a move the widget refuses (issue 20).

``tests/unit/exercises/test_steps_02_04_05_07_09.py`` drives the real widgets through the same
steps and checks they reach the same mapping; the browser tests
(``tests/browser/test_instructions_02_04_05.py``) perform them in JupyterLab.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass

from workbench.errors import WorkbenchError
from workbench.exercises._shared import hardware as _profile
from workbench.exercises._shared import mapping
from workbench.mapper import ModelMapping
from workbench.options import FUSION_RULES, MapOptions
from workbench.platform.fit import setting_refusal

__all__ = ["CONTROLS", "ExplorerSetting", "ExplorerStep", "explorer_walk"]

#: The explorer's controls besides the fusion checkboxes (named as in ``explorer.controls``).
CONTROLS = ("model", "hardware", "phase", "batch", "seq", "dtype")


@dataclass(frozen=True, slots=True, kw_only=True)
class ExplorerSetting:
    """The values of the explorer's controls (its constructor's arguments).

    Attributes:
        model: Preset name.
        hardware: Hardware profile name.
        phase: ``prefill`` or ``decode``.
        batch: Sequences per step.
        seq: Prompt tokens (decode: cached context), tokens.
        dtype: Model format.
        disabled_fusion: Unticked fusion rules, in ``FUSION_RULES`` order.
    """

    model: str
    hardware: str
    phase: str = "prefill"
    batch: int = 1
    seq: int = 2048
    dtype: str = "bf16"
    disabled_fusion: tuple[str, ...] = ()

    def set(self, control: str, value: object) -> ExplorerSetting:
        """The setting after one control takes ``value`` (a fusion rule: ``True`` = ticked).

        Raises:
            WorkbenchError: An unknown control, or a checkbox given a non-bool.
        """
        if control in FUSION_RULES:
            if not isinstance(value, bool):
                raise WorkbenchError(f"fusion checkbox {control!r} takes True/False, got {value!r}")
            off = (
                set(self.disabled_fusion) - {control} if value else {*self.disabled_fusion, control}
            )
            return dataclasses.replace(
                self, disabled_fusion=tuple(r for r in FUSION_RULES if r in off)
            )
        if control not in CONTROLS:
            known = ", ".join((*CONTROLS, *FUSION_RULES))
            raise WorkbenchError(f"the explorer has no control {control!r} (known: {known})")
        fields = {f: getattr(self, f) for f in CONTROLS}
        fields[control] = value
        return ExplorerSetting(**fields, disabled_fusion=self.disabled_fusion)

    @property
    def options(self) -> MapOptions:
        """The mapping options the fusion checkboxes describe."""
        return MapOptions(disabled_fusion=self.disabled_fusion)

    def refusal(self) -> str:
        """Why the explorer shows no step time at this setting ('' when it maps)."""
        return setting_refusal(
            self.model, _profile(self.hardware), phase=self.phase, batch=self.batch,
            seq=self.seq, dtype=self.dtype,
        )  # fmt: skip

    def mapping(self) -> ModelMapping:
        """The mapping the explorer shows at this setting (cached).

        Raises:
            WorkbenchError: When the explorer refuses the setting (the reason is in the message).
        """
        why = self.refusal()
        if why:
            raise WorkbenchError(f"the explorer refuses {self}: {why}")
        # NOTE: the same graph and options as MappingExplorer._map; the unit test compares the two.
        return mapping(
            self.model, self.hardware, phase=self.phase, batch=self.batch, seq=self.seq,
            dtype=self.dtype, options=self.options,
        )  # fmt: skip


@dataclass(frozen=True, slots=True)
class ExplorerStep:
    """One instruction: set ``control`` to ``value``, going from ``before`` to ``after``."""

    control: str
    value: object
    before: ExplorerSetting
    after: ExplorerSetting

    @property
    def instruction(self) -> str:
        """The instruction as a lesson says it (Markdown).

        >>> s = explorer_walk(ExplorerSetting(model="gpt2", hardware="h100-sxm", seq=512),
        ...                   [("flash_attention", False), ("seq", 1024)])
        >>> [step.instruction for step in s]
        ['untick `flash_attention`', 'drag **seq** to 1,024']
        """
        if self.control in FUSION_RULES:
            return f"{'tick' if self.value else 'untick'} `{self.control}`"
        if self.control in ("batch", "seq"):
            return f"drag **{self.control}** to {self.value:,}"
        if self.control == "phase":
            return f"switch **phase** to {self.value}"
        return f"switch **{self.control}** to `{self.value}`"


def explorer_walk(
    start: ExplorerSetting, moves: Sequence[tuple[str, object]]
) -> tuple[ExplorerStep, ...]:
    """The steps of ``moves`` from ``start``, each starting where the previous one ended.

    Args:
        start: The explorer's setting when the lesson builds it.
        moves: ``(control, value)`` pairs, in the order the lesson gives them.

    Returns:
        One :class:`ExplorerStep` per move.

    Raises:
        WorkbenchError: A start or a move the explorer refuses (the reason is in the
            message), or a move that changes nothing.
    """
    why = start.refusal()
    if why:
        raise WorkbenchError(f"the explorer refuses its start {start}: {why}")
    steps = []
    at = start
    for control, value in moves:
        nxt = at.set(control, value)
        if nxt == at:
            raise WorkbenchError(f"the instruction {control} -> {value!r} changes nothing")
        why = nxt.refusal()
        if why:
            raise WorkbenchError(f"the explorer refuses {control} -> {value!r}: {why}")
        steps.append(ExplorerStep(control, value, at, nxt))
        at = nxt
    return tuple(steps)
