#!/usr/bin/env python3
"""Export N PyTorch modules of one architecture to widejit's graph format (widejit.graph/v1).

    python3 exporters/torch/export.py --module path/to/file.py:ClassName [--kwargs JSON] \
        --n 8 --input x=32,64 [--input tok=4,11:int64:0:50] [--shared-input] [--seed 0] --out DIR
    python3 exporters/torch/export.py --module path/to/file.py:ClassName [--kwargs JSON] \
        --state-dict 'runs/*.pt' --input x=32,64 --out DIR

Builds N instances (instance i is constructed after torch.manual_seed(seed + i)); with
--state-dict, N is the number of checkpoint files and instance i loads file i, each file checked
against the architecture (keys, shapes, dtypes) before any is loaded. From Python,
export_modules(models, inputs, out_dir) exports a list of nn.Module instances (trace_modules(models,
inputs) makes the graph and its stacked weights in memory, writing nothing). It traces one with
torch.fx, maps every fx node to the widejit op vocabulary (docs/graph-format.md) and writes
DIR/graph.json, DIR/weights.safetensors (params stacked [N, ...]), DIR/inputs.safetensors and
DIR/expected.safetensors (the N modules run one by one, stacked [N, ...]). A node that cannot be
mapped is refused with its name, op and target; nothing is skipped.

Needs only torch and numpy; works with torch 1.13 and 2.x.
"""

import argparse
import builtins
import copy
import dis
import glob
import importlib.util
import inspect
import json
import math
import operator
import os
import pickle
import random
import re
import stat
import sys
import traceback
import zipfile

import numpy as np
import torch
import torch.fx
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import safetensors_io  # noqa: E402

FORMAT = "widejit.graph/v1"
HINT = "see docs/graph-format.md for the ops widejit supports"


class ExportError(ValueError):
    """A model or command line the exporter cannot turn into a widejit graph."""


# ----------------------------------------------------------------------------------------------
# Command line


_DTYPES = {
    "float32": torch.float32,
    "float16": torch.float16,
    "bfloat16": torch.bfloat16,
    "float64": torch.float64,
    "int64": torch.int64,
    "int32": torch.int32,
    "int16": torch.int16,
    "int8": torch.int8,
    "uint8": torch.uint8,
    "bool": torch.bool,
}
_DTYPE_NAMES = {v: k for k, v in _DTYPES.items()}


class InputSpec:
    """One --input NAME=SHAPE[:DTYPE[:LOW:HIGH]]."""

    def __init__(self, name, shape, dtype, low=None, high=None):
        self.name, self.shape, self.dtype, self.low, self.high = name, shape, dtype, low, high

    @staticmethod
    def parse(text):
        where = "--input %r" % text
        if "=" not in text:
            raise ExportError("%s: expected NAME=SHAPE[:DTYPE[:LOW:HIGH]], e.g. x=32,64 or tok=4,11:int64:0:50" % where)
        name, rest = text.split("=", 1)
        if not name.isidentifier():
            raise ExportError("%s: input name %r is not a Python identifier" % (where, name))
        parts = rest.split(":")
        if len(parts) not in (1, 2, 4):
            raise ExportError("%s: expected SHAPE, SHAPE:DTYPE or SHAPE:DTYPE:LOW:HIGH" % where)
        try:
            shape = [int(d) for d in parts[0].split(",")] if parts[0] else []
        except ValueError:
            raise ExportError("%s: shape %r is not a comma-separated list of integers" % (where, parts[0]))
        if any(d <= 0 for d in shape):
            raise ExportError("%s: every dimension must be positive, got %r" % (where, shape))
        dtype = torch.float32
        if len(parts) >= 2:
            if parts[1] not in _DTYPES:
                raise ExportError("%s: unknown dtype %r (one of %s)" % (where, parts[1], ", ".join(_DTYPES)))
            dtype = _DTYPES[parts[1]]
        low = high = None
        if len(parts) == 4:
            try:
                low, high = float(parts[2]), float(parts[3])
            except ValueError:
                raise ExportError("%s: LOW and HIGH must be numbers" % where)
            if not low < high:
                raise ExportError("%s: LOW must be below HIGH" % where)
        elif not dtype.is_floating_point and dtype != torch.bool:
            raise ExportError("%s: integer inputs need a range, e.g. %s=%s:%s:0:50" % (where, name, parts[0], parts[1]))
        return InputSpec(name, shape, dtype, low, high)

    def generate(self, gen, lead):
        """A tensor of shape lead + shape drawn from gen: randn for floats (uniform in [LOW, HIGH)
        when given), uniform integers in [LOW, HIGH) otherwise."""
        shape = list(lead) + self.shape
        if self.dtype == torch.bool:
            return torch.randint(0, 2, shape, generator=gen).bool()
        if not self.dtype.is_floating_point:
            return torch.randint(int(self.low), int(self.high), shape, generator=gen, dtype=self.dtype)
        if self.low is None:
            t = torch.randn(shape, generator=gen)
        else:
            t = torch.rand(shape, generator=gen) * (self.high - self.low) + self.low
        return t.to(self.dtype)


def load_class(spec):
    """Loads ClassName from path/to/file.py:ClassName, or from an installed package
    (package.module:name, e.g. torchvision.models:resnet18). The name is an nn.Module subclass
    or a factory: a function whose result is checked to be an nn.Module when it is called."""
    if ":" not in spec:
        raise ExportError("--module %r: expected path/to/file.py:ClassName or package.module:name" % spec)
    path, cls_name = spec.rsplit(":", 1)
    if not path.endswith(".py") and not os.path.exists(path) and re.fullmatch(r"[A-Za-z_][\w.]*", path):
        try:
            module = importlib.import_module(path)
        except ImportError as e:
            raise ExportError("--module %r: cannot import %s: %s" % (spec, path, e))
        return _module_factory(spec, path, getattr(module, cls_name, None), cls_name)
    if not os.path.isfile(path):
        raise ExportError("--module %r: no such file %s" % (spec, path))
    path = os.path.abspath(path)
    mod_name = "widejit_export_" + os.path.splitext(os.path.basename(path))[0]
    sys.path.insert(0, os.path.dirname(path))
    try:
        spec_obj = importlib.util.spec_from_file_location(mod_name, path)
        module = importlib.util.module_from_spec(spec_obj)
        sys.modules[mod_name] = module
        spec_obj.loader.exec_module(module)
    finally:
        sys.path.pop(0)
    return _module_factory(spec, path, getattr(module, cls_name, None), cls_name)


def _module_factory(spec, where, obj, name):
    if isinstance(obj, type) and issubclass(obj, nn.Module):
        return obj
    if callable(obj) and not isinstance(obj, type):
        return obj  # a factory (torchvision.models.resnet18): _construct checks what it returns
    raise ExportError("--module %r: %s has no torch.nn.Module subclass or factory function named %s" % (
        spec, where, name))


def seed_everything(seed):
    torch.manual_seed(seed)
    random.seed(seed)
    np.random.seed(seed % (2**32))


# ----------------------------------------------------------------------------------------------
# Op vocabulary: modules


def _list(v):
    """PyTorch keeps int-or-tuple arguments as tuples; JSON wants lists."""
    if isinstance(v, (tuple, list, torch.Size)):
        return [_list(x) for x in v]
    return v


def _conv_attrs(m, transposed):
    if m.padding_mode != "zeros":
        raise ExportError("padding_mode=%r is not supported (only 'zeros')" % m.padding_mode)
    attrs = {
        "in_channels": m.in_channels,
        "out_channels": m.out_channels,
        "kernel_size": _list(m.kernel_size),
        "stride": _list(m.stride),
        "padding": _list(m.padding),
    }
    if transposed:
        attrs["output_padding"] = _list(m.output_padding)
        attrs["groups"] = m.groups
        attrs["bias"] = m.bias is not None
        attrs["dilation"] = _list(m.dilation)
    else:
        attrs["dilation"] = _list(m.dilation)
        attrs["groups"] = m.groups
        attrs["bias"] = m.bias is not None
        attrs["padding_mode"] = m.padding_mode
    return attrs


def _map_linear(m, a):
    return "linear", [a["input"]], ["weight", "bias"], {
        "in_features": m.in_features, "out_features": m.out_features, "bias": m.bias is not None}


def _map_embedding(m, a):
    if m.max_norm is not None:
        raise ExportError("Embedding with max_norm renormalises its weight in place; not supported")
    return "embedding", [a["input"]], ["weight"], {
        "num_embeddings": m.num_embeddings, "embedding_dim": m.embedding_dim, "padding_idx": m.padding_idx}


def _map_conv(op, transposed):
    def mapper(m, a):
        attrs = _conv_attrs(m, transposed)
        if transposed and a.get("output_size") is not None:
            # the output size the call asked for, as the output_padding that gives it (the
            # graph's shapes are static); PyTorch has checked that it is reachable
            in_shape, out_shape = a["shapes"]
            k = len(m.kernel_size)
            attrs["output_padding"] = [
                out_shape[-k + i] - ((in_shape[-k + i] - 1) * m.stride[i] - 2 * m.padding[i]
                                     + m.dilation[i] * (m.kernel_size[i] - 1) + 1) for i in range(k)]
        return op, [a["input"]], ["weight", "bias"], attrs
    return mapper


def _map_norm_with_stats(op):
    def mapper(m, a):
        attrs = {"num_features": m.num_features, "eps": m.eps, "momentum": m.momentum, "affine": m.affine,
                 "track_running_stats": m.track_running_stats}
        if op.startswith("batch_norm"):  # instance norm has no training attr: eval is implied
            attrs["training"] = m.training
        return op, [a["input"]], ["weight", "bias", "running_mean", "running_var"], attrs
    return mapper


def _map_layer_norm(m, a):
    return "layer_norm", [a["input"]], ["weight", "bias"], {
        "normalized_shape": _list(m.normalized_shape), "eps": m.eps,
        "elementwise_affine": m.elementwise_affine, "bias": getattr(m, "bias", None) is not None}


def _map_group_norm(m, a):
    return "group_norm", [a["input"]], ["weight", "bias"], {
        "num_groups": m.num_groups, "num_channels": m.num_channels, "eps": m.eps, "affine": m.affine}


def _map_rms_norm(m, a):
    return "rms_norm", [a["input"]], ["weight"], {
        "normalized_shape": _list(m.normalized_shape), "eps": m.eps, "elementwise_affine": m.elementwise_affine}


def _map_mha(m, a):
    for key in ("need_weights", "average_attn_weights", "is_causal"):
        if key in a and not isinstance(a[key], bool):
            raise ExportError("MultiheadAttention argument %s must be a Python bool, got %r" % (key, a[key]))
    same = m._qkv_same_embed_dim
    roles = (["in_proj_weight"] if same else ["q_proj_weight", "k_proj_weight", "v_proj_weight"]) + [
        "in_proj_bias", "out_proj.weight", "out_proj.bias", "bias_k", "bias_v"]
    attrs = {
        "embed_dim": m.embed_dim, "num_heads": m.num_heads, "dropout": m.dropout,
        "bias": m.in_proj_bias is not None, "add_bias_kv": m.bias_k is not None,
        "add_zero_attn": m.add_zero_attn,
        "kdim": None if m.kdim == m.embed_dim else m.kdim,
        "vdim": None if m.vdim == m.embed_dim else m.vdim,
        "batch_first": m.batch_first, "need_weights": a["need_weights"],
        "average_attn_weights": a["average_attn_weights"], "is_causal": a.get("is_causal", False)}
    inputs = [a["query"], a["key"], a["value"], a["key_padding_mask"], a["attn_mask"]]
    return "multihead_attention", inputs, roles, attrs


def _map_rnn(op):
    def mapper(m, a):
        if getattr(m, "proj_size", 0):
            raise ExportError("LSTM with proj_size=%d is not supported (only proj_size=0)" % m.proj_size)
        hx = a["hx"]
        if op == "lstm":
            if hx is None:
                inputs = [a["input"], None, None]
            elif isinstance(hx, (tuple, list)) and len(hx) == 2:
                inputs = [a["input"], hx[0], hx[1]]
            else:
                raise ExportError("LSTM initial state must be a tuple (h0, c0)")
        else:
            inputs = [a["input"], hx]
        roles = []
        for k in range(m.num_layers):
            for sfx in ("_l%d" % k, "_l%d_reverse" % k)[:2 if m.bidirectional else 1]:
                roles += ["weight_ih" + sfx, "weight_hh" + sfx] + (["bias_ih" + sfx, "bias_hh" + sfx] if m.bias else [])
        attrs = {"input_size": m.input_size, "hidden_size": m.hidden_size, "num_layers": m.num_layers}
        if op == "rnn":
            attrs["nonlinearity"] = m.nonlinearity
        attrs.update({"bias": m.bias, "batch_first": m.batch_first, "dropout": m.dropout,
                      "bidirectional": m.bidirectional})
        return op, inputs, roles, attrs
    return mapper


def _map_max_pool(op):
    def mapper(m, a):
        if m.return_indices:
            raise ExportError("MaxPool with return_indices=True is not supported")
        return op, [a["input"]], [], {
            "kernel_size": _list(m.kernel_size), "stride": _list(m.stride), "padding": _list(m.padding),
            "dilation": _list(m.dilation), "ceil_mode": m.ceil_mode}
    return mapper


def _map_avg_pool(op):
    def mapper(m, a):
        attrs = {"kernel_size": _list(m.kernel_size), "stride": _list(m.stride), "padding": _list(m.padding),
                 "ceil_mode": m.ceil_mode, "count_include_pad": m.count_include_pad}
        if op != "avg_pool1d":
            attrs["divisor_override"] = m.divisor_override
        return op, [a["input"]], [], attrs
    return mapper


def _map_simple(op, attr_names=(), roles=()):
    def mapper(m, a):
        return op, [a["input"]], list(roles), {k: _list(getattr(m, k)) for k in attr_names}
    return mapper


def _map_dropout(m, a):
    if m.training:
        raise ExportError("Dropout in training mode makes random outputs; the exporter runs modules in eval mode")
    return "dropout", [a["input"]], [], {"p": m.p, "training": False}


def _map_softmax(op):
    def mapper(m, a):
        if m.dim is None:
            raise ExportError("%s without dim uses a deprecated implicit dim; pass dim explicitly" % type(m).__name__)
        return op, [a["input"]], [], {"dim": m.dim}
    return mapper


def _map_flatten_module(m, a):
    return "flatten", [a["input"]], [], {"start_dim": m.start_dim, "end_dim": m.end_dim}


def _module_mappers():
    table = {
        nn.Linear: _map_linear,
        nn.Embedding: _map_embedding,
        nn.Conv1d: _map_conv("conv1d", False),
        nn.Conv2d: _map_conv("conv2d", False),
        nn.Conv3d: _map_conv("conv3d", False),
        nn.ConvTranspose1d: _map_conv("conv_transpose1d", True),
        nn.ConvTranspose2d: _map_conv("conv_transpose2d", True),
        nn.ConvTranspose3d: _map_conv("conv_transpose3d", True),
        nn.BatchNorm1d: _map_norm_with_stats("batch_norm1d"),
        nn.BatchNorm2d: _map_norm_with_stats("batch_norm2d"),
        nn.BatchNorm3d: _map_norm_with_stats("batch_norm3d"),
        nn.InstanceNorm1d: _map_norm_with_stats("instance_norm1d"),
        nn.InstanceNorm2d: _map_norm_with_stats("instance_norm2d"),
        nn.LayerNorm: _map_layer_norm,
        nn.GroupNorm: _map_group_norm,
        nn.MultiheadAttention: _map_mha,
        nn.RNN: _map_rnn("rnn"),
        nn.GRU: _map_rnn("gru"),
        nn.LSTM: _map_rnn("lstm"),
        nn.MaxPool1d: _map_max_pool("max_pool1d"),
        nn.MaxPool2d: _map_max_pool("max_pool2d"),
        nn.MaxPool3d: _map_max_pool("max_pool3d"),
        nn.AvgPool1d: _map_avg_pool("avg_pool1d"),
        nn.AvgPool2d: _map_avg_pool("avg_pool2d"),
        nn.AvgPool3d: _map_avg_pool("avg_pool3d"),
        nn.AdaptiveAvgPool1d: _map_simple("adaptive_avg_pool1d", ["output_size"]),
        nn.AdaptiveAvgPool2d: _map_simple("adaptive_avg_pool2d", ["output_size"]),
        nn.AdaptiveAvgPool3d: _map_simple("adaptive_avg_pool3d", ["output_size"]),
        nn.Dropout: _map_dropout,
        nn.Identity: lambda m, a: ("identity", [a["input"]], [], {}),
        nn.Flatten: _map_flatten_module,
        nn.ReLU: _map_simple("relu"),
        nn.GELU: _map_simple("gelu", ["approximate"]),
        nn.SiLU: _map_simple("silu"),
        nn.Sigmoid: _map_simple("sigmoid"),
        nn.Tanh: _map_simple("tanh"),
        nn.LeakyReLU: _map_simple("leaky_relu", ["negative_slope"]),
        nn.PReLU: _map_simple("prelu", ["num_parameters"], ["weight"]),
        nn.ELU: _map_simple("elu", ["alpha"]),
        nn.Softplus: _map_simple("softplus", ["beta", "threshold"]),
        nn.Hardswish: _map_simple("hardswish"),
        nn.Hardsigmoid: _map_simple("hardsigmoid"),
        nn.ReLU6: _map_simple("relu6"),
        nn.Hardtanh: _map_simple("hardtanh", ["min_val", "max_val"]),
        nn.Softmax: _map_softmax("softmax"),
        nn.LogSoftmax: _map_softmax("log_softmax"),
    }
    # Present only in some versions: RMSNorm from torch 2.4; MultiheadAttention's out_proj class.
    if hasattr(nn, "RMSNorm"):
        table[nn.RMSNorm] = _map_rms_norm
    ndq = getattr(nn.modules.linear, "NonDynamicallyQuantizableLinear", None)
    if ndq is not None:
        table[ndq] = _map_linear
    return table


MODULE_MAPPERS = _module_mappers()
COMPOSITE_MAPPERS = {}  # filled below: modules exported as several widejit nodes

# Where the PyTorch result of a tuple-valued module sits in the graph's flat tuple: LSTM returns
# (output, (h_n, c_n)) but the graph's lstm node is the flat tuple (output, h_n, c_n).
_TUPLE_LAYOUTS = {
    "lstm": {(0,): 0, (1, 0): 1, (1, 1): 2},
    "rnn": {(0,): 0, (1,): 1},
    "gru": {(0,): 0, (1,): 1},
    "multihead_attention": {(0,): 0, (1,): 1},
}


# ----------------------------------------------------------------------------------------------
# Modules exported as several nodes (their forward has control flow fx cannot trace)


_ACTIVATION_FUNCTIONS = {F.relu: ("relu", {}), F.gelu: ("gelu", {"approximate": "none"})}


class _TransformerLayers:
    """nn.TransformerEncoderLayer, nn.TransformerDecoderLayer and nn.TransformerEncoder as
    multihead_attention, layer_norm, linear, activation, dropout and add nodes (eval mode:
    dropout is the identity, but Monte Carlo runs keep the nodes)."""

    describe = "self-attention, cross-attention and feed-forward blocks with their norms"

    def variants(self, module, args):
        # A TransformerEncoder given a key padding mask may run its layers on nested tensors
        # (PyTorch's fast path), which returns zeros at the padded positions: try both.
        if isinstance(module, nn.TransformerEncoder) and args.get("src_key_padding_mask") is not None:
            return [False, True]
        return [False]

    def emit(self, b, node, module, args, zero_padded):
        path = node.target
        if isinstance(module, nn.TransformerEncoderLayer):
            self.encoder_layer(b, node, module, path, "", args["src"], args.get("src_mask"),
                               args.get("src_key_padding_mask"), args.get("is_causal", False))
        elif isinstance(module, nn.TransformerDecoderLayer):
            self.decoder_layer(b, node, module, path, "", args)
        else:
            x = args["src"]
            for i, layer in enumerate(module.layers):
                if not isinstance(layer, nn.TransformerEncoderLayer):
                    b.fail(node, "TransformerEncoder layer %d is a %s, not a TransformerEncoderLayer" % (i, type(layer).__name__))
                x = self.encoder_layer(b, node, layer, "%s.layers.%d" % (path, i), "l%d." % i, x, args.get("mask"),
                                       args.get("src_key_padding_mask"), args.get("is_causal", False))
            if module.norm is not None:
                x = b.sub_module(node, "norm", path + ".norm", module.norm, {"input": x})
            if zero_padded:
                pad = b.append("%s.pad" % node.name, "unsqueeze", [args["src_key_padding_mask"]], None, {"dim": -1})
                b.append("%s.zero" % node.name, "masked_fill", [x, pad], None, {"value": 0.0})

    @staticmethod
    def _bool(b, node, v, what):
        if not isinstance(v, bool):
            b.fail(node, "%s must be a Python bool, got %r" % (what, v))
        return v

    def attention(self, b, node, m, path, tag, q, kv, mask, kpm, causal):
        mha = b.sub_module(node, tag, path, m, {"query": q, "key": kv, "value": kv, "key_padding_mask": kpm,
                                               "attn_mask": mask, "need_weights": False,
                                               "average_attn_weights": True, "is_causal": causal})
        return b.append("%s_out" % mha, "getitem", [mha], None, {"index": 0})

    def dropout(self, b, node, drop, path, tag, x):
        return b.sub_module(node, tag, path, drop, {"input": x})

    def feed_forward(self, b, node, m, path, tag, x):
        h = b.sub_module(node, tag + "linear1", path + ".linear1", m.linear1, {"input": x})
        act = m.activation
        if isinstance(act, nn.Module) and type(act) in MODULE_MAPPERS:
            h = b.sub_module(node, tag + "act", path + ".activation", act, {"input": h})
        elif act in _ACTIVATION_FUNCTIONS:
            op, attrs = _ACTIVATION_FUNCTIONS[act]
            h = b.append("%s.%sact" % (node.name, tag), op, [h], None, attrs)
        else:
            b.fail(node, "%s activation %r is not in the widejit vocabulary (relu, gelu or an activation module)"
                   % (type(m).__name__, act))
        h = self.dropout(b, node, m.dropout, path + ".dropout", tag + "drop", h)
        return b.sub_module(node, tag + "linear2", path + ".linear2", m.linear2, {"input": h})

    def add(self, b, node, tag, x, y):
        return b.append("%s.%s" % (node.name, tag), "add", [x, y])

    def norm(self, b, node, m, path, tag, which, x):
        return b.sub_module(node, tag + which, "%s.%s" % (path, which), getattr(m, which), {"input": x})

    def attention_block(self, b, node, m, path, tag, which, drop, kv, mask, kpm, causal):
        """The attention sub-block `which` (self_attn or multihead_attn) and its dropout `drop`."""
        def block(h):
            a = self.attention(b, node, getattr(m, which), "%s.%s" % (path, which), tag + which, h,
                               h if kv is None else kv, mask, kpm, causal)
            return self.dropout(b, node, getattr(m, drop), "%s.%s" % (path, drop), tag + drop, a)
        return block

    def ff_block(self, b, node, m, path, tag, drop):
        def block(h):
            f = self.feed_forward(b, node, m, path, tag, h)
            return self.dropout(b, node, getattr(m, drop), "%s.%s" % (path, drop), tag + drop, f)
        return block

    def residual(self, b, node, m, path, tag, x, blocks):
        """x through (norm, block) pairs with residual adds: pre-norm when norm_first, else post-norm."""
        for i, (which, block) in enumerate(blocks, 1):
            res = "%sres%d" % (tag, i)
            if m.norm_first:
                x = self.add(b, node, res, x, block(self.norm(b, node, m, path, tag, which, x)))
            else:
                x = self.norm(b, node, m, path, tag, which, self.add(b, node, res, x, block(x)))
        return x

    def encoder_layer(self, b, node, m, path, tag, x, mask, kpm, causal):
        causal = self._bool(b, node, causal, "is_causal")
        return self.residual(b, node, m, path, tag, x, [
            ("norm1", self.attention_block(b, node, m, path, tag, "self_attn", "dropout1", None, mask, kpm, causal)),
            ("norm2", self.ff_block(b, node, m, path, tag, "dropout2"))])

    def decoder_layer(self, b, node, m, path, tag, args):
        tc = self._bool(b, node, args.get("tgt_is_causal", False), "tgt_is_causal")
        mc = self._bool(b, node, args.get("memory_is_causal", False), "memory_is_causal")
        return self.residual(b, node, m, path, tag, args["tgt"], [
            ("norm1", self.attention_block(b, node, m, path, tag, "self_attn", "dropout1", None, args.get("tgt_mask"),
                                           args.get("tgt_key_padding_mask"), tc)),
            ("norm2", self.attention_block(b, node, m, path, tag, "multihead_attn", "dropout2", args["memory"],
                                           args.get("memory_mask"), args.get("memory_key_padding_mask"), mc)),
            ("norm3", self.ff_block(b, node, m, path, tag, "dropout3"))])


for _cls in (nn.TransformerEncoderLayer, nn.TransformerDecoderLayer, nn.TransformerEncoder):
    COMPOSITE_MAPPERS[_cls] = _TransformerLayers()


# Modules outside torch.nn that widejit has ops for, recognised by class name and structure
# (Flux's MLPEmbedder, diffusers' AdaLayerNormZero). A candidate becomes an op only when the op
# reproduces the instance's recorded call (reference.py's interpreter), so a look-alike with
# other semantics is traced through instead.

def _is_linear(m, bias=True):
    return type(m) is nn.Linear and (m.bias is not None) == bias


def _mlp_embedder_candidate(m):
    return _is_linear(getattr(m, "in_layer", None)) and _is_linear(getattr(m, "out_layer", None)) and \
        m.out_layer.in_features == m.in_layer.out_features


def _map_mlp_embedder(m, a):
    return "mlp_embedder", [a["x"] if "x" in a else a["input"]], [
        "in_layer.weight", "in_layer.bias", "out_layer.weight", "out_layer.bias"], {
        "in_dim": m.in_layer.in_features, "hidden_dim": m.in_layer.out_features}


def _ada_candidate(m):
    lin, norm = getattr(m, "linear", None), getattr(m, "norm", None)
    return getattr(m, "emb", None) is None and _is_linear(lin) and type(norm) is nn.LayerNorm and \
        not norm.elementwise_affine and lin.out_features == 6 * lin.in_features and \
        tuple(norm.normalized_shape) == (lin.in_features,)


def _map_ada(m, a):
    for k in ("timestep", "class_labels"):
        if a.get(k) is not None:
            raise ExportError("AdaLayerNormZero called with %s: only the emb= form (no embedding module) is supported" % k)
    return "ada_layer_norm_zero", [a["x"], a["emb"]], ["linear.weight", "linear.bias"], {
        "embedding_dim": m.linear.in_features, "eps": m.norm.eps}


RECOGNIZED = {"MLPEmbedder": (_mlp_embedder_candidate, _map_mlp_embedder),
              "AdaLayerNormZero": (_ada_candidate, _map_ada)}


def _recognize(model, call):
    """Calls model (call(model)) recording every recognised candidate's calls, and returns the
    candidates whose widejit op reproduced all of them: {id(module): mapper}."""
    import reference  # noqa: E402
    found = {}
    for m in model.modules():
        rec = RECOGNIZED.get(type(m).__name__)
        if rec is not None and rec[0](m):
            found[id(m)] = (m, rec[1], [])
    saved = {}
    for key, (m, _, calls) in found.items():
        def recording(*args, _m=m, _calls=calls, **kwargs):
            out = type(_m).forward(_m, *args, **kwargs)
            _calls.append((args, kwargs, out))
            return out
        saved[key] = m.__dict__.get("forward")
        m.forward = recording
    try:
        result = call(model)
    finally:
        for key, (m, _, _) in found.items():
            if saved[key] is None:
                del m.forward
            else:
                m.forward = saved[key]
    ok = {}
    for key, (m, mapper, calls) in found.items():
        good = bool(calls)
        for args, kwargs, out in calls:
            try:
                bound = inspect.signature(type(m).forward).bind(m, *args, **kwargs)
                bound.apply_defaults()
                named = dict(bound.arguments)
                named.pop(next(iter(named)))
                op, inputs, roles, attrs = mapper(m, named)
                spec = {"name": "check", "op": op, "attrs": attrs}
                params = {r: _getattr_path(m, r) for r in roles}
                with torch.no_grad():
                    got = _flatten_values(reference.run_node(spec, inputs, params), keep_none=False)
                want = _flatten_values(out, keep_none=False)
                good = good and len(got) == len(want) and all(
                    g.shape == w.shape and torch.allclose(g, w, rtol=1e-4, atol=1e-5) for g, w in zip(got, want))
            except (ExportError, TypeError, KeyError, RuntimeError, AttributeError):
                good = False
        if good:
            ok[key] = mapper
    return ok, result


# ----------------------------------------------------------------------------------------------
# Op vocabulary: functions and methods

_REQUIRED = object()


class FnSpec:
    """How one PyTorch function or method maps to a widejit op.

    args: the PyTorch signature as (name, default) pairs (_REQUIRED: no default); inputs: the
    names that become node inputs, in order; attrs: the names that become attrs; fixed: names
    whose value must be the given one (e.g. dtype=None), anything else is refused; the remaining
    names (inplace, _stacklevel) do not change the result and are dropped. variadic: the name
    collecting *args (view(*shape), permute(*dims)).
    """

    def __init__(self, op, args, inputs, attrs=(), fixed=None, variadic=None, list_input=False):
        self.op, self.args, self.inputs, self.attrs = op, args, list(inputs), list(attrs)
        self.fixed = fixed or {}
        self.variadic = variadic
        self.list_input = list_input

    def bind(self, args, kwargs):
        names = [n for n, _ in self.args]
        bound = {}
        args = list(args)
        if self.variadic is not None:
            head = names.index(self.variadic)
            rest = args[head:]
            args = args[:head]
            if self.variadic in kwargs:
                bound[self.variadic] = kwargs.pop(self.variadic)
            elif len(rest) == 1 and isinstance(rest[0], (list, tuple, torch.Size)):
                bound[self.variadic] = list(rest[0])
            elif len(rest) == 1 and isinstance(rest[0], torch.fx.Node):
                bound[self.variadic] = rest[0]  # a folded torch.Size, resolved later
            else:
                bound[self.variadic] = list(rest)
        if len(args) > len(names):
            raise ExportError("takes at most %d positional arguments, got %d" % (len(names), len(args)))
        for name, value in zip(names, args):
            bound[name] = value
        for name, value in kwargs.items():
            if name not in names:
                raise ExportError("unexpected argument %r" % name)
            if name in bound:
                raise ExportError("argument %r given twice" % name)
            bound[name] = value
        for name, default in self.args:
            if name not in bound:
                if default is _REQUIRED:
                    raise ExportError("missing argument %r" % name)
                bound[name] = default
        return bound


def _a(*names, **defaults):
    """Signature helper: positional names are required, keywords have defaults (in order given)."""
    return [(n, _REQUIRED) for n in names] + list(defaults.items())


_X = ["input"]
_ACTIVATIONS = {
    "relu": FnSpec("relu", _a("input", inplace=False), _X),
    "sigmoid": FnSpec("sigmoid", _a("input"), _X),
    "tanh": FnSpec("tanh", _a("input"), _X),
    "silu": FnSpec("silu", _a("input", inplace=False), _X),
    "hardswish": FnSpec("hardswish", _a("input", inplace=False), _X),
    "gelu": FnSpec("gelu", _a("input", approximate="none"), _X, ["approximate"]),
    "leaky_relu": FnSpec("leaky_relu", _a("input", negative_slope=0.01, inplace=False), _X, ["negative_slope"]),
    "elu": FnSpec("elu", _a("input", alpha=1.0, inplace=False), _X, ["alpha"]),
    "softplus": FnSpec("softplus", _a("input", beta=1.0, threshold=20.0), _X, ["beta", "threshold"]),
    "hardsigmoid": FnSpec("hardsigmoid", _a("input", inplace=False), _X),
    "relu6": FnSpec("relu6", _a("input", inplace=False), _X),
    "hardtanh": FnSpec("hardtanh", _a("input", min_val=-1.0, max_val=1.0, inplace=False), _X, ["min_val", "max_val"]),
    "clamp": FnSpec("clamp", _a("input", min=None, max=None), _X, ["min", "max"]),
    "clip": FnSpec("clamp", _a("input", min=None, max=None), _X, ["min", "max"]),
}


def _softmax_spec(op, functional):
    if functional:  # F.softmax(input, dim=None, _stacklevel=3, dtype=None)
        return FnSpec(op, _a("input", dim=None, _stacklevel=3, dtype=None), _X, ["dim"], {"dtype": None})
    return FnSpec(op, _a("input", "dim", dtype=None), _X, ["dim"], {"dtype": None})


def _binary(op, extra=None, extra_attrs=()):
    args = _a("input", "other")
    if extra:
        args += list(extra.items())
    return FnSpec(op, args, ["input", "other"], extra_attrs)


_CONTIG = torch.contiguous_format
_SHARED = {
    "add": _binary("add", {"alpha": 1}, ["alpha"]),
    "sub": _binary("sub", {"alpha": 1}, ["alpha"]),
    "mul": _binary("mul"),
    "div": _binary("div", {"rounding_mode": None}, ["rounding_mode"]),
    "pow": FnSpec("pow", _a("input", "exponent"), ["input", "exponent"]),
    "neg": FnSpec("neg", _a("input"), _X),
    "matmul": _binary("matmul"),
    "flatten": FnSpec("flatten", _a("input", start_dim=0, end_dim=-1), _X, ["start_dim", "end_dim"]),
    "transpose": FnSpec("transpose", _a("input", "dim0", "dim1"), _X, ["dim0", "dim1"]),
    "chunk": FnSpec("chunk", _a("input", "chunks", dim=0), _X, ["chunks", "dim"]),
    "split": FnSpec("split", _a("input", "split_size_or_sections", dim=0), _X, ["split_size_or_sections", "dim"]),
    "unsqueeze": FnSpec("unsqueeze", _a("input", "dim"), _X, ["dim"]),
    "squeeze": FnSpec("squeeze", _a("input", dim=None), _X, ["dim"]),
    "mean": FnSpec("mean", _a("input", dim=None, keepdim=False, dtype=None), _X, ["dim", "keepdim"], {"dtype": None}),
    "sum": FnSpec("sum", _a("input", dim=None, keepdim=False, dtype=None), _X, ["dim", "keepdim"], {"dtype": None}),
    "amax": FnSpec("amax", _a("input", dim=None, keepdim=False), _X, ["dim", "keepdim"]),
}
_SHARED.update(_ACTIVATIONS)
for _name in ("rsqrt", "sqrt", "exp", "log", "sin", "cos", "logical_not"):
    _SHARED[_name] = FnSpec(_name, _a("input"), _X)
for _name in ("eq", "ne", "lt", "le", "gt", "ge", "logical_and", "logical_or"):
    _SHARED[_name] = _binary(_name)
for _name in ("tril", "triu"):
    _SHARED[_name] = FnSpec(_name, _a("input", diagonal=0), _X, ["diagonal"])
_SHARED["masked_fill"] = FnSpec("masked_fill", _a("input", "mask", "value"), ["input", "mask"], ["value"])
_SHARED["where"] = FnSpec("where", _a("condition", "input", "other"), ["condition", "input", "other"])

FUNCTION_SPECS = {
    operator.add: FnSpec("add", _a("input", "other"), ["input", "other"]),
    operator.sub: FnSpec("sub", _a("input", "other"), ["input", "other"]),
    operator.mul: FnSpec("mul", _a("input", "other"), ["input", "other"]),
    operator.truediv: FnSpec("div", _a("input", "other"), ["input", "other"]),
    operator.pow: FnSpec("pow", _a("input", "exponent"), ["input", "exponent"]),
    operator.neg: FnSpec("neg", _a("input"), _X),
    operator.matmul: FnSpec("matmul", _a("input", "other"), ["input", "other"]),
    operator.eq: _binary("eq"),
    operator.ne: _binary("ne"),
    operator.lt: _binary("lt"),
    operator.le: _binary("le"),
    operator.gt: _binary("gt"),
    operator.ge: _binary("ge"),
    operator.invert: FnSpec("logical_not", _a("input"), _X),  # ~mask; refused for non-bool tensors
    operator.and_: _binary("logical_and"),  # mask & mask; refused for non-bool tensors
    operator.or_: _binary("logical_or"),
    torch.reshape: FnSpec("reshape", _a("input", "shape"), _X, ["shape"]),
    torch.permute: FnSpec("permute", _a("input", "dims"), _X, ["dims"]),
    torch.cat: FnSpec("cat", _a("tensors", dim=0), ["tensors"], ["dim"], list_input=True),
    torch.stack: FnSpec("stack", _a("tensors", dim=0), ["tensors"], ["dim"], list_input=True),
    torch.softmax: _softmax_spec("softmax", False),
    torch.log_softmax: _softmax_spec("log_softmax", False),
    F.softmax: _softmax_spec("softmax", True),
    F.log_softmax: _softmax_spec("log_softmax", True),
    F.dropout: FnSpec("dropout", _a("input", p=0.5, training=True, inplace=False), _X, ["p", "training"]),
}
FUNCTION_SPECS[F.pad] = FnSpec("pad", _a("input", "pad", mode="constant", value=None), _X, ["pad", "mode", "value"])

# Pools called as functions (F.max_pool2d, F.avg_pool2d, F.adaptive_avg_pool2d, and torch's own
# builtins, which fx records when F's wrapper dispatches to them).
for _d in (1, 2, 3):
    _max = FnSpec("max_pool%dd" % _d, _a("input", "kernel_size", stride=None, padding=0, dilation=1, ceil_mode=False,
                                        return_indices=False), _X, ["kernel_size", "stride", "padding", "dilation",
                                                                    "ceil_mode"], {"return_indices": False})
    _avg_args = _a("input", "kernel_size", stride=None, padding=0, ceil_mode=False, count_include_pad=True)
    _avg_attrs = ["kernel_size", "stride", "padding", "ceil_mode", "count_include_pad"]
    if _d > 1:
        _avg_args += [("divisor_override", None)]
        _avg_attrs += ["divisor_override"]
    _avg = FnSpec("avg_pool%dd" % _d, _avg_args, _X, _avg_attrs)
    _adaptive = FnSpec("adaptive_avg_pool%dd" % _d, _a("input", "output_size"), _X, ["output_size"])
    for _home in (F, torch):
        for _fn, _spec in (("max_pool%dd" % _d, _max), ("avg_pool%dd" % _d, _avg),
                           ("adaptive_avg_pool%dd" % _d, _adaptive)):
            if getattr(_home, _fn, None) is not None:
                FUNCTION_SPECS.setdefault(getattr(_home, _fn), _spec)
for _alias in ("concat", "concatenate"):  # torch.concat from 1.10, torch.concatenate from 2.1
    if hasattr(torch, _alias):
        FUNCTION_SPECS[getattr(torch, _alias)] = FUNCTION_SPECS[torch.cat]
for _name, _spec in _SHARED.items():
    for _home in (torch, F):
        _fn = getattr(_home, _name, None)
        if _fn is not None and _fn not in FUNCTION_SPECS:
            FUNCTION_SPECS[_fn] = _spec
# In-place variants (F.relu_, torch.relu_) compute the same values.
for _name in ("relu_", "sigmoid_", "tanh_", "elu_", "leaky_relu_"):
    for _home in (torch, F):
        _fn = getattr(_home, _name, None)
        if _fn is not None and _name[:-1] in _SHARED:
            FUNCTION_SPECS[_fn] = _SHARED[_name[:-1]]

METHOD_SPECS = dict(_SHARED)
METHOD_SPECS.update({
    "view": FnSpec("view", _a("input", "shape"), _X, ["shape"], variadic="shape"),
    "reshape": FnSpec("reshape", _a("input", "shape"), _X, ["shape"], variadic="shape"),
    "permute": FnSpec("permute", _a("input", "dims"), _X, ["dims"], variadic="dims"),
    "contiguous": FnSpec("contiguous", _a("input", memory_format=_CONTIG), _X, [], {"memory_format": _CONTIG}),
    "softmax": _softmax_spec("softmax", False),
    "log_softmax": _softmax_spec("log_softmax", False),
    "split": FnSpec("split", _a("input", "split_size", dim=0), _X, ["split_size", "dim"]),
    "t": FnSpec("transpose", _a("input", dim0=0, dim1=1), _X, ["dim0", "dim1"]),
    # x.where(condition, y) is torch.where(condition, x, y)
    "where": FnSpec("where", _a("input", "condition", "other"), ["condition", "input", "other"]),
})
for _name in ("add_", "sub_", "mul_", "div_", "relu_", "sigmoid_", "tanh_", "masked_fill_", "tril_", "triu_"):
    METHOD_SPECS[_name] = METHOD_SPECS[_name[:-1]]

# Functional forms of modules (as custom modules and nn.Linear subclasses call them): the weight
# operands must be parameters, which become the node's params; attrs come from their shapes.
def _fn_linear(b, w, bias):
    return "linear", ["weight", "bias"], {"in_features": w.shape[1], "out_features": w.shape[0], "bias": bias is not None}


def _fn_layer_norm(b, w, bias):
    return "layer_norm", ["weight", "bias"], {"normalized_shape": b["normalized_shape"], "eps": b["eps"],
                                               "elementwise_affine": w is not None, "bias": bias is not None}


def _fn_embedding(b, w, bias):
    if b["max_norm"] is not None:
        raise ExportError("F.embedding with max_norm renormalises its weight in place; not supported")
    return "embedding", ["weight"], {"num_embeddings": w.shape[0], "embedding_dim": w.shape[1],
                                     "padding_idx": b["padding_idx"]}


def _fn_conv(op):
    def mapper(b, w, bias):
        if isinstance(b["padding"], str) and b["padding"] not in ("same", "valid"):
            raise ExportError("padding=%r is not supported" % b["padding"])
        return op, ["weight", "bias"], {
            "in_channels": w.shape[1] * b["groups"], "out_channels": w.shape[0], "kernel_size": list(w.shape[2:]),
            "stride": b["stride"], "padding": b["padding"], "dilation": b["dilation"], "groups": b["groups"],
            "bias": bias is not None, "padding_mode": "zeros"}
    return mapper


def _fn_conv_transpose(op):
    def mapper(b, w, bias):
        return op, ["weight", "bias"], {
            "in_channels": w.shape[0], "out_channels": w.shape[1] * b["groups"], "kernel_size": list(w.shape[2:]),
            "stride": b["stride"], "padding": b["padding"], "output_padding": b["output_padding"],
            "groups": b["groups"], "bias": bias is not None, "dilation": b["dilation"]}
    return mapper


_CONV_ARGS = _a("input", "weight", bias=None, stride=1, padding=0, dilation=1, groups=1)
_CONV_T_ARGS = _a("input", "weight", bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1)
PARAM_FUNCTIONS = {
    F.linear: (_a("input", "weight", bias=None), _fn_linear),
    F.layer_norm: (_a("input", "normalized_shape", weight=None, bias=None, eps=1e-5), _fn_layer_norm),
    F.embedding: (_a("input", "weight", padding_idx=None, max_norm=None, norm_type=2.0, scale_grad_by_freq=False,
                     sparse=False), _fn_embedding),
    F.conv1d: (_CONV_ARGS, _fn_conv("conv1d")),
    F.conv2d: (_CONV_ARGS, _fn_conv("conv2d")),
    F.conv3d: (_CONV_ARGS, _fn_conv("conv3d")),
    F.conv_transpose1d: (_CONV_T_ARGS, _fn_conv_transpose("conv_transpose1d")),
    F.conv_transpose2d: (_CONV_T_ARGS, _fn_conv_transpose("conv_transpose2d")),
    F.conv_transpose3d: (_CONV_T_ARGS, _fn_conv_transpose("conv_transpose3d")),
}

# Results of these are folded to constants: the graph's shapes are static, per model.
_SHAPE_METHODS = {"size", "dim", "numel", "ndimension", "nelement"}
# device and dtype fold too: torch.ones(T, T, device=x.device) is a constant of static shape.
_SHAPE_ATTRS = {"shape", "ndim", "device", "dtype", "is_cuda"}
# Python arithmetic on folded sizes (k.size(-1) ** -0.5, 1 / math.sqrt(q.size(-1))); math
# functions reach the graph as call_function nodes because torch.fx autowraps the math module.
_INT_FUNCTIONS = {operator.getitem, operator.add, operator.sub, operator.mul, operator.floordiv,
                  operator.truediv, operator.mod, operator.neg, operator.pow, builtins.len, builtins.int,
                  builtins.float, builtins.round, builtins.abs, builtins.min, builtins.max}
_INT_FUNCTIONS.update(getattr(math, _n) for _n in ("sqrt", "pow", "exp", "log", "log2", "floor", "ceil"))

# Names of functions that torch.fx inserts and that carry no computation.
_IGNORED_FUNCTIONS = {"_assert_is_none"}


def _describe_target(node):
    t = node.target
    if node.op == "call_function":
        mod = getattr(t, "__module__", None) or ""
        name = getattr(t, "__name__", repr(t))
        if mod in ("_operator", "operator"):
            mod = "operator"
        elif mod.startswith("torch.nn.functional"):
            mod = "torch.nn.functional"
        elif mod.startswith("torch") or mod == "":
            mod = "torch"
        return "%s.%s" % (mod, name)
    if node.op == "call_method":
        return "Tensor.%s" % t
    return str(t)


# ----------------------------------------------------------------------------------------------
# Tracing


def _proxy_iter(self):
    """torch.fx.Proxy.__iter__ that finds the calling instruction by byte offset. torch 1.13
    indexes dis.get_instructions by f_lasti // 2, which Python 3.11's inline caches break, so
    `a, b = x.chunk(2)` fails to trace with Debian's torch 1.13 on Python 3.11."""
    frame = inspect.currentframe().f_back
    for inst in dis.get_instructions(frame.f_code):
        if inst.offset == frame.f_lasti:
            if inst.opname == "UNPACK_SEQUENCE":
                return (self[i] for i in range(inst.argval))
            break
    return self.tracer.iter(self)


def _proxy_len(self):
    """len() of a Proxy (Python asks it when a *x.shape[:-1] argument is unpacked): the length
    of the value it stands for on the sample inputs, when the tracer can compute it."""
    tracer = self.tracer
    if getattr(tracer, "sample", None) is not None:
        try:
            value = tracer._concrete(self.node)
        except Exception:
            value = None
        if isinstance(value, (tuple, list, torch.Size)):
            return len(value)
    raise RuntimeError("'len' is not supported in symbolic tracing by default")


def _needs_proxy_iter_fix():
    major = int(torch.__version__.split(".")[0])
    return major < 2 and sys.version_info >= (3, 11)


# Tensor factories whose size arguments are often traced sizes (torch.ones(T, T)): torch.fx
# cannot see a Proxy inside a size list, so the tracer records these calls itself.
_FACTORIES = ("ones", "zeros", "full", "empty", "arange", "eye")


class _Tracer(torch.fx.Tracer):
    """Keeps the modules widejit knows as leaves and traces through everything else, so that an
    unknown module is judged by the functions it calls."""

    def __init__(self, leaves=()):
        super().__init__()
        # Buffers read in forward become get_attr nodes like parameters, so that
        # self.bias[:, :, :T, :T] with a traced T is an indexing node, not a TypeError.
        self.proxy_buffer_attributes = True
        self.record_stack_traces = True  # refusals name the model's source line
        self.extra_leaves = set(id(m) for m in leaves)
        self.sample = None
        self.computing = False

    def iter(self, obj):
        """Iterating a Proxy outside tuple unpacking (`x.view(*x.shape[:-1], 2, 2)`, `for d in
        x.shape`): the value it stands for is computed on the sample inputs (sample: forward
        argument name -> value) by the graph traced so far, and a sequence of it iterates as
        its elements, each traced (shapes fold to constants anyway)."""
        if self.sample is None:
            return super().iter(obj)
        try:
            value = self._concrete(obj.node)
        except Exception:
            return super().iter(obj)
        if not isinstance(value, (tuple, list, torch.Size)):
            return super().iter(obj)
        return iter([obj[i] for i in range(len(value))])

    def _concrete(self, target):
        g = torch.fx.Graph()
        env = {}
        for n in self.graph.nodes:
            env[n] = g.node_copy(n, lambda a: env[a])
            if n is target:
                break
        g.output(env[target])
        gm = torch.fx.GraphModule(self.root, g)
        args = [self.sample[n.target.lstrip("*")] for n in g.nodes if n.op == "placeholder"]
        self.computing = True  # module calls run their forward, not the tracer's
        try:
            with torch.no_grad():
                return torch.fx.Interpreter(gm).run(*args)
        finally:
            self.computing = False

    def call_module(self, m, forward, args, kwargs):
        if self.computing:
            return forward(*args, **kwargs)
        return super().call_module(m, forward, args, kwargs)

    def getattr(self, attr, attr_val, parameter_proxy_cache):
        if self.computing:  # a module's own parameters, not get_attr proxies
            return attr_val
        return super().getattr(attr, attr_val, parameter_proxy_cache)

    def is_leaf_module(self, m, module_qualified_name):
        return type(m) in MODULE_MAPPERS or type(m) in COMPOSITE_MAPPERS or id(m) in self.extra_leaves

    def _factory(self, fn):
        def wrapper(*args, **kwargs):
            if any(isinstance(a, torch.fx.Proxy) for a in _flatten_values(list(args) + list(kwargs.values()), True)):
                return self.create_proxy("call_function", fn, args, kwargs)
            return fn(*args, **kwargs)
        return wrapper

    def trace(self, root, concrete_args=None):
        saved = {name: getattr(torch, name) for name in _FACTORIES}
        sdpa = getattr(F, "scaled_dot_product_attention", None)
        proxy_cls = torch.fx.proxy.Proxy
        original = proxy_cls.__iter__
        original_len = proxy_cls.__len__
        try:
            proxy_cls.__len__ = _proxy_len
            for name, fn in saved.items():
                setattr(torch, name, self._factory(fn))
            if sdpa is not None:  # a call of its own even where it is a Python function
                F.scaled_dot_product_attention = self._factory(sdpa)
            if _needs_proxy_iter_fix():
                proxy_cls.__iter__ = _proxy_iter
            return super().trace(root, concrete_args)
        finally:
            proxy_cls.__iter__ = original
            proxy_cls.__len__ = original_len
            for name, fn in saved.items():
                setattr(torch, name, fn)
            if sdpa is not None:
                F.scaled_dot_product_attention = sdpa


class _Recorder(torch.fx.Interpreter):
    """Runs the traced graph on real inputs and keeps every node's value (shapes, folded sizes)."""

    def __init__(self, gm):
        super().__init__(gm)
        self.values = {}

    def run_node(self, n):
        v = super().run_node(n)
        self.values[n] = v
        return v


_FRAME = re.compile(r'File "([^"]+)", line (\d+), in [^\n]*\n\s*([^\n]*)')
_TORCH_DIR = os.path.dirname(torch.__file__)
_HERE = os.path.dirname(os.path.abspath(__file__))
_OWN_FILES = {os.path.join(_HERE, f) for f in ("export.py", "reference.py")}


def _is_internal(path):
    path = os.path.abspath(path)
    return path.startswith(_TORCH_DIR + os.sep) or path in _OWN_FILES or path.startswith(os.path.dirname(os.__file__) + os.sep)


def _user_line(stack):
    """'file.py:LINE `code`' of the innermost frame of the model's own code in a recorded
    stack (fx's node.stack_trace, innermost first), None when there is none."""
    for path, line, code in _FRAME.findall(stack or ""):
        if not _is_internal(path):
            return "%s:%s `%s`" % (os.path.basename(path), line, code.strip())
    return None


def _exception_line(e):
    """The model's own source line an exception was raised from (innermost first), or None."""
    for frame in reversed(traceback.extract_tb(e.__traceback__)):
        if not _is_internal(frame.filename):
            return "%s:%d `%s`" % (os.path.basename(frame.filename), frame.lineno, (frame.line or "").strip())
    return None


def _getattr_path(root, path):
    obj = root
    for part in path.split("."):
        obj = getattr(obj, part)
    return obj


# ----------------------------------------------------------------------------------------------
# Graph building


class _Builder:
    """Walks the fx graph once and produces the widejit graph."""

    def __init__(self, gm, values, models, root_name):
        self.gm = gm
        self.values = values
        self.models = models
        self.root_name = root_name
        self.nodes = []  # widejit nodes, in fx order
        self.params = {}  # name -> tensor of model 0 (insertion order kept)
        self.kind = {}  # fx node -> ("tensor", name) | ("param", name) | ("const", value)
        #                 | ("tuple", name, op) | ("alias", base_name, op, path)
        self.synth = set()
        self.constants = set()  # params computed from constants in forward, not model attributes
        self.recognized = {}  # id(module) -> mapper, for modules outside torch.nn known by their structure
        self.train_batchnorm = False  # BatchNorm in training mode: batch statistics, not a refusal
        self.values_b1 = None  # every node's value with the batch one larger, when the graph runs so
        # (input, dim) of each dynamic dim -> every node's value with that dim one larger
        self.values_dyn = {}
        self.dyn_sizes = {}  # (input, dim) -> its size as exported
        self.dyn_arange = {}  # fx node of torch.arange(T), T a dynamic dim -> (input, dim)

    # ---- errors
    def fail(self, node, msg):
        where = "node %r (%s %s)" % (node.name, node.op, _describe_target(node))
        line = _user_line(getattr(node, "stack_trace", None))
        if line:
            where += " at " + line
        raise ExportError("%s: %s: %s" % (self.root_name, where, msg))

    def refuse(self, node, what):
        self.fail(node, "%s is not in the widejit vocabulary; %s" % (what, HINT))

    # ---- params
    def use_param(self, name, tensor, node, constant=False):
        """Declares a parameter or buffer (stacked from every model); constant: a tensor that no
        model holds, computed from constants in forward, the same for every model."""
        if not isinstance(tensor, torch.Tensor):
            self.fail(node, "attribute %r is not a tensor" % name)
        if name in self.params:
            return name
        if constant:
            self.constants.add(name)
        for i, m in enumerate([] if constant else self.models):
            try:
                other = _getattr_path(m, name)
            except AttributeError:
                other = None
            if other is None and i > 0:
                # fx registers tensor constants created in forward on the traced instance only;
                # they are the same constant for every instance.
                continue
            if not isinstance(other, torch.Tensor) or other.shape != tensor.shape or other.dtype != tensor.dtype:
                self.fail(node, "parameter %r differs in shape or dtype between model 0 and model %d" % (name, i))
        if tensor.dtype not in _DTYPE_NAMES:
            self.fail(node, "parameter %r has dtype %s, which widejit does not store" % (name, tensor.dtype))
        self.params[name] = tensor
        return name

    def stacked_params(self):
        out = {}
        for name, t0 in self.params.items():
            per_model = []
            for m in self.models:
                try:
                    t = t0 if name in self.constants else _getattr_path(m, name)
                except AttributeError:
                    t = t0
                per_model.append(t.detach().cpu())
            out[name] = torch.stack(per_model)
        return out

    # ---- argument resolution
    def ref(self, node, arg, what):
        """Resolves one node input: a tensor name, a param name, a number or None."""
        if isinstance(arg, torch.fx.Node):
            k = self.kind.get(arg)
            if k is None:
                self.fail(node, "%s uses %r, which was not exported" % (what, arg.name))
            if k[0] in ("tensor", "param"):
                return k[1]
            if k[0] == "const":
                return self.number(node, k[1], what)
            if k[0] == "ctensor" and arg in self.dyn_arange:
                name, d = self.dyn_arange[arg]
                self.fail(node, "%s is torch.arange over dim %d of input %r, which is dynamic; widejit follows "
                          "it only as an nn.Embedding's index (a learned positional table)" % (what, d, name))
            if k[0] == "ctensor":
                # a tensor computed from constants alone (torch.tril(torch.ones(T, T))): the same
                # for every model, stored like a buffer
                name = self.use_param(arg.name, k[1], arg, constant=True)
                self.kind[arg] = ("param", name)
                return name
            self.fail(node, "%s is the tuple %r; take an element with [i] first" % (what, arg.name))
        return self.number(node, arg, what)

    def number(self, node, v, what):
        if v is None:
            return None
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            self.fail(node, "%s is %r; widejit takes tensors and Python numbers here" % (what, v))
        if isinstance(v, float) and not math.isfinite(v):
            self.fail(node, "%s is %r, which JSON cannot carry" % (what, v))
        return v

    def ref_list(self, node, arg, what):
        if isinstance(arg, torch.fx.Node) and self.kind.get(arg, ("",))[0] in ("tuple", "alias"):
            return self.expand_tuple(node, arg)
        if not isinstance(arg, (list, tuple)):
            self.fail(node, "%s must be a list of tensors" % what)
        return [self.ref(node, a, "%s[%d]" % (what, i)) for i, a in enumerate(arg)]

    def fill_value(self, node, v):
        """masked_fill's value: a number, or "inf"/"-inf"/"nan", which JSON has no literal for."""
        if isinstance(v, torch.fx.Node):
            k = self.kind.get(v, ("",))
            if k[0] != "const":
                self.fail(node, "masked_fill value must be a Python number, not the tensor %r" % v.name)
            v = k[1]
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            self.fail(node, "masked_fill value must be a Python number, got %r" % (v,))
        if isinstance(v, float) and not math.isfinite(v):
            return "nan" if math.isnan(v) else ("inf" if v > 0 else "-inf")
        return v

    def visit_where(self, node, bound):
        """torch.where; a non-finite number operand (JSON has none) becomes masked_fill."""
        cond, a, b = bound["condition"], bound["input"], bound["other"]

        def nonfinite(v):
            return isinstance(v, float) and not math.isfinite(v)
        if nonfinite(a) or nonfinite(b):
            if nonfinite(a) and nonfinite(b):
                self.fail(node, "torch.where needs a tensor input or other, got two numbers")
            if nonfinite(b):  # where(c, x, -inf) = x.masked_fill(~c, -inf)
                mask = self.append("%s.not" % node.name, "logical_not", [self.ref(node, cond, "condition")])
                return self.emit(node, "masked_fill", [self.ref(node, a, "input"), mask], None,
                                 {"value": self.fill_value(node, b)})
            return self.emit(node, "masked_fill", [self.ref(node, b, "other"), self.ref(node, cond, "condition")],
                             None, {"value": self.fill_value(node, a)})
        self.emit(node, "where", [self.ref(node, cond, "condition"), self.ref(node, a, "input"),
                                  self.ref(node, b, "other")])

    def attr_value(self, node, v, what):
        """An attr value: constants folded, tuples as lists; tensors are refused."""
        if isinstance(v, torch.fx.Node):
            k = self.kind.get(v)
            if k is None or k[0] != "const":
                self.fail(node, "%s must be a constant, not the tensor %r" % (what, v.name))
            v = k[1]
        if isinstance(v, (list, tuple, torch.Size)):
            return [self.attr_value(node, x, what) for x in v]
        if v is None or isinstance(v, (bool, int, str)):
            return v
        if isinstance(v, float):
            return self.number(node, v, what)
        self.fail(node, "%s is %r; expected a number, string, bool or list" % (what, v))

    # ---- tuples
    def expand_tuple(self, node, arg):
        """Names of getitem nodes for every tensor element of a tuple-valued node (created once)."""
        value = self.values[arg]
        names = []
        for i, v in enumerate(value):
            if isinstance(v, torch.Tensor):
                names.append(self.tuple_item(node, arg, i))
            elif isinstance(v, (tuple, list)):
                self.fail(node, "nested tuples cannot be used as a list here")
        return names

    def tuple_item(self, node, arg, index):
        """The widejit name of element `index` of tuple-valued fx node `arg`."""
        k = self.kind[arg]
        if k[0] == "tuple":
            base, op, path = k[1], k[2], (index,)
        else:
            base, op, path = k[1], k[2], k[3] + (index,)
        layout = _TUPLE_LAYOUTS.get(op)
        flat = layout.get(path) if layout else (path[0] if len(path) == 1 else None)
        if flat is None:
            self.fail(node, "element %r of %r has no place in widejit's %s tuple" % (path, base, op))
        name = "%s_item%d" % (base, flat)
        if name not in self.synth:
            self.synth.add(name)
            self.nodes.append({"name": name, "op": "getitem", "inputs": [base], "attrs": {"index": flat}})
        return name

    # ---- node kinds
    def emit(self, node, op, inputs, params=None, attrs=None):
        out = {"name": node.name, "op": op, "inputs": inputs}
        if params:
            out["params"] = params
        if attrs:
            out["attrs"] = attrs
        self.nodes.append(out)
        value = self.values[node]
        if isinstance(value, torch.Tensor):
            self.kind[node] = ("tensor", node.name)
        elif isinstance(value, (tuple, list)):
            self.kind[node] = ("tuple", node.name, op)
        else:
            self.fail(node, "produced %r, expected a tensor or a tuple of tensors" % type(value).__name__)

    def append(self, name, op, inputs, params=None, attrs=None):
        """Adds one widejit node that no fx node stands for (a step of a decomposition)."""
        out = {"name": name, "op": op, "inputs": inputs}
        if params:
            out["params"] = params
        if attrs:
            out["attrs"] = attrs
        self.nodes.append(out)
        return name

    def emit_chain(self, node, src, steps):
        """Emits steps [(op, attrs)] applied one after the other to the tensor named src; the
        last is named after node, the others <node>.<k>. No steps: node is src itself."""
        if not steps:
            self.kind[node] = ("tensor", src)
            return
        for k, (op, attrs) in enumerate(steps[:-1]):
            src = self.append("%s.%d" % (node.name, k), op, [src], None, attrs)
        op, attrs = steps[-1]
        self.emit(node, op, [src], None, attrs)

    def constant_tensor(self, node):
        """A tensor computed from constants alone (no input, parameter or buffer) is folded, so
        torch.tril(torch.ones(T, T, device=x.device)) in forward needs no ops of its own."""
        if node.op not in ("call_function", "call_method") or not isinstance(self.values.get(node), torch.Tensor):
            return False
        for a in _nodes_in(list(node.args) + list(node.kwargs.values())):
            if self.kind.get(a, ("",))[0] not in ("const", "ctensor"):
                return False
        t = self.values[node].detach().clone()
        for key, values in self.values_dyn.items():
            grown = values.get(node)
            if not isinstance(grown, torch.Tensor) or grown.shape == t.shape:
                continue
            if t.dim() == 1 and torch.equal(t, torch.arange(len(t), dtype=t.dtype)) and \
                    torch.equal(grown, torch.arange(len(t) + 1, dtype=t.dtype)):
                self.dyn_arange[node] = key
                break
            self.fail(node, "builds a tensor whose size follows dim %d of input %r, which is dynamic; widejit follows "
                      "such a size in slices (x[:, :T]) and in torch.arange(T) as an nn.Embedding's index" % (key[1], key[0]))
        other = self.values_b1.get(node) if self.values_b1 else None
        grown = [d for d in range(t.dim()) if isinstance(other, torch.Tensor) and other.dim() == t.dim()
                 and other.shape[d] != t.shape[d]]
        if not grown:
            self.kind[node] = ("ctensor", t)
            return True
        # sized by the batch (torch.zeros(B, 1, d)): one slice of it, expanded to the batch
        one = t
        for d in grown:
            one = one.narrow(d, 0, 1)
        if not torch.equal(one.expand(t.shape), t):
            self.fail(node, "builds a tensor whose size follows the batch (dims %s) and whose values vary along it; "
                      "widejit can expand only a tensor that is the same along the batch" % grown)
        p = self.use_param(node.name + ".slice", one.contiguous(), node, constant=True)
        self.emit(node, "expand", [p], None, _expand_attrs(list(t.shape), grown))
        return True

    def batch_dims(self, args):
        """Which entries of a size list (ints and folded fx nodes) follow the batch size: those
        whose value changed when the traced graph ran at batch size B0 + 1."""
        if not self.values_b1:
            return []
        return [i for i, a in enumerate(args) if isinstance(a, torch.fx.Node) and a in self.values_b1
                and self.values_b1[a] != self.values[a]]

    def visit(self, node):
        value = self.values.get(node)
        if node.op == "placeholder":
            return  # handled by the caller
        if node.op == "get_attr":
            self.kind[node] = ("param", self.use_param(node.target, value, node))
            return
        if node.op == "call_module":
            return self.visit_module(node)
        if self.try_fold(node) or self.constant_tensor(node):
            return
        if node.op == "call_function" and node.target is operator.getitem:
            return self.visit_getitem(node)
        if node.op == "call_function" and node.target in PARAM_FUNCTIONS:
            return self.visit_param_function(node)
        if node.op == "call_function" and node.target is getattr(F, "scaled_dot_product_attention", None):
            return self.visit_sdpa(node)
        special = self.special_visitor(node)
        if special is not None:
            return special(node)
        if node.op == "call_function":
            spec = FUNCTION_SPECS.get(node.target)
            if spec is None:
                self.refuse(node, "call_function %s" % _describe_target(node))
            return self.visit_spec(node, spec, node.args, dict(node.kwargs))
        if node.op == "call_method":
            spec = METHOD_SPECS.get(node.target)
            if spec is None:
                self.refuse(node, "call_method Tensor.%s" % node.target)
            return self.visit_spec(node, spec, node.args, dict(node.kwargs))
        self.fail(node, "unexpected fx node kind %r" % node.op)

    def try_fold(self, node):
        """Folds size()/shape arithmetic to constants; refuses other non-tensor values."""
        value = self.values[node]
        if isinstance(value, torch.Tensor):
            return False
        if isinstance(value, (tuple, list)) and any(isinstance(v, torch.Tensor) for v in _flatten_values(value, keep_none=True)):
            return False
        if value is None and node.op == "call_function" and node.target is operator.getitem:
            return False  # e.g. MultiheadAttention's absent weights; visit_getitem decides
        args = list(node.args) + list(node.kwargs.values())
        node_args = _nodes_in(args)
        foldable = False
        if node.op == "call_method" and node.target in _SHAPE_METHODS:
            foldable = True
        elif node.op == "call_function" and node.target is builtins.getattr and len(node.args) == 2 \
                and node.args[1] in _SHAPE_ATTRS:
            foldable = True
        elif node.op == "call_function" and node.target in _INT_FUNCTIONS:
            foldable = all(self.kind.get(a, ("",))[0] == "const" for a in node_args)
        if not foldable:
            self.fail(node, "produces a %s (%r), which depends on tensor values or is not a shape; "
                      "widejit graphs carry only tensors and static shapes" % (type(value).__name__, value))
        if isinstance(value, torch.Size):
            value = list(value)
        self.kind[node] = ("const", value)
        return True

    def visit_getitem(self, node):
        base, index = node.args
        k = self.kind.get(base)
        if k is not None and k[0] == "unbind":
            return self.visit_unbind_item(node, k, index)
        if k is not None and k[0] in ("tensor", "param"):
            return self.visit_index(node, k[1], self.values[base], index)
        if k is None or k[0] not in ("tuple", "alias"):
            self.refuse(node, "indexing or slicing a tensor (x[...])")
        if not isinstance(index, int) or isinstance(index, bool):
            self.fail(node, "tuple index %r must be a constant int" % (index,))
        if index < 0:
            index += len(self.values[base])  # the graph's getitem index counts from the front
        value = self.values[node]
        if value is None:
            self.kind[node] = ("const", None)
            return
        if isinstance(value, torch.Tensor):
            name = self.tuple_item(node, base, index)
            self.kind[node] = ("tensor", name)
            return
        path = (index,) if k[0] == "tuple" else k[3] + (index,)
        self.kind[node] = ("alias", k[1], k[2], path)

    def follows(self, v):
        """[input, dim] of the dynamic dim whose size the folded int v is (T of b, t = x.size()),
        or None (also for T + 1 or T // 2: only the size itself is followed)."""
        if not isinstance(v, torch.fx.Node):
            return None
        now = self.values.get(v)
        if not isinstance(now, int) or isinstance(now, bool):
            return None
        for (name, d), values in self.values_dyn.items():
            if values.get(v) == now + 1 and now == self.dyn_sizes[(name, d)]:
                return [name, d]
        return None

    def refuse_dynamic_growth(self, node, src):
        """Refuses a node whose output grows with a dynamic dim where its input src does not (an
        expand or repeat to T): its sizes would be baked in at the exported T."""
        x0, out = self.values.get(src), self.values.get(node)
        for (name, d), values in self.values_dyn.items():
            x1, grown = values.get(src), values.get(node)
            if not all(isinstance(t, torch.Tensor) for t in (x0, x1, out, grown)) or grown.dim() != out.dim():
                continue
            lead = out.dim() - x0.dim()
            for k in range(out.dim()):
                if grown.shape[k] != out.shape[k] and (k < lead or x1.shape[k - lead] == x0.shape[k - lead]):
                    self.fail(node, "Tensor.%s: dim %d of its output follows dim %d of input %r, which is dynamic, "
                              "but its input's does not; only sizes that follow the batch stay symbolic in an "
                              "expand or repeat" % (node.target, k, d, name))

    def changes_with(self, v):
        """(input, dim) of a dynamic dim whose growth changes the folded value v, or None."""
        if not isinstance(v, torch.fx.Node):
            return None
        for key, values in self.values_dyn.items():
            if v in values and values[v] != self.values.get(v):
                return key
        return None

    def index_int(self, node, v, what):
        if isinstance(v, torch.fx.Node):
            k = self.kind.get(v, ("",))
            v = k[1] if k[0] == "const" else v
        if v is None or (isinstance(v, int) and not isinstance(v, bool)):
            return v
        self.fail(node, "indexing a tensor: %s %r must be a Python int (a tensor index is advanced indexing, "
                  "which widejit does not support)" % (what, v.name if isinstance(v, torch.fx.Node) else v))

    def visit_index(self, node, src, value, index):
        """x[...] with ints, slices, None and ... (PyTorch's basic indexing) as select, slice and
        unsqueeze steps, all views in widejit. Tensor indices (advanced indexing) are refused."""
        items = list(index) if isinstance(index, tuple) else [index]
        consumed = sum(1 for i in items if i is not None and i is not Ellipsis)
        if sum(1 for i in items if i is Ellipsis) > 1:
            self.fail(node, "indexing a tensor with more than one '...'")
        steps, d = [], 0
        for item in items:
            if item is Ellipsis:
                d += value.dim() - consumed
            elif item is None:
                steps.append(("unsqueeze", {"dim": d}))
                d += 1
            elif isinstance(item, slice):
                start, stop = self.index_int(node, item.start, "slice start"), self.index_int(node, item.stop, "slice end")
                step = self.index_int(node, item.step, "slice step")
                if step is not None and step < 1:
                    self.fail(node, "indexing a tensor: slice step must be positive, got %d" % step)
                if not (start in (None, 0) and stop is None and step in (None, 1)):
                    attrs = {"dim": d, "start": start, "end": stop, "step": step or 1}
                    follows = self.follows(item.stop)
                    if follows:
                        attrs["end_follows"] = follows
                    for what, bound in (("start", item.start), ("end", item.stop), ("step", item.step)):
                        key = self.changes_with(bound)
                        if key and not (what == "end" and follows):
                            self.fail(node, "indexing a tensor: the slice %s changes with dim %d of input %r, which is dynamic; "
                                      "only a slice's end that is that dim's size (x[:, :T]) follows it" % (what, key[1], key[0]))
                    steps.append(("slice", attrs))
                d += 1
            elif isinstance(item, (int, torch.fx.Node)) and not isinstance(item, bool):
                steps.append(("select", {"dim": d, "index": self.index_int(node, item, "index")}))
            else:
                self.fail(node, "indexing a tensor with %r: only ints, slices, None and ... are supported "
                          "(boolean and tensor indices are advanced indexing)" % (item,))
        if d > value.dim() + sum(1 for i in items if i is None):
            self.fail(node, "indexing a tensor: too many indices for a %d-D tensor" % value.dim())
        self.emit_chain(node, src, steps)

    def visit_sdpa(self, node):
        """F.scaled_dot_product_attention as its math: softmax(q @ k^T * scale + mask) @ v, with
        is_causal a constant upper-triangle mask and a bool attn_mask True where attention is
        allowed (the opposite of nn.MultiheadAttention's)."""
        spec = FnSpec("", _a("query", "key", "value", attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
                             enable_gqa=False), [])
        try:
            b = spec.bind(node.args, dict(node.kwargs))
        except ExportError as e:
            self.fail(node, str(e))
        const = {k: self.attr_value(node, b[k], k) for k in ("dropout_p", "is_causal", "scale", "enable_gqa")}
        if const["dropout_p"] != 0:
            self.fail(node, "scaled_dot_product_attention with dropout_p=%r draws random masks; pass dropout_p=0.0 "
                      "(or self.dropout if self.training else 0.0)" % const["dropout_p"])
        if const["enable_gqa"]:
            self.fail(node, "scaled_dot_product_attention with enable_gqa=True is not supported")
        q, k, v = (self.ref(node, b[n], n) for n in ("query", "key", "value"))
        qv, kv = self.values[b["query"]], self.values[b["key"]]
        L, S, E = qv.shape[-2], kv.shape[-2], qv.shape[-1]
        scale = const["scale"] if const["scale"] is not None else 1.0 / math.sqrt(E)
        sub = lambda tag: "%s.%s" % (node.name, tag)  # noqa: E731
        kt = self.append(sub("kt"), "transpose", [k], None, {"dim0": -2, "dim1": -1})
        sc = self.append(sub("scores"), "mul", [self.append(sub("qk"), "matmul", [q, kt]), scale])
        if const["is_causal"]:
            mask = self.use_param(sub("causal"), torch.ones(L, S, dtype=torch.bool).triu(1), node, constant=True)
            sc = self.append(sub("causal_scores"), "masked_fill", [sc, mask], None, {"value": "-inf"})
        if b["attn_mask"] is not None:
            am = self.ref(node, b["attn_mask"], "attn_mask")
            if self.values[b["attn_mask"]].dtype == torch.bool:
                sc = self.append(sub("masked"), "masked_fill", [sc, self.append(sub("not_mask"), "logical_not", [am])],
                                 None, {"value": "-inf"})
            else:
                sc = self.append(sub("masked"), "add", [sc, am])
        p = self.append(sub("probs"), "softmax", [sc], None, {"dim": -1})
        self.emit(node, "matmul", [p, v])

    def visit_spec(self, node, spec, args, kwargs):
        try:
            bound = spec.bind(args, kwargs)
        except ExportError as e:
            self.fail(node, str(e))
        for name, want in spec.fixed.items():
            got = bound[name]
            if isinstance(got, torch.fx.Node):
                got = self.kind.get(got, ("", got))[1]
            if got != want:
                self.fail(node, "argument %s=%r is not supported (only %r)" % (name, got, want))
        if node.op == "call_method" and node.target == "t" and self.values[node].dim() != 2:
            self.fail(node, "Tensor.t() is supported on 2-D tensors only (as transpose(0, 1))")
        if spec.op == "dropout" and bound["training"] is not False:
            self.fail(node, "dropout with training=True makes random outputs; pass training=self.training")
        if spec.op in ("logical_not", "logical_and", "logical_or") and node.target in (
                operator.invert, operator.and_, operator.or_):
            for a in _nodes_in(list(node.args)):
                v = self.values.get(a)
                if not isinstance(v, torch.Tensor) or v.dtype != torch.bool:
                    self.fail(node, "bitwise %s of a non-bool operand is not in the widejit vocabulary (only of bool "
                              "masks)" % {operator.invert: "not (~)", operator.and_: "and (&)", operator.or_: "or (|)"}[
                                  node.target])
        if spec.op == "where":
            return self.visit_where(node, bound)
        if spec.list_input:
            inputs = [self.ref_list(node, bound[spec.inputs[0]], spec.inputs[0])]
        else:
            inputs = [self.ref(node, bound[n], n) for n in spec.inputs]
        if not any(isinstance(i, str) for i in _flatten_values(inputs, keep_none=False)):
            self.fail(node, "has no tensor operand; expected at least one tensor input")
        attrs = {}
        for name in spec.attrs:
            if spec.op == "masked_fill" and name == "value":
                value = self.fill_value(node, bound[name])
            elif spec.op == "pad" and name == "value":
                if bound[name] is None or bound["mode"] != "constant":
                    continue  # 0, and ignored by the other modes
                value = self.fill_value(node, bound[name])
            else:
                value = self.attr_value(node, bound[name], name)
            if name == "split_size":
                name = "split_size_or_sections"
            if spec.op == "amax" and name == "dim" and value == []:
                value = None  # amax's default dim=() means every dim
            if "pool" in spec.op and name == "stride" and value == []:
                value = None  # torch.max_pool2d's default stride=[] means kernel_size
            attrs[name] = value
        self.emit(node, spec.op, inputs, None, attrs)

    def visit_param_function(self, node):
        args, mapper = PARAM_FUNCTIONS[node.target]
        try:
            bound = FnSpec("", args, []).bind(node.args, dict(node.kwargs))
        except ExportError as e:
            self.fail(node, str(e))
        tensors = {}
        for role in ("weight", "bias"):
            arg = bound.get(role)
            if arg is None:
                tensors[role] = None
                continue
            k = self.kind.get(arg) if isinstance(arg, torch.fx.Node) else None
            if k is None or k[0] != "param":
                self.fail(node, "%s must be a parameter of the module (self.%s), not a computed tensor" % (role, role))
            tensors[role] = (k[1], self.values[arg])
        const = {k: self.attr_value(node, v, k) for k, v in bound.items() if k not in ("input", "weight", "bias")}
        w = tensors["weight"][1] if tensors["weight"] else None
        try:
            op, roles, attrs = mapper(const, w, tensors["bias"])
        except ExportError as e:
            self.fail(node, str(e))
        params = {role: tensors[role][0] for role in roles if tensors.get(role) is not None}
        attrs = {k: self.attr_value(node, v, k) for k, v in attrs.items()}
        self.emit(node, op, [self.ref(node, bound["input"], "input")], params, attrs)

    def visit_module(self, node):
        module = _getattr_path(self.gm, node.target)
        mapper = MODULE_MAPPERS.get(type(module)) or self.recognized.get(id(module))
        composite = COMPOSITE_MAPPERS.get(type(module))
        if mapper is None and composite is None:
            self.refuse(node, "module %s" % type(module).__name__)
        if isinstance(module, nn.modules.batchnorm._BatchNorm) and module.training:
            if self.train_batchnorm:
                return self.visit_batch_stats_norm(node, module)
            self.fail(node, "%s is in training mode: it would normalise with the batch's statistics and update "
                      "running_mean/running_var on every call; call .eval() on it (the exporter puts the model in eval "
                      "mode, so its forward or train() switched this module back), or export it with batch "
                      "statistics with --train-batchnorm (train_batchnorm=True)" % type(module).__name__)
        try:
            sig = inspect.signature(type(module).forward)
            bound = sig.bind(module, *node.args, **node.kwargs)
        except TypeError as e:
            self.fail(node, "arguments do not match %s.forward: %s" % (type(module).__name__, e))
        bound.apply_defaults()
        named = dict(bound.arguments)
        named.pop(next(iter(sig.parameters)))  # self
        if len(named) == 1 and "input" not in named:
            named["input"] = next(iter(named.values()))
        if named.get("output_size") is not None and isinstance(module, nn.modules.conv._ConvTransposeNd):
            named["shapes"] = (tuple(self.values[named["input"]].shape), tuple(self.values[node].shape))
        if composite is not None:
            return self.visit_composite(node, module, named, composite)
        try:
            op, raw_inputs, roles, attrs = mapper(module, named)
        except ExportError as e:
            self.fail(node, str(e))
        if op == "embedding" and raw_inputs[0] in self.dyn_arange:
            # wpe(torch.arange(T)) is the table's first T rows: a slice that follows T
            name, d = self.dyn_arange[raw_inputs[0]]
            table = self.use_param("%s.weight" % node.target, module.weight, node)
            self.emit(node, "slice", [table], None, {"dim": 0, "start": 0, "end": len(self.values[raw_inputs[0]]),
                                                       "end_follows": [name, d]})
            return
        inputs = [self.ref(node, a, "input %d" % i) for i, a in enumerate(raw_inputs)]
        while inputs and inputs[-1] is None:
            inputs.pop()
        params = {}
        for role in roles:
            t = _getattr_path(module, role)
            if t is None:
                continue
            params[role] = self.use_param("%s.%s" % (node.target, role), t, node)
        attrs = {k: self.attr_value(node, v, k) for k, v in attrs.items()}
        self.emit(node, op, inputs, params, attrs)

    # ---- modules exported as several nodes
    def sub_module(self, node, tag, path, module, named):
        """Appends the node of a vocabulary module inside a composite (inputs already named)."""
        try:
            op, raw_inputs, roles, attrs = MODULE_MAPPERS[type(module)](module, named)
        except (ExportError, KeyError) as e:
            self.fail(node, "%s inside %s: %s" % (type(module).__name__, path, e if isinstance(e, ExportError) else
                                                  "not in the widejit vocabulary"))
        inputs = list(raw_inputs)
        while inputs and inputs[-1] is None:
            inputs.pop()
        params = {}
        for role in roles:
            t = _getattr_path(module, role)
            if t is not None:
                params[role] = self.use_param("%s.%s" % (path, role), t, node)
        attrs = {k: self.attr_value(node, v, k) for k, v in attrs.items()}
        return self.append("%s.%s" % (node.name, tag), op, inputs, params, attrs)

    def visit_composite(self, node, module, named, composite):
        """A module fx cannot trace (nn.Transformer* layers: fast-path control flow) exported as
        the widejit nodes its forward computes, checked on the recorded call with reference.py's
        interpreter before it is accepted."""
        args = {k: (self.ref(node, v, k) if isinstance(v, torch.fx.Node) or v is None else v) for k, v in named.items()}
        worst = None
        for variant in composite.variants(module, args):
            start = len(self.nodes)
            composite.emit(self, node, module, args, variant)
            self.nodes[-1]["name"] = node.name
            err = self.check_decomposition(node, start)
            if err is None:
                self.kind[node] = ("tensor", node.name)
                return
            del self.nodes[start:]
            worst = err if worst is None else min(worst, err)
        self.fail(node, "widejit's decomposition of %s (%s) does not reproduce its output (max abs error %.3g); "
                  "this configuration is not supported" % (type(module).__name__, composite.describe, worst))

    def check_decomposition(self, node, start):
        """Runs nodes[start:] with reference.py on model 0's recorded values; None when they give
        the module's output, else the max abs error."""
        import reference  # noqa: E402 (the interpreter lives next to this file)
        env = {}
        for nd, k in self.kind.items():
            if k[0] in ("tensor", "param") and nd in self.values:
                env[k[1]] = self.values[nd]
        env.update(self.params)
        with torch.no_grad():
            for spec in self.nodes[start:]:
                args = [[env[a] for a in v] if isinstance(v, list) else env[v] if isinstance(v, str) else v
                        for v in spec["inputs"]]
                params = {role: env[name] for role, name in spec.get("params", {}).items()}
                env[spec["name"]] = reference.run_node(spec, args, params)
        got, want = env[node.name], self.values[node]
        if got.shape != want.shape:
            return float("inf")
        err = (got.double() - want.double()).abs().max().item()
        scale = max(1.0, want.double().abs().max().item())
        return None if err <= 1e-4 * scale else err

    def visit_batch_stats_norm(self, node, m):
        """A BatchNorm in training mode (--train-batchnorm) as the maths of its forward: each
        model normalises with the mean and biased variance of its own batch, per channel (dim 1);
        the running statistics are neither read nor updated."""
        if len(node.args) != 1 or node.kwargs:
            self.fail(node, "%s takes one input" % type(m).__name__)
        x = self.ref(node, node.args[0], "input")
        rank = self.values[node.args[0]].dim()
        if rank < 2:
            self.fail(node, "%s with batch statistics needs a batched input [B, C, ...]" % type(m).__name__)
        dims = [0] + list(range(2, rank))
        sub = lambda tag: "%s.%s" % (node.name, tag)  # noqa: E731
        mean = self.append(sub("mean"), "mean", [x], None, {"dim": dims, "keepdim": True})
        d = self.append(sub("centered"), "sub", [x, mean])
        var = self.append(sub("var"), "mean", [self.append(sub("sq"), "mul", [d, d])], None, {"dim": dims, "keepdim": True})
        inv = self.append(sub("inv_std"), "rsqrt", [self.append(sub("var_eps"), "add", [var, m.eps])])
        steps = [("norm", "mul", inv)]
        for role, op, tag in (("weight", "mul", "scaled"), ("bias", "add", "shifted")):
            t = getattr(m, role)
            if t is not None:
                p = self.use_param("%s.%s" % (node.target, role), t, node)
                steps.append((tag, op, self.append(sub(role + "_per_channel"), "view", [p], None,
                                                   {"shape": [m.num_features] + [1] * (rank - 2)})))
        y = d
        for tag, op, operand in steps[:-1]:
            y = self.append(sub(tag), op, [y, operand])
        tag, op, operand = steps[-1]
        self.emit(node, op, [y, operand])

    # ---- functions that become other ops, or none: casts to the same dtype, unbind, einsum,
    # torchvision's stochastic depth in eval mode
    def special_visitor(self, node):
        if node.op == "call_method" and node.target in _CAST_METHODS:
            return self.visit_cast
        if (node.op, node.target) in (("call_method", "unbind"), ("call_function", torch.unbind)):
            return self.visit_unbind
        if node.op == "call_function" and node.target is torch.einsum:
            return self.visit_einsum
        if node.op == "call_method" and node.target in ("expand", "expand_as", "repeat"):
            return self.visit_expand
        if node.op == "call_function" and node.target is F.interpolate:
            return self.visit_interpolate
        if node.op == "call_function" and getattr(node.target, "__name__", "") == "stochastic_depth" and \
                (getattr(node.target, "__module__", "") or "").startswith("torchvision"):
            return self.visit_stochastic_depth
        return None

    def alias(self, node, src, what="input"):
        """node computes nothing: it stands for the tensor src (an fx node or a name)."""
        if isinstance(src, torch.fx.Node):
            k = self.kind.get(src)
            if k is None or k[0] not in ("tensor", "param"):
                self.fail(node, "%s must be a tensor" % what)
            self.kind[node] = k
        else:
            self.kind[node] = ("tensor", src)

    def visit_cast(self, node):
        """x.float(), x.to(torch.float32), x.type_as(y), x.to(device): the identity when the dtype
        does not change (the graph is device-free), else a `to` node (float and bool to float)."""
        src = node.args[0] if node.args else None
        if not isinstance(src, torch.fx.Node) or not isinstance(self.values.get(src), torch.Tensor):
            self.fail(node, "Tensor.%s of a non-tensor" % node.target)
        before, after = self.values[src], self.values[node]
        if before.dtype == after.dtype:
            return self.alias(node, src)
        if not after.dtype.is_floating_point or not (before.dtype.is_floating_point or before.dtype == torch.bool):
            self.fail(node, "Tensor.%s casts %s to %s; widejit casts float and bool tensors to float dtypes only" % (
                node.target, before.dtype, after.dtype))
        self.emit(node, "to", [self.ref(node, src, "input")], None, {"dtype": _DTYPE_NAMES[after.dtype]})

    def visit_stochastic_depth(self, node):
        """torchvision.ops.stochastic_depth (StochasticDepth's forward): the identity in eval mode."""
        try:
            b = FnSpec("", _a("input", "p", "mode", training=True), []).bind(node.args, dict(node.kwargs))
        except ExportError as e:
            self.fail(node, str(e))
        training, p = self.attr_value(node, b["training"], "training"), self.attr_value(node, b["p"], "p")
        if training and p != 0:
            self.fail(node, "stochastic_depth with training=True drops random rows; the exporter runs modules in "
                      "eval mode (pass training=self.training)")
        self.alias(node, b["input"])

    def visit_expand(self, node):
        """x.expand(*sizes), x.expand_as(y) and x.repeat(*repeats) as expand nodes (repeat: each
        dim unsqueezed, expanded and merged back), sizes that follow the batch marked so that
        the graph runs at any batch size."""
        args = list(node.args[1:])
        if node.kwargs:
            self.fail(node, "Tensor.%s keyword arguments are not supported" % node.target)
        self.refuse_dynamic_growth(node, node.args[0])
        x = self.ref(node, node.args[0], "input")
        xv = self.values[node.args[0]]
        if node.target == "expand_as":
            other = args[0] if len(args) == 1 else None
            if not isinstance(other, torch.fx.Node) or not isinstance(self.values.get(other), torch.Tensor):
                self.fail(node, "expand_as needs one tensor")
            out = self.values[node]
            grown = self.values_b1.get(other) if self.values_b1 else None
            bdims = [d for d in range(out.dim()) if isinstance(grown, torch.Tensor) and grown.dim() == out.dim()
                     and grown.shape[d] != out.shape[d]]
            return self.emit(node, "expand", [x], None, _expand_attrs(list(out.shape), bdims))
        whole = None  # x.expand(y.shape): one folded size list
        if len(args) == 1 and isinstance(args[0], (list, tuple, torch.Size)):
            args = list(args[0])
        elif len(args) == 1 and isinstance(args[0], torch.fx.Node) and self.kind.get(args[0], ("",))[0] == "const" \
                and isinstance(self.kind[args[0]][1], (list, tuple)):
            whole, args = args[0], list(self.kind[args[0]][1])
        sizes = [self.attr_value(node, a, "size %d" % i) for i, a in enumerate(args)]
        if not all(isinstance(v, int) and not isinstance(v, bool) for v in sizes):
            self.fail(node, "Tensor.%s sizes must be ints, got %r" % (node.target, sizes))
        if whole is None:
            follows = self.batch_dims(args)
        else:
            grown = self.values_b1.get(whole) if self.values_b1 else None
            follows = [i for i, v in enumerate(grown or []) if i < len(sizes) and v != sizes[i]]
        if node.target == "expand":
            return self.emit(node, "expand", [x], None, _expand_attrs(sizes, follows))
        # repeat: [s0, s1] by [r0, r1] is [1, s0, 1, s1] expanded to [r0, s0, r1, s1], then merged
        lead = len(sizes) - xv.dim()
        if lead < 0:
            self.fail(node, "Tensor.repeat needs at least as many repeats as the tensor has dims")
        if all(r == 1 for r in sizes) and lead == 0:
            return self.alias(node, node.args[0])
        y = x
        for d in range(xv.dim()):
            y = self.append("%s.unsq%d" % (node.name, d), "unsqueeze", [y], None, {"dim": 2 * d})
        exp_sizes = sizes[:lead] + [v for r in sizes[lead:] for v in (r, -1)]
        where = [i if i < lead else lead + 2 * (i - lead) for i in range(len(sizes))]
        y = self.append("%s.expand" % node.name, "expand", [y], None,
                        _expand_attrs(exp_sizes, [where[i] for i in follows]))
        self.emit(node, "reshape", [y], None, {"shape": list(self.values[node].shape)})

    def visit_interpolate(self, node):
        """F.interpolate, nearest or (bi/tri)linear, dim by dim: an integer nearest factor as
        unsqueeze, expand and reshape (exact), anything else as a linear node whose constant
        weight maps the dim's input positions to its output positions (made by interpolating
        the identity with the same arguments); checked with reference.py before it is accepted."""
        try:
            b = FnSpec("", _a("input", size=None, scale_factor=None, mode="nearest", align_corners=None,
                              recompute_scale_factor=None, antialias=False), []).bind(node.args, dict(node.kwargs))
        except ExportError as e:
            self.fail(node, str(e))
        const = {k: self.attr_value(node, b[k], k) for k in b if k != "input"}
        mode = const["mode"]
        if mode not in ("nearest", "linear", "bilinear", "trilinear") or const["antialias"]:
            self.fail(node, "F.interpolate mode=%r%s is not supported (nearest, linear, bilinear, trilinear)" % (
                mode, " with antialias" if const["antialias"] else ""))
        xv, yv = self.values[b["input"]], self.values[node]
        k = xv.dim() - 2
        x = self.ref(node, b["input"], "input")
        start = len(self.nodes)
        sub = lambda tag: "%s.%s" % (node.name, tag)  # noqa: E731
        for i in range(k):
            d = 2 + i
            n_in, n_out = xv.shape[d], yv.shape[d]
            per_dim = lambda v: None if v is None else (v[i] if isinstance(v, (list, tuple)) else v)  # noqa: E731
            sf = per_dim(const["scale_factor"])
            if n_in == n_out and (sf in (None, 1, 1.0) or const["recompute_scale_factor"]):
                continue
            if mode == "nearest" and n_out % n_in == 0 and (sf is None or sf == n_out // n_in or
                                                               const["recompute_scale_factor"]):
                r = n_out // n_in
                u = self.append(sub("unsq%d" % i), "unsqueeze", [x], None, {"dim": d + 1})
                sizes = [-1] * (xv.dim() + 1)
                sizes[d + 1] = r
                e = self.append(sub("rep%d" % i), "expand", [u], None, {"sizes": sizes})
                shape = list(self.values[b["input"]].shape[:2]) + [
                    yv.shape[2 + j] if j <= i else xv.shape[2 + j] for j in range(k)]
                x = self.append(sub("up%d" % i), "reshape", [e], None, {"shape": shape})
                continue
            # the dim's interpolation matrix: the identity's rows interpolated along this dim alone
            basis = torch.zeros([n_in, 1] + [n_in if j == i else 1 for j in range(k)], dtype=xv.dtype)
            for q in range(n_in):
                basis[(q, 0) + tuple(q if j == i else 0 for j in range(k))] = 1
            kw = {"mode": mode, "align_corners": const["align_corners"]}
            if const["size"] is not None:
                kw["size"] = [n_out if j == i else 1 for j in range(k)]
            else:
                kw["scale_factor"] = [float(sf) if j == i else 1.0 for j in range(k)]
                kw["recompute_scale_factor"] = const["recompute_scale_factor"]
            with torch.no_grad():
                resp = F.interpolate(basis, **kw).reshape(n_in, n_out)
            w = self.use_param(sub("weight%d" % i), resp.t().contiguous(), node, constant=True)
            lin = {"in_features": n_in, "out_features": n_out, "bias": False}
            last = xv.dim() - 1
            if d != last:
                x = self.append(sub("tr%d" % i), "transpose", [x], None, {"dim0": d, "dim1": last})
            x = self.append(sub("lin%d" % i), "linear", [x], {"weight": w}, lin)
            if d != last:
                x = self.append(sub("back%d" % i), "transpose", [x], None, {"dim0": d, "dim1": last})
        if len(self.nodes) == start:
            return self.alias(node, b["input"])
        self.accept_decomposition(node, start, "F.interpolate(mode=%r) as linear maps per dim" % mode)

    def visit_unbind(self, node):
        """x.unbind(dim): a tuple whose elements, when taken with [i], are select nodes."""
        try:
            b = FnSpec("", _a("input", dim=0), []).bind(node.args, dict(node.kwargs))
        except ExportError as e:
            self.fail(node, str(e))
        src = self.ref(node, b["input"], "input")
        if not isinstance(src, str):
            self.fail(node, "unbind of a non-tensor")
        self.kind[node] = ("unbind", src, self.attr_value(node, b["dim"], "dim"))

    def visit_unbind_item(self, node, k, index):
        if not isinstance(index, int) or isinstance(index, bool):
            self.fail(node, "an element of unbind must be taken with a constant int, got %r" % (index,))
        self.emit(node, "select", [k[1]], None, {"dim": k[2], "index": index})

    def visit_einsum(self, node):
        """torch.einsum as the matmul, mul, sum, permute and reshape nodes it computes: operands
        contracted pairwise from the left (a pair sharing no summed index is a broadcast mul);
        checked against the recorded value with reference.py before it is accepted."""
        args = list(node.args)
        if not args or not isinstance(args[0], str):
            self.fail(node, "torch.einsum needs the equation string first")
        eq, ops = args[0], args[1:]
        if len(ops) == 1 and isinstance(ops[0], (list, tuple)):
            ops = list(ops[0])
        if node.kwargs:
            self.fail(node, "torch.einsum keyword arguments %s are not supported" % sorted(node.kwargs))
        values = [self.values.get(o) if isinstance(o, torch.fx.Node) else None for o in ops]
        if not ops or any(not isinstance(v, torch.Tensor) for v in values):
            self.fail(node, "torch.einsum operands must be tensors")
        try:
            in_labels, out_labels = _einsum_labels(eq, [v.dim() for v in values])
        except ExportError as e:
            self.fail(node, "torch.einsum(%r): %s" % (eq, e))
        start = len(self.nodes)
        steps = _EinsumSteps(self, node)
        dims = [dict(zip(labels, v.shape)) for labels, v in zip(in_labels, values)]
        try:
            cur, cd = steps.sum_out(self.ref(node, ops[0], "operand 0"), dims[0], set(out_labels).union(*in_labels[1:]))
            for i in range(1, len(ops)):
                keep = set(out_labels).union(*in_labels[i + 1:])
                cur, cd = steps.pair(cur, cd, self.ref(node, ops[i], "operand %d" % i), dims[i], keep)
            cur, cd = steps.permute(cur, cd, out_labels)
        except ExportError as e:
            self.fail(node, "torch.einsum(%r): %s" % (eq, e))
        if not self.nodes[start:]:
            self.alias(node, ops[0])
            return
        if self.nodes[-1]["name"] != cur:
            cur = self.append(steps.name("out"), "contiguous", [cur])
        self.accept_decomposition(node, start, "torch.einsum(%r) as matmul, mul and sum nodes" % eq)

    def accept_decomposition(self, node, start, what):
        """Names the last of nodes[start:] after node and keeps them as node's value when
        reference.py reproduces the recorded value with them; refuses node otherwise."""
        self.nodes[-1]["name"] = node.name
        err = self.check_decomposition(node, start)
        if err is not None:
            self.fail(node, "%s does not reproduce its value (max abs error %.3g); these arguments are not "
                      "supported" % (what, err))
        self.kind[node] = ("tensor", node.name)

    # ---- outputs
    def outputs(self, arg, value):
        """Flat list of output names for the fx output argument `arg` whose value is `value`."""
        if isinstance(arg, torch.fx.Node):
            k = self.kind.get(arg)
            if k is None:
                raise ExportError("%s: output %r was not exported" % (self.root_name, arg.name))
            if k[0] in ("tensor", "param"):
                return [k[1]]
            if k[0] in ("tuple", "alias"):
                names = []
                for i, v in enumerate(value):
                    if isinstance(v, torch.Tensor):
                        names.append(self.tuple_item(arg, arg, i))
                    elif v is not None:
                        raise ExportError("%s: output %r holds a nested tuple; return its elements" % (self.root_name, arg.name))
                return names
            if k[0] == "const" and k[1] is None:
                return []
            raise ExportError("%s: output %r is the constant %r, not a tensor" % (self.root_name, arg.name, k[1]))
        if isinstance(arg, (tuple, list)):
            names = []
            for a, v in zip(arg, value):
                names += self.outputs(a, v)
            return names
        if arg is None:
            return []
        raise ExportError("%s: forward returns %r; return tensors or tuples of tensors" % (self.root_name, type(arg).__name__))


def _expand_attrs(sizes, batch_dims):
    return {"sizes": sizes, "batch_dims": batch_dims} if batch_dims else {"sizes": sizes}


_CAST_METHODS = {"float", "double", "half", "bfloat16", "long", "int", "short", "bool", "byte", "char", "to", "type_as",
                 "type", "cpu", "cuda"}


def _einsum_labels(eq, ranks):
    """The index labels of each operand and of the output of an einsum equation, "..." expanded
    to labels of its own ("0", "1", ...: right-aligned, as the dims broadcast)."""
    eq = eq.replace(" ", "")
    lhs, arrow, rhs = eq.partition("->")
    terms = lhs.split(",")
    if len(terms) != len(ranks):
        raise ExportError("%d operand terms for %d operands" % (len(terms), len(ranks)))
    ell = 0
    for t, r in zip(terms, ranks):
        if "..." in t:
            ell = max(ell, r - (len(t) - 3))
    ell_labels = [str(i) for i in range(ell)]

    def expand(term, rank):
        if term.count("...") > 1:
            raise ExportError("more than one '...' in %r" % term)
        head, dots, tail = term.partition("...")
        for c in head + tail:
            if not c.isalpha():
                raise ExportError("%r is not an index letter" % c)
        if not dots:
            return list(term)
        k = rank - len(head) - len(tail)
        if k < 0:
            raise ExportError("%r has more indices than its operand has dims" % term)
        return list(head) + ell_labels[ell - k:] + list(tail)

    ins = []
    for t, r in zip(terms, ranks):
        labels = expand(t, r)
        if len(labels) != r:
            raise ExportError("%r names %d dims of a %d-D operand" % (t, len(labels), r))
        if len(set(labels)) != len(labels):
            raise ExportError("an index repeated within one operand (%r: a diagonal or trace) is not supported" % t)
        ins.append(labels)
    if arrow:
        out = expand(rhs, ell + len(rhs.replace("...", "")))
        if len(set(out)) != len(out):
            raise ExportError("an index repeated in the output")
        for lab in out:
            if not any(lab in labels for labels in ins):
                raise ExportError("output index %r is in no operand" % lab)
    else:  # implicit output: the broadcast dims, then the indices seen once, alphabetically
        counts = {}
        for labels in ins:
            for lab in labels:
                counts[lab] = counts.get(lab, 0) + 1
        out = ell_labels + sorted(lab for lab, c in counts.items() if c == 1 and lab.isalpha())
    return ins, out


class _EinsumSteps:
    """Appends the nodes of one einsum. An operand is (name, {label: size}) with its dims in the
    dict's order; a broadcast dim keeps its size 1 until the product that broadcasts it."""

    def __init__(self, b, node):
        self.b, self.node, self.k = b, node, 0

    def name(self, tag):
        self.k += 1
        return "%s.%s%d" % (self.node.name, tag, self.k)

    def sum_out(self, x, dims, keep):
        """Sums out the labels of x not in keep."""
        labels = list(dims)
        drop = [i for i, lab in enumerate(labels) if lab not in keep]
        if not drop:
            return x, dims
        x = self.b.append(self.name("sum"), "sum", [x], None, {"dim": drop, "keepdim": False})
        return x, {lab: n for lab, n in dims.items() if lab in keep}

    def permute(self, x, dims, order):
        labels = list(dims)
        if labels == list(order):
            return x, dims
        x = self.b.append(self.name("perm"), "permute", [x], None, {"dims": [labels.index(lab) for lab in order]})
        return x, {lab: dims[lab] for lab in order}

    def reshape(self, x, shape):
        return self.b.append(self.name("view"), "reshape", [x], None, {"shape": shape})

    def pair(self, a, da, b, db, keep):
        """The product of two operands, summed over the labels neither keep nor the other has."""
        a, da = self.sum_out(a, da, keep | set(db))
        b, db = self.sum_out(b, db, keep | set(da))
        batch = [lab for lab in da if lab in db and lab in keep]
        contr = [lab for lab in da if lab in db and lab not in keep]
        left = [lab for lab in da if lab not in db]
        right = [lab for lab in db if lab not in da]
        if not contr:  # an outer or element-wise product: a broadcast mul
            a, da = self.permute(a, da, batch + left)
            b, db = self.permute(b, db, batch + right)
            for _ in right:
                a = self.b.append(self.name("unsq"), "unsqueeze", [a], None, {"dim": -1})
            for _ in left:
                b = self.b.append(self.name("unsq"), "unsqueeze", [b], None, {"dim": len(batch)})
            out = {lab: max(da.get(lab, 1), db.get(lab, 1)) for lab in batch + left + right}
            return self.b.append(self.name("mul"), "mul", [a, b]), out
        for lab in contr:
            if da[lab] != db[lab]:
                raise ExportError("summed index %r broadcasts (sizes %d and %d)" % (lab, da[lab], db[lab]))
        a, da = self.permute(a, da, batch + left + contr)
        b, db = self.permute(b, db, batch + contr + right)
        prod = lambda d, g: math.prod(d[lab] for lab in g)  # noqa: E731
        if len(left) != 1 or len(contr) != 1:
            a = self.reshape(a, [da[lab] for lab in batch] + [prod(da, left), prod(da, contr)])
        if len(contr) != 1 or len(right) != 1:
            b = self.reshape(b, [db[lab] for lab in batch] + [prod(db, contr), prod(db, right)])
        y = self.b.append(self.name("mm"), "matmul", [a, b])
        out = {lab: max(da[lab], db[lab]) for lab in batch}
        out.update({lab: da[lab] for lab in left})
        out.update({lab: db[lab] for lab in right})
        if len(left) != 1 or len(right) != 1:
            y = self.reshape(y, list(out.values()))
        return y, out


def _nodes_in(args):
    found = []

    def walk(a):
        if isinstance(a, torch.fx.Node):
            found.append(a)
        elif isinstance(a, (list, tuple)):
            for x in a:
                walk(x)
        elif isinstance(a, dict):
            for x in a.values():
                walk(x)

    walk(args)
    return found


def _same_values(a, b):
    """Whether tensors a and b are equal, a NaN equal to a NaN (an input or weight may be
    non-finite on purpose: a test of how a kernel treats infinities)."""
    return torch.equal(a, b) or (a.is_floating_point() and a.shape == b.shape and a.dtype == b.dtype and
                                 torch.allclose(a, b, rtol=0, atol=0, equal_nan=True))


def _flatten_values(v, keep_none):
    """Tensors of a (nested) tuple/list output, in order; None kept only when asked."""
    if isinstance(v, (tuple, list)):
        out = []
        for x in v:
            out += _flatten_values(x, keep_none)
        return out
    if v is None and not keep_none:
        return []
    return [v]


# ----------------------------------------------------------------------------------------------
# Writing


def _dump_json(graph):
    """Pretty, stable JSON: one top-level key per line, one input/param/node per line."""
    def compact(v):
        return json.dumps(v, separators=(", ", ": "), allow_nan=False)

    lines = ["{"]
    keys = list(graph)
    for i, key in enumerate(keys):
        v = graph[key]
        end = "," if i < len(keys) - 1 else ""
        if isinstance(v, list) and v and all(isinstance(x, dict) for x in v):
            lines.append("  %s: [" % json.dumps(key))
            for j, x in enumerate(v):
                lines.append("    %s%s" % (compact(x), "," if j < len(v) - 1 else ""))
            lines.append("  ]%s" % end)
        else:
            lines.append("  %s: %s%s" % (json.dumps(key), compact(v), end))
    lines.append("}")
    return "\n".join(lines) + "\n"


def _first_line(e):
    """The first line of an exception's message (torch.fx appends its own context below)."""
    text = str(e).strip()
    return text.split("\n", 1)[0] if text else ""


def _call(model, input_names, tensors):
    return model(**dict(zip(input_names, tensors)))


class _Deterministic:
    """One thread and deterministic algorithms while exporting (the same bytes on every run),
    the caller's settings restored afterwards."""

    def __enter__(self):
        self.threads = torch.get_num_threads()
        self.det = torch.are_deterministic_algorithms_enabled()
        warn = getattr(torch, "is_deterministic_algorithms_warn_only_enabled", lambda: False)
        self.warn_only = warn()
        torch.set_num_threads(1)
        try:
            torch.use_deterministic_algorithms(True, warn_only=True)
        except TypeError:  # very old torch without warn_only
            pass
        return self

    def __exit__(self, *exc):
        torch.set_num_threads(self.threads)
        try:
            torch.use_deterministic_algorithms(self.det, warn_only=self.warn_only)
        except TypeError:
            torch.use_deterministic_algorithms(self.det)
        return False


def _bind_forward(cls, given, flag):
    """Maps the given input names to cls.forward's arguments: returns forward's parameters (self
    left out), the names fed as tensors in forward's order, and the arguments fixed at their
    defaults. flag names where inputs come from in errors: "--input" or "inputs"."""
    root_name = cls.__name__
    fwd_params = list(inspect.signature(cls.forward).parameters.values())[1:]
    concrete = {}
    input_names = []
    for p in fwd_params:
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            raise ExportError("%s.forward takes *%s; widejit needs named arguments" % (root_name, p.name))
        if p.name in given:
            input_names.append(p.name)
        elif p.default is not p.empty:
            concrete[p.name] = p.default
        elif flag == "--input":
            raise ExportError("%s.forward argument %r has no --input (e.g. --input %s=32,64)" % (root_name, p.name, p.name))
        else:
            raise ExportError("%s.forward argument %r has no tensor in inputs" % (root_name, p.name))
    for name in given:
        if name not in input_names:
            where = "--input %s" % name if flag == "--input" else "inputs[%r]" % name
            raise ExportError("%s: %s.forward has no argument %r (it has %s)" % (
                where, root_name, name, ", ".join(p.name for p in fwd_params)))
    return fwd_params, input_names, concrete


# ----------------------------------------------------------------------------------------------
# Checkpoints


def expand_state_dict_args(patterns):
    """The files of --state-dict arguments, in argument order, each glob's matches sorted."""
    paths = []
    for pat in patterns:
        if glob.has_magic(pat):
            found = sorted(p for p in glob.glob(pat) if os.path.isfile(p))
            if not found:
                raise ExportError("--state-dict %s matches no file" % pat)
        elif not os.path.isfile(pat):
            raise ExportError("--state-dict %s: %s" % (pat, _not_a_file(pat)))
        else:
            found = [pat]
        for p in found:
            if any(os.path.samefile(p, q) for q in paths):
                raise ExportError("--state-dict %s: the file is given twice" % p)
            paths.append(p)
    return paths


def _not_a_file(path):
    """Why path, which is not a regular file, cannot be a checkpoint: what it is instead."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        if os.path.islink(path):
            return "a symbolic link to a missing file"
        return "no such file"
    except OSError as e:
        return "cannot be read: %s" % (e.strerror or e)
    for test, what in ((stat.S_ISDIR, "a directory (give the checkpoint files in it, e.g. '%s/*.pt')" % path.rstrip("/")),
                       (stat.S_ISFIFO, "a named pipe (FIFO)"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return "%s, not a checkpoint file" % what
    return "not a regular file"


def _is_tensor_dict(obj):
    return isinstance(obj, dict) and all(isinstance(k, str) and isinstance(v, torch.Tensor) for k, v in obj.items())


def _refuse_torchscript(path):
    """Refuses a TorchScript archive (torch.jit.save) before torch.load sees it: torch 1.13's
    torch.load hands such a zip to torch.jit.load ahead of weights_only, and loading a scripted
    module runs its code (__setstate__ included). Archives are recognised as torch.jit.load does,
    by a constants.pkl record, and also by any code/ record."""
    try:
        with zipfile.ZipFile(path) as z:
            names = z.namelist()
    except (zipfile.BadZipFile, OSError) as e:
        raise ExportError("%s: not a valid zip archive (torch.save writes one): %s" % (path, _first_line(e)))
    for name in names:
        parts = name.split("/")
        if "code" in parts[:-1] or parts[-1] == "constants.pkl":
            raise ExportError("%s: a TorchScript archive (it holds %r), not a state dict: loading it would run the "
                              "code it carries; save model.state_dict() with torch.save, or pass "
                              "--trust-checkpoints if you trust the file" % (path, name))


def read_state_dict(path, trust=False):
    """Loads a torch.save'd state dict from path (on the CPU): the state dict itself, a dict
    holding it under "state_dict" or "model" (as training loops save it), or, when trust, a
    whole pickled nn.Module. Without trust the file is read with torch.load(weights_only=True),
    which runs no code from the file."""
    with open(path, "rb") as f:
        head = f.read(4)
    if head != b"PK\x03\x04" and head[:1] != b"\x80":  # a zip archive, or a legacy pickle
        raise ExportError("%s: not a file written by torch.save" % path)
    if head == b"PK\x03\x04" and not trust:
        _refuse_torchscript(path)
    try:
        if trust:
            obj = torch.load(path, map_location="cpu")
        else:
            obj = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as e:
        msg = "%s: torch.load failed: %s: %s" % (path, type(e).__name__, _first_line(e))
        if not trust and isinstance(e, pickle.UnpicklingError):
            msg = ("%s: torch.load(weights_only=True) refused it: it holds objects other than tensors, dicts, "
                   "lists, strings and integers; save model.state_dict() alone, or pass --trust-checkpoints to "
                   "unpickle it in full if you trust the file" % path)
        raise ExportError(msg)
    if isinstance(obj, nn.Module):
        obj = obj.state_dict()
    if _is_tensor_dict(obj):
        return obj
    if isinstance(obj, dict):
        for key in ("state_dict", "model"):
            inner = obj.get(key)
            if isinstance(inner, nn.Module):
                inner = inner.state_dict()
            if _is_tensor_dict(inner):
                return inner
        raise ExportError("%s: not a state dict (a dict of tensors), nor a dict holding one under \"state_dict\" or "
                          "\"model\"; its keys: %s" % (path, ", ".join(repr(k) for k in list(obj)[:8])))
    raise ExportError("%s: holds a %s, not a state dict (torch.save(model.state_dict(), path) writes one)" % (
        path, type(obj).__name__))


def _state_dict_problems(sd, ref):
    """How state dict sd differs from ref in keys, shapes and dtypes: a list of phrases."""
    probs = ["missing key %r" % k for k in ref if k not in sd]
    probs += ["unexpected key %r" % k for k in sd if k not in ref]
    for k, want in ref.items():
        got = sd.get(k)
        if got is None:
            continue
        if tuple(got.shape) != tuple(want.shape):
            probs.append("key %r has shape %s, expected %s" % (k, list(got.shape), list(want.shape)))
        elif got.dtype != want.dtype:
            probs.append("key %r has dtype %s, expected %s" % (k, _dtype_name(got.dtype), _dtype_name(want.dtype)))
    return probs


def _dtype_name(dtype):
    return _DTYPE_NAMES.get(dtype, str(dtype).replace("torch.", ""))


def _refuse_mismatch(what, probs, hint=""):
    shown = probs[:6] + (["and %d more" % (len(probs) - 6)] if len(probs) > 6 else [])
    raise ExportError("%s: %s%s" % (what, "; ".join(shown), hint))


def _prefix_hint(sd, ref):
    """When the keys of sd and ref differ only by a prefix, the flag that fixes it; else ""."""
    if len(sd) != len(ref) or not sd:
        return ""
    for keys, other, flag in ((list(ref), set(sd), "--add-prefix"), (list(sd), set(ref), "--strip-prefix")):
        k0 = keys[0]
        for o in other:
            if k0 != o and k0.endswith(o):
                prefix = k0[:len(k0) - len(o)]
                if all(k.startswith(prefix) and k[len(prefix):] in other for k in keys):
                    return " (the keys differ only by the prefix %r: pass %s %s)" % (prefix, flag, prefix)
    return ""


def _rekey(sd, key_prefix, path):
    """sd with key_prefix applied: ("strip", p) removes p from every key (all must start with
    it), ("add", p) puts p before every key."""
    if not key_prefix:
        return sd
    how, prefix = key_prefix
    if how == "add":
        return {prefix + k: v for k, v in sd.items()}
    missing = [k for k in sd if not k.startswith(prefix)]
    if missing:
        raise ExportError("--strip-prefix %s: %s has keys without that prefix: %s" % (
            prefix, path, ", ".join(repr(k) for k in missing[:4])))
    return {k[len(prefix):]: v for k, v in sd.items()}


def load_checkpoints(models, paths, trust=False, describe="", key_prefix=None):
    """Reads every checkpoint (see read_state_dict), checks each against models[0]'s state dict
    (the same keys, shapes and dtypes), all before loading any, then loads file i into models[i].
    key_prefix: ("strip", p) or ("add", p), applied to every file's keys first."""
    ref = models[0].state_dict()
    sds = []
    for path in paths:
        sd = _rekey(read_state_dict(path, trust), key_prefix, path)
        probs = _state_dict_problems(sd, ref)
        if probs:
            hint = _prefix_hint(sd, ref)
            if all(k.startswith("module.") for k in sd) and not any(k.startswith("module.") for k in ref):
                hint = " (saved from nn.DataParallel or DistributedDataParallel? save model.module.state_dict(), " \
                       "or pass --strip-prefix module.)"
            _refuse_mismatch("--state-dict %s does not fit %s" % (path, describe), probs, hint)
        sds.append(sd)
    for m, sd in zip(models, sds):
        m.load_state_dict(sd, strict=True)


def _construct(cls, kwargs, n, seed):
    """n instances of cls(**kwargs) in eval mode, instance i made right after seeding seed + i."""
    models = []
    for i in range(n):
        seed_everything(seed + i)
        try:
            m = cls(**kwargs)
        except Exception as e:
            raise ExportError("%s(**%s) failed: %s: %s" % (cls.__name__, json.dumps(kwargs), type(e).__name__, e))
        if not isinstance(m, nn.Module):
            raise ExportError("%s(**%s) returned a %s, not a torch.nn.Module" % (
                cls.__name__, json.dumps(kwargs), type(m).__name__))
        m.eval()
        models.append(m)
    return models


def export(cls, kwargs, n, input_specs, shared_input, seed, out_dir, state_dicts=(), trust=False,
           train_batchnorm=False, key_prefix=None, dynamic=None):
    """Exports n instances of cls(**kwargs) with inputs generated from input_specs; with
    state_dicts (checkpoint files, one per model), instance i holds file i's weights. Returns
    the graph dict. See the module docstring."""
    if state_dicts and n is not None and n != len(state_dicts):
        raise ExportError("--n %d disagrees with the %d --state-dict files (leave --n out)" % (n, len(state_dicts)))
    if state_dicts:
        n = len(state_dicts)
    if n < 1:
        raise ExportError("--n must be >= 1, got %d" % n)
    specs = {s.name: s for s in input_specs}
    if len(specs) != len(input_specs):
        raise ExportError("an --input name is given twice")
    with _Deterministic():
        models = _construct(cls, kwargs, n, seed)
        if state_dicts:
            load_checkpoints(models, state_dicts, trust, "%s(**%s)" % (cls.__name__, json.dumps(kwargs)), key_prefix)
        fwd_params, input_names, concrete = _bind_forward(type(models[0]), list(specs), "--input")
        gen = torch.Generator().manual_seed(seed)
        inputs = {name: specs[name].generate(gen, [] if shared_input else [n]) for name in input_names}
        return _export(models, inputs, shared_input, out_dir, fwd_params, input_names, concrete, "--input",
                       train_batchnorm, dynamic)[0]


def export_modules(models, inputs, out_dir, shared_input=False, train_batchnorm=False, dynamic=None):
    """Exports a list of N nn.Module instances of one architecture (the same class and
    constructor arguments; only their weights differ) to out_dir, as the command line does.

    inputs maps each forward argument (by name; arguments with defaults may be left out and
    are fixed at their defaults) to a tensor on the CPU: [N, ...] holding model i's input at
    [i] (the per-model inputs of the graph), or, with shared_input, one tensor that every model
    gets. The expected outputs are the N modules run one by one on these inputs, in eval mode.
    The modules' training flags and torch's thread and determinism settings are restored
    afterwards. train_batchnorm: BatchNorm layers normalise with the statistics of each model's
    batch (training mode; their running statistics are restored afterwards). dynamic: {input:
    [dim, ...]}, the dims of a model's input (dim 0 of a per-model input is the batch) besides
    the batch whose size may change from run to run, e.g. {"idx": [1]} for a sequence length.
    Returns the graph dict; raises ExportError for what it cannot export."""
    return _export_modules(models, inputs, out_dir, shared_input, train_batchnorm, dynamic)[0]


def trace_modules(models, inputs, shared_input=False, train_batchnorm=False, dynamic=None):
    """export_modules in memory: returns the graph dict (naming "weights.safetensors") and the
    params stacked [N, ...] by name, the content of that file; writes nothing and does not run
    the reference outputs."""
    return _export_modules(models, inputs, None, shared_input, train_batchnorm, dynamic)


def _export_modules(models, inputs, out_dir, shared_input, train_batchnorm, dynamic=None):
    """export_modules, or trace_modules with out_dir None; returns the graph and its weights."""

    if isinstance(models, nn.Module) or not isinstance(models, (list, tuple)) or not models:
        raise ExportError("models must be a non-empty list of torch.nn.Module instances")
    for i, m in enumerate(models):
        if not isinstance(m, nn.Module):
            raise ExportError("models[%d] is a %s, not a torch.nn.Module" % (i, type(m).__name__))
        if type(m) is not type(models[0]):
            raise ExportError("models[%d] is a %s, models[0] a %s: widejit needs one architecture" % (
                i, type(m).__name__, type(models[0]).__name__))
    ref = models[0].state_dict()
    for i, m in enumerate(models[1:], 1):
        probs = _state_dict_problems(m.state_dict(), ref)
        if probs:
            _refuse_mismatch("models[%d] does not have models[0]'s parameters and buffers" % i, probs)
        if repr(m) != repr(models[0]):
            a, b = next((a, b) for a, b in zip(repr(models[0]).splitlines() + [""], repr(m).splitlines() + [""]) if a != b)
            raise ExportError("models[%d] is built differently from models[0]: %r vs %r (only the weights may differ)" % (
                i, b.strip(), a.strip()))
    n = len(models)
    if not isinstance(inputs, dict) or not inputs:
        raise ExportError("inputs must be a non-empty dict of forward argument name -> tensor")
    feed = {}
    for name, t in inputs.items():
        if not isinstance(t, torch.Tensor):
            raise ExportError("inputs[%r] is a %s, not a torch.Tensor" % (name, type(t).__name__))
        if t.dtype not in _DTYPE_NAMES:
            raise ExportError("inputs[%r] has dtype %s, which widejit does not store" % (name, t.dtype))
        if not shared_input and (t.dim() == 0 or t.shape[0] != n):
            raise ExportError("inputs[%r] has shape %s: per-model inputs are [N, ...] with N = %d models, input i "
                              "for model i (stack them with widejit.pack, or pass shared_input=True to give every "
                              "model the same tensor)" % (name, list(t.shape), n))
        feed[name] = t.detach().cpu().contiguous()
    fwd_params, input_names, concrete = _bind_forward(type(models[0]), list(feed), "inputs")
    training = [m.training for m in models]
    try:
        with _Deterministic():
            for m in models:
                m.eval()
            return _export(models, feed, shared_input, out_dir, fwd_params, input_names, concrete, "inputs",
                           train_batchnorm, dynamic)
    finally:
        for m, mode in zip(models, training):
            m.train(mode)


def _time_major(model):
    """Whether a module reads its input with the batch in dim 1 (an RNN or attention without
    batch_first): the batch of such graphs is not dim 0, so growing dim 0 would mark sizes that
    follow the sequence as following the batch."""
    for m in model.modules():
        if isinstance(m, (nn.RNNBase, nn.MultiheadAttention)) and not m.batch_first:
            return True
    return False


def _values_at_next_batch(gm, feed, is_input):
    """Every node's value when the traced graph runs with one more row in dim 0 of each input
    (the batch, as the graph's loader assumes by default), to tell which folded sizes follow the
    batch (x.size(0) in expand(B, -1, -1)); None when it does not run so."""
    grown = [torch.cat([t, t[:1]]) if inp and isinstance(t, torch.Tensor) and t.dim() > 0 else t
             for t, inp in zip(feed, is_input)]
    rec = _Recorder(gm)
    try:
        with torch.no_grad():
            rec.run(*grown)
    except Exception:
        return None
    return rec.values


def _check_dynamic(dynamic, inputs, shared_input, flag):
    """dynamic ({input: [dim, ...]}, dims of a model's input) checked against the inputs, with
    negative dims resolved; refuses the batch (dim 0, dynamic already) and dims out of range."""
    if not dynamic:
        return {}
    if not isinstance(dynamic, dict):
        raise ExportError("dynamic must be a dict of input name -> list of dims, got %r" % (dynamic,))
    out = {}
    for name, dims in dynamic.items():
        if name not in inputs:
            raise ExportError("dynamic names %r, which is not one of the %s (%s)" % (name, flag, ", ".join(inputs)))
        shape = list(inputs[name].shape) if shared_input else list(inputs[name].shape[1:])
        dims = [dims] if isinstance(dims, int) else list(dims)
        resolved = []
        for d in dims:
            if not isinstance(d, int) or isinstance(d, bool) or not -len(shape) <= d < len(shape):
                raise ExportError("dynamic %s:%r: %s %r has shape %s, so a dim is 0 to %d" % (
                    name, d, flag, name, shape, len(shape) - 1))
            d %= len(shape)
            if d == 0:
                raise ExportError("dynamic %s:0: dim 0 is the batch, dynamic already" % name)
            if d not in resolved:
                resolved.append(d)
        out[name] = sorted(resolved)
    return out


def _values_with_longer_dim(gm, feed, k, d, root_name):
    """Every node's value when the traced graph runs with input k one longer in dim d (its
    first slice repeated), to tell which folded sizes follow that dynamic dim."""
    grown = list(feed)
    t = feed[k]
    grown[k] = torch.cat([t, t.narrow(d, 0, 1)], dim=d)
    rec = _Recorder(gm)
    try:
        with torch.no_grad():
            rec.run(*grown)
    except Exception as e:
        raise ExportError("%s does not run with dim %d of its input %d one longer (%s: %s): that dim cannot be dynamic" % (
            root_name, d, k, type(e).__name__, _first_line(e)))
    return rec.values


class _BatchNormTraining:
    """With train_batchnorm, puts every BatchNorm of the (eval mode) models in training mode for
    the export and restores their running statistics afterwards: the forwards the export runs
    update them, and a model the caller gave is not to change."""

    def __init__(self, models, on):
        self.norms = [m for model in models for m in model.modules()
                      if on and isinstance(m, nn.modules.batchnorm._BatchNorm)]

    def __enter__(self):
        self.saved = [(m, m.training, {k: b.clone() for k, b in m.named_buffers(recurse=False) if b is not None})
                      for m in self.norms]
        for m in self.norms:
            m.train()
        return self

    def __exit__(self, *exc):
        with torch.no_grad():
            for m, mode, buffers in self.saved:
                m.train(mode)
                for k, b in buffers.items():
                    getattr(m, k).copy_(b)
        return False


def _export(models, inputs, shared_input, out_dir, fwd_params, input_names, concrete, flag, train_batchnorm=False,
            dynamic=None):
    """Traces models[0], maps it to a widejit graph and writes out_dir (see the module
    docstring); inputs holds a tensor per name of input_names, [N, ...] unless shared_input.
    Returns the graph and the stacked params by name; with out_dir None, writes nothing and
    skips the reference outputs. train_batchnorm: BatchNorm modules normalise with their batch's
    statistics."""
    with _BatchNormTraining(models, train_batchnorm):
        if _half_on_cpu(models, inputs):
            return _export_half_as_fp32(models, inputs, shared_input, out_dir, fwd_params, input_names, concrete,
                                        flag, train_batchnorm, dynamic)
        return _export_traced(models, inputs, shared_input, out_dir, fwd_params, input_names, concrete, flag,
                              train_batchnorm, dynamic)


def _half_on_cpu(models, inputs):
    """Whether a model or its inputs hold float16 tensors on the CPU, which has no float16
    matmul, convolution or norm kernels in PyTorch 1.13."""
    tensors = list(models[0].parameters()) + list(models[0].buffers()) + list(inputs.values())
    return any(t.dtype == torch.float16 and t.device.type == "cpu" for t in tensors)


def _export_half_as_fp32(models, inputs, shared_input, out_dir, fwd_params, input_names, concrete, flag,
                         train_batchnorm, dynamic):
    """_export of a float16 model on the CPU: its float32 copy (the same rounded weights and
    inputs) is traced and run, as widejit computes float16 graphs (fp32 arithmetic on the fp16
    values); the graph and the weights get float16 back and the expected outputs are the fp32
    ones rounded to float16. A model whose floats are not all float16, or whose forward casts,
    is refused: its fp32 copy would not compute what it does."""
    root_name = type(models[0]).__name__
    floats = {t.dtype for m in models for t in list(m.parameters()) + list(m.buffers()) if t.is_floating_point()}
    floats |= {t.dtype for t in inputs.values() if t.is_floating_point()}
    if floats != {torch.float16}:
        raise ExportError("%s mixes float16 with %s; PyTorch's CPU has no float16 matmul or convolution, so a "
                          "float16 model is exported as its float32 copy, which needs every float tensor in "
                          "float16 (model.half() and float16 inputs)" % (
                              root_name, ", ".join(sorted(_dtype_name(d) for d in floats - {torch.float16}))))
    wide = []
    for m in models:
        c = copy.deepcopy(m).float()
        c.train(m.training)
        wide.append(c)
    wide_in = {k: v.float() if v.dtype == torch.float16 else v for k, v in inputs.items()}
    graph, weights = _export_traced(wide, wide_in, shared_input, None, fwd_params, input_names, concrete, flag,
                                    train_batchnorm, dynamic, half_copy=True)
    for entry in graph["inputs"] + graph["params"]:
        if entry["dtype"] == "float32":
            entry["dtype"] = "float16"
    weights = {k: v.half() if v.dtype == torch.float32 else v for k, v in weights.items()}
    if out_dir is None:
        return graph, weights
    expected = _reference_outputs(wide, wide_in, shared_input, input_names, graph["outputs"])
    _write_export(out_dir, graph, weights, inputs,
                  {k: v.half() if v.dtype == torch.float32 else v for k, v in expected.items()})
    return graph, weights


def _export_traced(models, inputs, shared_input, out_dir, fwd_params, input_names, concrete, flag, train_batchnorm,
                   dynamic=None, half_copy=False):
    root_name = type(models[0]).__name__
    n = len(models)
    dynamic = _check_dynamic(dynamic, inputs, shared_input, flag)

    def model_inputs(i):
        return [inputs[name] if shared_input else inputs[name][i] for name in input_names]

    with torch.no_grad():
        try:
            recognized, direct_out = _recognize(models[0], lambda m: _call(m, input_names, model_inputs(0)))
        except Exception as e:
            raise ExportError("%s.forward failed on the sample inputs (do the %s shapes and dtypes fit the "
                              "model?): %s: %s" % (root_name, flag, type(e).__name__, _first_line(e)))

    tracer = _Tracer(leaves=[m for m in models[0].modules() if id(m) in recognized])
    tracer.sample = dict(concrete)
    tracer.sample.update(zip(input_names, model_inputs(0)))
    try:
        fx_graph = tracer.trace(models[0], concrete_args=concrete or None)
    except Exception as e:
        line = _exception_line(e)
        raise ExportError("torch.fx could not trace %s%s: %s: %s (widejit needs a forward without control flow "
                          "that depends on tensor values)" % (root_name, " at " + line if line else "",
                                                              type(e).__name__, _first_line(e)))
    gm = torch.fx.GraphModule(tracer.root, fx_graph, root_name)
    # torch.fx guards arguments fixed at their defaults with asserts; the graph is static anyway.
    for nd in list(gm.graph.nodes):
        if nd.op == "call_function" and (nd.target is torch._assert or
                                         getattr(nd.target, "__name__", "") in _IGNORED_FUNCTIONS):
            gm.graph.erase_node(nd)
    gm.graph.eliminate_dead_code()  # also drops e.g. the unused half of `out, _ = self.rnn(x)`
    gm.recompile()
    if half_copy:  # _export_half_as_fp32: a cast in the fp32 copy would not cast what the model casts
        for nd in gm.graph.nodes:
            if nd.op == "call_method" and nd.target in _CAST_METHODS:
                line = _user_line(getattr(nd, "stack_trace", None))
                raise ExportError("%s is float16 and its forward casts (Tensor.%s%s); PyTorch's CPU has no float16 "
                                  "matmul or convolution, so widejit exports a float16 model as its float32 copy, "
                                  "where the cast would mean something else: export the model in bfloat16 or "
                                  "float32" % (root_name, nd.target, " at " + line if line else ""))

    recorder = _Recorder(gm)
    with torch.no_grad():
        placeholders = [nd for nd in gm.graph.nodes if nd.op == "placeholder"]
        feed = []
        for p, nd in zip(fwd_params, placeholders):
            feed.append(inputs[p.name][0] if (p.name in inputs and not shared_input) else
                        inputs[p.name] if p.name in inputs else concrete[p.name])
        try:
            traced_out = recorder.run(*feed)
        except Exception as e:
            raise ExportError("running the traced graph of %s failed: %s: %s" % (root_name, type(e).__name__, _first_line(e)))
    traced_flat = _flatten_values(traced_out, keep_none=False)
    direct_flat = _flatten_values(direct_out, keep_none=False)
    if len(traced_flat) != len(direct_flat) or not all(
            isinstance(a, torch.Tensor) and _same_values(a, b) for a, b in zip(traced_flat, direct_flat)):
        raise ExportError("the traced graph of %s does not reproduce its forward on the sample inputs "
                          "(control flow or randomness that torch.fx cannot see?)" % root_name)

    builder = _Builder(gm, recorder.values, models, root_name)
    builder.recognized = recognized
    builder.train_batchnorm = train_batchnorm
    if not _time_major(models[0]):
        builder.values_b1 = _values_at_next_batch(gm, feed, [p.name in inputs for p in fwd_params])
    for name, dims in dynamic.items():
        k = [p.name for p in fwd_params].index(name)
        for d in dims:
            builder.values_dyn[(name, d)] = _values_with_longer_dim(gm, feed, k, d, root_name)
            builder.dyn_sizes[(name, d)] = feed[k].shape[d]
    graph_inputs = []
    for p, nd in zip(fwd_params, placeholders):
        if p.name in inputs:
            builder.kind[nd] = ("tensor", p.name)
            t = inputs[p.name]
            graph_inputs.append({"name": p.name, "shape": list(t.shape) if shared_input else list(t.shape[1:]),
                                 "dtype": _DTYPE_NAMES[t.dtype], "per_model": not shared_input})
            if dynamic.get(p.name):
                graph_inputs[-1]["dynamic_dims"] = dynamic[p.name]
        else:
            builder.kind[nd] = ("const", concrete[p.name])
    output_node = None
    for nd in gm.graph.nodes:
        if nd.op == "output":
            output_node = nd
            continue
        builder.visit(nd)
    output_names = builder.outputs(output_node.args[0], recorder.values.get(output_node.args[0], traced_out)
                                   if isinstance(output_node.args[0], torch.fx.Node) else traced_out)
    if not output_names:
        raise ExportError("%s.forward returns no tensor" % root_name)
    if len(set(output_names)) != len(output_names):
        raise ExportError("%s.forward returns the same tensor twice (%s); return it once" % (
            root_name, ", ".join(output_names)))

    params = [{"name": name, "shape": list(t.shape), "dtype": _DTYPE_NAMES[t.dtype]}
              for name, t in builder.params.items()]
    all_names = [i["name"] for i in graph_inputs] + [p["name"] for p in params] + [nd["name"] for nd in builder.nodes]
    seen = set()
    for name in all_names:
        if name in seen:
            raise ExportError("%s: the name %r is used twice (an input, parameter or node); rename it" % (root_name, name))
        seen.add(name)

    graph = {"format": FORMAT, "n": n, "inputs": graph_inputs, "params": params, "nodes": builder.nodes,
             "outputs": output_names, "weights": "weights.safetensors"}
    weights = builder.stacked_params()
    if out_dir is None:
        return graph, weights

    _write_export(out_dir, graph, weights, inputs,
                  _reference_outputs(models, inputs, shared_input, input_names, output_names))
    return graph, weights


def _reference_outputs(models, inputs, shared_input, input_names, output_names):
    """Every model on its own inputs, one by one: the outputs stacked [N, ...] by name."""
    expected = [[] for _ in output_names]
    with torch.no_grad():
        for i, m in enumerate(models):
            feed = [inputs[name] if shared_input else inputs[name][i] for name in input_names]
            flat = _flatten_values(_call(m, input_names, feed), keep_none=False)
            if len(flat) != len(output_names):
                raise ExportError("model %d returned %d tensors, the graph has %d outputs" % (i, len(flat), len(output_names)))
            for k, t in enumerate(flat):
                expected[k].append(t.detach().cpu())
    return {name: torch.stack(ts) for name, ts in zip(output_names, expected)}


def _write_export(out_dir, graph, weights, inputs, expected):
    os.makedirs(out_dir, exist_ok=True)
    with open(os.path.join(out_dir, "graph.json"), "w") as f:
        f.write(_dump_json(graph))
    safetensors_io.write(os.path.join(out_dir, "weights.safetensors"), weights)
    safetensors_io.write(os.path.join(out_dir, "inputs.safetensors"), inputs)
    safetensors_io.write(os.path.join(out_dir, "expected.safetensors"), expected)


def parse_dynamic_args(args):
    """--dynamic NAME:DIM flags as {name: [dim, ...]}."""
    out = {}
    for a in args:
        name, _, dim = a.rpartition(":")
        try:
            d = int(dim)
        except ValueError:
            name = ""
        if not name:
            raise ExportError("--dynamic %s: expected NAME:DIM, e.g. --dynamic idx:1" % a)
        out.setdefault(name, []).append(d)
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(prog="export.py", description=__doc__.split("\n\n")[0])
    ap.add_argument("--module", required=True, help="path/to/file.py:ClassName, or package.module:name of an "
                    "nn.Module class or a factory function (torchvision.models:resnet18)")
    ap.add_argument("--kwargs", default="{}", help="JSON object of constructor arguments")
    ap.add_argument("--n", type=int, help="number of models (instance i uses seed+i); with --state-dict, the "
                    "number of files (may be left out)")
    ap.add_argument("--state-dict", action="append", nargs="+", default=[], metavar="FILE.pt",
                    help="torch.save'd state dicts (or dicts holding one under 'state_dict' or 'model'); "
                    "repeatable, quoted globs expanded and sorted; model i gets file i")
    ap.add_argument("--trust-checkpoints", action="store_true",
                    help="unpickle --state-dict files in full (torch.load(weights_only=False)); only for files "
                    "you trust")
    prefix = ap.add_mutually_exclusive_group()
    prefix.add_argument("--strip-prefix", metavar="PREFIX", help="remove PREFIX from every --state-dict key "
                        "(module. of a DataParallel checkpoint)")
    prefix.add_argument("--add-prefix", metavar="PREFIX", help="put PREFIX before every --state-dict key (a bare "
                        "checkpoint loaded into a wrapper module holding the model as an attribute)")
    ap.add_argument("--train-batchnorm", action="store_true",
                    help="BatchNorm layers normalise with their batch's statistics (training mode), per model")
    ap.add_argument("--input", action="append", default=[], metavar="NAME=SHAPE[:DTYPE[:LOW:HIGH]]",
                    help="one per forward argument; shape per model, batch included")
    ap.add_argument("--dynamic", action="append", default=[], metavar="NAME:DIM",
                    help="a dim of input NAME besides the batch whose size may change from run to run (a sequence "
                    "length: --dynamic idx:1); repeatable")
    ap.add_argument("--shared-input", action="store_true", help="one input tensor shared by all N models")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", required=True, help="output directory")
    args = ap.parse_args(argv)
    if args.n is None and not args.state_dict:
        ap.error("the following arguments are required: --n (or --state-dict)")
    try:
        try:
            kwargs = json.loads(args.kwargs)
        except ValueError as e:
            raise ExportError("--kwargs: not valid JSON: %s" % e)
        if not isinstance(kwargs, dict):
            raise ExportError("--kwargs: expected a JSON object, e.g. '{\"hidden\": 128}'")
        specs = [InputSpec.parse(s) for s in args.input]
        dynamic = parse_dynamic_args(args.dynamic)
        state_dicts = expand_state_dict_args([p for group in args.state_dict for p in group])
        cls = load_class(args.module)
        if (args.strip_prefix or args.add_prefix) and not state_dicts:
            raise ExportError("--strip-prefix and --add-prefix apply to --state-dict files; none given")
        key_prefix = ("strip", args.strip_prefix) if args.strip_prefix else ("add", args.add_prefix) if args.add_prefix \
            else None
        graph = export(cls, kwargs, args.n, specs, args.shared_input, args.seed, args.out, state_dicts,
                       args.trust_checkpoints, args.train_batchnorm, key_prefix, dynamic)
    except ExportError as e:
        print("export.py: error: %s" % e, file=sys.stderr)
        return 1
    print("export.py: wrote %s (%d nodes, %d params, outputs %s)" % (
        args.out, len(graph["nodes"]), len(graph["params"]), ", ".join(graph["outputs"])))
    return 0


if __name__ == "__main__":
    sys.exit(main())
