"""The lesson text files: found as package data, strict, and every template rendered by code.

A placeholder the code does not pass fails loudly (never a blank in the sentence), a repeated key
in a text file is refused, and each key of a file is used by its lesson module (and only keys
that exist are used), so an edit in the file cannot silently drop out of the lesson.
"""

import ast
from importlib import resources
from pathlib import Path

import pytest

from workbench.exercises import _text
from workbench.exercises._text import LessonText, LessonTextError

EXERCISES = Path(_text.__file__).parent
LESSONS = sorted(p.stem for p in (EXERCISES / _text.TEXT_FOLDER).glob("*.yaml"))


def _keys_used(lesson: str) -> set[str]:
    """String keys passed to ``_TEXT.render`` / ``_TEXT.claim`` in the modules of ``lesson``."""
    used = set()
    for path in EXERCISES.glob("*.py"):
        tree = ast.parse(path.read_text())
        texts = {
            t.id
            for node in ast.walk(tree)
            if isinstance(node, ast.Assign)
            and isinstance(node.value, ast.Call)
            and getattr(node.value.func, "id", "") == "LessonText"
            and node.value.args[0].value == lesson
            for t in node.targets
            if isinstance(t, ast.Name)
        }
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr in {"render", "claim", "hints", "check"}
                and getattr(node.func.value, "id", "") in texts
                and node.args
                and isinstance(node.args[0], ast.Constant)
            ):
                key = node.args[0].value
                # NOTE: hints("x") and check("x", ...) render x_hint and x_hint2
                hinted = node.func.attr in {"hints", "check"}
                used |= {f"{key}_hint", f"{key}_hint2"} if hinted else {key}
    return used


def test_text_files_ship_inside_the_package():
    assert LESSONS
    folder = resources.files("workbench.exercises").joinpath(_text.TEXT_FOLDER)
    assert {p.name for p in folder.iterdir()} >= {f"{n}.yaml" for n in LESSONS}


@pytest.mark.parametrize("lesson", LESSONS)
def test_every_template_is_used_and_every_used_key_exists(lesson):
    assert _keys_used(lesson) == set(_text.template_keys(lesson))


def test_a_missing_value_fails_loudly():
    text = LessonText("lesson01")
    with pytest.raises(
        LessonTextError, match=r"lesson01.yaml: matmul_share: no value for \['share'\]"
    ):
        text.render("matmul_share", seq=2048, model="m", amount="most")
    with pytest.raises(LessonTextError, match="no text named 'nope'"):
        text.render("nope")


def test_a_repeated_key_and_a_bad_template_are_refused(tmp_path, monkeypatch):
    def fake(lesson, body):
        (tmp_path / _text.TEXT_FOLDER).mkdir(exist_ok=True)
        (tmp_path / _text.TEXT_FOLDER / f"{lesson}.yaml").write_text(body)

    monkeypatch.setattr(_text.resources, "files", lambda _pkg: tmp_path)
    for fn in (_text._load, _text._template, _text.placeholders):
        fn.cache_clear()
    try:
        fake("dup", "a: one\na: two\n")
        with pytest.raises(LessonTextError, match=r"dup\.yaml: .*duplicate key 'a'"):
            LessonText("dup").render("a")
        fake("syntax", "a: '{{ x '\n")
        with pytest.raises(LessonTextError, match=r"syntax\.yaml: a: line 1"):
            LessonText("syntax").render("a", x=1)
        fake("shape", "- a list\n")
        with pytest.raises(LessonTextError, match="must map each key to a text"):
            LessonText("shape").render("a")
    finally:
        for fn in (_text._load, _text._template, _text.placeholders):
            fn.cache_clear()


def test_fmt_formats_with_a_python_spec():
    assert (
        _text._ENV.from_string('{{ x | fmt(",") }} {{ y | fmt(".1%") }}').render(x=12345, y=0.25)
        == "12,345 25.0%"
    )


def test_time_formats_seconds_as_the_tool_prints_a_duration():
    assert _text._ENV.from_string("{{ s | time }}").render(s=1.24e-5) == "12.4 us"


def test_names_lists_names_in_backticks():
    render = _text._ENV.from_string("{{ n | names }}").render
    assert render(n=["a", "b", "c"]) == "`a`, `b` and `c`"
    assert render(n=[]) == "none"
