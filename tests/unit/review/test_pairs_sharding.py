"""Measured pairs say when the two runs shard differently: the same kernel template launched by
the same operator with other template arguments (issue 17)."""

from __future__ import annotations

from shaped_trace import write_shaped_trace

from workbench.evidence import read_trace
from workbench.evidence.operators import read_operators
from workbench.review.join._templates import template_differences, template_split
from workbench.review.join.pairs import differences, pair_document

TBE = "void split_embedding_codegen_forward_unweighted_kernel<float, float, float, long, {}ul>(int)"
LOOKUP = ("fbgemm::split_embedding_codegen_lookup", [[4096], [4096]], ["long", "long"])
ADD = "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<{}>>(int)"
ADD_CALL = ("aten::add", [[64, 64], [64, 64], []], ["float", "float", "Scalar"])


def _runs(tmp_path, calls_a, calls_b):
    a = write_shaped_trace(tmp_path / "a.json", calls_a, steps=3)
    b = write_shaped_trace(tmp_path / "b.json", calls_b, steps=3)
    return read_trace(a), read_operators(a), read_trace(b), read_operators(b)


def test_the_same_template_with_other_arguments_is_a_sharding_difference(tmp_path):
    runs = _runs(
        tmp_path, [(*LOOKUP, [(TBE.format(2), 1e-3)])], [(*LOOKUP, [(TBE.format(5), 2e-3)])]
    )
    (d,) = template_differences(*runs)
    assert d.operator == "fbgemm::split_embedding_codegen_lookup"
    assert d.template == "split_embedding_codegen_forward_unweighted_kernel"
    assert d.baseline == (("float", "float", "float", "long", "2ul"),)
    assert d.candidate == (("float", "float", "float", "long", "5ul"),)
    assert "(argument 5: 2ul vs 5ul)" in d.describe()
    notes = " ".join(differences(*runs))
    assert "sharding differs (kernel template arguments): 1 kernel template(s)" in notes
    assert "under fbgemm::split_embedding_codegen_lookup" in notes
    doc = pair_document(*runs)
    (row,) = doc["template_differences"]
    assert row["candidate"] == [["float", "float", "float", "long", "5ul"]]


def test_one_side_running_more_instantiations_is_not_sharding(tmp_path):
    # the candidate also adds in double: a data-type difference, not other template arguments
    # for the same work
    base = [(*ADD_CALL, [(ADD.format("float"), 1e-3)])]
    more = [(*ADD_CALL, [(ADD.format("float"), 1e-3), (ADD.format("double"), 1e-3)])]
    runs = _runs(tmp_path, base, more)
    assert template_differences(*runs) == ()
    assert not any("sharding" in line for line in differences(*runs))


def test_same_kernels_no_difference_and_names_without_templates_are_skipped(tmp_path):
    calls = [(*LOOKUP, [(TBE.format(2), 1e-3), ("ampere_sgemm_128x64_nn", 1e-3)])]
    assert template_differences(*_runs(tmp_path, calls, calls)) == ()
    assert template_split("ampere_sgemm_128x64_nn") == ("ampere_sgemm_128x64_nn", None)
    # a return type with its own template is skipped; nested arguments stay whole
    name = "std::enable_if<!(false), void>::type ns::k<int, Op<float, 2> >(int)"
    assert template_split(name) == ("ns::k", ("int", "Op<float, 2>"))
