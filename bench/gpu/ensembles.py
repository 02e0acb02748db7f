#!/usr/bin/env python3
"""Ensembles of N models at realistic sizes on one GPU: widejit wide against every way PyTorch
runs N models, at matched precision, device-resident and host-in/host-out apart.

    python3 bench/gpu/ensembles.py --widejit ./widejit [--n 8,32] [--precision highest|high]
        [--reps 20] [--compile-cap 30] [--out bench/gpu/results/ensembles.json]

Cases (fp32): Linear 1024->1024 at batch 128; MLP 512-1024-512 (GELU) at batch 128; Conv2d
64->64 3x3 (+ReLU) on 32x32 images at batch 32; a pre-norm transformer block (d = 512, 8
heads, FFN 2048, GELU) on T = 256 tokens at batch 8.
PyTorch strategies, each timed with CUDA events on device-resident tensors (median of --reps):
  loop      the eager loop over the N modules
  batched   stacked weights: torch.baddbmm for Linear/MLP, one grouped convolution (groups = N,
            channels_last) for Conv2d; the transformer has none (vmap is its batched form)
  vmap      torch.func.vmap over torch.func.functional_call with stacked parameters
  compile   torch.compile(vmap, mode="max-autotune-no-cudagraphs"); compiling is aborted after
            --compile-cap seconds and the strategy left out (compile time is not counted)
  graph     the best of batched/vmap captured in a CUDA graph and replayed
Host-in/host-out: the best strategy again with a pageable host input copied in and the output
copied out, as `widejit run` times a run (its median over --repeat).
widejit: `widejit run --device cuda --repeat R --profile --json --float32-matmul-precision P`
on a generated graph of the same shapes (weights from a seed); host-in/host-out is its median,
device-resident is the sum of its kernels' times per run (--profile: CUDA events per kernel,
launch gaps not counted).
Precision: highest = IEEE fp32 on both sides (torch "highest", cudnn.allow_tf32 off, widejit
highest); high = TF32 on both sides (torch "high", cudnn.allow_tf32 on, widejit high).
"""
import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile

import torch
import torch.nn as nn
import torch.nn.functional as F

from cudatime import event_median  # this script's directory is on sys.path

CASES = ["linear1024", "mlp512", "conv64", "transformer512"]


class Block(nn.Module):
    def __init__(self, d=512, heads=8, ffn=2048):
        super().__init__()
        self.norm1, self.norm2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.self_attn = nn.MultiheadAttention(d, heads, batch_first=True)
        self.linear1, self.linear2 = nn.Linear(d, ffn), nn.Linear(ffn, d)

    def forward(self, x):
        h = self.norm1(x)
        x = x + self.self_attn(h, h, h, need_weights=False)[0]
        return x + self.linear2(F.gelu(self.linear1(self.norm2(x))))


def make(case):
    """(module factory, per-model input shape, widejit graph dict for n models)."""
    def graph(inputs, params, nodes):
        return {"format": "widejit.graph/v1", "n": 1, "inputs": inputs, "params": params, "nodes": nodes,
                "outputs": [nodes[-1]["name"]], "init": {"seed": 1}}

    def p(name, *shape):
        return {"name": name, "shape": list(shape), "dtype": "float32"}

    def lin(name, src, i, o):
        return {"name": name, "op": "linear", "inputs": [src], "params": {"weight": name + ".weight", "bias": name + ".bias"},
                "attrs": {"in_features": i, "out_features": o, "bias": True}}

    def x(*shape):
        return [{"name": "x", "shape": list(shape), "dtype": "float32", "per_model": True}]

    if case == "linear1024":
        return (lambda: nn.Linear(1024, 1024)), (128, 1024), graph(
            x(128, 1024), [p("fc.weight", 1024, 1024), p("fc.bias", 1024)], [lin("fc", "x", 1024, 1024)])
    if case == "mlp512":
        return (lambda: nn.Sequential(nn.Linear(512, 1024), nn.GELU(), nn.Linear(1024, 512))), (128, 512), graph(
            x(128, 512), [p("fc1.weight", 1024, 512), p("fc1.bias", 1024), p("fc2.weight", 512, 1024), p("fc2.bias", 512)],
            [lin("fc1", "x", 512, 1024), {"name": "act", "op": "gelu", "inputs": ["fc1"], "attrs": {"approximate": "none"}},
             lin("fc2", "act", 1024, 512)])
    if case == "conv64":
        conv = {"name": "conv", "op": "conv2d", "inputs": ["x"], "params": {"weight": "conv.weight", "bias": "conv.bias"},
                "attrs": {"in_channels": 64, "out_channels": 64, "kernel_size": [3, 3], "stride": [1, 1], "padding": [1, 1],
                          "dilation": [1, 1], "groups": 1, "bias": True, "padding_mode": "zeros"}}
        return (lambda: nn.Sequential(nn.Conv2d(64, 64, 3, padding=1), nn.ReLU())), (32, 64, 32, 32), graph(
            x(32, 64, 32, 32), [p("conv.weight", 64, 64, 3, 3), p("conv.bias", 64)],
            [conv, {"name": "act", "op": "relu", "inputs": ["conv"]}])
    d, ffn = 512, 2048
    norm = lambda name, src: {"name": name, "op": "layer_norm", "inputs": [src], "params": {"weight": name + ".weight", "bias": name + ".bias"},
                              "attrs": {"normalized_shape": [d], "eps": 1e-05, "elementwise_affine": True, "bias": True}}
    attn = {"name": "self_attn", "op": "multihead_attention", "inputs": ["norm1", "norm1", "norm1"],
            "params": {"in_proj_weight": "self_attn.in_proj_weight", "in_proj_bias": "self_attn.in_proj_bias",
                       "out_proj.weight": "self_attn.out_proj.weight", "out_proj.bias": "self_attn.out_proj.bias"},
            "attrs": {"embed_dim": d, "num_heads": 8, "dropout": 0.0, "bias": True, "add_bias_kv": False, "add_zero_attn": False,
                      "kdim": None, "vdim": None, "batch_first": True, "need_weights": False, "average_attn_weights": True, "is_causal": False}}
    params = [p("norm1.weight", d), p("norm1.bias", d), p("self_attn.in_proj_weight", 3 * d, d), p("self_attn.in_proj_bias", 3 * d),
              p("self_attn.out_proj.weight", d, d), p("self_attn.out_proj.bias", d), p("norm2.weight", d), p("norm2.bias", d),
              p("linear1.weight", ffn, d), p("linear1.bias", ffn), p("linear2.weight", d, ffn), p("linear2.bias", d)]
    nodes = [norm("norm1", "x"), attn, {"name": "self_attn_item0", "op": "getitem", "inputs": ["self_attn"], "attrs": {"index": 0}},
             {"name": "add", "op": "add", "inputs": ["x", "self_attn_item0"]}, norm("norm2", "add"), lin("linear1", "norm2", d, ffn),
             {"name": "act", "op": "gelu", "inputs": ["linear1"], "attrs": {"approximate": "none"}}, lin("linear2", "act", ffn, d),
             {"name": "add_1", "op": "add", "inputs": ["add", "linear2"]}]
    return Block, (8, 256, d), graph(x(8, 256, d), params, nodes)


class CompileTimeout(Exception):
    pass


def capped(fn, seconds):
    def alarm(*_):
        raise CompileTimeout()
    old = signal.signal(signal.SIGALRM, alarm)
    signal.alarm(seconds)
    try:
        return fn()
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def torch_strategies(case, n, reps, compile_cap):
    maker, shape, _ = make(case)
    mods = [maker().cuda().eval() for _ in range(n)]
    x = torch.randn(n, *shape, device="cuda")
    fns = {"loop": lambda: [m(x[i]) for i, m in enumerate(mods)]}
    if case in ("linear1024", "mlp512"):
        def stack(idx):
            ls = [m if idx is None else m[idx] for m in mods]
            return torch.stack([l.weight.t() for l in ls]).contiguous(), torch.stack([l.bias for l in ls])[:, None, :]
        if case == "linear1024":
            w, b = stack(None)
            fns["batched"] = lambda: torch.baddbmm(b, x, w)
        else:
            (w1, b1), (w2, b2) = stack(0), stack(2)
            fns["batched"] = lambda: torch.baddbmm(b2, F.gelu(torch.baddbmm(b1, x, w1)), w2)
    elif case == "conv64":
        w = torch.cat([m[0].weight for m in mods]).contiguous(memory_format=torch.channels_last)
        b = torch.cat([m[0].bias for m in mods])
        xg = x.permute(1, 0, 2, 3, 4).reshape(shape[0], n * 64, 32, 32).contiguous(memory_format=torch.channels_last)
        fns["batched"] = lambda: F.relu(F.conv2d(xg, w, b, padding=1, groups=n))
    params, buffers = torch.func.stack_module_state(mods)
    base = maker().to("meta")

    def one(p, bu, xi):
        return torch.func.functional_call(base, (p, bu), (xi,))
    vm = torch.func.vmap(one)
    fns["vmap"] = lambda: vm(params, buffers, x)
    out = {}
    with torch.no_grad():
        for name, fn in list(fns.items()):
            try:
                out[name] = event_median(fn, reps)
            except Exception as e:  # noqa: BLE001  (a strategy PyTorch cannot run here is left out, with why)
                out[name + "_skipped"] = f"{type(e).__name__}: {str(e)[:200]}"
                del fns[name]
        if compile_cap > 0 and "vmap" in fns:
            try:
                cfn = torch.compile(fns["vmap"], mode="max-autotune-no-cudagraphs")
                capped(cfn, compile_cap)
                out["compile"] = event_median(cfn, reps)
                fns["compile"] = cfn
            except CompileTimeout:
                out["compile_skipped"] = f"compiling took over {compile_cap} s"
            except Exception as e:  # noqa: BLE001
                out["compile_skipped"] = f"{type(e).__name__}: {str(e)[:200]}"
        eager = min((k for k in ("batched", "vmap", "loop") if k in out), key=lambda k: out[k])
        g = torch.cuda.CUDAGraph()
        fns[eager]()
        torch.cuda.synchronize()
        with torch.cuda.graph(g):
            static_out = fns[eager]()
        out["graph"] = event_median(g.replay, reps)
        out["graph_of"] = eager
        best = min((k for k in ("batched", "vmap", "compile", "graph") if k in out), key=lambda k: out[k])
        out["best"] = best
        host = x.cpu()

        def host_run():
            x.copy_(host.cuda())
            if best == "graph":
                g.replay()
                r = static_out
            else:
                r = fns[best]()
            (r[-1] if isinstance(r, list) else r).cpu()
        out["best_host"] = event_median(host_run, reps)
    return out


def widejit_run(wj, case, n, reps, precision):
    _, _, g = make(case)
    g["n"] = n
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, case + ".json")
        with open(path, "w") as f:
            json.dump(g, f)
        cmd = [wj, "run", path, "--device", "cuda", "--repeat", str(reps), "--profile", "--json",
               "--float32-matmul-precision", precision]
        p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        return {"error": p.stderr.strip()[-400:]}
    doc = json.loads(p.stdout)
    kernels = [k["ms"] for k in doc.get("kernel_ms") or [] if not k.get("prepare")]
    return {"host": doc["timing"]["median_ms"], "device": sum(kernels) if kernels else None, "raw": doc}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--widejit", default="./widejit")
    ap.add_argument("--n", default="8,32")
    ap.add_argument("--cases", default=",".join(CASES))
    ap.add_argument("--precision", default="highest", choices=["highest", "high"])
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--compile-cap", type=int, default=30, help="seconds torch.compile may take per case (0: skip it)")
    ap.add_argument("--out", default=os.path.join("bench", "gpu", "results", "ensembles.json"))
    args = ap.parse_args()
    torch.set_float32_matmul_precision(args.precision)
    torch.backends.cudnn.allow_tf32 = args.precision == "high"
    torch.backends.cudnn.benchmark = True
    doc = {"device": torch.cuda.get_device_name(), "torch": torch.__version__, "precision": args.precision, "rows": []}
    print(f"{'case':<15} {'N':>3} {'best torch':>10} {'ms':>8} {'widejit ms':>11} {'x':>6} | {'host torch':>10} {'host wj':>8} {'x':>6}")
    for case in args.cases.split(","):
        for n in [int(s) for s in args.n.split(",")]:
            t = torch_strategies(case, n, args.reps, args.compile_cap)
            w = widejit_run(args.widejit, case, n, args.reps, args.precision)
            doc["rows"].append({"case": case, "n": n, "torch_ms": t, "widejit": w})
            with open(args.out, "w") as f:  # after every row: a run cut short keeps what it measured
                json.dump(doc, f, indent=2)
                f.write("\n")
            if "error" in w:
                print(f"{case:<15} {n:>3} widejit failed: {w['error']}", file=sys.stderr)
                continue
            b = t[t["best"]]
            dev = w["device"] or float("nan")
            print(f"{case:<15} {n:>3} {t['best']:>10} {b:>8.3f} {dev:>11.3f} {b / dev:>6.2f} | "
                  f"{t['best_host']:>10.3f} {w['host']:>8.3f} {t['best_host'] / w['host']:>6.2f}")


if __name__ == "__main__":
    main()
