"""Generate the serving traces shipped in workbench/serving/traces/ (seeded, reproducible).

    python scripts/make_traces.py            # rewrite the shipped traces
    python scripts/make_traces.py --check    # exit 1 if the shipped files differ from a rebuild

Two traces, 4,000 requests each, at a mean of 2 requests/s (the simulator rescales arrival times
to any offered rate, so only the shape of the arrival process matters):

production-chat
    A production-like chat mix. Every figure below is an ASSUMPTION chosen to resemble published
    serving-trace summaries, recalled rather than re-measured [R]:
    - Azure LLM inference trace 2023 (Patel et al., "Splitwise", ISCA 2024; data in
      github.com/Azure/AzurePublicDataset): conversation requests with a median prompt of roughly
      1k tokens and a median output of roughly 100-150 tokens, both long-tailed; arrivals bursty.
    - ShareGPT as used by vLLM (Kwon et al., SOSP 2023): mean prompt ~160 tokens, mean output
      ~340 tokens: shorter prompts, longer outputs than the Azure conversation trace.
    - BurstGPT (Wang et al., 2024, Azure OpenAI GPT service logs): inter-arrival times fit a
      Gamma distribution better than an exponential one, i.e. burstier than Poisson.
    The mix sits between those: prompts lognormal with median 600 tokens and p99 6,000 tokens,
    capped at 8,192 (a common context limit); outputs lognormal with median 150 tokens and p99
    1,500 tokens, capped at 2,048 (a common max_tokens); Gamma inter-arrivals with coefficient
    of variation 2 (Poisson is 1).

synthetic-fixed
    The synthetic benchmark shape: every prompt 512 tokens, every output 128 tokens, arrivals
    evenly spaced. A platform tuned for this shape can lose on the production mix, whose long
    prompts and outputs stress prefill compute and KV-cache growth.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import numpy as np

from workbench.serving import (
    LogNormalLengths,
    ServingError,
    Workload,
    gamma_arrivals,
    load_trace,
    save_trace,
)

OUT = Path(__file__).resolve().parent.parent / "workbench" / "serving" / "traces"
N_REQUESTS = 4000
RATE_PER_S = 2.0
SEED = 20240607


def production_chat() -> tuple[Workload, str, dict[str, object]]:
    prompts = LogNormalLengths(median=600, p99=6000, minimum=4, maximum=8192)
    outputs = LogNormalLengths(median=150, p99=1500, minimum=1, maximum=2048)
    w = gamma_arrivals(RATE_PER_S, N_REQUESTS, 2.0, prompts, outputs, seed=SEED)
    w = Workload(arrival_s=w.arrival_s, prompt_tokens=w.prompt_tokens,
                 output_tokens=w.output_tokens, name="production-chat")  # fmt: skip
    description = (
        "Production-like chat mix: bursty Gamma arrivals (CV 2), lognormal prompts (median 600, "
        "p99 6000, cap 8192 tokens) and outputs (median 150, p99 1500, cap 2048 tokens)."
    )
    provenance = {
        "generator": "scripts/make_traces.py",
        "seed": SEED,
        "sources": [
            "[R] Patel et al., Splitwise, ISCA 2024: Azure LLM inference trace 2023",
            "[R] Kwon et al., vLLM, SOSP 2023: ShareGPT length statistics",
            "[R] Wang et al., BurstGPT, 2024: Gamma inter-arrivals",
        ],
        "assumptions": [
            "length medians, p99s and caps are chosen to resemble the recalled summaries, "
            "not fitted to the data",
            "arrival CV 2 is an assumption (burstier than Poisson)",
        ],
    }
    return w, description, provenance


def synthetic_fixed() -> tuple[Workload, str, dict[str, object]]:
    w = gamma_arrivals(RATE_PER_S, N_REQUESTS, 0.0, 512, 128, seed=SEED)
    w = Workload(arrival_s=w.arrival_s, prompt_tokens=w.prompt_tokens,
                 output_tokens=w.output_tokens, name="synthetic-fixed")  # fmt: skip
    description = "Synthetic fixed shape: prompt 512, output 128 tokens, evenly spaced arrivals."
    return w, description, {"generator": "scripts/make_traces.py", "seed": SEED}


TRACES = {"production-chat": production_chat, "synthetic-fixed": synthetic_fixed}


def summary(w: Workload) -> str:
    gaps = np.diff(w.arrival_s)
    p, o = w.prompt_tokens, w.output_tokens
    return (
        f"{w.name}: n={len(w)} rate={w.offered_rate_per_s:.2f}/s "
        f"gap_cv={gaps.std() / gaps.mean():.2f} "
        f"prompt p50/p99/max={np.median(p):.0f}/{np.percentile(p, 99):.0f}/{p.max()} "
        f"output p50/p99/max={np.median(o):.0f}/{np.percentile(o, 99):.0f}/{o.max()}"
    )


def write_all(out: Path) -> list[Path]:
    paths = []
    for name, make in TRACES.items():
        w, description, provenance = make()
        path = save_trace(w, out / f"{name}.json", description=description, provenance=provenance)
        print(f"{summary(w)} -> {path} ({path.stat().st_size / 1024:.0f} KiB)")
        paths.append(path)
    return paths


def check(out: Path) -> bool:
    with tempfile.TemporaryDirectory() as tmp:
        fresh = write_all(Path(tmp))
        same = [(out / p.name).exists() and (out / p.name).read_bytes() == p.read_bytes()
                for p in fresh]  # fmt: skip
    try:
        for p in out.glob("*.json"):
            load_trace(p)
    except ServingError as exc:
        print(exc)
        return False
    return all(same)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=OUT, help="output folder")
    parser.add_argument("--check", action="store_true", help="compare with the shipped files")
    args = parser.parse_args(argv)
    if args.check:
        ok = check(args.out)
        print("shipped traces match a rebuild" if ok else "shipped traces differ from a rebuild")
        return 0 if ok else 1
    write_all(args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
