"""Issue 32: the fit check holds back the serving stack's memory reserve and states the headroom.

The case: Llama-2-70B in bf16 on 2 x H100 SXM, 16 sequences of 4,096 tokens, needs 79.49 GiB per
chip against 79.65 GiB: it "fitted" with 160 MiB to spare. vLLM gives the model 90% of the GPU's
memory by default (--gpu-memory-utilization 0.9, stacks/vllm.yaml), so it does not fit there.
"""

from __future__ import annotations

import pytest

from workbench.cli import main
from workbench.exercises import lesson11
from workbench.hw import load_hardware
from workbench.hw.stack import StackError, load_stack, parse_stack, stacks_dir
from workbench.platform.fit import fit_check, max_kv_tokens, memory_reserve

H100 = load_hardware("h100-sxm")
CASE = {"batch": 16, "context": 4096, "tensor_parallel": 2}


def test_seventy_b_on_two_h100s_no_longer_fits_after_vllm_s_reserve():
    bare = fit_check("llama2-70b", H100, **CASE)
    served = fit_check("llama2-70b", H100, **CASE, stack="vllm")
    assert bare.total_bytes == served.total_bytes
    assert bare.capacity_bytes - 200 * 2**20 < served.total_bytes <= served.capacity_bytes
    assert served.reserve_bytes == int(0.1 * served.capacity_bytes)
    assert served.usable_bytes == served.capacity_bytes - served.reserve_bytes
    assert not served.fits
    assert served.headroom_bytes == served.usable_bytes - served.total_bytes < 0
    line = served.summary()
    assert "does not fit" in line
    assert "stack vllm reserves 7.965 GiB (10% of memory; " in line
    assert "gpu-memory-utilization" in line
    # the default stack states that it reserves nothing, and the headroom that leaves
    assert bare.fits
    assert "states no memory reserve" in bare.summary()
    assert "headroom 160 MiB" in bare.summary()


def test_lesson11_fit_table_and_check_use_the_serving_stack_s_reserve():
    table = lesson11.fit_table("llama2-70b", "h100-sxm", (1, 2, 4, 8), batch=16, context=4096)
    assert list(table["fits"]) == [False, False, True, True]
    assert table.loc[2, "need_gib"] <= table.loc[2, "capacity_gib"]  # only the reserve breaks it
    assert table.loc[2, "headroom_gib"] < 0 < table.loc[4, "headroom_gib"]
    assert table.loc[4, "reserve_gib"] == round(0.1 * H100.offchip.capacity_bytes / 2**30, 2)
    kw = {"model": "llama2-70b", "platform": "h100-sxm", "chips": 4}
    assert lesson11.check_fit_headroom(table.loc[4, "headroom_gib"], **kw).passed
    bare = table.loc[4, "capacity_gib"] - table.loc[4, "need_gib"]  # the reserve left out
    assert not lesson11.check_fit_headroom(bare, **kw, strict=False).passed
    claim = lesson11.fit_claim("llama2-70b", "h100-sxm", (1, 2, 4, 8)).text
    assert "**4**" in claim
    assert "On 2 chips the need" in claim
    assert "docs.vllm.ai" in claim


def test_the_kv_tokens_a_replica_holds_leave_the_reserve_free():
    bare = fit_check("llama2-7b", H100, batch=1, context=1024)
    served = fit_check("llama2-7b", H100, batch=1, context=1024, stack="vllm")
    lost = max_kv_tokens(bare, "llama2-7b") - max_kv_tokens(served, "llama2-7b")
    assert lost == pytest.approx(served.reserve_bytes / 524288, abs=1)


def test_map_s_memory_line_states_the_reserve_and_the_headroom(capsys):
    argv = ["map", "--model", "llama2-70b", "--phase", "decode", "--batch", "16",
            "--seq", "4095", "--chips", "2"]  # fmt: skip
    assert main(argv) == 0
    line = next(x for x in capsys.readouterr().out.splitlines() if x.startswith("memory"))
    assert line.endswith(": fits")
    assert "stack pytorch-compile states no memory reserve" in line
    assert "; headroom " in line
    assert main([*argv, "--stack", "vllm"]) == 0
    line = next(x for x in capsys.readouterr().out.splitlines() if x.startswith("memory"))
    assert line.startswith("memory    DOES NOT FIT after the stack's reserve: ")
    assert "stack vllm reserves 7.965 GiB (10% of hbm; " in line
    assert line.endswith(" over")


def test_a_reserve_is_a_stack_figure_with_its_origin():
    assert memory_reserve("vllm").origin == load_stack("vllm").memory_reserve_fraction.source
    assert memory_reserve().fraction == 0.0
    good = (stacks_dir() / "gpt-fast.yaml").read_text(encoding="utf-8")
    for extra, words in (
        ("memory_reserve_fraction:\n  value: 0.6\n  assumption: 'a stated assumption'\n", "< 0.5"),
        ("memory_reserve_fraction:\n  value: 0.1\n", "exactly one"),
    ):
        with pytest.raises(StackError, match=words) as err:
            parse_stack(good.replace("sources:", extra + "sources:", 1), "stacks/gpt-fast.yaml")
        assert "\n" not in str(err.value)
