"""Every text a lesson shows is byte-identical to the snapshot in ``lesson_texts.json``.

The snapshot was taken before the prose moved from f-strings into ``workbench/exercises/text``;
a change of wording is a change of this fixture, made on purpose in a commit that says why
(regenerate one lesson with ``python -m tests.unit.exercises._text_cases lesson03``).
"""

import json
from pathlib import Path

import pytest
from _text_cases import FIXTURE, LESSONS

SNAPSHOT = json.loads(FIXTURE.read_text())
#: Texts that name a file name it under the checkout's root: the snapshot says ``<repo>``.
REPO = str(Path(__file__).resolve().parents[3])


def _portable(text: str) -> str:
    return text.replace(REPO, "<repo>")


@pytest.mark.parametrize("lesson", sorted(LESSONS))
def test_lesson_texts_match_the_snapshot(lesson):
    texts = {k: _portable(v) for k, v in LESSONS[lesson]().items()}
    assert sorted(texts) == sorted(SNAPSHOT[lesson])
    for key, text in texts.items():
        assert text == SNAPSHOT[lesson][key], key
