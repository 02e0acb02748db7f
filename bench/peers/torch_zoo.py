"""PyTorch peer of the zoo benchmark (go run ./bench): N PyTorch modules of the zoo, timed as a
sequential loop and as batched strategies, on the weights and inputs widejit used.

Run by the Go driver with Debian's /usr/bin/python3; it speaks JSON lines on stdin/stdout so
that the driver can interleave its own runs with the peer's, one repetition at a time:

  {"op": "hello"}                               -> {"torch": "1.13.1", "threads": 2, "blas": ...}
  {"op": "setup", "model": "mlp", "n": 8, "threads": 2,
   "dir": DIR, "inputs": {"x": {"per_model": true}}}
        DIR holds params.safetensors (every param stacked [N, ...]), inputs.safetensors and,
        optionally, widejit.safetensors (widejit's outputs). The peer builds N modules from
        examples/models.py, loads the params, runs its loop and every batched variant, and
        checks them: each batched result must equal the loop's (max |diff| <= 1e-4 * max|loop|)
        -> {"variants": ["loop", "bmm", ...], "check": {...}}; a failing variant is dropped
        (listed in check.rejected) and never timed.
  {"op": "time", "variant": "bmm", "calls": K, "threads": T}
        -> {"seconds": total wall time of K calls with torch.set_num_threads(T)}
  {"op": "quit"}

Every reply carries "error" instead when something went wrong. Fairness notes: modules run in
eval mode under torch.inference_mode(); the loop returns the N outputs as a list (no stack);
a batched strategy returns its result in its natural layout (a view, not made contiguous); the
stacked/pre-transposed weights are prepared once in setup, outside the timing.
"""

import json
import os
import struct
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "examples"))
import models  # noqa: E402  (examples/models.py: the zoo's PyTorch sources)

RTOL = 1e-4

_DTYPES = {"F32": np.float32, "F64": np.float64, "I64": np.int64, "I32": np.int32, "F16": np.float16}


def read_safetensors(path):
    """The few lines of the safetensors format we need: 8-byte header length, JSON, data."""
    with open(path, "rb") as f:
        raw = f.read()
    (hlen,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + hlen])
    data = raw[8 + hlen:]
    out = {}
    for name, e in header.items():
        if name == "__metadata__":
            continue
        b, end = e["data_offsets"]
        arr = np.frombuffer(data[b:end], dtype=_DTYPES[e["dtype"]]).reshape(e["shape"])
        out[name] = torch.from_numpy(arr.copy())
    return out


def build_modules(model, n, params):
    makers = {"mlp": models.MLP, "deep_mlp": models.DeepMLP, "resblock": models.ResBlock, "convnet": models.ConvNet}
    if model not in makers:
        raise ValueError("unknown zoo model %r (expected one of %s)" % (model, ", ".join(sorted(makers))))
    mods = []
    for i in range(n):
        m = makers[model]()
        state = m.state_dict()
        for key in state:
            if key.endswith("num_batches_tracked"):
                continue
            if key not in params:
                raise ValueError("params.safetensors has no %r for model %s" % (key, model))
            state[key] = params[key][i]
        m.load_state_dict(state)
        m.eval()
        mods.append(m)
    return mods


# ---- batched strategies -------------------------------------------------------------------

def stacked_linears(mods, names):
    """[N, in, out] pre-transposed weights and [N, 1, out] biases for each linear in names."""
    out = []
    for name in names:
        w = torch.stack([dict(m.named_modules())[name].weight.detach() for m in mods])
        b = torch.stack([dict(m.named_modules())[name].bias.detach() for m in mods])
        out.append((w.transpose(1, 2).contiguous(), b.unsqueeze(1).contiguous()))
    return out


def linear_variants(model, mods):
    if model == "mlp":
        layers = stacked_linears(mods, ["fc1", "fc2"])
        acts = [torch.relu_, None]
    else:
        layers = stacked_linears(mods, ["layers.%d" % (2 * k) for k in range(4)])
        acts = [F.gelu] * 4

    def run_bmm(x):
        for (w, b), act in zip(layers, acts):
            x = torch.bmm(x, w).add_(b)
            if act is not None:
                x = act(x)
        return x

    def run_baddbmm(x):
        for (w, b), act in zip(layers, acts):
            x = torch.baddbmm(b, x, w)
            if act is not None:
                x = act(x)
        return x

    def run_einsum(x):
        for (w, b), act in zip(layers, acts):
            x = torch.einsum("nbi,nio->nbo", x, w) + b
            if act is not None:
                x = act(x)
        return x

    return {"bmm": run_bmm, "baddbmm": run_baddbmm, "einsum": run_einsum}


def cat_param(mods, path):
    mod_name, attr = path.rsplit(".", 1)
    return torch.cat([getattr(dict(m.named_modules())[mod_name], attr).detach() for m in mods]).contiguous()


def conv_variants(model, mods, shared_input):
    n = len(mods)
    convs = ["conv1", "conv2"] if model == "resblock" else ["conv1", "conv2", "conv3"]
    w = {c: cat_param(mods, c + ".weight") for c in convs}  # [N*Cout, Cin, 3, 3]
    b = {c: cat_param(mods, c + ".bias") for c in convs}
    bn = {}
    if model == "resblock":
        for k in ["bn1", "bn2"]:
            bn[k] = [cat_param(mods, "%s.%s" % (k, a)) for a in ["running_mean", "running_var", "weight", "bias"]]
    eps = 1e-5

    def widen(x):
        # x: shared [B, C, H, W] or per-model [N, B, C, H, W] -> [B, N*C, H, W]
        if shared_input:
            return x.repeat(1, n, 1, 1)
        return x.permute(1, 0, 2, 3, 4).reshape(x.shape[1], -1, x.shape[3], x.shape[4])

    def to_models(y):
        bsz, nc, h, wd = y.shape
        return y.view(bsz, n, nc // n, h, wd).transpose(0, 1)  # [N, B, C, H, W] view

    def first_conv(x, concat):
        # concat: one ungrouped conv over the shared input with the N models' filters stacked.
        if concat:
            return F.conv2d(x, w["conv1"], b["conv1"], padding=1)
        return F.conv2d(widen(x), w["conv1"], b["conv1"], padding=1, groups=n)

    def make(concat):
        if model == "convnet":
            def run(x):
                y = torch.relu_(first_conv(x, concat))
                y = torch.relu_(F.conv2d(y, w["conv2"], b["conv2"], padding=1, groups=n))
                y = torch.relu_(F.conv2d(y, w["conv3"], b["conv3"], padding=1, groups=n))
                return to_models(y)
            return run

        def run(x):
            y = first_conv(x, concat)
            y = torch.relu_(F.batch_norm(y, *bn["bn1"], training=False, eps=eps))
            y = F.conv2d(y, w["conv2"], b["conv2"], padding=1, groups=n)
            y = F.batch_norm(y, *bn["bn2"], training=False, eps=eps)
            bsz, nc, h, wd = y.shape
            if shared_input:
                y = y.view(bsz, n, nc // n, h, wd).add_(x.unsqueeze(1))
            else:
                y = y.view(bsz, n, nc // n, h, wd).add_(x.transpose(0, 1))
            return torch.relu_(y).transpose(0, 1)
        return run

    out = {"grouped": make(False)}
    if shared_input:
        out["grouped_concat_first"] = make(True)
    return out


# ---- the session --------------------------------------------------------------------------

class Session:
    def __init__(self):
        self.calls = {}
        self.check = {}

    def setup(self, req):
        torch.set_num_threads(int(req.get("threads") or os.cpu_count() or 1))
        model, n, d = req["model"], int(req["n"]), req["dir"]
        params = read_safetensors(os.path.join(d, "params.safetensors"))
        inputs = read_safetensors(os.path.join(d, "inputs.safetensors"))
        if set(inputs) != {"x"}:
            raise ValueError("the zoo models take one input x, got %s" % sorted(inputs))
        x = inputs["x"]
        shared = not req["inputs"]["x"].get("per_model", True)
        mods = build_modules(model, n, params)
        if shared:
            loop = lambda: [m(x) for m in mods]  # noqa: E731
        else:
            xs = list(x.unbind(0))
            loop = lambda: [m(xi) for m, xi in zip(mods, xs)]  # noqa: E731
        if model in ("mlp", "deep_mlp"):
            variants = linear_variants(model, mods)
        else:
            variants = conv_variants(model, mods, shared)
        calls = {"loop": loop}
        check = {"rtol": RTOL, "batched_max_rel": {}, "rejected": {}}
        with torch.inference_mode():
            ref = torch.stack(loop())
            scale = float(ref.abs().max()) or 1.0
            for name, fn in variants.items():
                got = fn(x)
                if tuple(got.shape) != tuple(ref.shape):
                    check["rejected"][name] = "shape %s, loop gives %s" % (tuple(got.shape), tuple(ref.shape))
                    continue
                rel = float((got - ref).abs().max()) / scale
                check["batched_max_rel"][name] = rel
                if rel > RTOL:
                    check["rejected"][name] = "max rel diff %.3g > %g" % (rel, RTOL)
                    continue
                calls[name] = (lambda fn=fn: fn(x))
            wpath = os.path.join(d, "widejit.safetensors")
            if os.path.exists(wpath):
                outs = read_safetensors(wpath)
                if len(outs) != 1:
                    raise ValueError("widejit.safetensors: expected one output, got %s" % sorted(outs))
                (wout,) = outs.values()
                if tuple(wout.shape) != tuple(ref.shape):
                    check["widejit_error"] = "widejit output is %s, torch gives %s" % (tuple(wout.shape), tuple(ref.shape))
                else:
                    check["widejit_max_rel"] = float((wout - ref).abs().max()) / scale
        self.calls, self.check = calls, check
        return {"variants": list(calls), "check": check}

    def time(self, req):
        fn = self.calls.get(req["variant"])
        if fn is None:
            raise ValueError("no variant %r set up (have %s)" % (req["variant"], list(self.calls)))
        k = max(1, int(req.get("calls", 1)))
        if req.get("threads"):
            torch.set_num_threads(int(req["threads"]))
        with torch.inference_mode():
            t0 = time.perf_counter()
            for _ in range(k):
                fn()
            return {"seconds": time.perf_counter() - t0}


def main():
    s = Session()
    for line in sys.stdin:
        line = line.strip()
        if not line:
            continue
        try:
            req = json.loads(line)
            op = req.get("op")
            if op == "quit":
                break
            if op == "hello":
                rep = {"torch": torch.__version__, "threads": torch.get_num_threads(),
                       "openblas_coretype": os.environ.get("OPENBLAS_CORETYPE")}
            elif op == "setup":
                rep = s.setup(req)
            elif op == "time":
                rep = s.time(req)
            else:
                raise ValueError("unknown op %r" % op)
        except Exception as e:  # reported to the driver, which records it in the cell's notes
            rep = {"error": "%s: %s" % (type(e).__name__, e)}
        sys.stdout.write(json.dumps(rep) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
