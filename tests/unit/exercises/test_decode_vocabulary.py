"""One decode vocabulary across the course (issue 32).

Lesson 02's and lesson 11's checks were both named ``check_decode_floor`` and graded opposite
figures (the datasheet-peak bound and the sustained-rate one). The course's words now live in
:mod:`workbench.exercises._decode`: the **floor** (and its tokens/s inverse, the **ceiling**) is
at the datasheet peak off-chip bandwidth, the **expected** step at the sustained rate. This file
checks every lesson's checks, hints and sentences against them.
"""

from __future__ import annotations

import importlib
import json
import re
from pathlib import Path

import pytest
import yaml

from workbench.exercises._decode import (
    EXPECTED_RATE,
    FLOOR_RATE,
    VOCABULARY,
    decode_expected_s,
    decode_floor_s,
)

ROOT = Path(__file__).resolve().parents[3]
TEXT = ROOT / "workbench" / "exercises" / "text"
WORDS = re.compile(r"\b(floor|ceiling)s?\b", re.I)


def _lesson(n: int):
    return importlib.import_module(f"workbench.exercises.lesson{n:02d}")


#: Every vocabulary check in the course: (right answer, the other rate's answer) -> a call.
CHECKS = {
    ("lesson02", "check_decode_floor"): (
        lambda a: _lesson(2).check_decode_floor(a, model="llama2-7b", hardware_name="h100-sxm"),
        decode_floor_s("llama2-7b", "h100-sxm"),
        decode_expected_s("llama2-7b", "h100-sxm"),
    ),
    ("lesson11", "check_decode_expected"): (
        lambda a: _lesson(11).check_decode_expected(a, model="llama2-7b", platform="h200"),
        1 / decode_expected_s("llama2-7b", "h200"),
        1 / decode_floor_s("llama2-7b", "h200"),
    ),
}


def _vocabulary_checks() -> set[tuple[str, str]]:
    found = set()
    for n in range(1, 14):
        module = _lesson(n)
        for name in getattr(module, "__all__", ()):
            if name.startswith("check_") and any(w in name for w in VOCABULARY):
                found.add((module.__name__.rsplit(".", 1)[1], name))
    return found


def test_every_vocabulary_check_of_every_lesson_is_graded_here():
    assert _vocabulary_checks() == set(CHECKS)


@pytest.mark.parametrize("key", sorted(CHECKS))
def test_a_check_accepts_its_words_rate_and_rejects_the_other(key):
    call, right, other = CHECKS[key]
    assert call(right).passed, key
    assert not call(other).passed, key  # the other rate's figure is another word's answer
    assert decode_floor_s("llama2-7b", "h100-sxm") < decode_expected_s("llama2-7b", "h100-sxm")


def _texts() -> list[tuple[str, str, str]]:
    out = []
    for path in sorted(TEXT.glob("lesson*.yaml")):
        for key, value in yaml.safe_load(path.read_text()).items():
            out.append((path.stem, key, " ".join(str(value).split())))
    return out


@pytest.mark.parametrize(("lesson", "key", "text"), [t for t in _texts() if "hint" in t[1]])
def test_every_vocabulary_hint_names_its_rate(lesson, key, text):
    for word, rate in VOCABULARY.items():
        if word in key:
            assert rate in text, f"{lesson}.{key} does not name the {rate} rate: {text}"


def _sentences(text: str) -> list[str]:
    return [s for s in re.split(r"(?<=[.;!?])\s+|\n\n", text) if WORDS.search(s)]


def _prose() -> list[tuple[str, str]]:
    """Every sentence of the course that says floor or ceiling: texts, READMEs, notebooks."""
    out = [(f"{lesson}.{key}", s) for lesson, key, text in _texts() for s in _sentences(text)]
    for path in (ROOT / "README.md", ROOT / "lessons" / "README.md"):
        out += [(path.name, s) for s in _sentences(" ".join(path.read_text().split()))]
    for path in sorted((ROOT / "lessons").glob("[0-9][0-9]-*.ipynb")):
        for cell in json.loads(path.read_text())["cells"]:
            if cell["cell_type"] == "markdown":
                text = " ".join("".join(cell["source"]).split())
                out += [(path.name, s) for s in _sentences(text)]
    return out


def test_no_sentence_puts_the_floor_at_the_sustained_rate():
    """A floor or ceiling beside the sustained rate must say it is at the datasheet peak."""
    named = (FLOOR_RATE, "peak bandwidth", "peak off-chip")  # "peak FLOP/s" is no rate of bytes
    wrong = [
        (where, s)
        for where, s in _prose()
        if EXPECTED_RATE in s.lower() and not any(n in s.lower() for n in named)
    ]
    assert not wrong, wrong
