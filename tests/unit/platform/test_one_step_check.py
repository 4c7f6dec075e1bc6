"""``workbench map`` and every widget accept and refuse a setting by one check (issue 20).

The context rule (:func:`workbench.models.footprint.position_refusal`) and the memory rule
(:func:`workbench.models.footprint.step_refusal`, on :func:`graph_footprint`) are one
implementation: ``map`` stops with the first (exit 2, its flag prefixed) and prints the second on
its ``memory`` line; the explorer, the lens, the latency panel and the tiling lab show the same
line instead of a result. These tests run ``map`` and the widgets on the same settings and compare
what they say, word for word.
"""

from __future__ import annotations

import pytest

from workbench.cli import main
from workbench.errors import WorkbenchError
from workbench.hw import load_hardware
from workbench.models import build_graph
from workbench.models.footprint import graph_footprint, position_refusal
from workbench.models.presets import PRESETS
from workbench.platform.fit import fit_check, kv_bytes_per_token, setting_refusal

# (model, hardware, phase, batch, seq): fits; past the context (RoPE and learned); past memory.
SETTINGS = [
    ("llama2-7b", "h100-sxm", "decode", 64, 2048),  # 76.6 GiB of 79.6: fits
    ("llama2-7b", "h100-sxm", "decode", 128, 2048),  # KV cache 128 GiB: does not fit
    ("llama2-7b", "h100-sxm", "decode", 1, 4095),  # 4,096 positions: the whole context
    ("llama2-7b", "h100-sxm", "decode", 1, 4096),  # 4,097 positions: past the context
    ("llama2-7b", "h100-sxm", "prefill", 1, 4096),
    ("llama2-7b", "h100-sxm", "prefill", 1, 8192),
    ("llama2-7b", "tpu-v5e", "decode", 8, 1024),  # lesson 12's setting: 16.6 GiB of 14.9
    ("gpt2", "h100-sxm", "prefill", 1, 2048),  # 1,024 learned positions
    ("gpt2", "edge-npu", "decode", 1, 512),
    ("llama2-70b", "h100-sxm", "prefill", 1, 128),  # weights 128.5 GiB
]


def _map(capsys, model, hw, phase, batch, seq):
    code = main(["map", "--model", model, "--hardware", hw, "--phase", phase,
                 "--batch", str(batch), "--seq", str(seq)])  # fmt: skip
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize(("model", "hw", "phase", "batch", "seq"), SETTINGS)
def test_map_and_the_widgets_check_alike(capsys, model, hw, phase, batch, seq):
    why = setting_refusal(model, load_hardware(hw), phase=phase, batch=batch, seq=seq)
    code, out, err = _map(capsys, model, hw, phase, batch, seq)
    context = position_refusal(PRESETS[model], phase=phase, seq=seq)
    if context:
        # map stops (exit 2) with the same line, its flag prefixed
        assert why == context
        assert code == 2
        assert f"workbench: error: --seq: {why}" in err
        return
    assert code == 0, err
    memory = next(x for x in out.splitlines() if x.startswith("memory"))
    if why:
        reason = why.split(": ", 1)[1]
        assert why.startswith(f"does not fit on one {hw}: needs ")
        assert memory == f"memory    DOES NOT FIT: {reason}"
    else:
        assert memory.endswith(": fits")
        assert "memory reserve" in memory  # the default stack states it has none


def test_map_keeps_its_context_messages_and_exit_codes(capsys):
    code, _, err = _map(capsys, "llama2-7b", "h100-sxm", "decode", 1, 4096)
    assert code == 2
    assert err.strip() == (
        "workbench: error: --seq: llama2-7b's context is 4096 tokens; this step needs 4097 "
        "positions (context + 1 new token) (pass --allow-long-context to map it anyway)"
    )
    code, _, err = _map(capsys, "gpt2", "h100-sxm", "prefill", 1, 2048)
    assert code == 2
    assert err.strip() == (
        "workbench: error: --seq: gpt2 has 1024 learned positions; this step needs 2048 "
        "positions (prompt)"
    )
    code = main(["map", "--phase", "decode", "--context", "4096"])
    _, err = capsys.readouterr()
    assert code == 2
    assert "error: --context: llama2-7b's context is 4096 tokens; this step needs 4097" in err


def test_the_widgets_show_the_shared_line():
    from workbench.ui import MappingExplorer
    from workbench.ui.explorer import refusal
    from workbench.ui.tiling_lab import TilingLab

    hw = load_hardware("h100-sxm")
    for setting in (("decode", 128, 2048), ("decode", 1, 4096), ("prefill", 1, 8192)):
        phase, batch, seq = setting
        want = setting_refusal("llama2-7b", hw, phase=phase, batch=batch, seq=seq)
        assert want
        assert refusal("llama2-7b", "h100-sxm", phase, batch, seq, "bf16") == want
        with pytest.raises(WorkbenchError) as exc:
            TilingLab(model="llama2-7b", phase=phase, batch=batch, seq=seq)
        assert str(exc.value) == f"TilingLab: llama2-7b: {want}"
    ex = MappingExplorer(model="llama2-7b", phase="decode", batch=64, seq=2048)
    assert ex.error == ""  # the batch the issue found refused while map accepted it
    ex.controls["seq"].value = 4096
    assert ex.error == setting_refusal("llama2-7b", hw, phase="decode", batch=64, seq=4096)


def test_fit_check_shares_the_footprint_arithmetic():
    # fit_check (the capacity planner of lesson 11 and the platform matrix) sizes weights and
    # activations with graph_footprint; its per-token KV count equals the decode step's cache
    hw = load_hardware("h100-sxm")
    for model, batch, context, tp in (("llama2-7b", 64, 2048, 1), ("llama2-70b", 16, 4096, 4),
                                      ("llama3-8b", 8, 8000, 2)):  # fmt: skip
        f = fit_check(model, hw, batch=batch, context=context, tensor_parallel=tp)
        step = graph_footprint(
            build_graph(model, "decode", batch=batch, seq=1, context=context, tensor_parallel=tp),
            hw,
        )
        per_token = kv_bytes_per_token(model, "bf16", tp)
        assert f.kv_bytes == step.kv_bytes == per_token * context * batch
        assert f.weights_bytes == step.weights_bytes
        tokens = min(context, PRESETS[model].max_seq)
        prefill = build_graph(model, "prefill", batch=batch, seq=tokens, tensor_parallel=tp)
        assert f.activation_bytes == graph_footprint(prefill, hw).activation_bytes


def test_a_serving_request_is_checked_at_its_last_decode_step():
    from workbench.platform.compare import serving_refusal

    # production-chat's p99 request fills llama2-7b's whole context (4,096 positions): its last
    # decode step caches 4,095 tokens, which map accepts; the panel is not refused for it
    assert serving_refusal("llama2-7b", load_hardware("h100-sxm")) == ""
    why = serving_refusal("llama2-7b", load_hardware("edge-npu"), n_requests=120)
    assert why.startswith("one request of 4,096 tokens (the trace's p99) does not fit on one")


def test_the_lens_and_latency_panels_refuse_with_the_shared_line():
    from workbench.ui.lens_panel import LensPanel
    from workbench.ui.platform_panel import LatencyPanel

    # the lens maps decode, 8 sequences at 1,024 tokens (lesson 12's setting)
    want = setting_refusal("llama2-7b", load_hardware("tpu-v5e"), phase="decode", batch=8,
                           seq=1024)  # fmt: skip
    assert want.startswith("does not fit on one tpu-v5e: needs 16.55 GiB per chip")
    with pytest.raises(WorkbenchError) as exc:
        LensPanel(model="llama2-7b", hardware="tpu-v5e")
    assert str(exc.value) == f"LensPanel: {want}"
    # the latency panel: one request of the trace's p99 context, at its last decode step
    want = setting_refusal("llama2-7b", load_hardware("edge-npu"), phase="decode", batch=1,
                           seq=4095)  # fmt: skip
    with pytest.raises(WorkbenchError) as exc:
        LatencyPanel(model="llama2-7b", hardware="edge-npu", n_requests=120, prepare=False)
    assert str(exc.value).endswith(f"(the trace's p99) {want}")
