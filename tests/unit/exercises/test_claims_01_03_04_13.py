"""Lessons 01, 03, 04, 13: every directional sentence is computed; its words follow the numbers.

Every claim is checked twice: its figures equal what the library computes, and inputs (or a
monkeypatched helper) that flip the direction flip the words.
"""

from pathlib import Path
from types import SimpleNamespace

import pandas as pd
import pytest

from workbench.cli import main
from workbench.exercises import _check, lesson01, lesson03, lesson04, lesson13
from workbench.models import build_graph
from workbench.scheduling.loopnest import DATAFLOWS, SPAD_WORDS

# --- lesson 01 ---------------------------------------------------------------------------------


@pytest.fixture(autouse=True)
def _exercise_2_answered(monkeypatch):
    """Lesson 01's token claim answers Exercise 2: it is gated until that check passes.

    These tests read the claim's content, so they settle the exercise themselves instead of
    relying on an earlier test (in another file) having answered it; the gate has its own tests.
    """
    monkeypatch.setattr(_check, "_SETTLED", _check._SETTLED | {"linear_intensity"})


def test_token_claim_threshold_is_the_crossing_of_the_ridge():
    ridge = lesson01.hardware("h100-sxm").ridge_point("bf16")
    cross = lesson01.crossover_tokens(4096, ridge)
    assert cross is not None
    at = lesson01._linear(cross, 4096, 4096, "bf16")
    before = lesson01._linear(cross - 1, 4096, 4096, "bf16")
    assert lesson01._intensity(at) >= ridge > lesson01._intensity(before)
    text = str(lesson01.token_claim(4096, (1, 16, 2048)))
    assert f"from {cross:,} tokens" in text
    assert "intensity grows" in text
    assert "1 at 1 token (below)" in text
    assert "(above)" in text
    assert "compute-heavy" in text
    assert lesson01.crossover_tokens(4096, 1e12) is None


def test_token_claim_words_follow_the_numbers():
    text = str(lesson01.token_claim(4096, (2048, 1)))
    assert "does not grow" in text
    assert "compute-heavy" not in text  # the first point is above the ridge, the last below


def test_batch_attention_claim_reads_the_graph():
    ops = [build_graph("llama2-7b", phase="decode", seq=2048, batch=b).op("layers.0.attn.sdpa")
           for b in (1, 8)]  # fmt: skip
    text = str(lesson01.batch_attention_claim("llama2-7b", seq=2048, batches=(1, 8)))
    assert "does not raise" in text
    assert f"{lesson01._intensity(ops[0]):.3g} FLOP/byte" in text
    assert f"x{ops[1].bytes_read / ops[0].bytes_read:.3g}" in text


def test_batch_attention_claim_flips(monkeypatch):
    monkeypatch.setattr(lesson01, "_intensity", lambda op: float(op.batch))
    assert "batching raises its intensity (x8.00)" in str(lesson01.batch_attention_claim())


def test_prefill_claim_sides_of_the_ridge(monkeypatch):
    text = str(lesson01.prefill_claim("llama2-7b", "h100-sxm"))
    assert "(below the ridge)" in text
    assert "(above `h100-sxm`'s ridge of 295)" in text
    monkeypatch.setattr(
        lesson01, "hardware", lambda name: SimpleNamespace(ridge_point=lambda d: 1e6)
    )
    assert "(below `h100-sxm`'s ridge" in str(lesson01.prefill_claim("llama2-7b", "h100-sxm"))


def test_pitfall_claim_figures_and_floor(monkeypatch):
    text = str(lesson01.pitfall_claim())
    assert "= 2 x its" in text
    assert "MACs halve every count" in text
    assert "more than the floor" in text
    g = build_graph("llama2-7b", phase="prefill", seq=2048)
    att = g.op("layers.0.attn.sdpa")
    dense = 4 * att.batch * att.heads * att.q_len * att.kv_len * att.head_dim
    assert f"x{dense / att.flops:.3g} the IR's" in text
    assert "`lm_head` owns 0 parameters" in text

    fake_kernel = SimpleNamespace(cost=SimpleNamespace(bytes_at=lambda level: 1.0))
    fake = SimpleNamespace(kernel=lambda name: fake_kernel, hardware=SimpleNamespace(
        offchip=SimpleNamespace(name="hbm")))  # fmt: skip
    monkeypatch.setattr(lesson01, "mapping", lambda *a, **k: fake)
    assert "no more than the floor" in str(lesson01.pitfall_claim())


# --- lesson 03 ---------------------------------------------------------------------------------


def test_tile_size_claim_directions_follow_the_times():
    slow = str(lesson03.tile_size_claim())  # the lab's up_proj: the bigger tile is slower
    assert "the bigger one is slower" in slow
    assert "re-reads less" in slow
    fast = str(lesson03.tile_size_claim(((256, 128, 64), (128, 128, 64)), m=4096, n=4096, k=4096))
    assert "the bigger one is faster" in fast  # order of the arguments does not matter
    a = lesson03.gemm_mapping(m=4096, n=4096, k=4096, tile=(128, 128))
    b = lesson03.gemm_mapping(m=4096, n=4096, k=4096, tile=(256, 128))
    assert b.time_s < a.time_s
    assert f"{a.kernels[0].tiling.tiles:,} tiles" in fast


def _waves_frame(times):
    return pd.DataFrame(
        {"tiles": [108, 117, 216], "waves": [1.0, 1.083, 2.0], "full_waves": [1, 2, 2],
         "last_wave_util": [1.0, 0.083, 1.0], "time_us": times, "tflops": [1.0, 1.0, 1.0]},
        index=pd.Index([1536, 1664, 3072], name="n"),
    )  # fmt: skip


def test_wave_rule_claim_reads_the_table():
    table = lesson03.wave_table(m=2304, k=4096, ns=(1408, 1536, 1664, 3072))
    text = str(lesson03.wave_rule_claim(table))
    assert "N = 1664 is just past" in text
    assert "the last 8% busy" in text
    assert "the same time" in text
    flipped = str(lesson03.wave_rule_claim(_waves_frame([100.0, 200.0, 300.0])))
    assert "the same time" not in flipped
    assert "x1.5 the time" in flipped


def test_padding_claim_reads_the_table():
    table = lesson03.tile_table(((256, 256), (257, 256)), tile=(128, 128))
    text = str(lesson03.padding_claim(table))
    assert "257x256 6 (33.1% of the work" in text
    swapped = table.copy()
    swapped["wasted"] = [0.5, 0.0]
    assert "256x256 4 (50.0% of the work" in str(lesson03.padding_claim(swapped))


def test_split_k_claim_measures_both_directions():
    text = str(lesson03.split_k_claim())
    assert "(**faster**" in text
    assert "(**slower**" in text
    assert "almost empty wave" in text
    one = lesson03.gemm_mapping(m=8192, n=8192, k=4096, tile=(256, 128))
    two = lesson03.gemm_mapping(m=8192, n=8192, k=4096, tile=(256, 128), split_k=2)
    assert two.kernels[0].tiling.split_k == 2
    assert f"{one.time_s * 1e6:.1f} -> {two.time_s * 1e6:.1f} µs" in text
    swapped = str(lesson03.split_k_claim(small=(8192, 8192, 4096), large=(2304, 1664, 4096)))
    assert "almost empty wave" not in swapped
    assert "per shape" in swapped


# --- lesson 04 ---------------------------------------------------------------------------------


def test_traffic_claim_exponents_follow_the_table():
    table = lesson04.attention_traffic((512, 2048))
    text = str(lesson04.traffic_claim(table))
    assert "fused kernel's bytes grow about linearly" in text
    assert "unfused kernels' about quadratically" in text
    fake = pd.DataFrame({"fused_mb": [1.0, 16.0], "unfused_mb": [2.0, 8.0], "ratio": [2.0, 0.5]},
                        index=pd.Index([1, 4], name="seq"))  # fmt: skip
    flipped = str(lesson04.traffic_claim(fake))
    assert "does not grow" in flipped
    assert "fused kernel's bytes grow about quadratically" in flipped
    assert "unfused kernels' about linearly" in flipped


def test_epilogue_claim_counts_the_kernels():
    from workbench.exercises._shared import mapping
    from workbench.options import MapOptions

    on = mapping("llama2-7b", "h100-sxm", phase="prefill", seq=2048)
    off = mapping("llama2-7b", "h100-sxm", phase="prefill", seq=2048,
                  options=MapOptions(disabled_fusion=("gemm_epilogue",)))  # fmt: skip
    text = str(lesson04.epilogue_claim())
    assert f"from {len(on.kernels)} to {len(off.kernels)} kernels" in text
    assert "`attn_residual`" in text


def test_seq_and_takeaway_claims_follow_the_lengths():
    assert "a larger effect" in str(lesson04.seq_claim(seqs=(2048, 4096)))
    assert "a smaller effect" in str(lesson04.seq_claim(seqs=(4096, 2048)))
    text = str(lesson04.takeaway_claim(seqs=(512, 2048)))
    assert "value grows with the prompt" in text
    assert "far less" in text
    pct = lesson04._rule_pct("llama2-7b", "h100-sxm", "decode", 2048, "flash_attention")
    assert f"worth {pct:.1f} %" in text
    assert "does not grow steadily" in str(lesson04.takeaway_claim(seqs=(2048, 512)))


def test_overlap_claim_compares_all_off_with_the_rows():
    table = lesson04.fusion_savings("llama2-7b", "h100-sxm", phase="prefill", seq=2048)
    assert "equal to the sum of the rows" in str(lesson04.overlap_claim(table))
    doubled = table.assign(bytes_saved=table["bytes_saved"] * 2)
    flipped = str(lesson04.overlap_claim(doubled))
    assert "less than the sum of the rows: the rules overlap" in flipped


def test_compute_bound_claim_words_follow_the_class():
    text = str(lesson04.compute_bound_claim(seq=2048))
    assert "(**compute**)" in text
    assert "do not change its time" in text
    short = str(lesson04.compute_bound_claim(seq=16))  # 16 tokens: o_proj is not compute-bound
    assert "(**compute**)" not in short
    assert "do not change its time" not in short


def test_fusion_savings_hint_names_the_real_option(monkeypatch):
    monkeypatch.setattr(_check, "_ATTEMPTS", {})
    lesson04.check_fusion_savings(1.0, rule="gemm_epilogue")
    wrong = lesson04.check_fusion_savings(1.0, rule="gemm_epilogue")
    assert "disabled_fusion" in repr(wrong)


# --- lesson 13 ---------------------------------------------------------------------------------


def test_takeaway_claim_reads_every_layer():
    text = str(lesson13.takeaway_claim())
    shares = []
    for layer in lesson13.LAYERS:
        t = lesson13.energy_table(layer)
        shares += list(t["mac"] / t["total"])
        name = f"`{layer}`"
        assert name in text
    assert f"{min(shares):.1%} to {max(shares):.1%}" in text
    assert "not on `alexnet conv1`" in text  # conv1: lowest energy is not the fastest
    same = str(lesson13.takeaway_claim(("alexnet conv3", "alexnet conv5")))
    assert "fastest on every layer here" in same


def test_best_dataflow_hints_do_not_point_at_the_answer(monkeypatch):
    monkeypatch.setattr(_check, "_ATTEMPTS", {})
    best = lesson13.energy_table("alexnet conv1")["total"].idxmin()
    wrong = next(d for d in DATAFLOWS if d != best and d != "weight_stationary")
    lesson13.check_best_dataflow(wrong, layer="alexnet conv1")
    text = repr(lesson13.check_best_dataflow(wrong, layer="alexnet conv1"))
    assert "widget" not in text
    assert best not in text.replace(f"'{wrong}'", "")


def test_hardware_show_eyeriss_agrees_with_the_loop_nest_model(capsys):
    assert main(["hardware", "show", "eyeriss"]) == 0
    out = capsys.readouterr().out
    spad = SPAD_WORDS["eyeriss"]
    split = f"{spad['I']} ifmap / {spad['W']} filter / {spad['O']} psum words"
    assert f"loop-nest model (lesson 13): dataflows {', '.join(DATAFLOWS)}" in out
    assert out.count(split) == 2  # the compute line and the profile's stated assumption
    note = (Path(__file__).resolve().parents[3] / "lessons" / "README.md").read_text()
    assert split.replace(" words", "") in " ".join(note.split())  # the teacher's note for 13
    assert f"{spad['I']} ifmap, {spad['W']} filter and {spad['O']} psum" in str(
        lesson13.profile_claim()
    )


@pytest.mark.parametrize("claim", [lesson01.token_claim, lesson13.takeaway_claim])
def test_claims_render_as_markdown(claim):
    assert claim()._repr_markdown_().startswith("- ")


def test_lesson04_instructed_settings_are_ones_the_explorer_accepts():
    from workbench.ui.explorer import SEQS, refusal

    for seq in (2048, 4096):  # seq_claim's default drag, in prefill at batch 1
        assert seq in SEQS
        assert refusal("llama2-7b", "h100-sxm", "prefill", 1, seq, "bf16") == ""


def test_matmul_share_claim_reads_the_graph(monkeypatch):
    g = build_graph("llama2-7b", phase="prefill", seq=2048)
    share = sum(op.matmul_flops for op in g.ops) / g.flops
    text = str(lesson01.matmul_share_claim("llama2-7b", seq=2048))
    assert f"{share:.2%}" in text
    assert "almost every FLOP" in text
    fake = SimpleNamespace(ops=[SimpleNamespace(matmul_flops=1)], flops=4)
    monkeypatch.setattr(lesson01, "build_graph", lambda *a, **k: fake)
    assert "a minority of FLOP" in str(lesson01.matmul_share_claim())


def test_accumulator_claim_follows_the_profile():
    from workbench.scheduling.tiling import accumulator_capacity

    acc = accumulator_capacity(lesson03.hardware("a100-80gb"))
    assert f"get {acc // 1024} KiB" in str(lesson03.accumulator_claim("a100-80gb"))
    assert "(50%" in str(lesson03.accumulator_claim("a100-80gb"))
    assert accumulator_capacity(lesson03.hardware("tpu-v5e")) == 0
    assert "live in SRAM" in str(lesson03.accumulator_claim("tpu-v5e"))


def test_spill_claim_words_follow_the_fit():
    over = str(lesson04.spill_claim(tile=(512, 256, 128)))
    assert over.startswith("- Fusing past an SRAM limit")
    assert "more than the 228 KiB" in over
    assert "MB of spill traffic" in over
    assert "(slower:" in over
    fits = str(lesson04.spill_claim(tile=(128, 256, 64)))
    assert fits.startswith("- A fused tile within SRAM")
    assert "nothing spills" in fits


def test_waves_hint_names_an_attribute_that_exists(monkeypatch):
    monkeypatch.setattr(_check, "_ATTEMPTS", {})
    args = {"m": 2304, "n": 2304, "k": 4096, "tile": (256, 128)}
    lesson03.check_waves(1.0, **args)
    text = repr(lesson03.check_waves(1.0, **args))
    assert "matrix_engine.cores" in text
    assert lesson03.hardware("a100-80gb").matrix_engine.cores == 108
