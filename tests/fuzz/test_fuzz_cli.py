"""Random ``workbench map`` argument sets, valid and not (issue 13).

Flags are drawn from a grammar of plausible and hostile values; every combination either maps
with finite, sane figures or exits 2 with one line, and writes nothing when it fails.
"""

from __future__ import annotations

import pytest
from fuzz_contract import assert_contract, assert_sane_mapping, fresh, read_json, run_cli
from hypothesis import given
from hypothesis import strategies as st

INTS = ("0", "-1", "1", "2", "3", "7", "64", "100000", "100000000", str(2**63), "1.5", "x", "")
FLAGS = {
    "--model": ("mlp", "gpt2", "bert-base", "resnet50", "llama2-7b", "nope", "", "<script>"),
    "--hardware": ("teaching", "h100-sxm", "edge-npu", "l4", "eyeriss", "tpu-v5e", "nope", "/"),
    "--phase": ("prefill", "decode", "train"),
    "--batch": INTS,
    "--seq": INTS,
    "--context": INTS,
    "--chips": INTS,
    "--dtype": ("bf16", "fp16", "fp32", "int8", "fp8", "int4", "fp7", ""),
    "--weight-dtype": ("int4", "int8", "fp8", "bf16", "nope"),
    "--kernel-dtype": ("*=fp32", "*.attn.sdpa=fp32", "fc*=int8", "nomatch=fp8", "=", "x"),
    "--no-fusion": ("gemm_epilogue", "flash_attention", "layout_fold", "bogus"),
    "--layout": ("auto", "NCHW", "NHWC", "NWHC"),
    "--launch": ("eager", "graph", "later"),
    "--tile": ("*=128x128x64", "*=16x16x16", "*=1x1x1", "*=0x1x1", "abc", "*=9999999x1x1"),
    "--search": ("full", "heuristic", "random"),
}
SWITCHES = ("--barrier-per-layer", "--no-layout-propagation", "--allow-long-context")

args = st.lists(
    st.sampled_from(sorted(FLAGS)).flatmap(
        lambda flag: st.tuples(st.just(flag), st.sampled_from(FLAGS[flag]))
    ),
    max_size=4,
)


@given(
    pairs=args,
    switches=st.lists(st.sampled_from(SWITCHES), max_size=2, unique=True),
    model=st.sampled_from(("mlp", "gpt2", "bert-base", "resnet50")),
    hardware=st.sampled_from(("teaching", "h100-sxm", "edge-npu")),
)
def test_map_argument_sets(tmp_path, pairs, switches, model, hardware):
    out = fresh(tmp_path, "map.json")
    argv = ["map", "--model", model, "--hardware", hardware, "--seq", "64"]
    for flag, value in pairs:
        argv += [flag, value] if not value.startswith("-") else [f"{flag}={value}"]
    argv += [*switches, "--format", "json", "--output", str(out)]
    outcome = assert_contract(run_cli(*argv), outputs=(out,))
    if outcome.code == 0:
        assert_sane_mapping(read_json(out))
    # NOTE: the same flags through ``run``: the record is written only when the run succeeds.
    record = fresh(tmp_path, "run.json")
    run_argv = ["run", *argv[1 : argv.index("--format")], "--record", str(record)]
    again = assert_contract(run_cli(*run_argv), outputs=(record,))
    assert again.code == outcome.code, (outcome.err, again.err)
    assert (again.code == 0) == record.is_file()


@given(
    command=st.sampled_from(("map", "compare", "sweep-latency", "hardware", "triage", "review")),
    junk=st.lists(
        st.sampled_from(("--nope", "-x", "--", "--model", "", "\x00", "--help=1")), max_size=3
    ),
)
def test_unknown_flags_are_one_line(command, junk):
    outcome = run_cli(command, *junk)
    assert_contract(outcome)


def _value_options() -> list[tuple[str, str]]:
    """``(command, option)`` for every option of every command that takes a value."""
    import argparse

    from workbench.cli import build_parser

    parser = build_parser()
    found: list[tuple[str, str]] = []
    for group in parser._subparsers._group_actions:  # type: ignore[union-attr]
        for command, sub in group.choices.items():
            for action in sub._actions:
                takes = action.nargs != 0 and action.option_strings and action.dest != "help"
                if takes and not isinstance(action, argparse._SubParsersAction):
                    found.append((command, action.option_strings[-1]))
    return found


VALUE_OPTIONS = _value_options()


@pytest.mark.parametrize(("command", "flag"), VALUE_OPTIONS)
@pytest.mark.parametrize("blank", ["", " \t"])
def test_an_empty_value_for_any_option_is_refused(command, flag, blank):
    """``--on ''``, ``--hardware ''``, ``--output ''``: one line naming the option, exit 2."""
    outcome = assert_contract(run_cli(command, f"{flag}={blank}"), names=(flag,))
    assert outcome.code == 2, outcome
