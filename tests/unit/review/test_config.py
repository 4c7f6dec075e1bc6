import pytest

from workbench.review import load_guardrails, load_owners
from workbench.review.decision.closure import decide, evaluate_guardrails
from workbench.review.diagnosis.table import MECHANISMS


def test_default_tables_cover_every_mechanism():
    owners = load_owners()
    for m in MECHANISMS:
        assert owners.owner_for(m).closure_artifact
    assert {g.metric for g in load_guardrails().guardrails} >= {"time_s", "mfu", "p99_s"}


@pytest.mark.parametrize(
    ("text", "match"),
    [
        (
            "schema_version: 1\nroles:\n  - role: x\n    responsibility: y\n    closure_artifact: z"
            "\n    mechanisms: [fusion_brokn]\n",
            r"roles\[0\].*unknown mechanism 'fusion_brokn'",
        ),
        (
            "schema_version: 1\nroles:\n  - role: x\n    responsibility: y\n    closure_artifact: z"
            "\n    mechanisms: [fusion_broken]\n    pager: 1\n",
            r"roles\[0\]\.pager: unknown field",
        ),
        ("schema_version: 1\nroles: []\n", "roles: needs at least 1"),
        ("schema_version: 1\nschema_version: 1\n", "duplicate|found"),
    ],
)
def test_bad_owners_file_one_line(tmp_path, text, match):
    path = tmp_path / "owners.yaml"
    path.write_text(text)
    with pytest.raises(Exception, match=match) as info:
        load_owners(path)
    assert str(path) in str(info.value)
    assert "\n" not in str(info.value)


def test_owners_need_every_mechanism(tmp_path):
    path = tmp_path / "owners.yaml"
    path.write_text(
        "schema_version: 1\nroles:\n  - role: x\n    responsibility: y\n"
        "    closure_artifact: z\n    mechanisms: [fusion_broken]\n"
    )
    with pytest.raises(Exception, match="no owner for mechanism"):
        load_owners(path)


@pytest.mark.parametrize(
    ("body", "match"),
    [
        (
            "  - metric: time_s\n    relative: true\n    flag_at: 0.1\n    rollback_at: 0.05\n",
            r"guardrails\[0\].*rollback_at: must be >= flag_at",
        ),
        (
            "  - metric: latency\n    relative: true\n    flag_at: 0.1\n    rollback_at: 0.5\n",
            r"guardrails\[0\]\.metric: must be one of",
        ),
        (
            "  - metric: mfu\n    relative: true\n    flag_at: -1\n    rollback_at: 0.5\n",
            r"guardrails\[0\]\.flag_at: must be >= 0",
        ),
    ],
)
def test_bad_guardrails_file_one_line(tmp_path, body, match):
    path = tmp_path / "g.yaml"
    path.write_text("schema_version: 1\nguardrails:\n" + body)
    with pytest.raises(Exception, match=match) as info:
        load_guardrails(path)
    assert str(path) in str(info.value)
    assert "\n" not in str(info.value)


def test_decision_thresholds():
    g = load_guardrails()
    assert decide(evaluate_guardrails({"time_s": (1.0, 1.0)}, g))[0] == "ship"
    assert decide(evaluate_guardrails({"time_s": (1.0, 1.03)}, g))[0] == "ship behind a flag"
    assert decide(evaluate_guardrails({"time_s": (1.0, 1.2)}, g))[0] == "roll back"
    checks = evaluate_guardrails({"mfu": (0.5, 0.6)}, g)
    assert next(c for c in checks if c.metric == "mfu").status == "ok"
    assert next(c for c in checks if c.metric == "p99_s").status == "n/a"
