"""Lesson 09's section 3 (host profile against host measurements) and its gated claims."""

import math

import pytest

from workbench.exercises import _check, lesson09
from workbench.exercises._shared import mapping


@pytest.fixture
def fresh_session(monkeypatch):
    """No exercise solved or revealed yet (the gating state is per process)."""
    monkeypatch.setattr(_check, "_SETTLED", set())
    monkeypatch.setattr(_check, "_REVEALED", set())
    monkeypatch.setattr(_check, "_ATTEMPTS", {})


@pytest.fixture(scope="module")
def tuned():
    return lesson09.autotune_kernel("gpt2", seq=64, k=4, repeats=3)


def test_candidates_are_ranked_on_the_host_profile_and_timed_here(tuned):
    r = tuned.result
    shapes = [c.tiling.shape for c in r.candidates]
    assert len(shapes) == len(set(shapes)) >= 3
    assert [c.predicted_rank for c in r.candidates] == list(range(1, len(shapes) + 1))
    predicted = [c.predicted_s for c in r.candidates]
    assert predicted == sorted(predicted)  # the host profile's order
    assert all(len(c.measured.samples) == 3 for c in r.candidates)
    assert len(tuned.gpu_s) == len(shapes)
    assert all(s > 0 for s in tuned.gpu_s)
    table = lesson09.candidates_table(tuned)
    assert list(table["tile"]) == shapes
    assert (table["p10_ms"] <= table["measured_ms"]).all()
    assert (table["measured_ms"] <= table["p90_ms"]).all()


def test_measured_claims_read_the_run(tuned):
    text = str(lesson09.candidates_claim(tuned))
    first, second = (c.tiling.shape for c in tuned.result.candidates[:2])
    assert f"`{first}` and `{second}`" in text
    assert "ran 3 times each" in text
    assert ("refuses to rank them" in text) == (
        tuned.result.candidates[0].measured_rank == tuned.result.candidates[1].measured_rank
    )
    like = str(lesson09.like_with_like_claim(tuned))
    assert "`h100-sxm` profile orders the same tiles" in like
    pit = str(lesson09.measured_pitfall_claim(tuned))
    assert "ran 3 times here" in pit


def test_exercise_2_counts_the_gpu_tile_products_and_unlocks_its_claim(tuned, fresh_session):
    km = mapping("gpt2", "h100-sxm", seq=64).kernel("layers.0.mlp.up_proj")
    g, t = km.kernel.gemm, km.tiling
    n = math.ceil(g.m / t.tile_m) * math.ceil(g.n / t.tile_n) * math.ceil(g.k / t.tile_k)
    claim = lesson09.products_claim(tuned, t)
    assert claim.hidden
    assert f"{n:,}" not in str(claim)
    assert not lesson09.check_tile_products(n + 1, strict=False)
    assert claim.hidden  # a wrong try unlocks nothing
    assert lesson09.check_tile_products(n, strict=False)
    assert not claim.hidden
    assert f"`{t.shape}` would issue {n:,}" in str(claim)


def test_plan_claim_is_hidden_until_exercise_1(fresh_session):
    plans = lesson09.plan_table("llama2-7b", "h100-sxm", batches=(1, 8), seqs=(16, 2048))
    claim = lesson09.plan_claim(plans)
    distinct = int(plans["best_tile"].nunique())
    assert "answers Exercise 1" in claim._repr_markdown_()
    assert f"holds {distinct} distinct" not in repr(claim)
    lesson09.check_distinct_plans(None, table=plans, strict=False)
    _check.reveal("distinct_plans")
    assert f"holds {distinct} distinct" in claim._repr_markdown_()
