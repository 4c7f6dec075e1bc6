"""Every text the lesson modules render, with the arguments the lessons pass (for the snapshot).

One function per lesson returns ``{case id: text}``: the claims and texts the notebooks show
(called as ``lessons/*.ipynb`` call them), every public claim that has defaults (called with
them), and each self-check's wording at a first and a second wrong try (hints and graded hint).
``python -m tests.unit.exercises._text_cases`` rewrites the fixture; do that only in a commit that
says which sentence changed and why.
"""

from __future__ import annotations

import inspect
import json
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

from workbench.exercises import _check

FIXTURE = Path(__file__).with_name("lesson_texts.json")
WRONG = "x-wrong"


def _hints(make: Callable[[object], object]) -> str:
    """The check's result at a first and a second wrong try, and for an untouched stub."""
    _check._ATTEMPTS.clear()
    first, second = repr(make(WRONG)), repr(make(WRONG))
    return "\n--\n".join((first, second, repr(make(None))))


def _defaults(module: ModuleType, out: dict[str, str], prefix: str) -> None:
    """Every public ``*_claim`` / ``*_text`` of ``module`` that needs no argument, at defaults."""
    for name in getattr(module, "__all__", ()):
        fn = getattr(module, name)
        if not (callable(fn) and (name.endswith("_claim") or name.endswith("_text"))):
            continue
        params = inspect.signature(fn).parameters.values()
        if any(p.default is inspect.Parameter.empty for p in params):
            continue
        value = fn()
        # NOTE: a gated claim's full text (its placeholder depends on the session's checks)
        out.setdefault(f"{prefix}.{name}()", getattr(value, "text", None) or str(value))


def lesson01() -> dict[str, str]:
    from workbench.exercises import lesson01, lesson02, lesson08

    out = {
        "lesson01.check_bottleneck": _hints(
            lambda a: lesson02.check_bottleneck(
                a, kernel="layers.0.attn.sdpa", phase="decode", hardware_name="h100-sxm"
            )
        ),
        "lesson01.matmul_share_claim": str(lesson01.matmul_share_claim("llama2-7b", seq=2048)),
        "lesson01.decode_claim": str(lesson01.decode_claim(hidden=4096, dtype="bf16")),
        "lesson01.batch_attention_claim": str(
            lesson01.batch_attention_claim("llama2-7b", seq=2048, batches=(1, 8))
        ),
        "lesson01.widget_claim": str(lesson08.widget_claim("llama2-7b", "h100-sxm", batch=1)),
        "lesson01.prefill_claim": str(lesson01.prefill_claim("llama2-7b", "h100-sxm", seq=2048)),
        "lesson01.check_linear_flops": _hints(
            lambda a: lesson01.check_linear_flops(
                a, tokens=1536, in_features=4096, out_features=11008
            )
        ),
        "lesson01.check_linear_intensity": _hints(
            lambda a: lesson01.check_linear_intensity(
                a, tokens=16, in_features=4096, out_features=4096, dtype="bf16"
            )
        ),
        "lesson01.check_param_count": _hints(
            lambda a: lesson01.check_param_count(a, model="llama2-7b")
        ),
        "lesson01.token_claim": _call(lesson01.token_claim, 4096, (1, 16, 2048), dtype="bf16").text,
        "lesson01.pitfall_claim": str(lesson01.pitfall_claim("llama2-7b", "h100-sxm", seq=2048)),
    }
    _defaults(lesson01, out, "lesson01")
    return out


def _call(fn: Callable[..., object], *args: object, **kwargs: object) -> object:
    """Call ``fn`` with the hardware profile ``h100-sxm`` under its argument's name, whichever."""
    params = inspect.signature(fn).parameters
    key = "hardware_name" if "hardware_name" in params else "hw"
    return fn(*args, **{key: "h100-sxm"}, **kwargs)


def lesson02() -> dict[str, str]:
    from workbench.exercises import fidelity, lesson02

    out = {
        "lesson02.check_bottleneck": _hints(
            lambda a: lesson02.check_bottleneck(
                a, kernel="layers.0.attn_norm", phase="prefill", hardware_name="h100-sxm"
            )
        ),
        "lesson02.ridge_claim": str(lesson02.ridge_claim(("a100-80gb", "h100-sxm", "h200"))),
        "lesson02.phase_claim": str(lesson02.phase_claim("llama2-7b", "h100-sxm", seq=2048)),
        "lesson02.explorer_claim": str(lesson02.explorer_claim()),
        "lesson02.fidelity_claim": str(
            fidelity.fidelity_claim(fidelity.fidelity_report(), split="heldout")
        ),
        "lesson02.check_ridge_point": _hints(
            lambda a: lesson02.check_ridge_point(a, hardware_name="h100-sxm", dtype="fp8_e4m3")
        ),
        "lesson02.check_side_of_ridge": _hints(
            lambda a: lesson02.check_side_of_ridge(a, batch=512, seq=128, hardware_name="h100-sxm")
        ),
        "lesson02.check_decode_floor": _hints(
            lambda a: lesson02.check_decode_floor(
                a, model="llama2-7b", hardware_name="h100-sxm", dtype="bf16"
            )
        ),
        "lesson02.takeaway_claim": str(lesson02.takeaway_claim("llama2-7b", "h100-sxm", seq=2048)),
        "lesson02.peak_claim": str(lesson02.peak_claim("llama2-7b", "h100-sxm")),
        "lesson02.pitfall_claim": lesson02.pitfall_claim("llama2-7b", "h100-sxm", seq=2048).text,
    }
    _defaults(lesson02, out, "lesson02")
    return out


def lesson03() -> dict[str, str]:
    from workbench.exercises import lesson02, lesson03

    waves = lesson03.wave_table(
        m=2304, k=4096, ns=(1408, 1536, 1664, 1792, 2048, 2304, 3072), tile=(256, 128)
    )
    tiles = lesson03.tile_table(((256, 256), (257, 256)), tile=(128, 128))
    out = {
        "lesson03.check_bottleneck": _hints(
            lambda a: lesson02.check_bottleneck(
                a, kernel="layers.0.mlp.up_proj", phase="prefill", hardware_name="h100-sxm"
            )
        ),
        "lesson03.accumulator_claim": str(lesson03.accumulator_claim("a100-80gb")),
        "lesson03.wave_claim": str(lesson03.wave_claim(waves)),
        "lesson03.search_claim": str(
            lesson03.search_claim(m=2304, n=1664, k=4096, tile=(256, 128))
        ),
        "lesson03.check_tiles": _hints(
            lambda a: lesson03.check_tiles(a, m=1000, n=3000, tile=(128, 256))
        ),
        "lesson03.check_waves": _hints(
            lambda a: lesson03.check_waves(
                a, m=2304, n=2560, k=4096, tile=(256, 128), hardware_name="a100-80gb"
            )
        ),
        "lesson03.tile_size_claim": str(
            lesson03.tile_size_claim(
                ((128, 128, 64), (256, 128, 64)),
                m=2048,
                n=11008,
                k=4096,
                hardware_name="a100-80gb",
            )
        ),
        "lesson03.wave_rule_claim": str(lesson03.wave_rule_claim(waves)),
        "lesson03.padding_claim": str(lesson03.padding_claim(tiles)),
        "lesson03.split_k_claim": str(
            lesson03.split_k_claim(
                small=(2304, 1664, 4096), large=(8192, 8192, 4096), tile=(256, 128), split=2
            )
        ),
    }
    _defaults(lesson03, out, "lesson03")
    return out


def lesson04() -> dict[str, str]:
    from workbench.exercises import lesson04

    savings = lesson04.fusion_savings("llama2-7b", "h100-sxm", phase="prefill", seq=2048)
    traffic = lesson04.attention_traffic((512, 1024, 2048, 4096, 8192), "llama2-7b", "h100-sxm")
    out = {
        "lesson04.check_fusion_effect": _hints(
            lambda a: lesson04.check_fusion_effect(a, rule="flash_attention", phase="decode")
        ),
        "lesson04.fusion_claim": str(lesson04.fusion_claim(savings)),
        "lesson04.traffic_claim": str(lesson04.traffic_claim(traffic)),
        "lesson04.epilogue_claim": str(lesson04.epilogue_claim("llama2-7b", "h100-sxm", seq=2048)),
        "lesson04.flash_claim": str(lesson04.flash_claim("llama2-7b", "h100-sxm", seq=2048)),
        "lesson04.seq_claim": str(lesson04.seq_claim("llama2-7b", "h100-sxm", seqs=(2048, 4096))),
        "lesson04.check_score_matrix_bytes": _hints(
            lambda a: lesson04.check_score_matrix_bytes(a, model="llama2-7b", seq=4096)
        ),
        "lesson04.check_fusion_savings": _hints(
            lambda a: _call(
                lesson04.check_fusion_savings, a, rule="gemm_epilogue", model="llama2-7b", seq=2048
            )
        ),
        "lesson04.boundary_claim": str(
            lesson04.boundary_claim(savings, "llama2-7b", "h100-sxm", seq=2048)
        ),
        "lesson04.takeaway_claim": str(
            lesson04.takeaway_claim(
                "llama2-7b", "h100-sxm", seqs=(512, 2048, 4096), decode_seq=2048
            )
        ),
        "lesson04.overlap_claim": str(
            lesson04.overlap_claim(savings, "llama2-7b", "h100-sxm", phase="prefill", seq=2048)
        ),
        "lesson04.compute_bound_claim": str(
            lesson04.compute_bound_claim("llama2-7b", "h100-sxm", seq=2048, kernel="o_proj")
        ),
        "lesson04.spill_claim": str(
            lesson04.spill_claim(
                "llama2-7b",
                "h100-sxm",
                seq=2048,
                kernel="layers.0.mlp.up_proj",
                tile=(512, 256, 128),
            )
        ),
    }
    _defaults(lesson04, out, "lesson04")
    return out


def lesson05() -> dict[str, str]:
    from workbench.exercises import lesson05

    dec = lesson05.format_table("llama2-7b", "h100-sxm", phase="decode")
    pre = lesson05.format_table("llama2-7b", "h100-sxm", phase="prefill")
    quality = lesson05.quality_table(m=64, n=512, k=1024, seed=0)
    layouts = lesson05.layout_table("resnet50", "h100-sxm", batch=32)
    out = {
        "lesson05.check_format_effect": _hints(
            lambda a: lesson05.check_format_effect(a, weight_dtype="int8", phase="prefill")
        ),
        "lesson05.format_claim": str(lesson05.format_claim(dec, pre)),
        "lesson05.quality_claim": str(lesson05.quality_claim(quality, dec)),
        "lesson05.explorer_claim": str(
            lesson05.explorer_claim("llama2-7b", "h100-sxm", seq=2048, to="fp8_e4m3")
        ),
        "lesson05.layout_claim": str(lesson05.layout_claim(layouts)),
        "lesson05.check_int8_bytes": _hints(
            lambda a: lesson05.check_int8_bytes(a, in_features=4096, out_features=11008)
        ),
        "lesson05.check_layout_transforms": _hints(
            lambda a: _call(
                lesson05.check_layout_transforms,
                a,
                model="resnet50",
                layout="NHWC",
                propagation=False,
            )
        ),
        "lesson05.takeaway_claim": str(lesson05.takeaway_claim(dec, pre)),
        # gated behind Exercise 2: its full text
        "lesson05.layout_takeaway_claim": lesson05.layout_takeaway_claim(
            layouts, "resnet50", "h100-sxm", batch=32
        ).text,
        "lesson05.pitfall_claim": str(lesson05.pitfall_claim(layouts, "llama2-7b", "h100-sxm")),
    }
    _defaults(lesson05, out, "lesson05")
    return out


def lesson06() -> dict[str, str]:
    from workbench.exercises import lesson06
    from workbench.review import synthetic_scenario_traces

    pair = synthetic_scenario_traces("epilogue-fusion")
    out = {
        "lesson06.check_stall_prediction": _hints(
            lambda a: lesson06.check_stall_prediction(
                a, scenario="eager-launch", layer_type="attention"
            )
        ),
        "lesson06.synthetic_claim": str(lesson06.synthetic_claim(pair)),
        "lesson06.gpu_lag_claim": str(lesson06.gpu_lag_claim()),
        "lesson06.launch_lag_claim": str(lesson06.launch_lag_claim()),
        "lesson06.measured_pair_text": lesson06.measured_pair_text(),
        "lesson06.pair_differences_claim": str(lesson06.pair_differences_claim()),
        "lesson06.expected_table_text": lesson06.expected_table_text(),
        "lesson06.measured_headline_claim": str(lesson06.measured_headline_claim()),
        "lesson06.check_first_failing.long": _hints(
            lambda a: lesson06.check_first_failing("long-seq-tile", a, a)
        ),
        "lesson06.check_first_failing.barrier": _hints(
            lambda a: lesson06.check_first_failing("barrier-per-layer", a, a)
        ),
        "lesson06.check_step_time": _hints(lesson06.check_step_time),
        "lesson06.exercise_move_claim": lesson06.exercise_move_claim("long-seq-tile", "Ex 1").text,
        "lesson06.takeaways": str(lesson06.takeaways()),
        "lesson06.pitfalls": str(lesson06.pitfalls()),
    }
    for control, value in (
        ("changed", "(none)"), ("changed", "runtime"), ("scenario", "long-seq-tile"),
        ("scenario", "barrier-per-layer"),
    ):  # fmt: skip
        out[f"lesson06.panel_move_claim[{control}={value}]"] = str(
            lesson06.panel_move_claim(control, value)
        )
    _defaults(lesson06, out, "lesson06")
    return out


def lesson07() -> dict[str, str]:
    from workbench.exercises import lesson07

    mapping = lesson07.review_mapping("gpt2", "h100-sxm", phase="prefill", seq=512)
    out = {
        "lesson07.check_release_decision.unchanged": _hints(
            lambda a: lesson07.check_release_decision("unchanged", a, simulate=False)
        ),
        "lesson07.panel_claim": str(lesson07.panel_claim("unchanged", ("barrier-per-layer",))),
        "lesson07.check_dominant_bottleneck": _hints(
            lambda a: lesson07.check_dominant_bottleneck(mapping, a)
        ),
        "lesson07.dominant_claim": lesson07.dominant_claim(mapping).text,  # gated: full text
        "lesson07.check_release_decision.barrier": _hints(
            lambda a: lesson07.check_release_decision("barrier-per-layer", a, scale=4)
        ),
        "lesson07.decision_claim": lesson07.decision_claim("barrier-per-layer", scale=4).text,
        "lesson07.check_barrier_cost": _hints(
            lambda a: _call(lesson07.check_barrier_cost, a, model="llama2-7b", seq=2048)
        ),
        "lesson07.stale_pitfall_claim": str(
            lesson07.stale_pitfall_claim("gpt2", "h100-sxm", seq=512, other_seq=1024)
        ),
        "lesson07.slice_pitfall_claim": str(lesson07.slice_pitfall_claim()),
    }
    _defaults(lesson07, out, "lesson07")
    return out


def lesson08() -> dict[str, str]:
    from workbench.exercises import lesson02, lesson08

    kv = lesson08.kv_growth_table("llama2-7b", "h100-sxm", contexts=(512, 2048, 4095), batch=8)
    phases = lesson08.phase_table("llama2-7b", "h100-sxm", seq=2048)
    out = {
        "lesson08.question_claim": str(lesson08.question_claim(kv, 2048, 4095)),
        "lesson08.check_bottleneck": _hints(
            lambda a: lesson02.check_bottleneck(
                a,
                kernel="layers.0.mlp.up_proj",
                phase="decode",
                batch=64,
                hardware_name="h100-sxm",
            )
        ),
        "lesson08.phase_claim": str(lesson08.phase_claim(phases)),
        "lesson08.kv_claim": str(lesson08.kv_claim(kv, "llama2-7b")),
        "lesson08.gqa_claim": str(lesson08.gqa_claim("llama2-7b", "llama3-8b")),
        "lesson08.fit_claim": str(
            lesson08.fit_claim("llama2-7b", "h100-sxm", batch=64, context=4096)
        ),
        "lesson08.widget_claim": str(lesson08.widget_claim("llama2-7b", "h100-sxm", batch=8)),
        "lesson08.explorer_claim": str(lesson08.explorer_claim()),
        "lesson08.check_kv_bytes": _hints(
            lambda a: lesson08.check_kv_bytes(a, model="llama2-7b", context=3000, batch=16)
        ),
        "lesson08.check_decode_bottleneck": _hints(
            lambda a: _call(lesson08.check_decode_bottleneck, a, model="llama2-7b", context=4095)
        ),
        "lesson08.takeaway_claim": str(lesson08.takeaway_claim("llama2-7b", "h100-sxm")),
        "lesson08.kv_takeaway_claim": str(lesson08.kv_takeaway_claim(kv, "llama2-7b", "llama3-8b")),
        "lesson08.pitfall_claim": str(lesson08.pitfall_claim("llama2-7b", "h100-sxm", phases)),
    }
    _defaults(lesson08, out, "lesson08")
    return out


def lesson09() -> dict[str, str]:
    from workbench.exercises import lesson09

    plans = lesson09.plan_table("llama2-7b", "h100-sxm", batches=(1, 8, 64), seqs=(16, 128, 2048))
    variants = lesson09.variant_table(
        ["llama2-7b", "llama3-8b", "mistral-7b", "llama2-13b"], "h100-sxm", seq=512
    )
    out = {
        "lesson09.check_plan_prediction": _hints(
            lambda a: _call(
                lesson09.check_plan_prediction,
                a,
                model="llama2-7b",
                first=(1, 128),
                second=(8, 16),
            )
        ),
        "lesson09.plan_claim": lesson09.plan_claim(plans).text,  # gated: its full text
        "lesson09.variant_claim": str(lesson09.variant_claim(variants)),
        "lesson09.lab_claim": str(lesson09.lab_claim((("tile_n", 128), ("tile_n", 32)))),
        "lesson09.check_distinct_plans": _hints(
            lambda a: lesson09.check_distinct_plans(a, table=plans)
        ),
        "lesson09.check_tile_products": _hints(
            lambda a: lesson09.check_tile_products(a, model="gpt2", seq=64)
        ),
        "lesson09.check_waves": _hints(
            lambda a: _call(lesson09.check_waves, a, model="llama2-7b", batch=1, seq=2048)
        ),
        "lesson09.shape_takeaway_claim": str(lesson09.shape_takeaway_claim(plans, variants)),
        "lesson09.static_plan_claim": str(
            _call(
                lesson09.static_plan_claim,
                "llama2-7b",
                tuned_at=(1, 16),
                shapes=((8, 128), (1, 2048), (64, 2048)),
            )
        ),
    }
    _defaults(lesson09, out, "lesson09")
    return out


def lesson10() -> dict[str, str]:
    from workbench.exercises import lesson10

    rates = lesson10.RATES
    points = lesson10.sweep("llama2-7b", "h100-sxm", rates)
    trace = lesson10.trace_table("llama2-7b", "h100-sxm", rate=5.0)
    out = {
        "lesson10.question_claim": str(lesson10.question_claim(points, sla_s=15.0)),
        "lesson10.tail_claim": str(lesson10.tail_claim(points)),
        "lesson10.load_claim": str(lesson10.load_claim(points)),
        "lesson10.unstable_claim": str(_call(lesson10.unstable_claim, points, model="llama2-7b")),
        "lesson10.check_tail_prediction": _hints(lesson10.check_tail_prediction),
        "lesson10.trace_claim": str(lesson10.trace_claim(trace)),
        "lesson10.knee_claim": str(lesson10.knee_claim(points, sla_s=15.0)),
        "lesson10.widget_claim": str(lesson10.widget_claim(n=1500, rates=rates)),
        "lesson10.check_littles_law": _hints(
            lambda a: _call(lesson10.check_littles_law, a, model="llama2-7b", rate=5.0)
        ),
        "lesson10.check_knee_rate": _hints(
            lambda a: lesson10.check_knee_rate(a, points=points, sla_s=13.5)
        ),
        "lesson10.estimate_claim": _call(  # gated: its full text
            lesson10.estimate_claim, points, 13.5, model="llama2-7b"
        ).text,
        "lesson10.takeaway_claim": str(
            _call(lesson10.takeaway_claim, points, 15.0, model="llama2-7b")
        ),
        "lesson10.pitfall_claim": str(
            _call(lesson10.pitfall_claim, points, model="llama2-7b", rate=5.0)
        ),
    }
    _defaults(lesson10, out, "lesson10")
    return out


def lesson11() -> dict[str, str]:
    from workbench.exercises import lesson11

    platforms = ["h100-sxm", "h200", "mi300x", "gaudi3", "a100-80gb"]
    rows = lesson11.matrix(["llama2-7b"], platforms, sla_s=20.0)
    trap = lesson11.trap_table(lesson11.gemm_table(platforms, n=8192), rows)
    gaps = lesson11.trace_gap_table(
        "llama2-7b", ["gaudi3", "h200"], sla_s=20.0, max_batch=16, n_requests=1000
    )
    out = {
        "lesson11.check_gemm_prediction": _hints(
            lambda a: lesson11.check_gemm_prediction(a, platforms=("h200", "gaudi3"), n=8192)
        ),
        "lesson11.trap_claim": str(lesson11.trap_claim(trap)),
        "lesson11.bound_claim": str(lesson11.bound_claim(platforms, trap)),
        "lesson11.widget_claim": str(lesson11.widget_claim(n=1000)),
        "lesson11.trace_gap_claim": str(lesson11.trace_gap_claim(gaps, "gaudi3", "h200")),
        "lesson11.check_fit_headroom": _hints(
            lambda a: lesson11.check_fit_headroom(
                a, model="llama2-70b", platform="h200", chips=2, batch=16, context=4096
            )
        ),
        "lesson11.fit_compare_claim": lesson11.fit_compare_claim(  # gated: its full text
            "llama2-70b", ["h100-sxm", "h200"], (1, 2, 4, 8), exercise=("h200", 2)
        ).text,
        "lesson11.check_scores": _hints(
            lambda a: lesson11.check_scores(a, rows=rows, platforms=("h100-sxm", "mi300x"))
        ),
        "lesson11.shortlist_claim": lesson11.shortlist_claim(rows, ("h100-sxm", "mi300x")).text,
        "lesson11.fit_claim": str(
            lesson11.fit_claim("llama2-70b", "h100-sxm", (1, 2, 4, 8), batch=16, context=4096)
        ),
        "lesson11.check_decode_expected": _hints(
            lambda a: lesson11.check_decode_expected(a, model="llama2-7b", platform="h200")
        ),
        "lesson11.expected_claim": lesson11.expected_claim("llama2-7b", ["gaudi3", "h200"]).text,
    }
    _defaults(lesson11, out, "lesson11")
    return out


def lesson12() -> dict[str, str]:
    from workbench.exercises import lesson12

    table = lesson12.trajectory_table("llama2-7b", "h100-sxm", "hbm")
    out = {
        "lesson12.check_pressure_prediction": _hints(lesson12.check_pressure_prediction),
        "lesson12.trajectory_claim": str(lesson12.trajectory_claim(table, "hbm")),
        "lesson12.pressure_claim": str(lesson12.pressure_claim(table, "hbm")),
        "lesson12.headroom_claim": str(lesson12.headroom_claim(table, "hbm")),
        "lesson12.serving_claim": str(lesson12.serving_claim(table)),
        "lesson12.queue_claim": str(lesson12.queue_claim(table)),
        "lesson12.widget_claim": str(lesson12.widget_claim()),
        "lesson12.check_speedup": _hints(
            lambda a: _call(lesson12.check_speedup, a, model="llama2-7b")
        ),
        "lesson12.check_zone_step_ms": _hints(
            lambda a: _call(lesson12.check_zone_step_ms, a, model="llama2-7b", level="hbm")
        ),
        "lesson12.zone_claim": lesson12.zone_claim(  # gated: its full text
            table, "llama2-7b", "h100-sxm", "hbm", "fusion"
        ).text,
        "lesson12.check_headroom": _hints(
            lambda a: _call(lesson12.check_headroom, a, model="llama2-7b", level="hbm")
        ),
        "lesson12.pitfall_claim": str(
            lesson12.pitfall_claim(table, "llama2-7b", "h100-sxm", "hbm")
        ),
    }
    _defaults(lesson12, out, "lesson12")
    return out


def lesson13() -> dict[str, str]:
    from workbench.exercises import lesson13

    table = lesson13.energy_table("alexnet conv3")
    out = {
        "lesson13.profile_claim": str(lesson13.profile_claim()),
        "lesson13.nest_text": str(lesson13.nest_text("alexnet conv3", "row_stationary")),
        "lesson13.tiny_nest_text": str(lesson13.tiny_nest_text()),
        "lesson13.check_hand_count": _hints(lesson13.check_hand_count),
        "lesson13.energy_claim": str(lesson13.energy_claim(table, "alexnet conv3")),
        "lesson13.utilisation_claim": str(lesson13.utilisation_claim(table, "alexnet conv3")),
        "lesson13.check_best_dataflow": _hints(
            lambda a: lesson13.check_best_dataflow(a, layer="alexnet conv1")
        ),
        "lesson13.instruction_claim[0]": str(lesson13.instruction_claim(0)),
        "lesson13.move_claim[0]": str(lesson13.move_claim(0)),
        "lesson13.instruction_claim[1]": str(lesson13.instruction_claim(1)),
        "lesson13.check_pes_used": _hints(
            lambda a: lesson13.check_pes_used(
                a, layer="alexnet conv1", dataflow="weight_stationary"
            )
        ),
        "lesson13.move_claim[1]": str(lesson13.move_claim(1)),
        "lesson13.utilisation_claim.conv1": str(
            lesson13.utilisation_claim(lesson13.energy_table("alexnet conv1"), "alexnet conv1")
        ),
        "lesson13.takeaway_claim": str(lesson13.takeaway_claim()),
        "lesson13.timeloop_claim": str(lesson13.timeloop_claim(lesson13.timeloop_exercise("06"))),
        "lesson13.check_beats_greedy": _hints(lesson13.check_beats_greedy),
        "lesson13.after.gated": str(lesson13.after(None, lesson13.move_claim(0), exercise=2)),
    }
    _defaults(lesson13, out, "lesson13")
    return out


def lesson14() -> dict[str, str]:
    from workbench.exercises import lesson14

    dot, quality = lesson14.dot_table(), lesson14.quality_table()
    out = {
        "lesson14.check_gated_cycles": _hints(lesson14.check_gated_cycles),
        "lesson14.dot_claim": str(lesson14.dot_claim(dot)),
        "lesson14.check_cp_bits": _hints(lesson14.check_cp_bits),
        "lesson14.check_break_even": _hints(lesson14.check_break_even),
        "lesson14.status_line": lesson14.status_line(0.5, False, "cp"),
        "lesson14.imbalance_claim[0.25]": str(lesson14.imbalance_claim(0.25)),
        "lesson14.quality_claim": str(lesson14.quality_claim(quality)),
    }
    _defaults(lesson14, out, "lesson14")
    return out


LESSONS: dict[str, Callable[[], dict[str, str]]] = {
    f.__name__: f
    for f in (
        lesson01, lesson02, lesson03, lesson04, lesson05, lesson06, lesson07, lesson08,
        lesson09, lesson10, lesson11, lesson12, lesson13, lesson14,
    )
}  # fmt: skip


def write(names: list[str]) -> None:
    """Render the named lessons (all when none) and merge them into the fixture."""
    data = json.loads(FIXTURE.read_text()) if FIXTURE.exists() else {}
    for name in names or list(LESSONS):
        data[name] = LESSONS[name]()
        print(name, len(data[name]), file=sys.stderr)
    text = json.dumps(data, indent=1, sort_keys=True, ensure_ascii=False) + "\n"
    FIXTURE.write_text(text.replace(str(Path(__file__).resolve().parents[3]), "<repo>"))


if __name__ == "__main__":
    write(sys.argv[1:])
