"""The mechanism table: one record per mechanism, read by every reader of mechanisms."""

import dataclasses

import pytest

from workbench.review import MECHANISMS, SCENARIOS, load_owners
from workbench.review.decision._config import ConfigError
from workbench.review.decision.owners import builtin_owners
from workbench.review.diagnosis import table
from workbench.review.diagnosis.table import (
    PRIORITY,
    TABLE,
    by_name,
    classify_all,
    mechanism_of_change,
    mechanism_of_group,
)
from workbench.review.records.store import KernelResult
from workbench.review.scenarios.build import load_scenarios

# NOTE: the priority order as a reviewer wrote it down: causes first (fusion, layout, format,
# engine, SRAM), then what only follows from a cause, then the run-level verdicts.
EXPECTED_PRIORITY = (
    "fusion_broken",
    "layout_transform_inserted",
    "precision_fallback",
    "off_matrix_engine",
    "tile_spills_sram",
    "hardware_rate",
    "launch_sync_overhead",
    "bandwidth_saturation",
    "tile_wave_quantization",
    "graph_changed",
    "stack_overhead",
    "measured_slowdown",
    "prediction_gap",
    "unmapped_measurement",
)


def test_priority_order_is_the_table_order():
    assert PRIORITY == EXPECTED_PRIORITY
    assert tuple(MECHANISMS) == PRIORITY
    assert len(set(PRIORITY)) == len(PRIORITY)


def test_causes_come_before_consequences_and_run_level_last():
    kinds = [
        ("run" if m.detector is None else "consequence" if m.consequence else "cause")
        for m in TABLE
    ]
    assert kinds == sorted(kinds, key=["cause", "consequence", "run"].index)


def test_builtin_owners_come_from_the_table():
    owners = load_owners()
    for m in TABLE:
        assert owners.owner_for(m.name).role == m.owner
    assert sum(len(r.mechanisms) for r in owners.roles) == len(TABLE)


def test_a_table_owner_missing_from_the_roles_file_is_one_line(tmp_path):
    roles = tmp_path / "roles.yaml"
    roles.write_text(
        "schema_version: 1\nroles:\n  - role: ML compiler engineer\n"
        "    responsibility: x\n    closure_artifact: y\n"
    )
    with pytest.raises(ConfigError, match=r"roles\.yaml: roles: no role 'platform owner'"):
        builtin_owners(roles)


def _k(name, **kw):
    base = dict(  # noqa: C408
        name=name,
        kind="gemm",
        ops=(name,),
        engine="matrix",
        engine_reason="",
        dtype="bf16",
        layout="",
        fusion=(),
        tile="128x128x64",
        sram_bytes=1,
        sram_capacity_bytes=2,
        spill_bytes=0.0,
        fits=True,
        bottleneck="compute",
        predicted_s=1e-6,
        launch_s=0.0,
        sync_s=0.0,
        barriers=0,
        traffic=(),
        layer_type="mlp",
        stages=2,
        evidence="",
        flops=1.0,
        model_flops=1.0,
        compute_s=1e-6,
        stall_s=0.0,
    )
    base.update(kw)
    fields = {f.name for f in dataclasses.fields(KernelResult)}
    return KernelResult(**{k: v for k, v in base.items() if k in fields})


def test_classification_follows_the_table_and_skips_consequences_of_a_cause():
    b = (_k("mlp", fusion=("gemm_epilogue",)),)
    c = (_k("mlp", dtype="fp32", predicted_s=3e-6, launch_s=1e-6),)
    found = [m for m, _, _ in classify_all(b, c)]
    assert found == ["fusion_broken", "precision_fallback"]  # launch growth follows from them


def test_a_consequence_is_named_when_no_cause_applies():
    b = (_k("mlp"),)
    c = (_k("mlp", predicted_s=2e-6, launch_s=1e-6),)
    assert [m for m, _, _ in classify_all(b, c)] == ["launch_sync_overhead"]


@pytest.mark.parametrize(
    ("change", "shown", "want"),
    [
        ("fusion rule off: gemm_epilogue", (), "fusion_broken"),
        ("format override *.attn.sdpa=fp32", (), "precision_fallback"),
        ("format override *.attn.sdpa=fp32", ("off_matrix_engine",), "off_matrix_engine"),
        (
            "format override x=fp32",
            ("precision_fallback", "off_matrix_engine"),
            "precision_fallback",
        ),
        ("tile *.attn.sdpa=512x512x64", (), "tile_wave_quantization"),
        ("tile *.attn.sdpa=512x512x64", ("tile_spills_sram",), "tile_spills_sram"),
        ("launch", (), "launch_sync_overhead"),
        ("barrier_per_layer", (), "launch_sync_overhead"),
        ("layout_propagation", (), "layout_transform_inserted"),
        ("hardware profile", (), "hardware_rate"),
    ],
)
def test_a_declared_change_works_through_the_table_causes(change, shown, want):
    assert mechanism_of_change(change, shown) == want


def test_an_unknown_change_falls_back_to_the_group():
    assert mechanism_of_change("chips", (), fallback="graph_changed") == "graph_changed"
    assert mechanism_of_group("runtime") == "launch_sync_overhead"
    assert mechanism_of_group("hardware") == "hardware_rate"
    assert mechanism_of_group("compiler") is None


def test_a_new_record_is_classified_owned_and_prioritised(monkeypatch):
    """The CONTRIBUTING recipe: one record is enough for classification and ownership."""

    def detector(g):
        return (None, "always") if g.b else None

    new = table.Mechanism(name="probe", label="probe", owner="platform owner", detector=detector)
    monkeypatch.setattr(table, "TABLE", (new, *TABLE))
    assert classify_all((_k("a"),), (_k("a"),))[0][0] == "probe"
    assert builtin_owners().owner_for("probe").role == "platform owner"


def test_every_scenario_expects_a_table_mechanism_and_its_owner():
    for s in SCENARIOS.values():
        if s.expected_mechanism:
            assert by_name(s.expected_mechanism).owner == s.expected_owner, s.name
        else:
            assert not s.expected_owner


def test_a_bad_scenario_file_is_one_line_naming_file_and_field(tmp_path):
    (tmp_path / "01-x.yaml").write_text(
        "schema_version: 1\nname: x\ntitle: t\nstory: s\nmodel: gpt2\nphase: prefill\n"
        "batch: 0\nseq: 8\nhardware: h100-sxm\nchanged: compiler\nbaseline: {}\ncandidate: {}\n"
        "expected_mechanism: null\nexpected_owner: null\n"
    )
    with pytest.raises(ConfigError, match=r"01-x\.yaml.*batch"):
        load_scenarios(tmp_path)


def test_two_scenario_files_with_one_name_are_refused(tmp_path):
    text = (
        "schema_version: 1\nname: x\ntitle: t\nstory: s\nmodel: gpt2\nphase: prefill\n"
        "batch: 1\nseq: 8\nhardware: h100-sxm\nchanged: compiler\nbaseline: {}\ncandidate: {}\n"
        "expected_mechanism: null\nexpected_owner: null\n"
    )
    (tmp_path / "01-x.yaml").write_text(text)
    (tmp_path / "02-x.yaml").write_text(text)
    with pytest.raises(ConfigError, match="already used"):
        load_scenarios(tmp_path)


@pytest.mark.parametrize(
    ("edit", "needle"),
    [
        (
            ("detector: fusion_broken", "detector: no_such_detector"),
            "no detector 'no_such_detector'",
        ),
        (("detector: fusion_broken", "detector: _bits"), "no detector '_bits'"),
        (("name: layout_transform_inserted", "name: fusion_broken"), "fusion_broken: named twice"),
        (("  owner: ML compiler engineer\n", "  owner: 3\n"), "owner"),
        (("consequence: true", "consequence: yes please"), "consequence"),
        (("schema_version: 1", "schema_version: 2"), "schema_version"),
    ],
)
def test_a_bad_table_file_is_one_line_naming_it(tmp_path, edit, needle):
    from workbench.errors import WorkbenchError

    text = table.TABLE_FILE.read_text().replace(*edit, 1)
    path = tmp_path / "mechanisms.yaml"
    path.write_text(text)
    with pytest.raises(WorkbenchError, match="mechanisms.yaml: .*" + needle.replace("'", ".")):
        table.load_table(path)


def test_the_shipped_table_loads_every_detector():
    assert all(m.detector is not None for m in TABLE if not m.anchor and m.name in PRIORITY[:10])
    assert table.load_table() == TABLE
