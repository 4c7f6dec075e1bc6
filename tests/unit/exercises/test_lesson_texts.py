"""Every text a lesson shows is byte-identical to the snapshot in ``lesson_texts.json``.

The snapshot was taken before the prose moved from f-strings into ``workbench/exercises/text``;
a change of wording is a change of this fixture, made on purpose in a commit that says why
(regenerate one lesson with ``python -m tests.unit.exercises._text_cases lesson03``).
"""

import json

import pytest
from _text_cases import FIXTURE, LESSONS

SNAPSHOT = json.loads(FIXTURE.read_text())


@pytest.mark.parametrize("lesson", sorted(LESSONS))
def test_lesson_texts_match_the_snapshot(lesson):
    texts = LESSONS[lesson]()
    assert sorted(texts) == sorted(SNAPSHOT[lesson])
    for key, text in texts.items():
        assert text == SNAPSHOT[lesson][key], key
