"""Per-call cost of widejit.compile's WideModel against the PyTorch loop and widejit.run (the
binary, one process per call), for N small MLPs of examples/models.py on the CPU.

    WIDEJIT_LIB=/path/to/libwidejit.so [WIDEJIT=/path/to/widejit] PYTHONPATH=python \\
        /usr/bin/python3 python/bench/call_overhead.py [--n 4] [--batch 32] [--calls 300]

Prints the median time of one call (inputs in, outputs out, as torch tensors); with the
binary, also the median of the same plan's runs inside Go (`widejit run --repeat`), so the
difference is what a call from Python adds, and the time of widejit.run, one process a call.
"""

import argparse
import importlib.util
import json
import os
import statistics
import subprocess
import tempfile
import time

import torch

import widejit

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def median_ms(f, calls):
    f()  # warm
    times = []
    for _ in range(calls):
        t0 = time.perf_counter()
        f()
        times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1e3


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=4)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--calls", type=int, default=300)
    ap.add_argument("--threads", type=int, default=0, help="CPU executor workers (0: all cores)")
    args = ap.parse_args()
    spec = importlib.util.spec_from_file_location("widejit_examples", os.path.join(ROOT, "examples", "models.py"))
    examples = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(examples)
    models = []
    for i in range(args.n):
        torch.manual_seed(i)
        models.append(examples.MLP().eval())
    x = torch.randn(args.n, args.batch, 64)
    with torch.no_grad():
        torch_ms = median_ms(lambda: torch.stack([m(xi) for m, xi in zip(models, x)]), args.calls)
    with tempfile.TemporaryDirectory() as cache:
        with widejit.compile(models, x, device="cpu", cache_dir=cache, threads=args.threads) as wide:
            call_ms = median_ms(lambda: wide(x), args.calls)
    print("%d MLPs (64-128-64), batch %d, %d calls, %d cores:" % (args.n, args.batch, args.calls, os.cpu_count()))
    print("  PyTorch loop:               %.3f ms per call (median)" % torch_ms)
    print("  WideModel call:             %.3f ms per call (median)" % call_ms)
    try:
        binary = widejit.find_binary()
    except widejit.BinaryNotFoundError:
        return
    with tempfile.TemporaryDirectory() as d:
        widejit.export(models, {"x": x}, d)
        proc = subprocess.run([binary, "run", os.path.join(d, "graph.json"), "--inputs", os.path.join(d, "inputs.safetensors"),
                               "--device", "cpu", "--threads", str(args.threads), "--no-cache", "--repeat", str(args.calls),
                               "--json"], stdout=subprocess.PIPE, check=True, encoding="utf-8", errors="replace")
        go_ms = json.loads(proc.stdout)["timing"]["median_ms"]
        run_ms = median_ms(lambda: widejit.run(d, {"x": x}, device="cpu", in_process=False), 5)
    print("  the plan's run inside Go:   %.3f ms (median, widejit run --repeat)" % go_ms)
    print("  added by the call:          %.3f ms" % (call_ms - go_ms))
    print("  widejit.run (binary):       %.1f ms per call (median of 5)" % run_ms)


if __name__ == "__main__":
    main()
