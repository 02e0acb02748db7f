#!/usr/bin/env python3
"""The zoo on one GPU: widejit wide vs widejit sequential vs PyTorch (eager loop over N modules,
a torch.func.vmap ensemble over stacked parameters, and torch.compile of that ensemble).

Run from the repository root on the GPU machine (PyTorch with CUDA, a static widejit):

    python3 bench/gpu/zoo.py --widejit ./widejit [--n 1,8,32,100] [--reps 20] [--out bench/gpu/results]

widejit times come from `widejit run bench/zoo/MODEL.json --device cuda --n N --compare
--repeat R --json` (median of R runs of the whole plan; each run uploads the inputs and
downloads the outputs, so small N includes PCIe transfers: the PyTorch numbers below are timed
the same way, host tensors in, host tensors out, to stay comparable). Everything is fp32; TF32
is disabled in PyTorch (widejit's tl.dot is full fp32). Results are printed as a table with ratios
against the PyTorch eager loop and written as JSON.
"""
import argparse
import json
import os
import subprocess
import sys
import time

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "examples"))
import models  # noqa: E402

ZOO = {  # model: (maker, per-model input shape, shared input?)
    "mlp": (models.MLP, (32, 64), False),
    "deep_mlp": (models.DeepMLP, (32, 64), False),
    "resblock": (models.ResBlock, (4, 64, 16, 16), True),
    "convnet": (models.ConvNet, (4, 3, 32, 32), True),
}


def widejit_times(wj, model, n, reps):
    cmd = [wj, "run", os.path.join("bench", "zoo", model + ".json"), "--device", "cuda", "--n", str(n),
           "--compare", "--repeat", str(reps), "--json"]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        return {"error": p.stderr.strip()[-400:]}
    doc = json.loads(p.stdout)
    out = dict(doc.get("compare", {}))
    out["compile_ms"] = doc.get("timing", {}).get("compile_ms")
    return out


def timed(fn, reps):
    fn()
    torch.cuda.synchronize()
    ts = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        torch.cuda.synchronize()
        ts.append(time.perf_counter() - t0)
    ts.sort()
    return ts[len(ts) // 2] * 1e3


def torch_times(model, n, reps, no_compile=False):
    maker, shape, shared = ZOO[model]
    dev = torch.device("cuda")
    mods = [maker().to(dev).eval() for _ in range(n)]
    x_host = torch.randn(*shape) if shared else torch.randn(n, *shape)
    out = {}
    with torch.inference_mode():
        def loop():
            x = x_host.to(dev)
            ys = [m(x if shared else x[i]) for i, m in enumerate(mods)]
            return [y.cpu() for y in ys]
        out["torch_loop_ms"] = timed(loop, reps)
    try:
        from torch.func import functional_call, stack_module_state
        params, buffers = stack_module_state(mods)
        base = maker().to("meta")

        def one(p, b, x):
            return functional_call(base, (p, b), (x,))
        in_dims = (0, 0, None if shared else 0)
        ens = torch.vmap(one, in_dims=in_dims)
        with torch.inference_mode():
            out["torch_vmap_ms"] = timed(lambda: ens(params, buffers, x_host.to(dev)).cpu(), reps)
        if no_compile:
            return out
        try:
            comp = torch.compile(ens)
            with torch.inference_mode():
                out["torch_compile_ms"] = timed(lambda: comp(params, buffers, x_host.to(dev)).cpu(), reps)
        except Exception as e:  # torch.compile needs Triton and a working inductor
            out["torch_compile_error"] = str(e)[:200]
    except Exception as e:
        out["torch_vmap_error"] = str(e)[:200]
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--widejit", default="./widejit")
    ap.add_argument("--n", default="1,8,32,100")
    ap.add_argument("--models", default=",".join(ZOO))
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--no-compile", action="store_true", help="skip torch.compile (minutes of compiling per case)")
    ap.add_argument("--out", default=os.path.join("bench", "gpu", "results"))
    args = ap.parse_args()
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    rows = []
    print(f"GPU: {torch.cuda.get_device_name(0)}, torch {torch.__version__}")
    print(f"{'model':10} {'N':>4} {'wide ms':>9} {'seq ms':>9} {'loop ms':>9} {'vmap ms':>9} {'compile':>9}  wide vs loop")
    for model in args.models.split(","):
        for n in [int(s) for s in args.n.split(",")]:
            row = {"model": model, "n": n, "widejit": widejit_times(args.widejit, model, n, args.reps)}
            row.update(torch_times(model, n, args.reps, args.no_compile))
            rows.append(row)
            w = row["widejit"]
            wide = w.get("wide_median_ms")
            seq = w.get("sequential_median_ms")
            f = lambda v: f"{v:9.3f}" if isinstance(v, (int, float)) else f"{'-':>9}"
            ratio = row["torch_loop_ms"] / wide if isinstance(wide, (int, float)) and wide else float("nan")
            print(f"{model:10} {n:4} {f(wide)} {f(seq)} {f(row['torch_loop_ms'])} {f(row.get('torch_vmap_ms'))} {f(row.get('torch_compile_ms'))}  {ratio:.2f}x", flush=True)
            if "error" in w:
                print("   widejit:", w["error"])
    os.makedirs(args.out, exist_ok=True)
    path = os.path.join(args.out, "zoo_gpu.json")
    with open(path, "w") as f:
        json.dump({"gpu": torch.cuda.get_device_name(0), "rows": rows}, f, indent=2)
    print("wrote", path)


if __name__ == "__main__":
    main()
