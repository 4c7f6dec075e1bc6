"""A lesson's widget instructions as data: which control moves, from where, to where.

"Switch the trace to synthetic", "set the layer to conv1", "untick flash_attention": each is a
:class:`ControlMove`. The sentence the lesson shows about it is a claim computed by driving the
widget's own model at exactly the move's settings; the unit tests set the control on the widget
object and compare what it shows with the claim, and the browser test performs the move on the
page (the chart changes; a refusal appears only where the move is meant to teach one).
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["ControlMove", "phrase_move"]


@dataclass(frozen=True, slots=True, kw_only=True)
class ControlMove:
    """One instruction for a widget: set ``control`` from ``start`` to ``end``.

    Attributes:
        widget: The widget class the lesson builds (``"LatencyPanel"``, ``"MappingExplorer"``...).
        control: The control's key in the widget's ``controls``.
        start: Its value before the move.
        end: Its value after the move.
        setting: The other controls' values while it moves, ``(control, value)`` pairs (the
            widget's state the claim is computed at; the browser sets them first).
        refused: True when the widget must refuse the end setting (the instruction teaches the
            refusal: its reason is on screen instead of a new chart).
        label: What the control is called on screen ('' : its key).
    """

    widget: str
    control: str
    start: object
    end: object
    setting: tuple[tuple[str, object], ...] = ()
    refused: bool = False
    label: str = ""

    @property
    def name(self) -> str:
        """The control's name on screen."""
        return self.label or self.control

    def state(self, *, after: bool = False) -> dict[str, object]:
        """Every control the move involves and its value, before (or ``after``) the move."""
        return {**dict(self.setting), self.control: self.end if after else self.start}


def _value(v: object) -> str:
    if isinstance(v, bool):
        return "on" if v else "off"
    if isinstance(v, int | float):
        return f"{v:,g}"
    return f"`{v}`"


def phrase_move(move: ControlMove) -> str:
    """``Switch **trace** from `a` to `b``` (Markdown), the instruction as the lesson words it.

    >>> phrase_move(ControlMove(widget="W", control="max_batch", start=32, end=8))
    'Set **max_batch** from 32 to 8'
    >>> phrase_move(ControlMove(widget="W", control="flash_attention", start=True, end=False))
    'Untick **flash_attention**'
    """
    if isinstance(move.end, bool):
        return f"{'Tick' if move.end else 'Untick'} **{move.name}**"
    verb = "Set" if isinstance(move.end, int | float) else "Switch"
    return f"{verb} **{move.name}** from {_value(move.start)} to {_value(move.end)}"
