"""The published-measurement corpus (issue 10): schema, sources, floors, pinned errors, goal.

Data: workbench/fidelity/data/published.yaml (each row cites its source: paper table or figure,
repository file at a commit, vendor page). Pins: tests/golden/published_pins.json, written by
scripts/pin_published.py.
"""

import csv
import io
import json
import statistics
from pathlib import Path

import pytest

from workbench.cli import main
from workbench.fidelity import (
    CATEGORIES,
    CorpusError,
    load_corpus,
    parse_corpus,
    run_corpus,
)
from workbench.fidelity.crossval import cross_validate, publication
from workbench.fidelity.fits import FITS, shipped, solve_fits
from workbench.fidelity.runner import GOAL_CATEGORY_LOSO, GOAL_MEDIAN_LOSO
from workbench.hw import load_hardware

PINS = Path(__file__).with_name("published_pins.json")

GOOD_ROW = """
- id: gemm.example
  category: gemm
  split: heldout
  source: "Example paper, Table 1, row 2"
  source_key: example
  source_tag: V
  hardware: h100-sxm
  setup: {kind: gemm, m: 4096, n: 4096, k: 4096, dtype: bf16, software: cuBLAS}
  measured: 700
  unit: TFLOP/s
  expected_bottleneck: compute
  approximation: "One Linear through the mapper."
"""


def _doc(row: str = GOOD_ROW) -> str:
    return "schema_version: 1\nrows:\n" + row


@pytest.fixture(scope="module")
def corpus():
    return load_corpus()


@pytest.fixture(scope="module")
def cv():
    return cross_validate()


@pytest.fixture(scope="module")
def report(cv):
    return cv.in_sample


# --- schema and loader ----------------------------------------------------------------------
def test_a_good_row_parses():
    row = parse_corpus(_doc()).rows[0]
    assert row.metric == "flops_per_s"
    assert row.measured_si == pytest.approx(700e12)


@pytest.mark.parametrize(
    ("change", "words"),
    [
        (("measured: 700", "measured: -1"), "measured"),
        (("measured: 700", "measured: 700\n  colour: red"), "colour"),
        (("category: gemm", "category: gemv"), "category"),
        (("split: heldout", "split: test"), "split"),
        (("unit: TFLOP/s", "unit: furlongs"), "unit"),
        (('source: "Example paper, Table 1, row 2"', "source: x"), "source"),
        (("m: 4096, ", ""), "m"),
        (("source_key: example", "source_key: Bad Key"), "source_key"),
        (("measured: 700", "measured: 700\n  measured: 800"), "duplicate key"),
    ],
)
def test_bad_rows_are_refused_in_one_line(change, words):
    text = _doc(GOOD_ROW.replace(*change))
    with pytest.raises(CorpusError) as err:
        parse_corpus(text, "published.yaml")
    msg = str(err.value)
    assert "\n" not in msg
    assert msg.startswith("published.yaml: ")
    assert words in msg


def test_a_model_row_needs_exactly_one_of_preset_and_arch():
    row = GOOD_ROW.replace(
        "{kind: gemm, m: 4096, n: 4096, k: 4096, dtype: bf16, software: cuBLAS}",
        "{kind: decode, batch: 1, seq: 128, dtype: bf16, software: vLLM}",
    ).replace("TFLOP/s", "ms")
    with pytest.raises(CorpusError, match="exactly one of 'model'"):
        parse_corpus(_doc(row))


def test_duplicate_ids_and_bad_files_are_refused(tmp_path):
    with pytest.raises(CorpusError, match="duplicate row id"):
        parse_corpus(_doc(GOOD_ROW + GOOD_ROW))
    with pytest.raises(CorpusError, match=r"not found|cannot read"):
        load_corpus(tmp_path / "missing.yaml")
    bad = tmp_path / "bad.yaml"
    bad.write_text("rows: [\n")
    with pytest.raises(CorpusError, match="line 2: YAML syntax error"):
        load_corpus(bad)
    bad.write_text("- just a list\n")
    with pytest.raises(CorpusError, match="top level"):
        load_corpus(bad)


def test_an_unknown_profile_or_preset_is_one_line():
    with pytest.raises(CorpusError, match=r"row 'gemm\.example': hardware") as err:
        run_corpus(parse_corpus(_doc(GOOD_ROW.replace("h100-sxm", "no-such-chip"))))
    assert "\n" not in str(err.value)
    row = GOOD_ROW.replace(
        "{kind: gemm, m: 4096, n: 4096, k: 4096, dtype: bf16, software: cuBLAS}",
        "{kind: decode, model: llama9, batch: 1, seq: 128, dtype: bf16, software: vLLM}",
    ).replace("TFLOP/s", "ms")
    with pytest.raises(CorpusError, match="unknown model preset 'llama9'"):
        run_corpus(parse_corpus(_doc(row)))


def test_rows_are_frozen(corpus):
    with pytest.raises(Exception, match="frozen"):
        corpus.rows[0].measured = 1.0  # type: ignore[misc]


# --- the corpus itself ------------------------------------------------------------------------
def test_the_corpus_is_large_and_independent_enough(corpus):
    assert len(corpus.rows) >= 40, f"{len(corpus.rows)} rows; the issue asks for >= 40"
    assert len(corpus.sources) >= 8, f"sources {corpus.sources}; the issue asks for >= 8"


def test_every_row_has_a_source_and_an_approximation(corpus):
    for row in corpus.rows:
        assert len(row.source.split()) >= 4, row.id
        assert row.approximation.strip(), row.id


def test_every_category_has_rows_and_both_splits_exist(corpus):
    assert {r.category for r in corpus.rows} == set(CATEGORIES)
    assert {r.split for r in corpus.rows} == {"calibration", "heldout"}


def test_no_prediction_beats_its_roofline_floor(report):
    assert not report.floor_violations, (
        f"faster than max(FLOPs/peak, bytes/BW): {report.floor_violations}"
    )
    for r in report.rows:
        assert r.predicted > 0
        assert r.measured > 0


def test_no_published_figure_beats_its_roofline_floor(report):
    # A measurement faster than the floor means the row's configuration is misread.
    assert not report.impossible_measurements


def test_the_floor_check_catches_an_impossible_prediction(monkeypatch):
    from workbench.fidelity import Reproduction, runner
    from workbench.fidelity.reproduce import reproduce as real

    def too_fast(row, hw):
        r = real(row, hw)
        return Reproduction(
            predicted=r.predicted, bound=r.bound, time_s=r.floor_s / 2, floor_s=r.floor_s,
            bottleneck=r.bottleneck,
        )  # fmt: skip

    monkeypatch.setattr(runner, "reproduce", too_fast)
    rows = parse_corpus(_doc())
    assert runner.run_corpus(rows).floor_violations == ("gemm.example",)


# --- pinned predictions ---------------------------------------------------------------------
def test_every_row_holds_its_in_sample_and_cross_validated_pin(cv):
    doc = json.loads(PINS.read_text(encoding="utf-8"))
    pins, tol = doc["pins"], doc["tolerance"]
    assert tol <= 0.05
    hint = "if the move is an intended model change, re-run: python scripts/pin_published.py"
    missing = [r.id for r in cv.in_sample.rows if r.id not in pins]
    assert not missing, f"rows without a pin: {missing}; {hint}"
    stale = sorted(set(pins) - {r.id for r in cv.in_sample.rows})
    assert not stale, f"pins for rows no longer in the corpus: {stale}; {hint}"
    moved = []
    for key, rows in (("", cv.in_sample.rows), ("loso_", cv.loso.rows)):
        for r in rows:
            pin = pins[r.id]
            # NOTE: error = predicted / measured - 1, so a prediction's relative move is the
            # error's move over (1 + error)
            if abs((1 + r.error) / (1 + pin[key + "error"]) - 1) > tol:
                moved.append(
                    f"{r.id} {key}error: pinned {pin[key + 'error']:+.1%}, now {r.error:+.1%}"
                )
            assert pin[key + "predicted"] == pytest.approx(r.measured * (1 + pin[key + "error"]))
    assert not moved, f"errors moved more than {tol:.0%} of the prediction: {moved}; {hint}"


@pytest.mark.parametrize(
    "row_id",
    [
        "attn.fa2.a100.peak",
        "attn.fa3.h100.s16k",
        "attn.fa2.h100.peak",
        "gen.nemo.h100.llama2-7b.bs1",
        "cnn.resnet50.paddle-trt.t4.fp16.bs1",
        "train.fms-fsdp.a100.llama2-7b.hsdp",
    ],
)
def test_a_fitted_figure_still_reproduces_its_calibration_row(report, row_id):
    # Each of these rows fits one figure (scripts/fit_attention_classes.py, fit_step_overhead);
    # a model change that moves it must re-fit the figure, not only re-pin the prediction.
    row = next(r for r in report.rows if r.id == row_id)
    assert row.split == "calibration"
    assert row.abs_error < 0.01, f"{row_id}: {row.error:+.2%}; re-fit its figure"


def test_training_is_within_issue_27s_bound(cv):
    """Issue 27's done line: the training category's leave-one-source-out median |error| is at
    most 15% and its signed median (+ optimistic) within +-10%, both cross-validated."""
    loso = cv.loso.category_medians("all")["training"]
    signed = statistics.median(r.error for r in cv.loso.rows if r.category == "training")
    assert loso <= 0.15, f"training LOSO median |error| {loso:.1%}"
    assert abs(signed) <= 0.10, f"training LOSO signed median {signed:+.1%}"


@pytest.mark.xfail(
    strict=True,
    reason="issue 27: whole publications the model had never seen entered at first contact "
    "(training: the FlashAttention repository's GPT3 table, llm-foundry's H100 MPT tables, "
    "fms-fsdp, Megatron-Bridge; encoders: FasterTransformer's BERT guide, DeepLearningExamples' "
    "TensorRT 7 README); with the eager stacks' fitted training efficiency the training category "
    "is within its bound, but the LOSO median (13.6%) is still over 12%: encoders (18.2%) and "
    "short-prompt TTFT (19.4%) hold it up; rows are never dropped to meet the goal",
)
def test_held_out_goal(cv):
    """Issue 19's goal, cross-validated: LOSO median |error| <= 12%, every category <= 20%."""
    med = cv.loso.median("all")
    cats = cv.loso.category_medians("all")
    assert med is not None
    assert med <= GOAL_MEDIAN_LOSO, f"leave-one-source-out median {med:.1%}"
    worst = max(cats, key=lambda c: cats[c])
    assert cats[worst] <= GOAL_CATEGORY_LOSO, f"{worst} median {cats[worst]:.1%}"


# --- fits as code and leave-one-source-out ----------------------------------------------------
def test_every_fit_reproduces_its_shipped_figure(corpus, cv):
    # Solved on the whole corpus, each fit must give the figure the profiles, classes and rows
    # ship (to their rounding): a model change that moves a fit fails here until it is re-fitted.
    profiles = {r.hardware: load_hardware(r.hardware) for r in corpus.rows}
    state = solve_fits(corpus.rows, profiles)
    ship = shipped(profiles, corpus.rows)
    assert set(state.values) == set(ship) == {f.name for f in FITS}
    for name, value in state.values.items():
        rows = next(f.rows for f in FITS if f.name == name)
        assert state.origin[name] == (rows[0] if rows else "pooled")
        assert value == pytest.approx(ship[name], rel=0.01), name


def test_leaving_a_source_out_refits_without_it(corpus):
    profiles = {r.hardware: load_hardware(r.hardware) for r in corpus.rows}
    full = solve_fits(corpus.rows, profiles)
    no_mamf = solve_fits(
        tuple(r for r in corpus.rows if publication(r.source_key) != "ml-engineering-mamf"),
        profiles,
    )
    # a100's efficiency keeps its first row (Azure's fixed-shape run); h100's has none: pooled
    a100, h100 = "a100-80gb efficiency", "h100-sxm efficiency"
    assert no_mamf.origin[a100] == full.origin[a100] == "gemm.azure.a100-80gb.8192x8192x8192"
    assert no_mamf.origin[h100] == "pooled"
    assert no_mamf.values[h100] == no_mamf.values[a100]
    # without Azure's guide, a100's falls to its next row (another publication: MAMF)
    no_azure = solve_fits(
        tuple(r for r in corpus.rows if r.source_key != "azure-ai-benchmarking-guide"), profiles
    )
    assert no_azure.origin[a100] == "gemm.mamf.a100"
    assert no_azure.values[a100] != pytest.approx(full.values[a100], rel=0.01)
    no_nemo = solve_fits(tuple(r for r in corpus.rows if r.source_key != "nemo-perf"), profiles)
    trt = next(f.name for f in FITS if f.kind == "step_overhead_s")
    assert "tensorrt-llm-0.5" in trt
    assert no_nemo.values[trt] is None
    assert no_nemo.origin[trt] == "unfitted"
    unchanged = solve_fits(tuple(r for r in corpus.rows if r.source_key != "palm-paper"), profiles)
    assert unchanged.values == pytest.approx(full.values)


def test_cross_validation_predicts_each_source_without_it(cv):
    ins = {r.id: r for r in cv.in_sample.rows}
    loso = {r.id: r for r in cv.loso.rows}
    assert list(loso) == list(ins)
    assert {f.publication for f in cv.folds} == {publication(r.source_key) for r in ins.values()}
    assert publication("trt-bert-demo-10-4") == publication("trt-bert-demo-10-11")
    for f in cv.folds:
        if f.refitted is None:  # nothing fitted from it: the shipped model is the re-fit
            assert all(loso[i] is ins[i] for i in f.rows)
    # a calibration row predicted without its own publication no longer reproduces itself
    row = "gen.nemo.h100.llama2-7b.bs1"
    assert ins[row].abs_error < 0.01 < loso[row].abs_error
    lines = "\n".join(cv.summary_lines())
    assert f"{cv.loso.median('all'):.1%}" in lines
    assert f"in-sample held-out {cv.in_sample.median('heldout'):.1%}" in lines


def test_optimism_is_positive_when_the_prediction_is_faster(report):
    times = {"s", "ms", "us"}
    for r in report.rows:
        faster = r.predicted < r.measured if r.unit in times else r.predicted > r.measured
        assert (r.optimism > 0) == faster, r.id
    assert set(report.signed_medians("heldout")) == set(report.category_medians("heldout"))


def test_summaries_are_medians_of_the_rows(report):
    held = sorted(r.abs_error for r in report.rows if r.split == "heldout")
    assert report.median("heldout") == pytest.approx(
        (held[(len(held) - 1) // 2] + held[len(held) // 2]) / 2
    )
    assert set(report.category_medians("calibration")) <= set(CATEGORIES)


# --- the command line and the chart ---------------------------------------------------------
def test_cli_json_round_trips(capsys, report):
    assert main(["validate", "--published", "--split", "calibration", "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert len(doc["rows"]) == sum(1 for r in report.rows if r.split == "calibration")
    assert doc["median_abs_error"]["calibration"] == pytest.approx(report.median("calibration"))
    assert doc["floor_violations"] == []


def test_cli_csv_and_split(capsys):
    assert main(["validate", "--published", "--split", "calibration", "--format", "csv"]) == 0
    rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    assert rows
    assert {r["split"] for r in rows} == {"calibration"}
    assert float(rows[0]["predicted"]) > 0


def test_cli_table_prints_the_summary(capsys):
    assert main(["validate", "--published", "--split", "heldout"]) == 0
    out = capsys.readouterr().out
    assert "median |error| heldout" in out
    assert "held-out goal" in out
    assert "--split all only" in out


def test_cli_prints_the_cross_validated_headline(capsys, cv):
    assert main(["validate", "--published"]) == 0
    out = capsys.readouterr().out.splitlines()
    head = out.index("== headline: leave-one-source-out cross-validation ==")
    assert out[head + 1 :] == cv.summary_lines()


@pytest.mark.parametrize(
    "argv",
    [
        ["validate", "--published", "--split", "train"],
        ["validate", "--published", "--chart", "out.pdf"],
        ["validate", "--format", "csv"],
    ],
)
def test_cli_bad_arguments_exit_2(capsys, argv):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1


def test_cli_writes_a_chart_that_reads_back(tmp_path, capsys):
    out = tmp_path / "fidelity.html"
    argv = ["validate", "--published", "--split", "calibration", "--format", "json"]
    assert main([*argv, "--chart", str(out)]) == 0
    capsys.readouterr()
    page = out.read_text(encoding="utf-8")
    assert "vega" in page.lower()
    assert "gemm.mamf.h100" in page


def test_cli_writes_an_svg_chart(tmp_path, capsys):
    out = tmp_path / "fidelity.svg"
    assert main(["validate", "--published", "--split", "calibration", "--chart", str(out)]) == 0
    assert "chart written to" in capsys.readouterr().out
    assert out.read_text(encoding="utf-8").lstrip().startswith("<svg")


def test_chart_spec(report):
    from workbench.report.charts.fidelity import BAND, fidelity_chart, fidelity_points

    spec = fidelity_chart(report).to_dict()
    layers = spec["layer"]
    assert len(layers) == 3
    dots = layers[2]
    enc = dots["encoding"]
    assert enc["x"]["scale"]["type"] == "log"
    assert enc["y"]["scale"]["type"] == "log"
    assert enc["color"]["field"] == "category"
    assert enc["shape"]["field"] == "split"
    assert "source" in [t["field"] for t in enc["tooltip"]]
    band = layers[0]["data"]["values"]
    assert band[0]["hi"] / band[0]["y"] == pytest.approx(1 + BAND)
    assert len(fidelity_points(report)) == len(report.rows)


def _pin_script():
    import importlib.util

    path = Path(__file__).resolve().parents[2] / "scripts" / "pin_published.py"
    spec = importlib.util.spec_from_file_location("pin_published", path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_pin_script_checks_and_writes_atomically(tmp_path, capsys, monkeypatch, cv):
    script = _pin_script()
    pins = tmp_path / "pins.json"
    monkeypatch.setattr(script, "PINS", pins)
    monkeypatch.setattr(script, "cross_validate", lambda: cv)
    assert script.main([]) == 0
    assert script.main(["--check"]) == 0
    assert "all pins hold" in capsys.readouterr().out
    doc = json.loads(pins.read_text(encoding="utf-8"))
    moved = next(iter(doc["pins"]))
    doc["pins"][moved]["loso_predicted"] *= 1.1
    pins.write_text(json.dumps(doc), encoding="utf-8")
    assert script.main(["--check"]) == 1
    assert moved in capsys.readouterr().out
    out = tmp_path / "other.json"
    doc = {"schema_version": 1, "tolerance": 0.03, "pins": {"a": {"predicted": 1.0}}}
    script.write(doc, out)
    assert json.loads(out.read_text(encoding="utf-8")) == doc
    assert sorted(p.name for p in tmp_path.iterdir()) == ["other.json", "pins.json"]


# --- the README's figures are the code's --------------------------------------------------------
def test_readme_prints_the_cross_validated_headline_verbatim(cv):
    """README.md holds exactly what `workbench validate --published --format md` prints."""
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    assert cv.markdown() in readme, (
        "README's fidelity tables differ from the code: paste the output of "
        "`workbench validate --published --format md`"
    )


def test_validate_published_md_prints_the_headline(capsys):
    assert main(["validate", "--published", "--format", "md"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("| figure | rows | median")
    assert "**leave-one-source-out, all rows**" in out
    assert "nan" not in out.lower()


def test_validate_published_md_refuses_a_split(capsys):
    assert main(["validate", "--published", "--format", "md", "--split", "heldout"]) == 2
    err = capsys.readouterr().err
    assert "--format md" in err
    assert err.count("\n") == 1


# --- what leave-one-source-out cannot see (issue 27) ------------------------------------------
def test_the_independence_figures_are_the_rows(cv):
    from workbench.fidelity.provenance import load_first_contact

    ind = cv.independence
    ins = {r.id: r for r in cv.in_sample.rows}
    moved = [r for r in cv.loso.rows if abs(r.predicted / ins[r.id].predicted - 1) > 1e-9]
    assert ind.changed["all"] == (len(moved), len(cv.loso.rows))
    assert sum(n for c, (n, _) in ind.changed.items() if c != "all") == len(moved)
    # a publication that informed nothing holds no fitted row, so LOSO leaves its rows alone
    nothing = set(ind.uninformed_publications)
    assert "dle-bert-trt7-readme" in nothing
    assert "fastertransformer-bert-guide" not in nothing  # it motivated the INT8 fit
    rows = [r for r in cv.loso.rows if publication(r.source_key) in nothing]
    assert not [r for r in rows if r in moved]
    assert ind.uninformed["all"].rows == len(rows)
    expected = statistics.median(r.abs_error for r in rows)
    assert ind.uninformed["all"].median == pytest.approx(expected)
    recorded = [abs(e) for rec in load_first_contact().values() for _, e in rec.rows.values()]
    assert ind.first_contact["all"].median == pytest.approx(statistics.median(recorded))
    doc = cv.as_dict()["independence"]
    assert doc["rows_changed"]["all"] == [len(moved), len(cv.loso.rows)]
    lines = "\n".join(cv.summary_lines())
    assert f"{len(moved)} of {len(cv.loso.rows)}" in lines
    assert "first contact" in cv.markdown()


def test_the_headline_says_how_the_folds_chose_their_rows(cv):
    line = next(x for x in cv.summary_lines() if x.startswith("a fit's row re-decided per fold"))
    c = cv.row_choices()
    assert f"{c['judged']} judged by the fold's own rows" in line
    assert 0 < c["judged"] <= c["choices"]
    assert cv.as_dict()["fit_row_choices"] == c
