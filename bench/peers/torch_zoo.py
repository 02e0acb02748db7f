"""PyTorch peer of the zoo benchmark (go run ./bench): N PyTorch modules of the zoo, timed as a
sequential loop and as batched strategies, on the weights and inputs widejit used.

Run by the Go driver with Debian's /usr/bin/python3; it speaks JSON lines on stdin/stdout so
that the driver can interleave its own runs with the peer's, one repetition at a time:

  {"op": "hello"}   -> {"torch": "1.13.1", "threads": 2, "blas": {"summary": ..., "libraries": ...}, ...}
        blas says which BLAS torch really loaded (the libraries mapped into the process, read
        from /proc/self/maps, and OpenBLAS's own config, core and thread count).
  {"op": "setup", "model": "mlp", "n": 8, "threads": 2,
   "dir": DIR, "inputs": {"x": {"per_model": true}}}
        DIR holds params.safetensors (every param stacked [N, ...]), inputs.safetensors and,
        optionally, widejit.safetensors (widejit's outputs). The peer builds N modules
        (examples/models.py for mlp, deep_mlp, resblock, convnet; bench/peers/zoo_models.py for
        the rest), loads the params, runs its loop and every batched variant: bmm/baddbmm/einsum
        for chains of linears, grouped convolutions for chains of convolutions, a hand-written
        bmm block for transformer and norm_softmax, and functorch's vmap over
        combine_state_for_ensemble for every model. Each batched result must equal the loop's
        (max |diff| <= 1e-4 * max|loop|)
        -> {"variants": ["loop", "bmm", ...], "check": {...}}; a variant whose result differs is
        dropped (check.rejected), one this torch cannot run is dropped (check.unavailable), and
        check.notes says when vmap silently falls back to a per-model loop for some op.
  {"op": "time", "variant": "bmm", "calls": K, "threads": T}
        -> {"seconds": total wall time of K calls with torch.set_num_threads(T)}
  {"op": "quit"}

Every reply carries "error" instead when something went wrong. Fairness notes: modules run in
eval mode under torch.inference_mode(); the loop returns the N outputs as a list (no stack);
a batched strategy returns its result in its natural layout (a view, not made contiguous); the
stacked/pre-transposed weights are prepared once in setup, outside the timing.
"""

import ctypes
import json
import os
import re
import struct
import sys
import time
import warnings

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

try:
    from functorch import combine_state_for_ensemble, vmap
    VMAP_ERROR = None
except ImportError as e:  # an older torch: the vmap variant is reported unavailable
    VMAP_ERROR = "functorch: %s" % e

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "examples"))
import models  # noqa: E402  (examples/models.py: the first four cases' PyTorch sources)
import zoo_models  # noqa: E402  (bench/peers/zoo_models.py: the other cases)
import real_models  # noqa: E402  (bench/peers/real_models.py: go run ./bench --real; torchvision on use)

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


MAKERS = {
    "mlp": models.MLP, "deep_mlp": models.DeepMLP, "resblock": models.ResBlock, "convnet": models.ConvNet,
    "linear256": zoo_models.linear256, "linear_odd": zoo_models.linear_odd, "linear1024": zoo_models.linear1024,
    "mlp1024": zoo_models.mlp1024, "conv3x3": zoo_models.conv3x3, "conv64": zoo_models.conv64,
    "transformer": zoo_models.transformer, "norm_softmax": zoo_models.norm_softmax,
    **real_models.MAKERS,
}

# Chains that cannot be read off the module tree (activations applied with F.relu in forward).
CHAINS = {"convnet": [("conv1", "relu"), ("conv2", "relu"), ("conv3", "relu")]}


def build_modules(model, n, params):
    if model not in MAKERS:
        raise ValueError("unknown zoo model %r (expected one of %s)" % (model, ", ".join(sorted(MAKERS))))
    mods = []
    for i in range(n):
        m = MAKERS[model]()
        state = m.state_dict()
        for key in state:
            if key.endswith("num_batches_tracked"):
                continue
            if key not in params:
                raise ValueError("params.safetensors has no %r for model %s" % (key, model))
            if tuple(params[key].shape[1:]) != tuple(state[key].shape):
                raise ValueError("params.safetensors: %r is %s per model, model %s wants %s"
                                 % (key, tuple(params[key].shape[1:]), model, tuple(state[key].shape)))
            state[key] = params[key][i]
        m.load_state_dict(state)
        m.eval()
        mods.append(m)
    return mods


def chain_of(model, mod):
    """[(layer name, activation or None)] when mod is a plain chain of Linear or Conv2d layers,
    each optionally followed by ReLU or GELU (exact); None otherwise."""
    if model in CHAINS:
        return CHAINS[model]
    out = []
    for name, m in mod.named_modules():
        if list(m.children()):
            continue
        if isinstance(m, (nn.Linear, nn.Conv2d)) and m.bias is not None:
            out.append([name, None])
        elif isinstance(m, nn.ReLU) and out and out[-1][1] is None:
            out[-1][1] = "relu"
        elif isinstance(m, nn.GELU) and m.approximate == "none" and out and out[-1][1] is None:
            out[-1][1] = "gelu"
        else:
            return None
    return [tuple(x) for x in out] or None


ACTS = {None: lambda x: x, "relu": torch.relu_, "gelu": F.gelu}


def stack_param(mods, path):
    return torch.stack([mods_get(m, path).detach() for m in mods])


def mods_get(m, path):
    mod_name, attr = path.rsplit(".", 1)
    return getattr(m.get_submodule(mod_name), attr)


# ---- batched strategies -------------------------------------------------------------------

def stacked_linears(mods, names):
    """[N, in, out] pre-transposed weights and [N, 1, out] biases for each linear in names."""
    return [(stack_param(mods, name + ".weight").transpose(1, 2).contiguous(),
             stack_param(mods, name + ".bias").unsqueeze(1).contiguous()) for name in names]


def linear_variants(chain, mods, shared_input):
    """A chain of linears and activations over stacked weights: bmm + bias, baddbmm, einsum."""
    layers = stacked_linears(mods, [name for name, _ in chain])
    acts = [ACTS[a] for _, a in chain]
    n = len(mods)

    def widen(x):  # shared [B, in] -> [N, B, in] (a view)
        return x.unsqueeze(0).expand(n, *x.shape) if shared_input else x

    def run_bmm(x):
        x = widen(x)
        for (w, b), act in zip(layers, acts):
            x = act(torch.bmm(x, w).add_(b))
        return x

    def run_baddbmm(x):
        x = widen(x)
        for (w, b), act in zip(layers, acts):
            x = act(torch.baddbmm(b, x, w))
        return x

    def run_einsum(x):
        x = widen(x)
        for (w, b), act in zip(layers, acts):
            x = act(torch.einsum("nbi,nio->nbo", x, w) + b)
        return x

    return {"bmm": run_bmm, "baddbmm": run_baddbmm, "einsum": run_einsum}


def cat_param(mods, path):
    return torch.cat([mods_get(m, path).detach() for m in mods]).contiguous()


def conv_widening(n, shared_input):
    def widen(x):
        # x: shared [B, C, H, W] or per-model [N, B, C, H, W] -> [B, N*C, H, W]
        if shared_input:
            return x.repeat(1, n, 1, 1)
        return x.permute(1, 0, 2, 3, 4).reshape(x.shape[1], -1, x.shape[3], x.shape[4])

    def to_models(y):
        bsz, nc, h, wd = y.shape
        return y.view(bsz, n, nc // n, h, wd).transpose(0, 1)  # [N, B, C, H, W] view
    return widen, to_models


def conv_chain_variants(chain, mods, shared_input):
    """A chain of Conv2d layers and activations as grouped convolutions (groups=N) over the N
    models' concatenated filters; with a shared input, also a variant whose first convolution is
    one ungrouped convolution with the N models' filters stacked."""
    n = len(mods)
    convs = []
    for name, act in chain:
        c = mods[0].get_submodule(name)
        if c.groups != 1 or c.padding_mode != "zeros" or isinstance(c.padding, str):
            raise ValueError("conv %s: only groups=1, zero padding given as numbers" % name)
        convs.append((cat_param(mods, name + ".weight"), cat_param(mods, name + ".bias"),
                      dict(stride=c.stride, padding=c.padding, dilation=c.dilation), ACTS[act]))
    widen, to_models = conv_widening(n, shared_input)

    def make(concat):
        def run(x):
            for i, (w, b, kw, act) in enumerate(convs):
                if i == 0 and concat:
                    x = act(F.conv2d(x, w, b, **kw))
                else:
                    x = act(F.conv2d(widen(x) if i == 0 else x, w, b, groups=n, **kw))
            return to_models(x)
        return run

    out = {"grouped": make(False)}
    if shared_input:
        out["grouped_concat_first"] = make(True)
    return out


def resblock_variants(mods, shared_input):
    n = len(mods)
    w = {c: cat_param(mods, c + ".weight") for c in ["conv1", "conv2"]}  # [N*Cout, Cin, 3, 3]
    b = {c: cat_param(mods, c + ".bias") for c in ["conv1", "conv2"]}
    bn = {k: [cat_param(mods, "%s.%s" % (k, a)) for a in ["running_mean", "running_var", "weight", "bias"]]
          for k in ["bn1", "bn2"]}
    eps = mods[0].bn1.eps
    widen, _ = conv_widening(n, shared_input)

    def make(concat):
        def run(x):
            if concat:
                y = F.conv2d(x, w["conv1"], b["conv1"], padding=1)
            else:
                y = F.conv2d(widen(x), w["conv1"], b["conv1"], padding=1, groups=n)
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


def layer_norm_stacked(mods, name):
    """fn(x [N, M, D]) = LayerNorm with the N models' affine parameters [N, 1, D]."""
    ln = mods[0].get_submodule(name)
    w = stack_param(mods, name + ".weight").unsqueeze(1).contiguous()
    b = stack_param(mods, name + ".bias").unsqueeze(1).contiguous()
    shape, eps = tuple(ln.normalized_shape), ln.eps
    return lambda x: torch.addcmul(b, F.layer_norm(x, shape, eps=eps), w)


def transformer_variants(mods, shared_input):
    """The pre-norm block by hand over stacked weights: baddbmm projections, bmm attention over
    N*B*heads, LayerNorm with stacked affine parameters."""
    n, m0 = len(mods), mods[0]
    win = stack_param(mods, "self_attn.in_proj_weight").transpose(1, 2).contiguous()  # [N, D, 3D]
    bin_ = stack_param(mods, "self_attn.in_proj_bias").unsqueeze(1).contiguous()
    (wo, bo), (w1, b1), (w2, b2) = stacked_linears(mods, ["self_attn.out_proj", "linear1", "linear2"])
    ln1, ln2 = layer_norm_stacked(mods, "norm1"), layer_norm_stacked(mods, "norm2")
    heads, d = m0.self_attn.num_heads, m0.self_attn.embed_dim
    hd = d // heads
    scale = hd ** -0.5

    def run(x):
        if shared_input:
            x = x.unsqueeze(0).expand(n, *x.shape)
        _, bsz, t, _ = x.shape
        x2 = x.reshape(n, bsz * t, d)
        qkv = torch.baddbmm(bin_, ln1(x2), win).view(n, bsz, t, 3, heads, hd).permute(3, 0, 1, 4, 2, 5)
        q = qkv[0].reshape(n * bsz * heads, t, hd)
        k = qkv[1].reshape(n * bsz * heads, t, hd)
        v = qkv[2].reshape(n * bsz * heads, t, hd)
        att = torch.softmax(torch.bmm(q, k.transpose(1, 2)).mul_(scale), dim=-1)
        o = torch.bmm(att, v).view(n, bsz, heads, t, hd).permute(0, 1, 3, 2, 4).reshape(n, bsz * t, d)
        h = torch.baddbmm(bo, o, wo).add_(x2)
        f = F.gelu(torch.baddbmm(b1, ln2(h), w1))
        return torch.baddbmm(b2, f, w2).add_(h).view(n, bsz, t, d)

    return {"bmm": run}


def norm_softmax_variants(mods, shared_input):
    """LayerNorm, baddbmm, softmax, LayerNorm over stacked weights."""
    n = len(mods)
    ((w, b),) = stacked_linears(mods, ["fc"])
    ln1, ln2 = layer_norm_stacked(mods, "norm1"), layer_norm_stacked(mods, "norm2")

    def run(x):
        if shared_input:
            x = x.unsqueeze(0).expand(n, *x.shape)
        return ln2(torch.softmax(torch.baddbmm(b, ln1(x), w), dim=-1))

    return {"bmm": run}


def vmap_variant(mods, shared_input):
    """functorch: the N modules' parameters stacked by combine_state_for_ensemble, the module's
    own forward vmapped over them (and over the input when it is per model)."""
    if VMAP_ERROR:
        raise ImportError(VMAP_ERROR)
    fmodel, params, buffers = combine_state_for_ensemble(mods)
    params = tuple(p.detach() for p in params)
    f = vmap(fmodel, in_dims=(0, 0, None if shared_input else 0))
    return lambda x: f(params, buffers, x)


def batched_variants(model, mods, shared_input):
    """name -> fn(x) for every batched strategy of the model; a strategy that cannot even be
    built is returned as the exception that stopped it (reported as unavailable)."""
    out = {}
    chain = chain_of(model, mods[0])
    try:
        if model == "resblock":
            out.update(resblock_variants(mods, shared_input))
        elif model == "transformer":
            out.update(transformer_variants(mods, shared_input))
        elif model == "norm_softmax":
            out.update(norm_softmax_variants(mods, shared_input))
        elif chain and all(isinstance(mods[0].get_submodule(nm), nn.Linear) for nm, _ in chain):
            out.update(linear_variants(chain, mods, shared_input))
        elif chain and all(isinstance(mods[0].get_submodule(nm), nn.Conv2d) for nm, _ in chain):
            out.update(conv_chain_variants(chain, mods, shared_input))
    except Exception as e:  # noqa: BLE001  (reported, never hidden)
        out["hand-written"] = e
    try:
        out["vmap"] = vmap_variant(mods, shared_input)
    except Exception as e:  # noqa: BLE001
        out["vmap"] = e
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
        variants = batched_variants(model, mods, shared)
        calls = {"loop": loop}
        check = {"rtol": RTOL, "batched_max_rel": {}, "rejected": {}, "unavailable": {}, "notes": {}}
        with torch.inference_mode():
            ref = torch.stack(loop())
            scale = float(ref.abs().max()) or 1.0
            for name, fn in variants.items():
                if isinstance(fn, Exception):
                    check["unavailable"][name] = "%s: %s" % (type(fn).__name__, fn)
                    continue
                with warnings.catch_warnings(record=True) as caught:
                    warnings.simplefilter("always")
                    try:
                        got = fn(x)
                    except Exception as e:  # noqa: BLE001  (this torch cannot run the strategy)
                        check["unavailable"][name] = "%s: %s" % (type(e).__name__, str(e).splitlines()[0][:300])
                        continue
                fallbacks = sorted({m.group(1) for w in caught
                                    for m in [re.search(r"batching rule for (\S+?)\.", str(w.message))] if m})
                if fallbacks:
                    check["notes"][name] = "runs a per-model loop inside for " + ", ".join(fallbacks) + " (no batching rule)"
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
        # Only when it changes: torch.set_num_threads slows the calls after it even when it
        # sets the count the process already has (resnet18 at N = 3 on 2 threads: 44 against
        # 30 ms a call when set before every sample; bench/results/peer_standalone.md).
        if req.get("threads") and torch.get_num_threads() != int(req["threads"]):
            torch.set_num_threads(int(req["threads"]))
        with torch.inference_mode():
            t0 = time.perf_counter()
            for _ in range(k):
                fn()
            return {"seconds": time.perf_counter() - t0}


def blas_info():
    """What BLAS torch really runs on: the libraries mapped into this process (torch links the
    generic libblas.so.3, which Debian's alternatives resolve to some implementation), OpenBLAS's
    own report when it is the one loaded, and torch's build configuration."""
    libs = set()
    with open("/proc/self/maps") as f:
        for line in f:
            path = line.split()[-1] if len(line.split()) >= 6 else ""
            base = os.path.basename(path)
            if re.search(r"(blas|lapack|mkl|blis|dnnl|gomp|iomp|omp)", base):
                libs.add(os.path.realpath(path))
    info = {"libraries": sorted(libs)}
    cfg = torch.__config__.show()
    m = re.search(r"BLAS_INFO=([^,\s]+)", cfg)
    info["torch_blas_info"] = m.group(1) if m else None
    m = re.search(r"MKL-DNN v([0-9.]+)", cfg)
    info["onednn"] = m.group(1) if m and torch.backends.mkldnn.is_available() else None
    info["mkl"] = torch.backends.mkl.is_available()
    summary = []
    for path in sorted(libs):
        if "openblas" not in os.path.basename(path):
            continue
        try:
            lib = ctypes.CDLL(path)
            lib.openblas_get_config.restype = ctypes.c_char_p
            lib.openblas_get_corename.restype = ctypes.c_char_p
            ob = {"path": path, "config": lib.openblas_get_config().decode().strip(),
                  "core": lib.openblas_get_corename().decode(), "threads": lib.openblas_get_num_threads(),
                  "parallel": {0: "sequential", 1: "pthreads", 2: "openmp"}.get(lib.openblas_get_parallel(), "?")}
        except (OSError, AttributeError) as e:
            ob = {"path": path, "error": str(e)}
        info["openblas"] = ob
        summary.append("%s (%s build, core %s, %s threads) from %s" % (
            ob.get("config", "OpenBLAS"), ob.get("parallel", "?"), ob.get("core", "?"), ob.get("threads", "?"), path))
        break
    if not summary:
        blas = [p for p in sorted(libs) if re.search(r"(blas|mkl|blis)", os.path.basename(p))]
        summary.append("BLAS libraries mapped: " + (", ".join(blas) if blas else "none found in /proc/self/maps"))
    summary.append("torch BLAS_INFO=%s, MKL %s" % (info["torch_blas_info"], "yes" if info["mkl"] else "no"))
    if info["onednn"]:
        summary.append("oneDNN %s (convolutions)" % info["onednn"])
    info["summary"] = "; ".join(summary)
    return info


def allocator_info():
    """The malloc this process really runs: tcmalloc when it is mapped (LD_PRELOAD), else
    glibc's, with the thresholds the driver raised (MALLOC_MMAP_THRESHOLD_/MALLOC_TRIM_THRESHOLD_)."""
    with open("/proc/self/maps") as f:
        for line in f:
            path = line.split()[-1] if len(line.split()) >= 6 else ""
            if "tcmalloc" in os.path.basename(path):
                return "tcmalloc (%s)" % os.path.realpath(path)
    env = ["%s=%s" % (k, os.environ[k]) for k in ("MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_") if k in os.environ]
    return "glibc malloc" + (" (%s)" % ", ".join(env) if env else " (default thresholds)")


def sgemm_peak(req):
    """The machine's sgemm rate through torch.mm (the BLAS torch loaded): the fastest of a few
    calls of a square fp32 matmul, per thread count asked for, in GFLOP/s."""
    size = int(req.get("size", 1024))
    a, b = torch.randn(size, size), torch.randn(size, size)
    out = {}
    with torch.inference_mode():
        for t in req.get("threads", [1]):
            torch.set_num_threads(int(t))
            torch.mm(a, b)
            best = min(_timed(lambda: torch.mm(a, b)) for _ in range(int(req.get("reps", 5))))
            out[str(t)] = 2.0 * size ** 3 / best / 1e9
    return {"gflops": out, "size": size}


def _timed(fn):
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def hello():
    return {"torch": torch.__version__, "threads": torch.get_num_threads(), "allocator": allocator_info(),
            "interop_threads": torch.get_num_interop_threads(),
            "omp_num_threads": os.environ.get("OMP_NUM_THREADS"),
            "openblas_coretype": os.environ.get("OPENBLAS_CORETYPE"),
            "vmap": VMAP_ERROR or "functorch", "blas": blas_info()}


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
                rep = hello()
            elif op == "setup":
                rep = s.setup(req)
            elif op == "time":
                rep = s.time(req)
            elif op == "sgemm_peak":
                rep = sgemm_peak(req)
            else:
                raise ValueError("unknown op %r" % op)
        except Exception as e:  # reported to the driver, which records it in the cell's notes
            rep = {"error": "%s: %s" % (type(e).__name__, e)}
        sys.stdout.write(json.dumps(rep) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
