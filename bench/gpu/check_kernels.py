#!/usr/bin/env python3
"""Runs every kernel-language test kernel with `widejit kernel run` on --device cuda and on
--device cpu from the same random inputs and compares every tensor afterwards.

Needs only Python 3 and numpy (no Go, no torch). Run from the repository root:

    python3 bench/gpu/check_kernels.py --widejit ./widejit [--work /tmp/wj-check] [--only NAME] [--arch sm_90a]

--device DEV picks the device checked against the CPU backend (default cuda). --device cpu runs
the CPU backend on both sides: a self-test of this harness (case table, kernel signatures,
safetensors I/O) on a machine without a GPU; every tensor must then match bit for bit (the
CPU backend is deterministic), so no tolerance applies.

Tolerances (|gpu - cpu| <= atol + rtol * max|cpu| per tensor), and why:
  exact kernels (adds, copies, integer work)     rtol 0
  fp32 arithmetic with reductions / dots          rtol 1e-5 (summation order differs)
  kernels with exp/log/sin/rsqrt (.approx on GPU) rtol 1e-4
  fp16/bf16 tensors                               rtol 1e-2 (one fp16 ulp is 1e-3)
  fp32 tl.dot at Triton's default precision       rtol 2e-3 (the GPU truncates the inputs to TF32,
                                                  10 mantissa bits, as Triton does: a sum loses
                                                  about 2^-10 of its value; the CPU computes in full fp32)
The tutorial kernels' fp32 dots (matmul_leaky, attention) keep Triton's default TF32; widejit's
own templates ask for input_precision="ieee" (at --float32-matmul-precision highest, the
default), which is full fp32 on both backends. Measured on an H200 when the inputs were still rounded to nearest (cvt.rna): TF32 put these
kernels 2e-4 to 4e-4 of max|cpu| away from the CPU; truncation about doubles that.
"""
import argparse
import json
import os
import struct
import subprocess
import sys

import numpy as np

DT = {"F32": (np.float32, 4), "F16": (np.float16, 2), "BF16": (np.uint16, 2), "I32": (np.int32, 4), "I8": (np.int8, 1)}


def write_safetensors(path, tensors):
    header, blobs, off = {}, [], 0
    for name, (dtype, arr) in tensors.items():
        raw = np.ascontiguousarray(arr).tobytes()
        header[name] = {"dtype": dtype, "shape": list(arr.shape), "data_offsets": [off, off + len(raw)]}
        blobs.append(raw)
        off += len(raw)
    h = json.dumps(header).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)))
        f.write(h)
        for b in blobs:
            f.write(b)


def read_safetensors(path):
    with open(path, "rb") as f:
        data = f.read()
    n = struct.unpack("<Q", data[:8])[0]
    header = json.loads(data[8:8 + n])
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        b, e = info["data_offsets"]
        np_t, _ = DT[info["dtype"]]
        arr = np.frombuffer(data[8 + n + b:8 + n + e], dtype=np_t).reshape(info["shape"])
        out[name] = (info["dtype"], arr)
    return out


def as_float(dtype, arr):
    if dtype == "BF16":
        return (arr.astype(np.uint32) << 16).view(np.float32).astype(np.float64)
    return arr.astype(np.float64)


def rand(rng, dtype, n, lo_hi=None):
    if lo_hi is not None:
        return rng.integers(lo_hi[0], lo_hi[1], n).astype(np.int32)
    if dtype == "F32":
        return rng.standard_normal(n).astype(np.float32)
    if dtype == "F16":
        return rng.standard_normal(n).astype(np.float16)
    if dtype == "BF16":
        return (rng.standard_normal(n).astype(np.float32).view(np.uint32) >> 16).astype(np.uint16)
    if dtype == "I32":
        return rng.integers(-1000, 1001, n).astype(np.int32)
    if dtype == "I8":
        return rng.integers(-127, 128, n).astype(np.int8)
    raise ValueError(dtype)


def mm(dt):
    return {"a_ptr": (dt, 64 * 48), "b_ptr": (dt, 48 * 64), "c_ptr": (dt, 64 * 64)}


TF32 = 2e-3  # fp32 tl.dot at Triton's default precision: TF32 on the GPU (see the docstring)
K = "triton/testdata/kernels/"  # the canonical tutorial kernels, shared with the Go tests
MM_ARGS = {"M": 64, "N": 64, "K": 48, "stride_am": 48, "stride_ak": 1, "stride_bk": 64, "stride_bn": 1, "stride_cm": 64, "stride_cn": 1}
SOFTMAX = {"input_row_stride": 1003, "output_row_stride": 1003, "n_rows": 3, "n_cols": 1000}


def attention_scalars(sm_scale, z, h, nctx, dim):
    """_attn_fwd's scalars for contiguous [z, h, nctx, dim] Q, K, V and Out: each tensor's
    z, h, row and column strides in the tutorial's letters (as jit/ptx's attentionScalars)."""
    s = {"sm_scale": sm_scale, "Z": z, "H": h}
    for t, dims in (("q", "zhmk"), ("k", "zhnk"), ("v", "zhkn"), ("o", "zhmn")):
        for d, stride in zip(dims, (h * nctx * dim, nctx * dim, dim, 1)):
            s[f"stride_{t}{d}"] = stride
    return s


ATT = attention_scalars(0.25, 1, 2, 64, 16)
ATT_T = {"Q": ("F32", 2 * 64 * 16), "K": ("F32", 2 * 64 * 16), "V": ("F32", 2 * 64 * 16), "M": ("F32", 2 * 64), "Out": ("F32", 2 * 64 * 16)}
LAYER_NORM_T = {"X": ("F16", 3 * 203), "Y": ("F16", 3 * 203), "W": ("F16", 200), "B": ("F16", 200), "Mean": ("F32", 3), "Rstd": ("F32", 3)}

# name, file, fn, grid, consts, tensors {name: (dtype, elems)}, scalar args, rtol, num_warps
CASES = [
    ("cpu/vector_add", K + "vector_add.py", "add_kernel", "4", {"BLOCK_SIZE": 256},
     {"x_ptr": ("F32", 1000), "y_ptr": ("F32", 1000), "output_ptr": ("F32", 1000)}, {"n_elements": 1000}, 0, 4),
    ("cpu/softmax", K + "softmax.py", "softmax_kernel", "3", {"BLOCK_SIZE": 1024, "num_stages": 2},
     {"output_ptr": ("F32", 3 * 1003), "input_ptr": ("F32", 3 * 1003)}, SOFTMAX, 1e-4, 4),
    ("cpu/matmul_leaky", K + "matmul.py", "matmul_kernel", "4",
     {"BLOCK_SIZE_M": 32, "BLOCK_SIZE_N": 32, "BLOCK_SIZE_K": 16, "GROUP_SIZE_M": 2, "ACTIVATION": "leaky_relu"}, mm("F32"), MM_ARGS, TF32, 4),
    ("cpu/layernorm", K + "layer_norm.py", "_layer_norm_fwd_fused", "3", {"BLOCK_SIZE": 256},
     LAYER_NORM_T, {"stride": 203, "N": 200, "eps": 1e-5}, 1e-4, 4),
    ("cpu/attention_stage1", K + "flash_attention.py", "_attn_fwd", "2,2",
     {"N_CTX": 64, "HEAD_DIM": 16, "BLOCK_M": 32, "BLOCK_N": 16, "STAGE": 1}, ATT_T, ATT, TF32, 4),
    ("cpu/attention_stage3", K + "flash_attention.py", "_attn_fwd", "2,2",
     {"N_CTX": 64, "HEAD_DIM": 16, "BLOCK_M": 32, "BLOCK_N": 16, "STAGE": 3}, ATT_T, ATT, TF32, 4),
    ("triton/add", K + "vector_add.py", "add_kernel", "3", {"BLOCK_SIZE": 16},
     {"x_ptr": ("F32", 40), "y_ptr": ("F32", 40), "output_ptr": ("F32", 40)}, {"n_elements": 37}, 0, 4),
    ("triton/constructs_double", "triton/testdata/constructs.py", "constructs_kernel", "3", {"BLOCK": 16, "MODE": "double"},
     {"x_ptr": ("F16", 40), "out_ptr": ("F32", 40)}, {"n": 37, "flag": 1}, 1e-2, 4),
    ("triton/constructs_other", "triton/testdata/constructs.py", "constructs_kernel", "2", {"BLOCK": 8, "MODE": "other"},
     {"x_ptr": ("F32", 20), "out_ptr": ("F32", 20)}, {"n": 13, "flag": 0}, 1e-5, 4),
    ("triton/blockptr", "triton/testdata/blockptr.py", "copy_tiles", "2,2", {"BLOCK_M": 4, "BLOCK_N": 8},
     {"src": ("F32", 128), "dst": ("F32", 128)}, {"M": 7, "N": 13, "stride_m": 16}, 0, 4),
    ("triton/reduce", "triton/testdata/reduce.py", "reduce_kernel", "1", {"BLOCK_M": 4, "BLOCK_N": 8},
     {"x_ptr": ("F32", 32), "out_ptr": ("F32", 4)}, {}, 1e-5, 4),
    ("tutorial/softmax", K + "softmax.py", "softmax_kernel", "3", {"BLOCK_SIZE": 128, "num_stages": 2},
     {"output_ptr": ("F32", 300), "input_ptr": ("F32", 300)},
     {"input_row_stride": 100, "output_row_stride": 100, "n_rows": 3, "n_cols": 100}, 1e-4, 4),
    ("tutorial/matmul_fp16", K + "matmul.py", "matmul_kernel", "4",
     {"BLOCK_SIZE_M": 32, "BLOCK_SIZE_N": 32, "BLOCK_SIZE_K": 16, "GROUP_SIZE_M": 4, "ACTIVATION": "leaky_relu"}, mm("F16"), MM_ARGS, 1e-2, 4),
    ("tutorial/vector_add_fp16", K + "vector_add.py", "add_kernel", "2", {"BLOCK_SIZE": 1024},
     {"x_ptr": ("F16", 2000), "y_ptr": ("F16", 2000), "output_ptr": ("F16", 2000)}, {"n_elements": 2000}, 0, 8),
    ("ptx/features", "jit/ptx/testdata/features.py", "features", "4", {"BLOCK": 64},
     {"x_ptr": ("F32", 256), "h_ptr": ("BF16", 256), "i_ptr": ("I32", 256), "b_ptr": ("I8", 256), "out_ptr": ("F32", 288), "cnt_ptr": ("I32", 1)},
     {"n": 200, "seed": 1234}, 1e-4, 2),
    ("cpu/masks", "jit/cpu/testdata/masks.py", "masks_kernel", "1", {"BLOCK": 16},
     {"x_ptr": ("F32", 256), "out_ptr": ("F32", 320)}, {"n": 9, "m": 12, "lo": 3}, 0, 4),
    ("cpu/gather", "jit/cpu/testdata/gather.py", "gather_kernel", "1", {"BLOCK": 8},
     {"x_ptr": ("F32", 100), "idx_ptr": ("I32", 8, (0, 10)), "out_ptr": ("F32", 192)}, {"stride": 10}, 0, 4),
]


def fmt(v):
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--widejit", default="./widejit")
    ap.add_argument("--work", default="/tmp/wj-check")
    ap.add_argument("--only", default="", help="run only the cases whose name contains this")
    ap.add_argument("--device", default="cuda", help="device compared with the CPU backend (cpu: self-test without a GPU)")
    ap.add_argument("--arch", default="", help="PTX arch of the --device cuda runs (--backend-opt arch=ARCH; default: the device's)")
    args = ap.parse_args()
    os.makedirs(args.work, exist_ok=True)
    rng = np.random.default_rng(7)
    failed = 0
    for name, path, fn, grid, consts, tensors, scalars, rtol, warps in CASES:
        if args.only and args.only not in name:
            continue
        tag = name.replace("/", "_")
        inp = os.path.join(args.work, tag + ".in.safetensors")
        write_safetensors(inp, {k: (spec[0], rand(rng, *spec)) for k, spec in tensors.items()})
        outs = {}
        ok = True
        for side, dev in (("ref", "cpu"), ("test", args.device)):
            out = os.path.join(args.work, f"{tag}.{side}.{dev}.safetensors")
            cmd = [args.widejit, "kernel", "run", path, "--fn", fn, "--grid", grid, "--inputs", inp, "--out", out,
                   "--device", dev, "--num-warps", str(warps)]
            cmd += sum((["--const", f"{k}={fmt(v)}"] for k, v in consts.items()), [])
            cmd += sum((["--arg", f"{k}={fmt(v)}"] for k, v in scalars.items()), [])
            if args.arch and dev != "cpu":
                cmd += ["--backend-opt", f"arch={args.arch}"]
            p = subprocess.run(cmd, capture_output=True, text=True)
            if p.returncode != 0:
                print(f"FAIL {name} ({dev}): exit {p.returncode}\n{p.stderr.strip()}")
                ok = False
                break
            outs[side] = read_safetensors(out)
        if ok:
            for t, (dt, want) in outs["ref"].items():
                got = as_float(*outs["test"][t])
                want = as_float(dt, want)
                tol_r = max(rtol, 1e-2) if dt in ("F16", "BF16") else rtol
                scale = float(np.max(np.abs(want))) if want.size else 0.0
                diff = float(np.max(np.abs(got - want))) if want.size else 0.0
                bound = 0.0 if args.device == "cpu" else 1e-6 + tol_r * scale
                if not diff <= bound:
                    print(f"FAIL {name}: tensor {t}: max |{args.device} - cpu| = {diff:.3g} > {bound:.3g} (rtol {tol_r})")
                    ok = False
        print(("ok  " if ok else "BAD ") + name)
        failed += not ok
    print(f"{failed} of {len(CASES)} kernels failed" if failed else "all kernels match the CPU backend")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
