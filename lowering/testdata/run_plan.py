"""Replay a widejit plan dump (plan.json + kernel .py files) with the numpy Triton stand-in
in ./pytriton, and compare its outputs with expected outputs.

    /usr/bin/python3 run_plan.py DUMP_DIR --weights W.safetensors --inputs IN.safetensors \
        [--expected EXP.safetensors] [--out OUT.safetensors] [--rtol 1e-4 --atol 1e-5]
    /usr/bin/python3 run_plan.py --jobs JOBS.json   (a list of {dump, weights, inputs, expected})

Prints one JSON line per job: {"dump": ..., "ok": bool, "outputs": {name: {"max_abs",
"bound"}}} (or "error"); exit 1 on any mismatch or error. An independent executor for the plans lowering/ builds: it shares no code with the
Go runtime, only the plan format.
"""
import argparse
import importlib.util
import json
import os
import struct
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "pytriton"))

import triton  # noqa: E402  (the stand-in)
import triton.language as tl  # noqa: E402

ST_DTYPES = {"F32": np.float32, "F64": np.float64, "F16": np.float16, "I64": np.int64,
             "I32": np.int32, "I16": np.int16, "I8": np.int8, "U8": np.uint8, "BOOL": np.bool_}
GRAPH_DTYPES = {"float32": np.float32, "float64": np.float64, "float16": np.float16,
                "int64": np.int64, "int32": np.int32, "int16": np.int16, "int8": np.int8,
                "uint8": np.uint8, "bool": np.bool_}
TO_ST = {v: k for k, v in ST_DTYPES.items()}


def read_safetensors(path):
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n])
    base = 8 + n
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        lo, hi = info["data_offsets"]
        arr = np.frombuffer(data[base + lo:base + hi], dtype=ST_DTYPES[info["dtype"]]).copy()
        out[name] = arr.reshape(info["shape"])
    return out


def write_safetensors(path, tensors):
    header, blobs, off = {}, [], 0
    for name in sorted(tensors):
        a = np.ascontiguousarray(tensors[name])
        b = a.tobytes()
        header[name] = {"dtype": TO_ST[a.dtype.type], "shape": list(a.shape), "data_offsets": [off, off + len(b)]}
        blobs.append(b)
        off += len(b)
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))


def load_kernel(path, fn):
    spec = importlib.util.spec_from_file_location(os.path.basename(path)[:-3], path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return getattr(mod, fn)


def run_plan(dump, weights, inputs):
    with open(os.path.join(dump, "plan.json")) as f:
        plan = json.load(f)
    n = plan["n"]
    slots = [np.zeros(max(s["Elems"], 1), dtype=GRAPH_DTYPES[s["DType"]]) for s in plan["slots"] or []]
    bufs = {}
    for b in plan["buffers"]:
        if b["kind"] == "input":
            bufs[b["id"]] = np.ascontiguousarray(inputs[b["name"]]).reshape(-1).copy()
        elif b["kind"] == "param":
            bufs[b["id"]] = np.ascontiguousarray(weights[b["name"]]).reshape(-1).copy()
        else:
            bufs[b["id"]] = slots[b["slot"]]
    kernels = {}

    def launch(l, grid, model):
        key = l["file"]
        if key not in kernels:
            kernels[key] = load_kernel(os.path.join(dump, l["file"]), l["fn"])
        args = []
        for a in l["args"]:
            if a["kind"] == "ptr":
                off = a.get("offset", 0)
                if model > 0:
                    off += model * a.get("model_stride", 0)
                args.append(tl.Ptr(bufs[a["buffer"]], off))
            elif a["kind"] == "float":
                args.append(float(a.get("float", 0.0)))
            else:
                v = a.get("int", 0)
                if a.get("model_base") and model > 0:
                    v = model
                args.append(v)
        triton.run(kernels[key], grid, args, l["consts"])

    def single(l, m):
        grid = list(l["grid"])
        grid[l["model_axis"]] = 1
        launch(l, grid, m)

    if plan["model_major"]:
        for m in range(n):
            for l in plan["launches"]:
                single(l, m)
    else:
        for l in plan["launches"]:
            if l["strategy"] == "sequential":
                for m in range(n):
                    single(l, m)
            else:
                launch(l, l["grid"], -1)
    outs = {}
    for o in plan["outputs"]:
        buf = bufs[o["buffer"]]
        size = n * int(np.prod(o["shape"], dtype=np.int64))
        outs[o["name"]] = buf[o["offset"]:o["offset"] + size].reshape([n] + o["shape"]).copy()
    return outs


def check(dump, weights_path, inputs_path, expected_path, out_path=None, rtol=1e-4, atol=1e-5):
    result = {"dump": dump, "ok": True, "outputs": {}}
    try:
        weights = read_safetensors(weights_path) if weights_path != "-" else {}
        outs = run_plan(dump, weights, read_safetensors(inputs_path))
    except Exception as e:  # report, keep going with the other jobs
        import traceback
        result["ok"] = False
        result["error"] = "".join(traceback.format_exception(e))
        return result
    if out_path:
        write_safetensors(out_path, outs)
    if expected_path:
        exp = read_safetensors(expected_path)
        for name, got in outs.items():
            e = exp[name].astype(np.float64)
            g = got.astype(np.float64)
            if g.shape != e.shape:
                result["ok"] = False
                result["outputs"][name] = {"error": "shape %s vs %s" % (g.shape, e.shape)}
                continue
            # non-finite values exactly (NaN for NaN, an infinity of the same sign), the finite
            # ones within the bound of the finite expected values
            fin = np.isfinite(g) & np.isfinite(e)
            same = np.array_equal(np.isnan(g), np.isnan(e)) and np.array_equal(g[~fin & ~np.isnan(e)], e[~fin & ~np.isnan(e)])
            d = float(np.max(np.abs(g[fin] - e[fin]))) if fin.any() else 0.0
            bound = atol + rtol * (float(np.max(np.abs(e[np.isfinite(e)]))) if np.isfinite(e).any() else 0.0)
            ok = same and bool(d <= bound) and not np.isnan(d)
            result["ok"] = result["ok"] and ok
            result["outputs"][name] = {"max_abs": d, "bound": bound, "ok": ok}
    return result


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dump", nargs="?")
    ap.add_argument("--jobs")
    ap.add_argument("--weights")
    ap.add_argument("--inputs")
    ap.add_argument("--expected")
    ap.add_argument("--out")
    ap.add_argument("--rtol", type=float, default=1e-4)
    ap.add_argument("--atol", type=float, default=1e-5)
    a = ap.parse_args()
    if a.jobs:
        with open(a.jobs) as f:
            jobs = json.load(f)
    else:
        jobs = [{"dump": a.dump, "weights": a.weights, "inputs": a.inputs, "expected": a.expected, "out": a.out}]
    ok = True
    for job in jobs:
        r = check(job["dump"], job["weights"], job["inputs"], job.get("expected"), job.get("out"), a.rtol, a.atol)
        ok = ok and r["ok"]
        print(json.dumps(r), flush=True)
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
