#!/usr/bin/env python3
"""A plain PyTorch interpreter of widejit graph.json files, used to check exports.

    /usr/bin/python3 exporters/torch/reference.py examples/mlp/graph.json [--rtol R] [--atol A]

It reads ONLY the graph directory (graph.json, weights, inputs, expected), runs the graph once
per model with torch.nn.functional, one model at a time, and compares with expected.safetensors.
It never looks at the fx trace, so an export whose op names, attrs or param roles lose meaning
fails here. A float16 graph runs in fp32 on its float16 values, its outputs rounded to float16,
as export.py computes a float16 model's on the CPU.
"""

import argparse
import json
import os
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import safetensors_io  # noqa: E402


class GraphCheckError(Exception):
    """The graph is malformed or its outputs differ from the expected ones."""


def _pair_arith(op, a, b, attrs):
    if op == "add":
        return a + b * attrs.get("alpha", 1) if attrs.get("alpha", 1) != 1 else a + b
    if op == "sub":
        return a - b * attrs.get("alpha", 1) if attrs.get("alpha", 1) != 1 else a - b
    if op == "mul":
        return a * b
    if op == "div":
        mode = attrs.get("rounding_mode")
        if mode is None:
            return a / b
        return torch.div(torch.as_tensor(a), b, rounding_mode=mode)
    if op == "pow":
        return a ** b
    if op == "matmul":
        return a @ b
    raise GraphCheckError("no binary op %r" % op)


def _module_from_attrs(cls, kwargs, params):
    m = cls(**kwargs)
    m.eval()
    state = {k: v for k, v in params.items()}
    missing = set(dict(m.named_parameters())) - set(state)
    if missing:
        raise GraphCheckError("%s needs params %s" % (cls.__name__, sorted(missing)))
    m.load_state_dict(state, strict=False)
    return m


def run_node(node, args, params):
    """Evaluates one widejit node for one model. args: resolved inputs; params: role -> tensor."""
    op = node["op"]
    a = node.get("attrs", {})
    x = args[0] if args else None
    p = params.get

    if op == "linear":
        return F.linear(x, p("weight"), p("bias"))
    if op == "mlp_embedder":
        return F.linear(F.silu(F.linear(x, p("in_layer.weight"), p("in_layer.bias"))), p("out_layer.weight"),
                        p("out_layer.bias"))
    if op == "ada_layer_norm_zero":
        emb = F.linear(F.silu(args[1]), p("linear.weight"), p("linear.bias"))
        shift_msa, scale_msa, gate_msa, shift_mlp, scale_mlp, gate_mlp = emb.chunk(6, dim=1)
        xm = F.layer_norm(x, (a["embedding_dim"],), eps=a.get("eps", 1e-6)) * (1 + scale_msa[:, None]) + shift_msa[:, None]
        return (xm, gate_msa, shift_mlp, scale_mlp, gate_mlp)
    if op == "embedding":
        return F.embedding(x, p("weight"), padding_idx=a.get("padding_idx"))
    if op in ("conv1d", "conv2d", "conv3d"):
        fn = {"conv1d": F.conv1d, "conv2d": F.conv2d, "conv3d": F.conv3d}[op]
        return fn(x, p("weight"), p("bias"), a.get("stride", 1), a.get("padding", 0), a.get("dilation", 1), a.get("groups", 1))
    if op in ("conv_transpose1d", "conv_transpose2d", "conv_transpose3d"):
        fn = {"conv_transpose1d": F.conv_transpose1d, "conv_transpose2d": F.conv_transpose2d,
              "conv_transpose3d": F.conv_transpose3d}[op]
        return fn(x, p("weight"), p("bias"), a.get("stride", 1), a.get("padding", 0), a.get("output_padding", 0),
                  a.get("groups", 1), a.get("dilation", 1))
    if op.startswith("batch_norm"):
        rm, rv = p("running_mean"), p("running_var")
        batch_stats = a.get("training", False) or rm is None
        return F.batch_norm(x, None if rm is None else rm.clone(), None if rv is None else rv.clone(),
                            p("weight"), p("bias"), batch_stats, 0.0, a.get("eps", 1e-5))
    if op.startswith("instance_norm"):
        rm, rv = p("running_mean"), p("running_var")
        use_input = a.get("training", False) or not a.get("track_running_stats", False)
        return F.instance_norm(x, None if rm is None else rm.clone(), None if rv is None else rv.clone(),
                               p("weight"), p("bias"), use_input, 0.0, a.get("eps", 1e-5))
    if op == "layer_norm":
        return F.layer_norm(x, a["normalized_shape"], p("weight"), p("bias"), a.get("eps", 1e-5))
    if op == "group_norm":
        return F.group_norm(x, a["num_groups"], p("weight"), p("bias"), a.get("eps", 1e-5))
    if op == "rms_norm":
        dims = tuple(range(-len(a["normalized_shape"]), 0))
        eps = a.get("eps")
        if eps is None:
            eps = torch.finfo(x.dtype).eps
        y = x * torch.rsqrt(x.pow(2).mean(dims, keepdim=True) + eps)
        return y * p("weight") if p("weight") is not None else y
    if op == "multihead_attention":
        kw = {k: a.get(k, d) for k, d in (("dropout", 0.0), ("bias", True), ("add_bias_kv", False),
                                          ("add_zero_attn", False), ("kdim", None), ("vdim", None),
                                          ("batch_first", False))}
        m = _module_from_attrs(nn.MultiheadAttention, dict(embed_dim=a["embed_dim"], num_heads=a["num_heads"], **kw), params)
        full = list(args) + [None] * (5 - len(args))
        call = dict(key_padding_mask=full[3], attn_mask=full[4], need_weights=a.get("need_weights", True),
                    average_attn_weights=a.get("average_attn_weights", True))
        if a.get("is_causal", False):
            call["is_causal"] = True
        return tuple(m(full[0], full[1], full[2], **call))
    if op in ("rnn", "gru", "lstm"):
        cls = {"rnn": nn.RNN, "gru": nn.GRU, "lstm": nn.LSTM}[op]
        kw = dict(input_size=a["input_size"], hidden_size=a["hidden_size"], num_layers=a.get("num_layers", 1),
                  bias=a.get("bias", True), batch_first=a.get("batch_first", False), dropout=a.get("dropout", 0.0),
                  bidirectional=a.get("bidirectional", False))
        if op == "rnn":
            kw["nonlinearity"] = a.get("nonlinearity", "tanh")
        m = _module_from_attrs(cls, kw, params)
        full = list(args) + [None] * (3 - len(args))
        if op == "lstm":
            hx = None if full[1] is None else (full[1], full[2])
            out, (h, c) = m(full[0], hx)
            return (out, h, c)
        return tuple(m(full[0], full[1]))
    if op in ("max_pool1d", "max_pool2d", "max_pool3d"):
        fn = {"max_pool1d": F.max_pool1d, "max_pool2d": F.max_pool2d, "max_pool3d": F.max_pool3d}[op]
        return fn(x, a["kernel_size"], a.get("stride"), a.get("padding", 0), a.get("dilation", 1), a.get("ceil_mode", False))
    if op == "avg_pool1d":
        return F.avg_pool1d(x, a["kernel_size"], a.get("stride"), a.get("padding", 0), a.get("ceil_mode", False),
                            a.get("count_include_pad", True))
    if op in ("avg_pool2d", "avg_pool3d"):
        fn = F.avg_pool2d if op == "avg_pool2d" else F.avg_pool3d
        return fn(x, a["kernel_size"], a.get("stride"), a.get("padding", 0), a.get("ceil_mode", False),
                  a.get("count_include_pad", True), a.get("divisor_override"))
    if op == "adaptive_avg_pool1d":
        return F.adaptive_avg_pool1d(x, a["output_size"])
    if op == "adaptive_avg_pool2d":
        return F.adaptive_avg_pool2d(x, a["output_size"])
    if op == "adaptive_avg_pool3d":
        return F.adaptive_avg_pool3d(x, a["output_size"])
    if op in ("dropout", "identity", "contiguous"):
        if op == "dropout" and a.get("training", False):
            raise GraphCheckError("dropout with training=true is random; the reference cannot check it")
        return x.contiguous() if op == "contiguous" else x
    if op == "relu":
        return F.relu(x)
    if op == "gelu":
        return F.gelu(x, approximate=a.get("approximate", "none"))
    if op == "silu":
        return F.silu(x)
    if op == "sigmoid":
        return torch.sigmoid(x)
    if op == "tanh":
        return torch.tanh(x)
    if op == "leaky_relu":
        return F.leaky_relu(x, a.get("negative_slope", 0.01))
    if op == "prelu":
        return F.prelu(x, p("weight"))
    if op == "elu":
        return F.elu(x, a.get("alpha", 1.0))
    if op == "softplus":
        return F.softplus(x, a.get("beta", 1.0), a.get("threshold", 20.0))
    if op == "hardswish":
        return F.hardswish(x)
    if op == "hardsigmoid":
        return F.hardsigmoid(x)
    if op == "relu6":
        return F.relu6(x)
    if op == "hardtanh":
        return F.hardtanh(x, a.get("min_val", -1.0), a.get("max_val", 1.0))
    if op == "clamp":
        return torch.clamp(x, a.get("min"), a.get("max"))
    if op == "pad":
        mode = a.get("mode", "constant")
        return F.pad(x, a["pad"], mode=mode, value=float(a.get("value", 0.0))) if mode == "constant" else \
            F.pad(x, a["pad"], mode=mode)
    if op == "expand":
        return x.expand(a["sizes"])
    if op == "to":
        return x.to(getattr(torch, a["dtype"]))
    if op in ("sin", "cos"):
        return getattr(torch, op)(x)
    if op == "softmax":
        return F.softmax(x, a["dim"])
    if op == "log_softmax":
        return F.log_softmax(x, a["dim"])
    if op in ("add", "sub", "mul", "div", "pow", "matmul"):
        return _pair_arith(op, args[0], args[1], a)
    if op == "neg":
        return -x
    if op == "flatten":
        return torch.flatten(x, a.get("start_dim", 0), a.get("end_dim", -1))
    if op == "view":
        return x.view(a["shape"])
    if op == "reshape":
        return x.reshape(a["shape"])
    if op == "permute":
        return x.permute(a["dims"])
    if op == "transpose":
        return x.transpose(a["dim0"], a["dim1"])
    if op == "cat":
        return torch.cat(args[0], a.get("dim", 0))
    if op == "stack":
        return torch.stack(args[0], a.get("dim", 0))
    if op == "chunk":
        return tuple(torch.chunk(x, a["chunks"], a.get("dim", 0)))
    if op == "split":
        return tuple(torch.split(x, a["split_size_or_sections"], a.get("dim", 0)))
    if op == "unsqueeze":
        return x.unsqueeze(a["dim"])
    if op == "squeeze":
        return x.squeeze() if a.get("dim") is None else x.squeeze(a["dim"])
    if op in ("mean", "sum", "amax"):
        dim = a.get("dim")
        if dim is None:
            dim = list(range(x.dim()))
        return getattr(torch, op)(x, dim, keepdim=a.get("keepdim", False))
    if op == "getitem":
        return x[a["index"]]
    if op == "slice":
        return x[(slice(None),) * (a["dim"] % x.dim()) + (slice(a.get("start"), a.get("end"), a.get("step", 1)),)]
    if op == "select":
        return x.select(a["dim"], a["index"])
    if op in ("rsqrt", "sqrt", "exp", "log", "logical_not"):
        return getattr(torch, op)(x)
    if op in ("logical_and", "logical_or"):
        return getattr(torch, op)(args[0], torch.as_tensor(args[1]))
    if op in ("eq", "ne", "lt", "le", "gt", "ge"):
        a0, a1 = args
        if not isinstance(a0, torch.Tensor):  # number op tensor: flip to tensor op' number
            a0, a1, op = a1, a0, {"lt": "gt", "le": "ge", "gt": "lt", "ge": "le"}.get(op, op)
        return getattr(torch, op)(a0, a1)
    if op == "masked_fill":
        return x.masked_fill(args[1], float(a["value"]))
    if op == "where":
        c, u, v = args
        return torch.where(c, torch.as_tensor(u, dtype=v.dtype) if not isinstance(u, torch.Tensor) else u,
                           torch.as_tensor(v, dtype=u.dtype) if not isinstance(v, torch.Tensor) else v)
    if op in ("tril", "triu"):
        return getattr(torch, op)(x, a.get("diagonal", 0))
    raise GraphCheckError("node %r: the reference interpreter has no op %r" % (node["name"], op))


def run_graph(graph, weights, inputs, model):
    """The outputs (a list of tensors) of model `model` of the graph."""
    env = {}
    for spec in graph["inputs"]:
        t = inputs[spec["name"]]
        env[spec["name"]] = t[model] if spec.get("per_model", True) else t
    for spec in graph["params"]:
        env[spec["name"]] = weights[spec["name"]][model]

    def resolve(v):
        if isinstance(v, list):
            return [resolve(x) for x in v]
        if isinstance(v, str):
            if v not in env:
                raise KeyError(v)
            return env[v]
        return v

    pending = list(graph["nodes"])
    while pending:
        progressed = False
        rest = []
        for node in pending:
            try:
                args = [resolve(v) for v in node.get("inputs", [])]
            except KeyError:
                rest.append(node)
                continue
            params = {role: env[name] for role, name in node.get("params", {}).items()}
            env[node["name"]] = run_node(node, args, params)
            progressed = True
        if not progressed:
            raise GraphCheckError("nodes %s have inputs that are never produced (or form a cycle)" % [n["name"] for n in rest])
        pending = rest
    return [env[name] for name in graph["outputs"]]


def check(graph_path, rtol=1e-5, atol=1e-5):
    """Runs every model of the graph and compares with expected.safetensors; returns a summary."""
    with open(graph_path) as f:
        graph = json.load(f)
    base = os.path.dirname(graph_path)
    if graph.get("format") != "widejit.graph/v1":
        raise GraphCheckError("format is %r" % graph.get("format"))
    n = graph["n"]
    weights = safetensors_io.read(os.path.join(base, graph["weights"]))
    inputs = safetensors_io.read(os.path.join(base, "inputs.safetensors"))
    expected = safetensors_io.read(os.path.join(base, "expected.safetensors"))
    declared = {p["name"]: p for p in graph["params"]}
    if set(weights) != set(declared):
        raise GraphCheckError("weights file holds %s, params declare %s" % (sorted(weights), sorted(declared)))
    for name, spec in declared.items():
        if list(weights[name].shape) != [n] + spec["shape"]:
            raise GraphCheckError("weight %r has shape %s, expected %s" % (name, list(weights[name].shape), [n] + spec["shape"]))
    for spec in graph["inputs"]:
        want = ([n] if spec.get("per_model", True) else []) + spec["shape"]
        if list(inputs[spec["name"]].shape) != want:
            raise GraphCheckError("input %r has shape %s, expected %s" % (spec["name"], list(inputs[spec["name"]].shape), want))
    if set(expected) != set(graph["outputs"]):
        raise GraphCheckError("expected outputs %s, graph outputs %s" % (sorted(expected), graph["outputs"]))
    # PyTorch's CPU has no float16 matmul or convolution: a float16 graph runs in fp32 on its
    # float16 values, its outputs rounded to float16 (as export.py computes a float16 model's)
    half = any(t.dtype == torch.float16 for t in list(weights.values()) + list(inputs.values()))
    if half:
        weights = {k: v.float() if v.dtype == torch.float16 else v for k, v in weights.items()}
        inputs = {k: v.float() if v.dtype == torch.float16 else v for k, v in inputs.items()}
    worst = 0.0
    with torch.no_grad():
        for i in range(n):
            outs = run_graph(graph, weights, inputs, i)
            for name, got in zip(graph["outputs"], outs):
                want = expected[name][i]
                if half and want.dtype == torch.float16:
                    got = got.half()
                if got.shape != want.shape:
                    raise GraphCheckError("model %d output %r has shape %s, expected %s" % (i, name, list(got.shape), list(want.shape)))
                err = (got.double() - want.double()).abs().max().item() if got.numel() else 0.0
                worst = max(worst, err)
                if not torch.allclose(got.double(), want.double(), rtol=rtol, atol=atol):
                    raise GraphCheckError("model %d output %r differs from expected: max abs error %.3g" % (i, name, err))
    return "%d models, %d outputs, max abs error %.3g" % (n, len(graph["outputs"]), worst)


def main(argv=None):
    ap = argparse.ArgumentParser(prog="reference.py", description=__doc__.split("\n\n")[0])
    ap.add_argument("graph")
    ap.add_argument("--rtol", type=float, default=1e-5)
    ap.add_argument("--atol", type=float, default=1e-5)
    args = ap.parse_args(argv)
    try:
        print("%s: ok (%s)" % (args.graph, check(args.graph, args.rtol, args.atol)))
    except (GraphCheckError, OSError, ValueError, KeyError) as e:
        print("reference.py: %s: %s" % (args.graph, e), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
