"""Lessons 02, 04, 05, 07, 09: the computed takeaways, pitfalls and instruction sentences.

Each claim is checked twice, as in ``test_claims_01_03_04_13.py``: its figures equal what the
library computes, and inputs that flip the direction flip the words. The new first-principles
exercises (07: the barrier's price; 09: tiles and waves) accept the right answer, refuse a wrong
one, and hint without the answer; lesson 02's second hints guide instead of giving the
expression.
"""

from __future__ import annotations

import math
from types import SimpleNamespace

import pandas as pd
import pytest

from workbench.exercises import _check, lesson02, lesson04, lesson05, lesson07, lesson09
from workbench.exercises._shared import hardware, mapping
from workbench.options import MapOptions


@pytest.fixture(autouse=True)
def _fresh_attempts(monkeypatch):
    monkeypatch.setattr(_check, "_ATTEMPTS", {})


def _second_try(check, wrong, **kw):
    check(wrong, strict=False, **kw)
    return check(wrong, strict=False, **kw)


# --- lesson 02 ---------------------------------------------------------------------------------


def test_explorer_claim_follows_each_step():
    text = str(lesson02.explorer_claim())
    steps = lesson02.explorer_steps()
    for step in steps:
        assert step.instruction[1:] in text
        assert f"{step.after.mapping().time_s * 1e3:.3g} ms" in text
    assert "moves left from 295 to 153" in text  # h100 -> a100: a lower ridge
    assert "moves right from 153 to 247" in text
    a100, mi300x = steps[1], steps[2]
    r = a100.after.mapping().time_s / a100.before.mapping().time_s
    assert f"(x{r:.3g}, slower)" in text
    r = mi300x.after.mapping().time_s / mi300x.before.mapping().time_s
    assert f"(x{r:.3g}, faster)" in text
    pre = steps[0].before.mapping()
    n = pre.bottleneck_counts()["compute"]
    assert f"compute-bound kernels go from {n} of {len(pre.kernels)} to 0" in text
    assert steps[-1].after.hardware == steps[0].before.hardware  # back where the drags start


def test_takeaway_claim_words_follow_the_shares():
    text = str(lesson02.takeaway_claim())
    pre = mapping("llama2-7b", "h100-sxm", phase="prefill", seq=2048)
    share = sum(k.cost.total_s for k in pre.kernels if k.cost.bottleneck == "compute")
    assert f"hold {share / pre.time_s:.0%}" in text
    assert "is mostly compute-bound" in text  # also the premise of the "Predict first" cell
    assert "every GEMM is bound" in text
    assert "above the weight-streaming floor" in text
    small = str(lesson02.takeaway_claim("gpt2", seq=128))
    assert "not mostly compute-bound" in small
    assert "GEMMs are bound" in small


def test_peak_pitfall_is_gated_by_exercise_1(monkeypatch):
    """The ridge's x2 move from bf16 to fp8 answers Exercise 1: hidden until its check passes."""
    monkeypatch.setattr(_check, "_SETTLED", set())
    assert lesson02.peak_pitfall_claim().hidden
    assert "Quoting the fp8_e4m3 peak" not in str(lesson02.pitfall_claim())
    assert "The ridge is per memory level" in str(lesson02.pitfall_claim())
    assert lesson02.check_ridge_point(590, dtype="fp8_e4m3").passed
    assert "x2," in str(lesson02.pitfall_claim())
    assert "Quoting the fp8_e4m3 peak" in lesson02.pitfall_claim().text  # the snapshot's text


def test_peak_pitfall_deflates_mfu_and_names_the_misread_kernels(monkeypatch):
    monkeypatch.setattr(_check, "_SETTLED", _check._SETTLED | {"ridge[h100-sxm,fp8_e4m3]"})
    text = str(lesson02.peak_pitfall_claim())
    m = mapping("llama2-7b", "h100-sxm", phase="prefill", seq=2048)
    assert f"deflates its MFU from {m.mfu:.1%} to {m.mfu / 2:.1%}" in text
    assert "x2," in text
    t = lesson02.bound_table(phase="prefill")
    ridge = 2 * hardware("h100-sxm").ridge_point("bf16")
    for k in t.index:
        below = t.loc[k, "bottleneck"] == "compute" and t.loc[k, "intensity"] < ridge
        assert (f"`{k}`" in text) == below, k


def test_level_pitfall_reads_the_binding_level():
    text = str(lesson02.level_pitfall_claim())
    assert "forced to 64x64x64 it is **bandwidth:l2**" in text
    assert "is above the 295 ridge" in text
    searched = str(lesson02.level_pitfall_claim(tile=(128, 256, 64)))
    assert "bound by no inner level" in searched


def test_launch_pitfall_words_follow_the_times():
    norm = str(lesson02.launch_pitfall_claim())
    assert "**overhead**-bound" in norm
    assert "a faster memory does not help; cheaper launches do" in norm
    gemm = str(lesson02.launch_pitfall_claim(kernel="layers.0.mlp.up_proj"))
    assert "a faster memory helps; the launch mode does not" in gemm


def test_efficiency_pitfall_sets_the_gemms_against_the_profile():
    text = str(lesson02.efficiency_pitfall_claim())
    assert "on both sides of the 80.1%" in text
    assert "at 6144x17920x2816" in text
    assert "`mlp.gate_proj`, has the emptiest last wave" in text


def test_lesson02_second_hints_guide_without_the_expression():
    ridge = repr(_second_try(lesson02.check_ridge_point, 1.0, dtype="fp8_e4m3"))
    assert "peak_flops(" not in ridge
    assert "ridge_point" not in ridge
    assert "bandwidth_bytes_per_s" not in ridge
    floor = repr(_second_try(lesson02.check_decode_floor, 1.0))
    assert "build_graph" not in floor
    assert "params *" not in floor
    assert "/ hw." not in floor
    norm = repr(_second_try(lesson02.check_bottleneck, "compute", kernel="layers.0.attn_norm",
                            phase="prefill"))  # fmt: skip
    assert "norm" in norm.split("hint 2:")[1]
    assert "2 x tokens" not in norm
    assert lesson02.check_ridge_point(
        hardware("h100-sxm").ridge_point("fp8_e4m3"), dtype="fp8_e4m3"
    ).passed


# --- lesson 04 ---------------------------------------------------------------------------------


def test_boundary_claim_splits_the_saving_into_hbm_and_cache():
    table = lesson04.fusion_savings()
    text = str(lesson04.boundary_claim(table))
    on = mapping("llama2-7b", "h100-sxm", phase="prefill", seq=2048)
    both = sum(k.kernel.saved_bytes for k in on.kernels if "gemm_epilogue" in k.kernel.fusion)
    grew = table.loc["gemm_epilogue", "bytes_saved"]
    assert f"{both / 1e9:.3g} GB that would be written and read back" in text
    assert f"grows {grew / 1e9:.3g} GB" in text
    assert f"the other {(both - grew) / 1e9:.3g} GB are re-reads the cache serves" in text
    exact = table.copy()
    exact.loc["gemm_epilogue", "bytes_saved"] = both
    assert "every re-read goes off chip" in str(lesson04.boundary_claim(exact))
    assert "records no intermediate" in str(lesson04.boundary_claim(table, rule="layout_fold"))


def test_seq_claim_reads_the_walk():
    text = str(lesson04.seq_claim())
    steps = lesson04.explorer_steps()
    slow = steps[4].before.mapping().time_s / steps[4].after.mapping().time_s - 1
    assert f"{100 * slow:.1f} % slower at 4,096 tokens" in text
    assert "drag **seq** to 4,096" in text


# --- lesson 05 ---------------------------------------------------------------------------------


def test_explorer_claim_of_lesson05_follows_the_walk():
    text = str(lesson05.explorer_claim())
    one, two, three = lesson05.explorer_steps()
    gain_pre = three.after.mapping().time_s / two.after.mapping().time_s
    gain_dec = one.before.mapping().time_s / one.after.mapping().time_s
    assert f"x{gain_pre:.3g} faster, less than the x{gain_dec:.3g}" in text
    assert "from 989.4 to 1979 TFLOP/s" in text


def test_quality_claim_orders_snr_against_speed():
    q = lesson05.quality_table(m=8, n=64, k=256)
    d = pd.DataFrame({"speedup": [1.0, 1.8, 1.66, 2.47]},
                     index=["bf16", "fp8 (weights and activations)", "int8 weight-only",
                            "int4 weight-only"])  # fmt: skip
    text = str(lesson05.quality_claim(q, d))
    assert "the faster a format makes decode, the more signal it loses" in text
    flipped = d.assign(speedup=[1.0, 1.8, 3.0, 2.47])  # int8 fastest yet least noisy
    assert "do not trade off in order" in str(lesson05.quality_claim(q, flipped))


def test_layout_claims_read_the_table():
    t = lesson05.layout_table()
    text = lesson05.layout_takeaway_claim(t).text  # gated behind Exercise 2: its full text
    assert f"runs {t.loc[('NHWC', False), 'transforms']} of them" in text
    assert "the convolutions themselves" in text
    assert "pure traffic (no FLOPs)" in text
    nchw = str(lesson05.nchw_pitfall_claim(t))
    assert "Reading NCHW as free" in nchw
    ratio = t.loc[("NCHW", True), "total_ms"] / t.loc[("NHWC", True), "total_ms"]
    assert f"(x{ratio:.2f})" in nchw
    free = t.copy()
    free.loc[("NCHW", True), "total_ms"] = 0.5
    assert "charges nothing" in str(lesson05.nchw_pitfall_claim(free))


def test_int4_pitfall_counts_the_group_scales():
    text = str(lesson05.int4_pitfall_claim())
    assert "reads 0.5312 bytes per weight, not 0.5" in text
    assert "add 6.25%" in text
    assert "(4 vector instructions each)" in text


def test_outlier_and_batch_pitfalls_follow_the_numbers():
    assert "crushes the resolution" in str(lesson05.outlier_pitfall_claim())
    assert "costs the other channels only" in str(lesson05.outlier_pitfall_claim(outlier=1.0))
    text = str(lesson05.batch_pitfall_claim())
    assert "falls as the batch grows and the GEMMs cross" in text
    rising = str(lesson05.batch_pitfall_claim(batches=(128, 1)))
    assert "does not fall steadily" in rising
    with pytest.raises(Exception, match="refused"):
        lesson05.batch_pitfall_claim(seq=2048, batches=(1, 512))


# --- lesson 07 ---------------------------------------------------------------------------------


def test_barrier_exercise_is_the_first_principles_count():
    o = hardware("h100-sxm").overheads
    syncs = 1 + 32 + 1 + 1  # embedding, 32 decoder blocks, final norm, LM head
    per = o.barrier_s + o.kernel_launch_s - o.graph_launch_s
    want = syncs * per * 1e6
    assert lesson07.barrier_cost_us() == pytest.approx(want, rel=1e-9)
    assert lesson07.check_barrier_cost(want).passed
    wrong = repr(_second_try(lesson07.check_barrier_cost, syncs * o.barrier_s * 1e6))
    assert f"{want:.4g}" not in wrong
    assert "barrier_cost_us" not in wrong
    assert "too low" in wrong


def test_panel_claim_and_stale_claim_read_the_library():
    text = str(lesson07.panel_claim())
    r = lesson07.panel_report("barrier-per-layer")
    assert f"{r.candidate.model.time_s * 1e6:.1f} us" in text
    assert f"**{r.first_failing.mechanism}**" in text
    assert r.decision not in text  # the decision is Exercise 2's answer
    stale = str(lesson07.stale_pitfall_claim())
    a = lesson07.review_mapping("gpt2", "h100-sxm", seq=512)
    b = lesson07.review_mapping("gpt2", "h100-sxm", seq=1024)
    assert f"{a.mfu:.1%}" in stale
    assert f"{b.mfu:.1%}" in stale


def test_slice_pitfall_words_follow_the_guardrail(monkeypatch):
    text = str(lesson07.slice_pitfall_claim(("attention-fp32", "long-seq-tile")))
    row = lesson07.panel_report("attention-fp32").matrix[0]
    change = row["candidate"]["time_s"] / row["baseline"]["time_s"] - 1
    assert f"`attention-fp32` moves the step time {change:+.1%}" in text
    assert "no practice scenario passes" in text
    loose = SimpleNamespace(
        guardrails=[SimpleNamespace(metric="time_s", flag_at=0.5, rollback_at=0.6)]
    )
    monkeypatch.setattr(lesson07, "load_guardrails", lambda: loose)
    split = str(lesson07.slice_pitfall_claim(("attention-fp32",)))
    assert "`attention-fp32` pass the step-time guardrail on one slice and fail it" in split


# --- lesson 09 ---------------------------------------------------------------------------------


def test_waves_exercise_is_the_first_principles_count():
    km = mapping("llama2-7b", "h100-sxm", batch=1, seq=2048).kernel("layers.0.mlp.up_proj")
    t, g = km.tiling, km.kernel.gemm
    assert t.split_k == 1  # as the exercise says
    tiles = math.ceil(g.m / t.tile_m) * math.ceil(g.n / t.tile_n)
    waves = math.ceil(tiles / hardware("h100-sxm").matrix_engine.cores)
    assert lesson09.check_waves((tiles, waves)).passed
    wrong = repr(_second_try(lesson09.check_waves, (tiles, waves + 1)))
    assert "part 2 of 2" in wrong
    assert str(waves) not in wrong.split("hint 2:")[1]


def test_lab_claim_reads_the_lab_prediction():
    text = str(lesson09.lab_claim())
    for step in lesson09.lab_steps():
        tiling, cost = lesson09.lab_prediction(step.after)
        assert f"predicted {cost.total_s * 1e6:.3g} µs" in text
        assert f"{tiling.tiles} tiles on 132 cores" in text
    first, second = lesson09.lab_steps()
    (ta, _), (tb, cb) = (lesson09.lab_prediction(x) for x in (first.before, first.after))
    assert (tb.tiles < ta.tiles) == ("fewer of the 132 cores get a tile" in text)
    t2, c2 = lesson09.lab_prediction(second.after)
    if c2.total_s > cb.total_s and t2.tiles > tb.tiles:  # more cores busy, yet slower
        assert "traffic x" in text.split("\n")[1]
    searched = lesson09.lab_prediction(first.before)[1].total_s
    beaten = searched > min(cb.total_s, c2.total_s)
    assert ("Neither move beats the searched tile" in text) == (not beaten)


def test_plan_claims_follow_the_tables():
    plans = lesson09.plan_table("llama2-7b", "h100-sxm", batches=(1, 64), seqs=(16, 2048))
    same = pd.DataFrame({"best_tile": ["128x256x64"] * 2, "waves": [2, 3],
                         "wave_efficiency": [0.8, 0.9]}, index=["a", "b"])  # fmt: skip
    text = str(lesson09.shape_takeaway_claim(plans, same))
    assert "batch and sequence move it" in text
    assert "Model width does not change the tile" in text
    differ = same.assign(best_tile=["128x256x64", "64x128x32"])
    assert "Model width moves it too" in str(lesson09.shape_takeaway_claim(plans, differ))
    assert "get 2 different tiles" in str(lesson09.variant_claim(differ))
    assert "get the same tile, `128x256x64`" in str(lesson09.variant_claim(same))
    flat = plans.assign(best_tile="128x256x64")
    assert "Neither batch nor sequence" in str(lesson09.shape_takeaway_claim(flat, same))


def test_static_plan_claim_forces_the_tuned_tile():
    text = str(lesson09.static_plan_claim(shapes=((1, 2048),)))
    own = mapping("llama2-7b", "h100-sxm", batch=1, seq=2048).kernel("layers.0.mlp.up_proj")
    chat = mapping("llama2-7b", "h100-sxm", batch=1, seq=16).kernel("layers.0.mlp.up_proj")
    assert f"`{chat.tiling.shape}`, costs x" in text
    assert f"(best `{own.tiling.shape}`)" not in text  # the best is not in this sentence
    assert "costs nothing there" in text
    ratio = float(text.split("costs x")[1].split(" ")[0])
    assert ratio > 2  # the chat-prompt tile is far slower on long documents


def test_lesson04_options_reach_the_fast_claims():
    # the explorer walk's third step is the flash-off mapping the savings table prices
    step = lesson04.explorer_steps()[2]
    off = mapping("llama2-7b", "h100-sxm", phase="prefill", seq=2048,
                  options=MapOptions(disabled_fusion=("flash_attention",)))  # fmt: skip
    assert step.after.mapping().time_s == pytest.approx(off.time_s, rel=1e-12)


def test_format_claim_summary_follows_the_numbers():
    # issue 20: the sentence under lesson 05's format bullets was typed, not conditioned
    import pandas as pd

    idx = ["bf16", "fp8", "int8 weight-only"]
    decode = pd.DataFrame({"offchip_gb": [14.0, 7.0, 7.5], "speedup": [1.0, 1.8, 1.7]}, index=idx)
    prefill = pd.DataFrame(
        {"offchip_gb": [40.0, 25.0, 24.0], "speedup": [1.0, 1.5, 0.8]}, index=idx
    )
    text = str(lesson05.format_claim(decode, prefill))
    assert "streaming weights sets most of its time" in text
    assert "faster with `fp8`" in text
    assert "slower with `int8 weight-only`" in text
    flat = decode.assign(speedup=[1.0, 0.9, 0.95])
    none_slower = prefill.assign(speedup=[1.0, 1.5, 1.2])
    text = str(lesson05.format_claim(flat, none_slower))
    assert "something other than streaming weights sets its time" in text
    assert "slower with" not in text
