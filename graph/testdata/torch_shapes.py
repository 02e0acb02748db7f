"""Regenerate torch_shapes.json: output shapes and dtypes that PyTorch itself computes for
single ops, the reference for graph's shape inference (shapes_test.go).

    /usr/bin/python3 graph/testdata/torch_shapes.py > graph/testdata/torch_shapes.json

Each case: op and attrs as in docs/graph-format.md, the per-model input types, the params the
module holds (role -> shape), and the output types PyTorch produced.
"""
import json
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
DT = {torch.float32: "float32", torch.float64: "float64", torch.int64: "int64",
      torch.int32: "int32", torch.bool: "bool", torch.float16: "float16"}


def t(shape, dtype=torch.float32, high=3):
    if dtype.is_floating_point:
        return torch.randn(shape, dtype=dtype)
    if dtype == torch.bool:
        return torch.zeros(shape, dtype=torch.bool)
    return torch.randint(0, high, shape, dtype=dtype)


cases = []


def flat(out):
    if isinstance(out, (tuple, list)):
        res = []
        for o in out:
            res.extend(flat(o))
        return res
    if out is None:
        return []
    return [out]


def case(name, op, attrs, inputs, fn, module=None, tuple_out=False):
    """inputs: list of tensors, numbers, None or lists of tensors."""
    out = fn(*inputs)
    outs = flat(out)
    params = {}
    if module is not None:
        for k, v in list(module.named_parameters()) + list(module.named_buffers()):
            if k.endswith("num_batches_tracked"):
                continue
            params[k] = list(v.shape)

    def desc(x):
        if isinstance(x, torch.Tensor):
            return {"shape": list(x.shape), "dtype": DT[x.dtype]}
        if isinstance(x, list):
            return [desc(e) for e in x]
        return x  # number or None
    cases.append({
        "name": name, "op": op, "attrs": attrs, "inputs": [desc(x) for x in inputs], "params": params,
        "outputs": [{"shape": list(o.shape), "dtype": DT[o.dtype]} for o in outs],
        "tuple": tuple_out or isinstance(out, (tuple, list)),
    })


def mod(name, op, cls, attrs, inputs, ctor=None, call=None, tuple_out=False):
    m = cls(**(ctor if ctor is not None else attrs)).eval()
    with torch.no_grad():
        case(name, op, attrs, inputs, call(m) if call else m, module=m, tuple_out=tuple_out)


mod("linear", "linear", nn.Linear, {"in_features": 8, "out_features": 5}, [t([3, 8])])
mod("linear_1d_nobias", "linear", nn.Linear, {"in_features": 8, "out_features": 5, "bias": False}, [t([8])])
mod("linear_3d", "linear", nn.Linear, {"in_features": 8, "out_features": 5}, [t([2, 3, 8])])
mod("embedding", "embedding", nn.Embedding, {"num_embeddings": 10, "embedding_dim": 4, "padding_idx": -1}, [t([2, 5], torch.int64, 10)])
mod("conv1d", "conv1d", nn.Conv1d, {"in_channels": 4, "out_channels": 6, "kernel_size": 3, "stride": 2, "padding": 1}, [t([2, 4, 11])])
mod("conv1d_unbatched", "conv1d", nn.Conv1d, {"in_channels": 4, "out_channels": 6, "kernel_size": 3}, [t([4, 11])])
mod("conv2d_same_even", "conv2d", nn.Conv2d, {"in_channels": 4, "out_channels": 6, "kernel_size": 4, "padding": "same", "dilation": 2, "groups": 2}, [t([1, 4, 9, 9])])
mod("conv2d_valid", "conv2d", nn.Conv2d, {"in_channels": 4, "out_channels": 6, "kernel_size": [3, 2], "stride": [2, 1], "padding": "valid", "bias": False}, [t([1, 4, 9, 9])])
mod("conv2d_depthwise", "conv2d", nn.Conv2d, {"in_channels": 4, "out_channels": 8, "kernel_size": 3, "padding": 1, "groups": 4}, [t([2, 4, 6, 5])])
mod("conv3d", "conv3d", nn.Conv3d, {"in_channels": 2, "out_channels": 3, "kernel_size": [1, 3, 3], "padding": [0, 1, 1], "stride": 2}, [t([1, 2, 5, 6, 7])])
mod("conv_transpose1d", "conv_transpose1d", nn.ConvTranspose1d, {"in_channels": 4, "out_channels": 6, "kernel_size": 3, "stride": 2, "padding": 1, "output_padding": 1}, [t([2, 4, 7])])
mod("conv_transpose2d", "conv_transpose2d", nn.ConvTranspose2d, {"in_channels": 4, "out_channels": 6, "kernel_size": [3, 2], "groups": 2, "dilation": 2, "stride": [1, 2]}, [t([1, 4, 5, 6])])
mod("conv_transpose3d", "conv_transpose3d", nn.ConvTranspose3d, {"in_channels": 4, "out_channels": 2, "kernel_size": [2, 3, 3], "groups": 2, "stride": [1, 2, 2], "padding": [0, 1, 1], "output_padding": [0, 1, 0]}, [t([1, 4, 3, 4, 5])])
mod("conv_transpose2d_unbatched", "conv_transpose2d", nn.ConvTranspose2d, {"in_channels": 3, "out_channels": 5, "kernel_size": 3, "stride": 3, "dilation": 2, "output_padding": 2}, [t([3, 4, 5])])
mod("conv3d_same", "conv3d", nn.Conv3d, {"in_channels": 4, "out_channels": 2, "kernel_size": [2, 3, 4], "padding": "same", "dilation": [1, 2, 1], "groups": 2}, [t([1, 4, 3, 5, 6])])
mod("batch_norm1d_2d", "batch_norm1d", nn.BatchNorm1d, {"num_features": 6}, [t([4, 6])])
mod("batch_norm1d_3d", "batch_norm1d", nn.BatchNorm1d, {"num_features": 6, "affine": False}, [t([4, 6, 3])])
mod("batch_norm2d", "batch_norm2d", nn.BatchNorm2d, {"num_features": 3, "eps": 1e-3}, [t([2, 3, 4, 4])])
mod("batch_norm3d", "batch_norm3d", nn.BatchNorm3d, {"num_features": 3, "track_running_stats": False}, [t([2, 3, 2, 2, 2])])
mod("layer_norm", "layer_norm", nn.LayerNorm, {"normalized_shape": [4, 5]}, [t([2, 3, 4, 5])])
mod("layer_norm_noaffine", "layer_norm", nn.LayerNorm, {"normalized_shape": 5, "elementwise_affine": False}, [t([2, 5])])
mod("group_norm", "group_norm", nn.GroupNorm, {"num_groups": 2, "num_channels": 6}, [t([2, 6, 3])])
mod("instance_norm1d", "instance_norm1d", nn.InstanceNorm1d, {"num_features": 3}, [t([2, 3, 7])])
mod("instance_norm2d", "instance_norm2d", nn.InstanceNorm2d, {"num_features": 3, "affine": True}, [t([3, 4, 4])])
if hasattr(nn, "RMSNorm"):
    mod("rms_norm", "rms_norm", nn.RMSNorm, {"normalized_shape": [4]}, [t([2, 3, 4])])
mod("mha_self_batch_first", "multihead_attention", nn.MultiheadAttention,
    {"embed_dim": 8, "num_heads": 2, "batch_first": True}, [t([2, 5, 8])] * 3,
    ctor={"embed_dim": 8, "num_heads": 2, "batch_first": True}, tuple_out=True)
mod("mha_cross_kvdim", "multihead_attention", nn.MultiheadAttention,
    {"embed_dim": 8, "num_heads": 2, "kdim": 6, "vdim": 7, "add_bias_kv": True, "add_zero_attn": True, "average_attn_weights": False},
    [t([5, 2, 8]), t([4, 2, 6]), t([4, 2, 7]), t([2, 4], torch.bool), t([5, 4], torch.bool)],
    ctor={"embed_dim": 8, "num_heads": 2, "kdim": 6, "vdim": 7, "add_bias_kv": True, "add_zero_attn": True},
    call=lambda m: (lambda q, k, v, kpm, am: m(q, k, v, key_padding_mask=kpm, attn_mask=am, average_attn_weights=False)), tuple_out=True)
mod("mha_unbatched_noweights", "multihead_attention", nn.MultiheadAttention,
    {"embed_dim": 8, "num_heads": 4, "need_weights": False, "bias": False}, [t([5, 8]), t([3, 8]), t([3, 8])],
    ctor={"embed_dim": 8, "num_heads": 4, "bias": False},
    call=lambda m: (lambda q, k, v: m(q, k, v, need_weights=False)), tuple_out=True)
mod("lstm", "lstm", nn.LSTM, {"input_size": 3, "hidden_size": 4, "num_layers": 2, "batch_first": True}, [t([2, 5, 3])], tuple_out=True)
mod("lstm_state", "lstm", nn.LSTM, {"input_size": 3, "hidden_size": 4}, [t([5, 2, 3]), t([1, 2, 4]), t([1, 2, 4])],
    call=lambda m: (lambda x, h, c: m(x, (h, c))), tuple_out=True)
mod("gru_unbatched", "gru", nn.GRU, {"input_size": 3, "hidden_size": 4, "bias": False}, [t([5, 3])], tuple_out=True)
mod("rnn_relu_h0", "rnn", nn.RNN, {"input_size": 3, "hidden_size": 4, "nonlinearity": "relu", "num_layers": 3}, [t([5, 2, 3]), t([3, 2, 4])], tuple_out=True)
mod("lstm_bidirectional_state", "lstm", nn.LSTM, {"input_size": 3, "hidden_size": 4, "num_layers": 2, "bidirectional": True, "batch_first": True},
    [t([2, 5, 3]), t([4, 2, 4]), t([4, 2, 4])], call=lambda m: (lambda x, h, c: m(x, (h, c))), tuple_out=True)
mod("gru_bidirectional_unbatched", "gru", nn.GRU, {"input_size": 3, "hidden_size": 4, "bidirectional": True, "bias": False},
    [t([5, 3])], tuple_out=True)
mod("max_pool1d_ceil", "max_pool1d", nn.MaxPool1d, {"kernel_size": 3, "stride": 2, "padding": 1, "ceil_mode": True}, [t([2, 3, 10])])
mod("max_pool2d_dil_ceil", "max_pool2d", nn.MaxPool2d, {"kernel_size": 3, "stride": 2, "dilation": 2, "ceil_mode": True}, [t([1, 2, 9, 10])])
mod("max_pool2d_default_stride", "max_pool2d", nn.MaxPool2d, {"kernel_size": [2, 3]}, [t([2, 7, 8])])
mod("avg_pool2d", "avg_pool2d", nn.AvgPool2d, {"kernel_size": 3, "stride": 2, "padding": 1, "ceil_mode": True, "count_include_pad": False}, [t([1, 2, 7, 8])])
mod("avg_pool1d", "avg_pool1d", nn.AvgPool1d, {"kernel_size": 2}, [t([2, 3, 5])])
mod("adaptive_avg_pool2d", "adaptive_avg_pool2d", nn.AdaptiveAvgPool2d, {"output_size": [3, None]}, [t([1, 2, 7, 8])])
mod("max_pool3d", "max_pool3d", nn.MaxPool3d, {"kernel_size": [2, 3, 3], "stride": [1, 2, 2], "padding": [1, 1, 0], "dilation": [1, 1, 2], "ceil_mode": True}, [t([1, 2, 4, 9, 10])])
mod("avg_pool3d", "avg_pool3d", nn.AvgPool3d, {"kernel_size": 3, "stride": 2, "padding": 1, "ceil_mode": True, "count_include_pad": False, "divisor_override": 5}, [t([2, 3, 5, 7, 6])])
mod("adaptive_avg_pool3d", "adaptive_avg_pool3d", nn.AdaptiveAvgPool3d, {"output_size": [2, None, 3]}, [t([2, 5, 7, 8])])
mod("adaptive_avg_pool1d", "adaptive_avg_pool1d", nn.AdaptiveAvgPool1d, {"output_size": 4}, [t([2, 3, 9])])
mod("prelu", "prelu", nn.PReLU, {"num_parameters": 3}, [t([2, 3, 4])])
mod("softplus", "softplus", nn.Softplus, {"beta": 2.0}, [t([2, 3])])
mod("gelu_tanh", "gelu", nn.GELU, {"approximate": "tanh"}, [t([2, 3])])
mod("log_softmax", "log_softmax", nn.LogSoftmax, {"dim": -1}, [t([2, 3])])
mod("dropout", "dropout", nn.Dropout, {"p": 0.2}, [t([2, 3])])

case("flatten", "flatten", {"start_dim": 1}, [t([2, 3, 4, 5])], lambda x: torch.flatten(x, 1))
case("flatten_end", "flatten", {"start_dim": 0, "end_dim": -2}, [t([2, 3, 4, 5])], lambda x: torch.flatten(x, 0, -2))
case("view", "view", {"shape": [-1, 6]}, [t([2, 3, 4])], lambda x: x.view(-1, 6))
case("reshape", "reshape", {"shape": [4, -1, 2]}, [t([2, 3, 4])], lambda x: x.reshape(4, -1, 2))
case("permute", "permute", {"dims": [2, 0, -2]}, [t([2, 3, 4])], lambda x: x.permute(2, 0, -2))
case("transpose", "transpose", {"dim0": 0, "dim1": -1}, [t([2, 3, 4])], lambda x: x.transpose(0, -1))
case("cat", "cat", {"dim": -1}, [[t([2, 3]), t([2, 5])]], lambda xs: torch.cat(xs, -1))
case("stack", "stack", {"dim": 1}, [[t([2, 3]), t([2, 3]), t([2, 3])]], lambda xs: torch.stack(xs, 1))
case("stack_end", "stack", {"dim": -1}, [[t([2, 3]), t([2, 3])]], lambda xs: torch.stack(xs, -1))
case("chunk_uneven", "chunk", {"chunks": 3, "dim": 1}, [t([2, 10])], lambda x: torch.chunk(x, 3, 1), )
case("chunk_fewer", "chunk", {"chunks": 4}, [t([6, 2])], lambda x: torch.chunk(x, 4))
case("split_int", "split", {"split_size_or_sections": 4, "dim": -1}, [t([2, 10])], lambda x: torch.split(x, 4, -1))
case("split_list", "split", {"split_size_or_sections": [3, 7], "dim": 1}, [t([2, 10])], lambda x: torch.split(x, [3, 7], 1))
case("unsqueeze", "unsqueeze", {"dim": -1}, [t([2, 3])], lambda x: x.unsqueeze(-1))
case("squeeze_all", "squeeze", {}, [t([1, 3, 1, 2])], lambda x: x.squeeze())
case("squeeze_dim", "squeeze", {"dim": 2}, [t([1, 3, 1, 2])], lambda x: x.squeeze(2))
case("squeeze_noop", "squeeze", {"dim": 1}, [t([1, 3, 1, 2])], lambda x: x.squeeze(1))
case("mean_keepdim", "mean", {"dim": [0, -1], "keepdim": True}, [t([2, 3, 4])], lambda x: x.mean(dim=[0, -1], keepdim=True))
case("mean_all", "mean", {}, [t([2, 3, 4])], lambda x: x.mean())
case("sum_int", "sum", {"dim": 1}, [t([2, 3], torch.int32)], lambda x: x.sum(dim=1))
case("amax", "amax", {"dim": 1}, [t([2, 3, 4])], lambda x: x.amax(dim=1))
case("matmul_dot", "matmul", {}, [t([5]), t([5])], torch.matmul)
case("matmul_mv", "matmul", {}, [t([2, 3, 4]), t([4])], torch.matmul)
case("matmul_vm", "matmul", {}, [t([4]), t([2, 4, 3])], torch.matmul)
case("matmul_batch", "matmul", {}, [t([2, 1, 3, 4]), t([5, 4, 2])], torch.matmul)
case("add_broadcast", "add", {"alpha": 2}, [t([3, 1]), t([1, 4])], lambda a, b: torch.add(a, b, alpha=2))
case("add_int_float_scalar", "add", {}, [t([2, 3], torch.int64), 0.5], lambda a, b: a + b)
case("mul_int_promote", "mul", {}, [t([2, 3], torch.int32), t([3], torch.int64)], lambda a, b: a * b)
case("rsub_scalar", "sub", {}, [1, t([2, 3])], lambda a, b: a - b)
case("div_int", "div", {}, [t([2, 3], torch.int64), 2], lambda a, b: a / b)
case("div_floor", "div", {"rounding_mode": "floor"}, [t([2, 3], torch.int64), 2], lambda a, b: torch.div(a, b, rounding_mode="floor"))
case("pow_scalar", "pow", {}, [t([2, 3]), 2], lambda a, b: a ** b)
case("mul_bool_int", "mul", {}, [t([2, 3], torch.bool), 3], lambda a, b: a * b)
case("neg", "neg", {}, [t([2, 3])], torch.neg)
case("softmax", "softmax", {"dim": 0}, [t([2, 3])], lambda x: F.softmax(x, 0))
case("slice", "slice", {"dim": 1, "start": 1, "end": -1}, [t([2, 7, 3])], lambda x: x[:, 1:-1])
case("slice_step_clamp", "slice", {"dim": -1, "start": -5, "end": 100, "step": 2}, [t([2, 3, 4])], lambda x: x[..., -5:100:2])
case("slice_end", "slice", {"dim": 0, "end": 2}, [t([5, 3])], lambda x: x[:2])
case("select", "select", {"dim": 1, "index": 0}, [t([2, 7, 3])], lambda x: x[:, 0])
case("select_neg", "select", {"dim": -1, "index": -1}, [t([2, 7, 3])], lambda x: x[..., -1])
case("rsqrt", "rsqrt", {}, [t([2, 3])], torch.rsqrt)
case("sqrt", "sqrt", {}, [t([2, 3], torch.float64)], torch.sqrt)
case("exp", "exp", {}, [t([2, 3])], torch.exp)
case("log", "log", {}, [t([2, 3])], torch.log)
case("eq_scalar", "eq", {}, [t([2, 3]), 0], lambda a, b: a == b)
case("ne", "ne", {}, [t([2, 1]), t([3])], lambda a, b: a != b)
case("lt", "lt", {}, [t([2, 3]), t([2, 3])], lambda a, b: a < b)
case("le_int", "le", {}, [t([2, 3], torch.int64), 1.5], lambda a, b: a <= b)
case("gt", "gt", {}, [0.5, t([4])], lambda a, b: a > b)
case("ge", "ge", {}, [t([3, 1, 4]), t([2, 1])], lambda a, b: a >= b)
case("logical_and", "logical_and", {}, [t([2, 3], torch.bool), t([3], torch.bool)], torch.logical_and)
case("logical_or", "logical_or", {}, [t([2, 1], torch.bool), t([3], torch.bool)], torch.logical_or)
case("logical_not", "logical_not", {}, [t([2, 3], torch.bool)], torch.logical_not)
case("masked_fill", "masked_fill", {"value": "-inf"}, [t([2, 3, 4]), t([3, 1], torch.bool)],
     lambda x, m: x.masked_fill(m, float("-inf")))
case("where", "where", {}, [t([3, 1], torch.bool), t([2, 1, 4]), t([4])], torch.where)
case("where_scalar", "where", {}, [t([2, 3], torch.bool), t([2, 3]), 0.0], lambda c, a, b: torch.where(c, a, torch.tensor(b)))
case("tril", "tril", {"diagonal": -1}, [t([2, 3, 5])], lambda x: torch.tril(x, -1))
case("triu", "triu", {}, [t([4, 4])], torch.triu)
case("hardsigmoid", "hardsigmoid", {}, [t([2, 3])], F.hardsigmoid)
case("relu6", "relu6", {}, [t([2, 3], torch.float64)], F.relu6)
case("hardtanh", "hardtanh", {"min_val": -0.5, "max_val": 2.0}, [t([2, 3, 4])], lambda x: F.hardtanh(x, -0.5, 2.0))
case("clamp_min", "clamp", {"min": 0.1}, [t([2, 3])], lambda x: torch.clamp(x, min=0.1))
case("clamp_both", "clamp", {"min": -1, "max": 1}, [t([5], torch.float64)], lambda x: torch.clamp(x, -1, 1))
case("sin", "sin", {}, [t([2, 3])], torch.sin)
case("cos", "cos", {}, [t([2, 3], torch.float64)], torch.cos)
case("to_float64", "to", {"dtype": "float64"}, [t([2, 3])], lambda x: x.to(torch.float64))
case("expand", "expand", {"sizes": [2, -1, 4]}, [t([3, 1])], lambda x: x.expand(2, -1, 4))
case("expand_batch", "expand", {"sizes": [5, 1, 6], "batch_dims": [0]}, [t([1, 1, 6], torch.int64)], lambda x: x.expand(5, 1, 6))
case("pad_constant", "pad", {"pad": [1, 2, -1, 0], "value": 0.5}, [t([2, 3, 4])], lambda x: F.pad(x, (1, 2, -1, 0), value=0.5))
case("pad_reflect", "pad", {"pad": [2, 1], "mode": "reflect"}, [t([2, 3, 4])], lambda x: F.pad(x, (2, 1), mode="reflect"))
case("pad_replicate", "pad", {"pad": [1, 1, 2, 0], "mode": "replicate"}, [t([1, 2, 3, 4])], lambda x: F.pad(x, (1, 1, 2, 0), mode="replicate"))
case("pad_circular", "pad", {"pad": [3, 1], "mode": "circular"}, [t([2, 3, 4])], lambda x: F.pad(x, (3, 1), mode="circular"))
case("to_from_bool", "to", {"dtype": "float32"}, [t([2, 3], torch.bool)], lambda x: x.float())

json.dump({"torch": torch.__version__, "cases": cases}, sys.stdout, indent=1)
print()
