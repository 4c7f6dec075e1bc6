"""GPU check: every CuPy path against NumPy, and timings against cupy.matmul.

On a machine with CuPy and a CUDA device this:
1. runs every execution kernel (and the CuPy fused kernels) on CuPy and on NumPy and prints the
   max abs difference (exit status 1 if any exceeds its tolerance);
2. times the tiled GEMM against cupy.matmul at 4096^3 for fp32, fp16 and bf16 (CuPy has no
   bf16 dtype: the bf16 baseline is cupy.matmul in fp32 on bf16-rounded inputs);
3. times fused against unfused attention at seq 8192, head dim 128, and reads the memory
   pool's high-water mark for each;
4. the adapter path: maps a Llama-like layer (GEMM and fused attention) on the H100 profile and
   runs its kernels through ``workbench.execution.run.execute`` on CuPy and on NumPy (max abs
   difference, times);
5. autotunes one Llama-like GEMM on CuPy (the cost model's top-k timed, Spearman of predicted
   vs measured order);
6. ``workbench calibrate --backend cupy --quick`` in-process: probe_gpu(quick=True) and
   gpu_profile, reporting the measured matmul peaks, copy bandwidth and launch cost (skipped in
   ``--dry-run``: the probe needs a device);
then prints a table and one JSON summary line. Without a GPU it prints 'no GPU' and exits 0.

``--dry-run`` runs the same code on NumPy at small sizes (to test this script without a GPU).
Budget: well under 3 minutes on an H200.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
import tracemalloc
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

from workbench import execution as ex
from workbench.execution import cupy_kernels as ck
from workbench.execution import get_backend, sync, to_numpy
from workbench.execution.gemm import prepare_gemm_inputs


def _rng_inputs(seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    f = lambda *s: rng.standard_normal(s).astype(np.float32)  # noqa: E731
    return {"a": f(300, 500), "b": f(500, 200), "bias": f(200), "res": f(300, 200),
            "x4": f(2, 17, 17, 32), "w4": f(64, 32, 3, 3), "wdw": f(32, 1, 3, 3),
            "q": f(2, 8, 100, 64), "kv": f(2, 2, 300, 64), "rows": f(64, 1000) * 4}  # fmt: skip


def _cases(xp: Any, bk: Any, d: dict[str, Any]) -> dict[str, tuple[Callable[[], Any], float]]:
    """name -> (thunk, tolerance on max abs difference vs NumPy)."""
    t = {"tile_m": 128, "tile_n": 64, "tile_k": 128}
    nchw = xp.ascontiguousarray(d["x4"].transpose(0, 3, 1, 2))
    ep = ("bias", "gelu", "residual")
    return {
        "gemm_fp32_split2_epilogue": (lambda: ex.gemm(d["a"], d["b"], split_k=2, epilogue=ep,
                                      bias=d["bias"], residual=d["res"], backend=bk, **t), 1e-3),
        "gemm_bf16": (lambda: ex.gemm(d["a"], d["b"], dtype="bf16", backend=bk, **t), 0.25),
        "gemm_fp8_e4m3": (lambda: ex.gemm(d["a"], d["b"], dtype="fp8_e4m3", backend=bk, **t), 0.5),
        "gemm_int8": (lambda: ex.gemm(d["a"], d["b"], dtype="int8", backend=bk, **t), 1e-3),
        "conv_nhwc": (lambda: ex.conv2d(d["x4"], d["w4"], padding=1, backend=bk, **t), 1e-3),
        "conv_nchw_stride2": (lambda: ex.conv2d(nchw, d["w4"], stride=2, padding=1,
                              layout="nchw", backend=bk, **t), 1e-3),
        "conv_depthwise_dil2": (lambda: ex.conv2d(d["x4"], d["wdw"], dilation=2, padding=2,
                                groups=32, backend=bk, **t), 1e-4),
        "attention_fused_causal_gqa": (lambda: ex.attention_fused(d["q"], d["kv"], d["kv"],
                                       causal=True, q_tile=32, kv_tile=64, backend=bk), 1e-4),
        "attention_unfused_causal_gqa": (lambda: ex.attention_unfused(d["q"], d["kv"], d["kv"],
                                         causal=True, backend=bk), 1e-4),
        "softmax_online": (lambda: ex.softmax(d["rows"], col_tile=128, backend=bk), 1e-5),
        "layernorm_online": (lambda: ex.layernorm(d["rows"], col_tile=128, backend=bk), 1e-4),
        "rmsnorm_two_pass": (lambda: ex.rmsnorm(d["rows"], method="two_pass", backend=bk), 1e-4),
        "reduce_max": (lambda: ex.reduce(d["rows"], "max", backend=bk), 0.0),
        "elementwise_chain": (lambda: ex.elementwise_chain(d["rows"], ("silu", "tanh"),
                              backend=bk), 1e-5),
        "quantize_fp8_e5m2": (lambda: ex.fake_quantize(d["rows"], "fp8_e5m2", axis=0, xp=xp), 1e-5),
        "quantize_int4": (lambda: ex.fake_quantize(d["b"], "int4", axis=0, xp=xp), 1e-5),
        "quantize_bf16": (lambda: ex.fake_quantize(d["rows"], "bf16", xp=xp), 0.0),
    }  # fmt: skip


def _twin_cases(
    xp: Any, d: dict[str, Any], gpu: bool
) -> dict[str, tuple[Callable[[], Any], float]]:
    """The CuPy fused kernels (NumPy twins in dry-run mode)."""
    ep = ("bias", "silu", "residual")
    if gpu:
        return {
            "cupy_fused_epilogue": (lambda: ck.fused_epilogue_cupy(d["res"], ep, d["bias"],
                                    d["res"]), 1e-5),
            "cupy_online_softmax_rawkernel": (lambda: ck.online_softmax_cupy(d["rows"]), 1e-5),
        }  # fmt: skip
    return {
        "cupy_fused_epilogue": (lambda: ck.fused_epilogue_numpy(d["res"], ep, d["bias"],
                                d["res"]), 1e-5),
        "cupy_online_softmax_rawkernel": (lambda: ck.online_softmax_numpy(d["rows"]), 1e-5),
    }  # fmt: skip


def check_paths(bk: Any) -> list[dict[str, Any]]:
    """Run every path on ``bk`` and on NumPy; return rows with max abs differences."""
    host = _rng_inputs()
    dev = {k: bk.xp.asarray(v) for k, v in host.items()}
    np_bk = get_backend("numpy")
    want = {k: fn() for k, (fn, _) in _cases(np, np_bk, host).items()}
    ep = ("bias", "silu", "residual")
    want |= {"cupy_fused_epilogue": ck.fused_epilogue_numpy(host["res"], ep, host["bias"],
                                                            host["res"]),
             "cupy_online_softmax_rawkernel": ck.online_softmax_numpy(host["rows"])}  # fmt: skip
    cases = _cases(bk.xp, bk, dev) | _twin_cases(bk.xp, dev, bk.is_gpu)
    rows = []
    for name, (fn, tol) in cases.items():
        try:
            got = to_numpy(fn())
            err = float(np.max(np.abs(got.astype(np.float64) - want[name])))
            ok = err <= tol
        except Exception as exc:  # report and keep going: one broken path must not hide others
            err, ok = float("nan"), False
            print(f"  {name}: {type(exc).__name__}: {exc}".splitlines()[0])
        rows.append({"path": name, "max_abs_diff": err, "tolerance": tol, "ok": ok})
    return rows


def _time(fn: Callable[[], Any], bk: Any, repeats: int) -> float:
    fn()
    sync(bk)
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        sync(bk)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def time_gemm(bk: Any, size: int, repeats: int) -> list[dict[str, Any]]:
    """Tiled GEMM against the library matmul per dtype (s)."""
    xp = bk.xp
    rng = np.random.default_rng(1)
    a = xp.asarray(rng.standard_normal((size, size)).astype(np.float32))
    b = xp.asarray(rng.standard_normal((size, size)).astype(np.float32))
    tile = min(1024, size)
    rows = []
    for dtype in ("fp32", "fp16", "bf16"):
        if dtype == "fp16":
            a_l, b_l = a.astype(xp.float16), b.astype(xp.float16)
        else:
            a_l, b_l = prepare_gemm_inputs(a, b, dtype, xp) if dtype == "bf16" else (a, b)
        t_lib = _time(lambda a_l=a_l, b_l=b_l: xp.matmul(a_l, b_l), bk, repeats)

        def tiled(dtype: str = dtype) -> Any:
            return ex.gemm(a, b, tile_m=tile, tile_n=tile, tile_k=size, dtype=dtype, backend=bk)

        t_tiled = _time(tiled, bk, repeats)
        flops = 2 * size**3
        rows.append({"dtype": dtype, "size": size, "tiled_s": t_tiled, "library_matmul_s": t_lib,
                     "tiled_tflops": flops / t_tiled / 1e12, "library_tflops": flops / t_lib / 1e12,
                     "speed_vs_library": t_lib / t_tiled})  # fmt: skip
    return rows


def _peak(fn: Callable[[], Any], bk: Any) -> int:
    """Peak bytes: CuPy memory pool high-water after a clean pool, or tracemalloc on NumPy."""
    if bk.is_gpu:
        pool = bk.xp.get_default_memory_pool()
        sync(bk)
        pool.free_all_blocks()
        base = pool.total_bytes()
        fn()
        sync(bk)
        return int(pool.total_bytes() - base)
    tracemalloc.start()
    fn()
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return peak


def time_attention(bk: Any, seq: int, heads: int, head_dim: int) -> dict[str, Any]:
    xp = bk.xp
    rng = np.random.default_rng(2)
    q, k, v = (xp.asarray(rng.standard_normal((1, heads, seq, head_dim)).astype(np.float32))
               for _ in range(3))  # fmt: skip
    tile = min(1024, seq)

    def fused() -> Any:
        return ex.attention_fused(q, k, v, causal=True, q_tile=tile, kv_tile=tile, backend=bk)

    def unfused() -> Any:
        return ex.attention_unfused(q, k, v, causal=True, backend=bk)

    res = {"seq": seq, "heads": heads, "head_dim": head_dim, "causal": True,
           "fused_s": _time(fused, bk, 3), "unfused_s": _time(unfused, bk, 3),
           "fused_peak_bytes": _peak(fused, bk),
           "unfused_peak_bytes": _peak(unfused, bk)}  # fmt: skip
    res["max_abs_diff"] = float(np.max(np.abs(to_numpy(fused()) - to_numpy(unfused()))))
    res["time_ratio"] = res["fused_s"] / res["unfused_s"]
    res["memory_ratio"] = res["unfused_peak_bytes"] / max(res["fused_peak_bytes"], 1)
    return res


def _llama_layer(seq: int) -> Any:
    """A Llama-like layer in bf16 on the H100 profile: its QKV GEMM and fused attention."""
    from workbench.hw import load_hardware
    from workbench.ir import ops as O
    from workbench.ir.graph import Graph
    from workbench.mapper import map_model
    from workbench.options import MapOptions

    d, heads, kv_heads, hd = 4096, 32, 8, 128
    graph = Graph(
        name="llama-like",
        ops=(
            O.Linear(name="qkv", inputs=("x",), tokens=(seq,), in_features=d,
                     out_features=(heads + 2 * kv_heads) * hd, dtype="bf16"),
            O.Attention(name="attn", inputs=("q", "k", "v"), batch=1, heads=heads,
                        kv_heads=kv_heads, q_len=seq, kv_len=seq, head_dim=hd, causal=True,
                        dtype="bf16"),
        ),
    )  # fmt: skip
    hw = load_hardware("h100-sxm")
    opts = MapOptions(dtype="bf16")
    return graph, hw, opts, map_model(graph, hw, opts).kernels


def check_adapter(bk: Any, seq: int) -> list[dict[str, Any]]:
    """Run the mapped kernels via execute() on ``bk`` and NumPy; max abs diff and times (s)."""
    from workbench.execution.run import execute, make_inputs

    graph, _, _, kernels = _llama_layer(seq)
    np_bk = get_backend("numpy")
    rows = []
    for km in kernels:
        host = make_inputs(km.kernel, 0, np_bk, graph=graph)
        dev = {k: bk.xp.asarray(v) for k, v in host.items()}
        t_np = time.perf_counter()
        want = execute(km, host, graph=graph, backend=np_bk).output
        t_np = time.perf_counter() - t_np
        t_dev = _time(lambda km=km, dev=dev: execute(km, dev, graph=graph, backend=bk), bk, 3)
        got = to_numpy(execute(km, dev, graph=graph, backend=bk).output)
        err = float(np.max(np.abs(got.astype(np.float64) - want)))
        scale = max(1.0, float(np.max(np.abs(want))))
        # NOTE: bf16 outputs: a different accumulation order may flip one bf16 rounding step.
        tol = 1e-2 * scale
        rows.append({"kernel": km.kernel.name, "kind": km.kernel.kind, "tile": km.tiling.shape,
                     "max_abs_diff": err, "tolerance": tol, "ok": err <= tol,
                     "device_s": t_dev, "numpy_s": t_np})  # fmt: skip
    return rows


def tune_gemm(bk: Any, seq: int) -> dict[str, Any]:
    """Autotune the Llama-like QKV GEMM on ``bk`` (top-4 of the cost model, 3 repeats each)."""
    from workbench.tuning import autotune

    graph, hw, opts, kernels = _llama_layer(seq)
    km = next(k for k in kernels if k.kernel.kind == "gemm")
    res = autotune(km.kernel, hw, opts, k=4, backend=bk, repeats=3, progress=False, graph=graph)
    return {"kernel": km.kernel.name, "best_tile": res.best_tiling.shape, "best_s": res.best_s,
            "model_pick": res.candidates[0].tiling.shape if res.candidates else None,
            "spearman": res.spearman, "spearman_note": res.spearman_note,
            "gain_over_model": res.gain_over_model,
            "candidates": [{"tile": c.tiling.shape, "predicted_s": c.predicted_s,
                            "measured_s": c.measured.median_s}
                           for c in res.candidates]}  # fmt: skip


def calibrate_gpu(bk: Any) -> dict[str, Any]:
    """probe_gpu(quick=True) + gpu_profile: measured peaks (FLOP/s), HBM copy (B/s), launch (s)."""
    if not bk.is_gpu:
        return {"skipped": "dry run: probe_gpu needs a CUDA device"}
    from workbench.execution.gpu_probe import probe_gpu
    from workbench.hw.calibrate import gpu_profile

    t0 = time.perf_counter()
    try:
        figures = probe_gpu(quick=True)
        hw = gpu_profile(figures)
    except Exception as exc:  # report and keep going, like the paths above
        return {"error": f"{type(exc).__name__}: {exc}".splitlines()[0]}
    return {"peak_flops_per_s": dict(hw.matrix_engine.peak_flops_per_s),
            "matmul_by_size": {k: {str(n): r for n, r in v.items()}
                               for k, v in figures["matmul_by_size"].items()},
            "sms": hw.matrix_engine.cores, "smem_per_sm_bytes": hw.sram.capacity_bytes,
            "l2_bytes": hw.level("l2").capacity_bytes,
            "hbm_copy_bytes_per_s": hw.offchip.bandwidth_bytes_per_s,
            "hbm_bytes": hw.offchip.capacity_bytes,
            "kernel_launch_s": hw.overheads.kernel_launch_s, "device": figures["device"],
            "wall_s": time.perf_counter() - t0}  # fmt: skip


def _print_table(paths: list[dict], gemms: list[dict], att: dict) -> None:
    print(f"{'path':34} {'max |diff|':>11} {'tol':>8}  ok")
    for r in paths:
        print(f"{r['path']:34} {r['max_abs_diff']:11.2e} {r['tolerance']:8.0e}  {r['ok']}")
    print(f"\n{'gemm':6} {'size':>5} {'tiled ms':>9} {'lib ms':>8} {'tiled TF/s':>10} "
          f"{'lib TF/s':>9} {'tiled/lib speed':>15}")  # fmt: skip
    for g in gemms:
        print(f"{g['dtype']:6} {g['size']:5d} {g['tiled_s'] * 1e3:9.2f} "
              f"{g['library_matmul_s'] * 1e3:8.2f} {g['tiled_tflops']:10.1f} "
              f"{g['library_tflops']:9.1f} {g['speed_vs_library']:15.1%}")  # fmt: skip
    print(f"\nattention seq {att['seq']} x {att['heads']} heads, d {att['head_dim']} (causal): "
          f"fused {att['fused_s'] * 1e3:.1f} ms, unfused {att['unfused_s'] * 1e3:.1f} ms "
          f"(time ratio {att['time_ratio']:.2f}); peak fused {att['fused_peak_bytes'] / 2**20:.1f}"
          f" MiB, unfused {att['unfused_peak_bytes'] / 2**20:.1f} MiB "
          f"({att['memory_ratio']:.1f}x lower)")  # fmt: skip


def main() -> int:
    parser = argparse.ArgumentParser(description="Check the CuPy execution paths against NumPy.")
    parser.add_argument("--dry-run", action="store_true", help="NumPy in place of CuPy, small")
    args = parser.parse_args()
    if args.dry_run:
        bk = get_backend("numpy")
        sizes = {"gemm": 256, "seq": 512, "heads": 2, "adapter_seq": 64}
    else:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            bk = get_backend("cupy")
        if not bk.is_gpu:
            print("no GPU")
            return 0
        sizes = {"gemm": 4096, "seq": 8192, "heads": 8, "adapter_seq": 512}
    t0 = time.perf_counter()
    print(f"backend {bk.name} on {bk.device}; versions {dict(bk.versions)}")
    paths = check_paths(bk)
    gemms = time_gemm(bk, sizes["gemm"], repeats=5)
    att = time_attention(bk, sizes["seq"], sizes["heads"], 128)
    adapter = check_adapter(bk, sizes["adapter_seq"])
    tuned = tune_gemm(bk, sizes["adapter_seq"])
    calib = calibrate_gpu(bk)
    _print_table(paths, gemms, att)
    for r in adapter:
        print(f"adapter {r['kernel']:8} {r['kind']:9} tile {r['tile']:12} max |diff| "
              f"{r['max_abs_diff']:.2e} (tol {r['tolerance']:.1e}) {r['ok']}; "
              f"{bk.name} {r['device_s'] * 1e3:.2f} ms, "
              f"numpy {r['numpy_s'] * 1e3:.1f} ms")  # fmt: skip
    print(f"autotune {tuned['kernel']}: best {tuned['best_tile']} {tuned['best_s'] * 1e3:.3f} ms, "
          f"model's pick {tuned['model_pick']}, Spearman {tuned['spearman']}")  # fmt: skip
    if "peak_flops_per_s" in calib:
        peaks = ", ".join(f"{k} {v / 1e12:.3g}" for k, v in calib["peak_flops_per_s"].items())
        print(f"calibrate --backend cupy --quick: matmul TFLOP/s {peaks}; HBM copy "
              f"{calib['hbm_copy_bytes_per_s'] / 1e9:.4g} GB/s; launch "
              f"{calib['kernel_launch_s'] * 1e6:.3g} us; {calib['sms']} SMs")  # fmt: skip
    else:
        print(f"calibrate --backend cupy: {calib}")
    failed = [r["path"] for r in paths if not r["ok"]] + (
        ["attention_fused_vs_unfused"] if att["max_abs_diff"] > 1e-3 else []
    )
    failed += [f"adapter:{r['kernel']}" for r in adapter if not r["ok"]]
    failed += ["calibrate_gpu"] if "error" in calib else []
    summary = {"backend": bk.name, "device": bk.device, "versions": dict(bk.versions),
               "paths": paths, "gemm": gemms, "attention": att, "adapter": adapter,
               "autotune": tuned, "calibrate": calib, "failed": failed,
               "wall_s": time.perf_counter() - t0}  # fmt: skip
    print(json.dumps(summary))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
