"""The real DLRM pair (tests/data/hta) shards its embedding tables differently: 8 ranks on the
A100 run, 2 on the V100 one, so FBGEMM's TBE kernels run with other template arguments
(issue 17)."""

from __future__ import annotations

from pathlib import Path

from workbench.evidence import read_trace
from workbench.evidence.operators import read_operators
from workbench.review.join.pairs import pair_document

DATA = Path(__file__).parents[1] / "data" / "hta"


def test_dlrm_pair_says_the_tbe_kernels_are_sharded_differently():
    a100, v100 = DATA / "dlrm_a100.json.gz", DATA / "dlrm_v100_rank1.json.gz"
    doc = pair_document(
        read_trace(a100), read_operators(a100), read_trace(v100), read_operators(v100)
    )
    line = next(n for n in doc["differences"] if n.startswith("sharding differs"))
    print(line)
    assert "3 kernel template(s)" in line
    assert "2ul vs 5ul" in line
    templates = {d["template"] for d in doc["template_differences"]}
    assert "split_embedding_codegen_forward_unweighted_kernel" in templates
    assert all(t.startswith("split_embedding") for t in templates)
