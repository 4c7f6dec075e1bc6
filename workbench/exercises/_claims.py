"""Lesson text rendered from the library's numbers, so text, tables and widgets cannot drift apart.

A quantitative or directional sentence in a lesson is a :class:`Claim` returned by a lesson
module: Jupyter shows it as Markdown (``_repr_markdown_``) and nbval compares it (the cell is
tagged ``nbval-check-output``), so when the cost model changes, the sentence changes with it and
the test says so.

A claim that answers an exercise is *gated* (:func:`gated`): until that exercise's check passed
or its answer was revealed in this session, it shows a line saying so instead of its text, so
Run All from the unanswered stubs reveals no answer before its check. Re-running the cell after
the check shows the text.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from workbench.exercises._check import settled

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "BOTTLENECK_SYNONYMS",
    "Claim",
    "gated",
    "gated_frame",
    "join_names",
    "phrase_classes",
]

#: Accepted spellings of the bottleneck classes a check may ask for.
BOTTLENECK_SYNONYMS: dict[str, tuple[str, ...]] = {
    "compute": ("compute bound", "compute-bound", "math", "math bound"),
    "bandwidth": ("bandwidth bound", "bandwidth-bound", "memory", "memory bound", "memory-bound"),
    "bandwidth:hbm": ("hbm", "hbm bandwidth", "bandwidth hbm", "hbm-bound", "hbm bound"),
    "bandwidth:l2": ("l2", "l2 bandwidth", "bandwidth l2", "l2-bound", "l2 bound"),
    "overhead": ("launch", "launch overhead", "overhead bound", "overhead-bound"),
}


@dataclass(frozen=True, slots=True)
class Claim:
    """A sentence (Markdown) computed from the library's numbers.

    Attributes:
        text: The Markdown text.
        after: The exercise (its check's name) this sentence answers; empty when none.
        label: How the lesson names that exercise ("Exercise 2").
        bullets: For a list made by :func:`bullet_list`, its items, each gated on its own.
    """

    text: str
    after: str = ""
    label: str = ""
    bullets: tuple[Claim, ...] = ()

    @property
    def hidden(self) -> bool:
        """True while the exercise this claim answers is neither solved nor revealed."""
        return bool(self.after) and not settled(self.after)

    def _shown(self) -> str:
        if self.bullets:
            return "\n".join(
                b._shown() if not b.hidden else f"- {b._shown()}" for b in self.bullets
            )
        if not self.hidden:
            return self.text
        # NOTE: evaluated at display time, so a re-run after the check shows the text.
        return (
            f"*(This sentence answers {self.label or 'an exercise'}: it shows once that "
            f"exercise's check passes, or after `reveal({self.after!r})`. Re-run this cell then.)*"
        )

    def _repr_markdown_(self) -> str:
        return self._shown()

    def __repr__(self) -> str:
        return self._shown()

    def __str__(self) -> str:
        return self._shown()


def bullet_list(items: Iterable[Claim]) -> Claim:
    """Markdown bullets (each item's text starts with ``- ``), each item gated on its own.

    ``text`` holds every item's full text; the rendering, evaluated at display time, hides an
    item whose exercise is not settled and shows the others.

    >>> c = bullet_list([Claim("- a"), gated(Claim("- b"), after="doc-example", label="Ex 9")])
    >>> c.text.splitlines(), str(c).splitlines()[0], str(c).splitlines()[1].startswith("- *(This")
    (['- a', '- b'], '- a', True)
    """
    parts = tuple(items)
    return Claim("\n".join(p.text for p in parts), bullets=parts)


def gated(claim: Claim, *, after: str, label: str) -> Claim:
    """``claim``, hidden until exercise ``after`` (a check's name) is solved or revealed.

    >>> c = gated(Claim("The answer is 4."), after="doc-example", label="Exercise 9")
    >>> c.hidden, str(c).startswith("*(This sentence answers Exercise 9")
    (True, True)
    """
    return replace(claim, after=after, label=label)


def gated_frame(
    frame: pd.DataFrame, columns: Iterable[str], *, after: str, label: str
) -> pd.DataFrame:
    """``frame`` with ``columns`` reading ``(label)`` until exercise ``after`` is settled.

    A table column that answers an exercise is gated as a :func:`gated` claim is: the cell shows
    the placeholder on Run All from the stubs, and the figures once re-run after the check.

    >>> import pandas as pd
    >>> gated_frame(pd.DataFrame({"n": [3]}), ["n"], after="doc-example", label="Ex 9")["n"][0]
    '(Ex 9)'
    """
    if settled(after):
        return frame
    out = frame.copy()
    for column in columns:
        out[column] = f"({label})"
    return out


def join_names(names: Iterable[str]) -> str:
    """``a``, ``a and b``, ``a, b and c`` with names in backticks.

    >>> join_names(["q", "k", "v"])
    '`q`, `k` and `v`'
    """
    items = [f"`{n}`" for n in names]
    if len(items) <= 1:
        return "".join(items) or "none"
    return ", ".join(items[:-1]) + " and " + items[-1]


def phrase_classes(by_class: dict[str, list[str]]) -> str:
    """``the norms are overhead-bound; q_proj ... are bandwidth:hbm-bound`` from class -> kernels.

    >>> phrase_classes({"compute": ["q", "k"], "overhead": ["norm"]})
    '`q` and `k`: **compute**; `norm`: **overhead**'
    """
    return "; ".join(f"{join_names(ks)}: **{c}**" for c, ks in by_class.items())
