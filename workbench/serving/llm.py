"""Discrete-event simulation of one LLM serving replica: continuous and static batching.

Continuous batching is iteration-level, prefill-prioritised scheduling as in Orca (Yu et al.,
OSDI 2022) and vLLM's default scheduler (Kwon et al., SOSP 2023)::

    loop:
        if requests wait and a slot is free (batch < max_batch, prompt-token budget and KV room):
            run one prefill iteration for the waiting requests, oldest first, that fit
            (running decodes pause; each joining request gets its first token at its end)
        else:
            run one decode iteration: every running sequence gets one more token
            (a sequence leaves at the end of the step that produced its last token)

Decode iterations are not simulated one by one: between two events (the next completion, or the
first step boundary after an arrival that could join) the batch does not change, so the engine
takes that whole run of steps at once from a per-batch-size curve of step time against context.
The step time of a mixed batch is the step time at the batch's mean context (exact when the
attention cost is linear in the cached tokens).

Static batching waits for ``max_batch`` requests (or ``max_wait_s`` after the oldest arrived),
prefills them together and decodes until the longest finishes; a short request's last token is
returned when it is generated, but its slot stays busy (padding) until the batch ends.
"""

from __future__ import annotations

import heapq
from itertools import accumulate
from typing import Literal

import numpy as np

from workbench.hw.schema import RuntimeVariance
from workbench.serving._common import Curves, check_positive, form_batch
from workbench.serving._errors import ServingError
from workbench.serving._noise import StepNoise, coerce_variance
from workbench.serving.result import SimResult, _Run, summarise
from workbench.serving.step_time import StepTimeModel
from workbench.serving.workload import Workload

__all__ = ["simulate"]


def simulate(
    workload: Workload,
    step_time: StepTimeModel,
    *,
    batching: Literal["continuous", "static"] = "continuous",
    max_batch: int = 64,
    max_wait_s: float = 0.05,
    max_prefill_tokens: int | None = None,
    kv_capacity_tokens: int | None = None,
    variance: RuntimeVariance | None = None,
    seed: int = 0,
) -> SimResult:
    """Simulate one replica serving a workload; deterministic for a seed.

    Args:
        workload: The requests (arrival times, prompt and output lengths).
        step_time: Prefill and decode iteration times, seconds.
        batching: ``"continuous"`` (iteration-level) or ``"static"`` (run each batch to the end).
        max_batch: Most sequences in one batch.
        max_wait_s: Static batching only: longest the oldest request waits for a full batch, s.
        max_prefill_tokens: Continuous only: prompt-token budget of one prefill iteration (a
            single request longer than the budget still runs alone); None for no budget.
        kv_capacity_tokens: Continuous only: KV-cache capacity, tokens; a request is admitted
            only when its prompt plus output fits beside the running ones. None for unlimited.
        variance: Launch jitter and slow steps (the hardware profile's ``runtime_variance``);
            None for none.
        seed: Seed of the variance draws.

    Returns:
        Throughput, latency percentiles and per-request latencies.

    Example:
        >>> from workbench.serving import AnalyticStepTime, poisson_arrivals
        >>> r = simulate(poisson_arrivals(5.0, 200, seed=1), AnalyticStepTime(), max_batch=16)
        >>> r.n_requests, r.e2e.p50_s <= r.e2e.p95_s <= r.e2e.p99_s
        (200, True)
    """
    check_positive("max_batch", max_batch, integer=True)
    check_positive("max_wait_s", max_wait_s + 1e-300)
    if batching not in ("continuous", "static"):
        raise ServingError(f"simulate: batching must be 'continuous' or 'static', got {batching!r}")
    var = coerce_variance(variance)
    prefill_rng, decode_rng = (
        np.random.default_rng(s) for s in np.random.SeedSequence(seed).spawn(2)
    )
    noise_p, noise_d = StepNoise(var, prefill_rng), StepNoise(var, decode_rng)
    length = int(workload.prompt_tokens.max() + workload.output_tokens.max()) + 2
    prefill = Curves(step_time.prefill_time, length, "prefill_time")
    decode = Curves(step_time.decode_time, length, "decode_time")
    if batching == "continuous":
        _check_continuous(workload, max_prefill_tokens, kv_capacity_tokens)
        run = _continuous(
            workload, prefill, decode, noise_p, noise_d, max_batch, max_prefill_tokens,
            kv_capacity_tokens,
        )  # fmt: skip
    else:
        run = _static(workload, prefill, decode, noise_p, noise_d, max_batch, max_wait_s)
    return summarise(
        workload.name, batching, workload.arrival_s, workload.output_tokens,
        workload.offered_rate_per_s, run,
    )  # fmt: skip


def _check_continuous(w: Workload, budget: int | None, kv: int | None) -> None:
    if budget is not None:
        check_positive("max_prefill_tokens", budget, integer=True)
    if kv is not None:
        check_positive("kv_capacity_tokens", kv, integer=True)
        need = int((w.prompt_tokens + w.output_tokens).max())
        if need > kv:
            raise ServingError(
                f"simulate: a request needs {need} KV tokens, more than kv_capacity_tokens={kv}"
            )


def _admit_count(
    p: list[int], o: list[int], nxt: int, k_max: int, budget: int | None, kv_room: int | None
) -> int:
    """How many waiting requests, oldest first, join the next prefill iteration."""
    if budget is None and kv_room is None:
        return k_max
    tokens, room, k = 0, kv_room, 0
    while k < k_max:
        tokens += p[nxt + k]
        if budget is not None and k > 0 and tokens > budget:
            break
        if room is not None:
            room -= p[nxt + k] + o[nxt + k]
            if room < 0:
                break
        k += 1
    return k


def _continuous(
    w: Workload,
    prefill: Curves,
    decode: Curves,
    noise_p: StepNoise,
    noise_d: StepNoise,
    max_batch: int,
    budget: int | None,
    kv_cap: int | None,
) -> _Run:
    arr, p, o = w.arrival_s.tolist(), w.prompt_tokens.tolist(), w.output_tokens.tolist()
    n = len(arr)
    cum_arr = [0.0, *accumulate(arr)]
    first, finish = [0.0] * n, [0.0] * n
    heap: list[tuple[int, int]] = []  # (decode step index at which it finishes, request)
    t = 0.0
    g = gp = nxt = arrived = active = ctx_sum = reserved = done = 0
    area = area_wait = area_batch = busy = 0.0
    noisy = noise_d.active
    while done < n:
        while arrived < n and arr[arrived] <= t:
            arrived += 1
        if active == 0 and nxt == arrived:  # idle: jump to the next arrival
            t = arr[nxt]
            continue
        k = 0
        if nxt < arrived and active < max_batch:
            kv_room = None if kv_cap is None else kv_cap - reserved
            k = _admit_count(p, o, nxt, min(max_batch - active, arrived - nxt), budget, kv_room)
        if k > 0:  # one prefill iteration for k joining requests
            tokens = sum(p[nxt : nxt + k])
            dt = noise_p.one(float(prefill(k)[(tokens + k // 2) // k]), gp)
            gp += 1
            b_run, n_wait = k, arrived - nxt
        else:  # a run of decode steps until the next completion or the next join point
            b_run, n_wait = active, arrived - nxt
            kc = heap[0][0] - g
            c0 = (ctx_sum + active // 2) // active
            may_join = active < max_batch and nxt == arrived < n
            if noisy:
                steps = noise_d.apply(decode(active)[c0 : c0 + kc], g)
                if may_join:
                    cum = steps.cumsum()
                    kc = min(kc, int(cum.searchsorted(arr[nxt] - t)) + 1)
                    dt = float(cum[kc - 1])
                else:
                    dt = float(steps.sum())
            else:  # O(1) from running sums of the step-time curve
                run = decode.prefix(active)
                s0 = run[c0]
                dt = float(run[c0 + kc] - s0)
                if may_join and dt > arr[nxt] - t:
                    kc = max(1, int(run.searchsorted(s0 + (arr[nxt] - t))) - c0)
                    dt = float(run[c0 + kc] - s0)
        # occupancy over (t, t + dt]: the state is fixed except for arrivals inside it
        t1 = t + dt
        j = arrived
        while j < n and arr[j] <= t1:
            j += 1
        inside = (j - arrived) * t1 - (cum_arr[j] - cum_arr[arrived])
        area += (active + n_wait) * dt + inside
        area_wait += (n_wait - k) * dt + inside
        area_batch += b_run * dt
        busy += dt
        arrived, t = j, t1
        if k > 0:
            for r in range(nxt, nxt + k):
                first[r] = t
                if o[r] == 1:
                    finish[r] = t
                    done += 1
                else:
                    heapq.heappush(heap, (g + o[r] - 1, r))
                    active += 1
                    ctx_sum += p[r] + 1
                    reserved += p[r] + o[r]
            nxt += k
            continue
        g += kc
        ctx_sum += active * kc
        while heap and heap[0][0] == g:
            r = heapq.heappop(heap)[1]
            finish[r] = t
            active -= 1
            ctx_sum -= p[r] + o[r]
            reserved -= p[r] + o[r]
            done += 1
    return _Run(
        first_s=np.array(first),
        finish_s=np.array(finish),
        area_in_system=area,
        area_waiting=area_wait,
        area_batch=area_batch,
        busy_s=busy,
    )


def _static(
    w: Workload,
    prefill: Curves,
    decode: Curves,
    noise_p: StepNoise,
    noise_d: StepNoise,
    max_batch: int,
    max_wait_s: float,
) -> _Run:
    arr, p, o = w.arrival_s, w.prompt_tokens, w.output_tokens
    n = arr.size
    first, finish = np.empty(n), np.empty(n)
    t, i, g, gp = 0.0, 0, 0, 0
    area = area_wait = area_batch = busy = 0.0
    while i < n:
        launch, j = form_batch(arr, i, t, max_batch, max_wait_s)
        b = j - i
        mean_prompt = int(p[i:j].sum() + b // 2) // b
        t_first = launch + noise_p.one(float(prefill(b)[mean_prompt]), gp)
        gp += 1
        k = int(o[i:j].max()) - 1  # padded: every slot decodes until the longest is done
        steps = noise_d.apply(decode(b)[mean_prompt + 1 : mean_prompt + 1 + k], g)
        cum = np.concatenate(([0.0], np.cumsum(steps)))
        g += k
        first[i:j] = t_first
        finish[i:j] = t_first + cum[o[i:j] - 1]
        end = t_first + float(cum[-1])
        area_wait += float((launch - arr[i:j]).sum())
        area += float((finish[i:j] - arr[i:j]).sum())
        area_batch += b * (end - launch)
        busy += end - launch
        t, i = end, j
    return _Run(
        first_s=first,
        finish_s=finish,
        area_in_system=area,
        area_waiting=area_wait,
        area_batch=area_batch,
        busy_s=busy,
    )
