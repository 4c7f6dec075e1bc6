"""Lesson 06's instructions for its triage panel, as data (issue 20).

Every "switch **changed** to ..." or "select ... in the panel" the lesson gives is a
:class:`~workbench.exercises._moves.ControlMove` in :data:`PANEL_MOVES`. The sentence the lesson
prints for a move (:func:`panel_move_claim`) is computed by driving the panel's own model
(:class:`workbench.ui.TriagePanel` as the lesson builds it, :func:`panel_outcomes`) through the
moves in the order the lesson gives them, so it says what the panel shows at exactly that
setting: a refusal when that is what the move teaches, a triaged pair otherwise. The browser
test performs the same moves on the lesson's open panel (``tests/browser/_instructions_06.py``).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from workbench.errors import WorkbenchError
from workbench.exercises._claims import Claim
from workbench.exercises._moves import ControlMove
from workbench.exercises._text import LessonText
from workbench.review import SCENARIOS, build_scenario, triage

__all__ = ["PANEL_MOVES", "PANEL_SCENARIO", "PanelOutcome", "panel_move_claim", "panel_outcomes"]

_TEXT = LessonText("lesson06")

#: The scenario the lesson's panel opens on (``TriagePanel(scenario=...)`` in the notebook).
PANEL_SCENARIO = "epilogue-fusion"

#: The moves, in the order the lesson gives them: each starts where the one before left the
#: panel (``start``: the control's value then; ``setting``: the other dropdown's).
PANEL_MOVES = (
    ControlMove(widget="TriagePanel", control="changed", start="compiler", end="(none)",
                setting=(("scenario", PANEL_SCENARIO),), refused=True),
    ControlMove(widget="TriagePanel", control="changed", start="(none)", end="runtime",
                setting=(("scenario", PANEL_SCENARIO),), refused=True),
    ControlMove(widget="TriagePanel", control="scenario", start=PANEL_SCENARIO,
                end="long-seq-tile", setting=(("changed", "runtime"),)),
    ControlMove(widget="TriagePanel", control="scenario", start="long-seq-tile",
                end="barrier-per-layer", setting=(("changed", "compiler"),)),
)  # fmt: skip


@dataclass(frozen=True, slots=True)
class PanelOutcome:
    """What the panel shows after a move.

    Attributes:
        move: The move.
        refused: Whether triage refused.
        changed: The declared group the panel shows.
        mismatched: The tag fields that differ outside it (``compiler.fusion_disabled``...).
        scenario: The scenario the panel shows.
    """

    move: ControlMove
    refused: bool
    changed: str
    mismatched: tuple[str, ...]
    scenario: str


@lru_cache(maxsize=1)
def panel_outcomes() -> tuple[PanelOutcome, ...]:
    """Each of :data:`PANEL_MOVES` performed in turn, as the lesson's panel performs it.

    The panel's model (:class:`workbench.ui.TriagePanel`, which this layer may not import):
    selecting a scenario builds it (:func:`workbench.review.build_scenario`) and declares its
    changed group; selecting a group re-triages the same runs with that declaration
    (``(none)``: nothing declared); triage runs without the serving simulation. The unit tests
    perform the same moves on a real panel and check it shows the same.

    Raises:
        WorkbenchError: A move does not start where the one before left the panel.
    """
    scenario, changed = PANEL_SCENARIO, SCENARIOS[PANEL_SCENARIO].changed
    out = []
    for move in PANEL_MOVES:
        now = {"scenario": scenario, "changed": changed}
        if now[move.control] != move.start or any(now[k] != v for k, v in move.setting):
            raise WorkbenchError(f"lesson 06: {move} does not start where the move before ended")
        if move.control == "scenario":
            scenario = str(move.end)
            changed = SCENARIOS[scenario].changed
        else:
            changed = str(move.end)
        r = triage(
            *build_scenario(scenario),
            changed=None if changed == "(none)" else changed,
            simulate=False,
        )
        out.append(
            PanelOutcome(
                move=move,
                refused=not r.comparable,
                changed=changed,
                mismatched=tuple(dict.fromkeys(m.split(":")[0] for m in r.mismatched_tags)),
                scenario=scenario,
            )
        )
    return tuple(out)


def panel_move_claim(control: str, value: str) -> Claim:
    """The sentence for the instruction "set ``control`` to ``value``", from the panel itself.

    Raises:
        WorkbenchError: The move is not one of :data:`PANEL_MOVES` (an instruction the lesson
            gives must be data the tests perform).
    """
    found = [o for o in panel_outcomes() if (o.move.control, o.move.end) == (control, value)]
    if not found:
        raise WorkbenchError(f"lesson 06: no panel move sets {control!r} to {value!r}")
    o = found[0]
    if control == "changed":
        own = SCENARIOS[o.scenario].changed
        return _TEXT.claim(
            "panel_changed",
            value=value,
            wrong=value not in (own, "(none)"),
            scenario=o.scenario,
            own=own,
            refused=o.refused,
            mismatched=o.mismatched,
        )
    if o.refused:
        return _TEXT.claim("panel_scenario_refused", value=value)
    return _TEXT.claim("panel_scenario", value=value, changed=o.changed)
