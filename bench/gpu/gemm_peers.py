#!/usr/bin/env python3
"""The 4096^3 GEMM on one GPU: widejit's Linear kernel against cuBLAS (torch.matmul) and
Triton's tutorial matmul (triton/testdata/kernels/matmul.py, the tutorial's kernel, compiled
by the real Triton), at matched precision, device-resident, timed with CUDA events.

    python3 bench/gpu/gemm_peers.py --widejit-json bench/gpu/results/kernels_gpu.json \
        [--reps 50] [--out bench/gpu/results/gemm_peers.json]

widejit's numbers come from `widejit-gpubench --json` (its "gemm" entries: the kernel alone,
operands on the device, median of single-launch CUDA-event timings; one per PTX arch: on a
compute capability 9.0 card the default arch's and sm_90a's, wgmma, whose best tile is a column of
its own). Here every peer is timed
the same way: C = A @ W^T with A [4096, 4096] and W [4096, 4096] already on the device, one
launch per event pair, median of --reps. Precision is matched case by case:
  float16 / bfloat16   fp16/bf16 operands, fp32 accumulation on both sides
  float32 high         TF32: torch.set_float32_matmul_precision("high"); Triton's default for
                       fp32 tl.dot; widejit --float32-matmul-precision high
  float32 highest      IEEE fp32: torch "highest" (cuBLAS SGEMM); Triton is left out (its
                       tutorial kernel has no IEEE switch at this size that would be fair)
Triton's tutorial autotunes over a list of configs; the same list for CUDA is tried here and
the best median is kept (its compile time is not counted).
"""
import argparse
import importlib.util
import json
import os
import sys

import torch

from cudatime import event_median  # this script's directory is on sys.path

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..", "..")
SIZE = 4096
DTYPES = {"float16": torch.float16, "bfloat16": torch.bfloat16, "float32": torch.float32}
# Triton tutorial 03's CUDA configs: (BM, BN, BK, GROUP_M, num_stages, num_warps)
TRITON_CONFIGS = [(128, 256, 64, 8, 3, 8), (64, 256, 32, 8, 4, 4), (128, 128, 32, 8, 4, 4),
                  (128, 64, 32, 8, 4, 4), (64, 128, 32, 8, 4, 4), (128, 32, 32, 8, 4, 4),
                  (64, 32, 32, 8, 5, 2), (32, 64, 32, 8, 5, 2)]


def tflops(ms):
    return 2 * SIZE ** 3 / (ms * 1e-3) / 1e12


def triton_matmul():
    try:
        import triton  # noqa: F401
    except ImportError:
        return None
    spec = importlib.util.spec_from_file_location("tutorial_matmul", os.path.join(ROOT, "triton", "testdata", "kernels", "matmul.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.matmul_kernel


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--widejit-json", default=os.path.join("bench", "gpu", "results", "kernels_gpu.json"))
    ap.add_argument("--reps", type=int, default=50)
    ap.add_argument("--out", default=os.path.join("bench", "gpu", "results", "gemm_peers.json"))
    args = ap.parse_args()
    wj = {}
    if os.path.exists(args.widejit_json):
        with open(args.widejit_json) as f:
            for g in json.load(f).get("gemm") or []:
                wj.setdefault(g["case"], []).append(g)  # one per PTX arch, the device's default first
    kernel = triton_matmul()
    rows = []
    for case in ["float16", "bfloat16", "float32 high", "float32 highest"]:
        dname, _, prec = case.partition(" ")
        torch.set_float32_matmul_precision(prec or "highest")
        dt = DTYPES[dname]
        a = torch.randn(SIZE, SIZE, device="cuda", dtype=dt)
        w = torch.randn(SIZE, SIZE, device="cuda", dtype=dt)
        c = torch.empty(SIZE, SIZE, device="cuda", dtype=dt)
        row = {"case": case, "cublas_ms": event_median(lambda: torch.matmul(a, w.t(), out=c), args.reps)}
        if kernel is not None and prec != "highest":
            best = None
            for bm, bn, bk, g, stages, warps in TRITON_CONFIGS:
                grid = (triton_cdiv(SIZE, bm) * triton_cdiv(SIZE, bn),)
                wt = w.t()
                def launch():
                    kernel[grid](a, wt, c, SIZE, SIZE, SIZE, a.stride(0), a.stride(1), wt.stride(0), wt.stride(1),
                                 c.stride(0), c.stride(1), BLOCK_SIZE_M=bm, BLOCK_SIZE_N=bn, BLOCK_SIZE_K=bk,
                                 GROUP_SIZE_M=g, ACTIVATION="", num_stages=stages, num_warps=warps)
                try:
                    ms = event_median(launch, args.reps)
                except Exception as e:  # a config the card cannot hold (shared memory)
                    print(f"triton config {bm}x{bn}x{bk}: {type(e).__name__}", file=sys.stderr)
                    continue
                if best is None or ms < best[0]:
                    best = (ms, f"{bm}x{bn}x{bk} s{stages} w{warps}")
            if best:
                row["triton_ms"], row["triton_config"] = best
        for i, g in enumerate(wj.get(case, [])):
            if i == 0:
                row["widejit_ms"], row["widejit_tunables"], row["widejit_arch"] = g["median_ms"], g["tunables"], g.get("arch", "")
            else:  # sm_90a (wgmma; its default and Hopper tiles: the best) next to the default arch's mma.sync
                key = "widejit_" + g["arch"] + "_ms"
                if key not in row or g["median_ms"] < row[key]:
                    row[key], row["widejit_" + g["arch"] + "_tunables"] = g["median_ms"], g["tunables"]
        rows.append(row)
    torch.set_float32_matmul_precision("highest")
    extra = sorted({k for r in rows for k in r if k.startswith("widejit_sm") and k.endswith("_ms")})
    print(f"{'case':<16} {'cuBLAS TFLOP/s':>15} {'Triton TFLOP/s':>15} {'widejit TFLOP/s':>16} {'widejit/cuBLAS':>15}"
          + "".join(f" {k[len('widejit_'):-len('_ms')] + ' TFLOP/s':>16} {'/cuBLAS':>8}" for k in extra))
    for r in rows:
        cb = tflops(r["cublas_ms"])
        tr = tflops(r["triton_ms"]) if "triton_ms" in r else float("nan")
        w = tflops(r["widejit_ms"]) if "widejit_ms" in r else float("nan")
        more = ""
        for k in extra:
            x = tflops(r[k]) if k in r else float("nan")
            more += f" {x:>16.1f} {x / cb:>8.2f}"
        print(f"{r['case']:<16} {cb:>15.1f} {tr:>15.1f} {w:>16.1f} {w / cb:>15.2f}" + more)
    doc = {"device": torch.cuda.get_device_name(), "torch": torch.__version__, "reps": args.reps, "rows": rows}
    with open(args.out, "w") as f:
        json.dump(doc, f, indent=2)
        f.write("\n")


def triton_cdiv(a, b):
    return (a + b - 1) // b


if __name__ == "__main__":
    main()
