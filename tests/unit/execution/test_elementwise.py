import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from workbench.execution import ACTIVATIONS, ExecutionError, Trace, elementwise_chain
from workbench.execution.reference import elementwise_ref
from workbench.ir.ops import ELEMENTWISE_FLOPS

from .conftest import FAST

kinds = st.lists(st.sampled_from(sorted(set(ACTIVATIONS) - {"exp"})), max_size=4).map(tuple)


@FAST
@given(
    x=arrays(np.float32, st.tuples(st.integers(1, 5), st.integers(1, 30)),
             elements=st.floats(-8, 8, width=32)),
    chain=kinds, tile=st.integers(1, 64),
)  # fmt: skip
def test_chain_matches_reference(x, chain, tile):
    got = elementwise_chain(x, chain, tile=tile, backend="numpy")
    np.testing.assert_allclose(got, elementwise_ref(x, chain), rtol=2e-5, atol=2e-6)


def test_trace_counts_tiles_and_table_flops():
    x = np.ones(1000, np.float32)
    tr = Trace()
    elementwise_chain(x, ("gelu", "relu"), tile=300, trace=tr)
    assert len(tr) == 4
    assert tr.total_flops == 1000 * (ELEMENTWISE_FLOPS["gelu"] + ELEMENTWISE_FLOPS["relu"])


def test_unknown_kind_raises():
    with pytest.raises(ExecutionError, match="swish"):
        elementwise_chain(np.ones(3), ("relu", "swish"))
