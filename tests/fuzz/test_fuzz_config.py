"""Mutants of a Hugging Face ``config.json`` (Llama, GPT-2 and BERT families; issue 13).

Every mutant maps with finite, sane figures or exits 2 with one line naming the file; sizes that
64-bit arithmetic cannot hold, head counts that do not divide the width, and hostile nesting are
refused, never hang.
"""

from __future__ import annotations

import json

import pytest
from fuzz_contract import (
    assert_contract,
    assert_sane_mapping,
    fresh,
    hostile_values,
    read_json,
    run_cli,
)
from hypothesis import given
from hypothesis import strategies as st

BASES = {
    "llama": {
        "model_type": "llama", "architectures": ["LlamaForCausalLM"], "hidden_size": 256,
        "num_hidden_layers": 2, "num_attention_heads": 8, "num_key_value_heads": 4,
        "intermediate_size": 512, "vocab_size": 1000, "max_position_embeddings": 512,
        "hidden_act": "silu", "tie_word_embeddings": False,
    },
    "gpt2": {
        "model_type": "gpt2", "n_embd": 128, "n_layer": 2, "n_head": 4, "vocab_size": 500,
        "n_positions": 256, "activation_function": "gelu_new",
    },
    "bert": {
        "model_type": "bert", "hidden_size": 128, "num_hidden_layers": 2,
        "num_attention_heads": 4, "intermediate_size": 512, "vocab_size": 500,
        "max_position_embeddings": 128, "type_vocab_size": 2, "hidden_act": "gelu",
    },
}  # fmt: skip
KEYS = sorted({k for base in BASES.values() for k in base})
#: Sizes: small valid ones, edge cases, and ones no arithmetic should be asked to hold.
sizes = st.sampled_from((1, 2, 3, 7, 64, 100, 0, -1, 10**6, 10**12, 10**400, 2**63, 1_000_000))

mutation = st.tuples(
    st.sampled_from(KEYS), st.one_of(hostile_values, sizes), st.booleans()
)  # (key, value, delete)


@given(
    family=st.sampled_from(sorted(BASES)),
    mutations=st.lists(mutation, min_size=1, max_size=3),
    phase=st.sampled_from(("prefill", "decode")),
    seq=st.sampled_from((None, "1", "16", "100000")),
)
def test_config_mutants(tmp_path, family, mutations, phase, seq):
    doc = dict(BASES[family])
    for key, value, delete in mutations:
        if delete:
            doc.pop(key, None)
        else:
            doc[key] = value
    config = fresh(tmp_path, "config.json")
    try:
        config.write_text(json.dumps(doc))
    except (ValueError, OverflowError):  # e.g. a float that JSON cannot hold
        return
    out = fresh(tmp_path, "map.json")
    argv = ["map", "--hf-config", str(config), "--phase", phase, "--format", "json"]
    argv += ["--seq", seq] if seq else []
    outcome = assert_contract(
        run_cli(*argv, "--output", str(out)),
        names=(config.name, "--seq", "--context"),
        outputs=(out,),
    )
    if outcome.code == 0:
        assert_sane_mapping(read_json(out))


HOSTILE_JSON = (
    b"[" * 100_000 + b"]" * 100_000,
    b'{"a":' * 50_000 + b"1" + b"}" * 50_000,
    b'{"model_type": "llama", "hidden_size": ' + b"9" * 5000 + b"}",
    b'{"model_type": "llama", "hidden_size": NaN}',
    b'{"model_type": "llama", "hidden_size": Infinity}',
    b'{"architectures": [["x"]]}',
    b'{"architectures": "LlamaForCausalLM"}',
    b"\xff\xfe not utf-8",
    b"",
    b"null",
)


@pytest.mark.parametrize("raw", HOSTILE_JSON, ids=range(len(HOSTILE_JSON)))
def test_hostile_json_text(tmp_path, raw):
    config = fresh(tmp_path, "config.json")
    config.write_bytes(raw)
    outcome = assert_contract(run_cli("map", "--hf-config", str(config)), names=(config.name,))
    assert outcome.code == 2


def test_pipe_and_device_are_refused(tmp_path):
    import os

    fifo = tmp_path / "config.json"
    os.mkfifo(fifo)
    for path in (fifo, "/dev/zero"):
        outcome = assert_contract(run_cli("map", "--hf-config", str(path)), names=(str(path),))
        assert outcome.code == 2
