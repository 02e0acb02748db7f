"""widejit from Python: run N PyTorch models of one architecture as one wide model.

    import widejit

    models = [...]                                       # N trained nn.Modules of one class
    wide = widejit.compile(models, {"x": widejit.pack(xs)})  # xs: one example input per model
    out = wide(widejit.pack(new_xs))                     # tensor [N, ...], model i's at [i]
    per_model = widejit.unpack(out)                      # [tensor for model 0, model 1, ...]
    wide.close()                                         # or: with widejit.compile(...) as wide:

`compile` exports the models in memory (torch.fx, no extra package; no file is written) and
loads them into this process through the widejit shared library (cmd/libwidejit, found in
$WIDEJIT_LIB or installed with the package): a call costs microseconds beyond the kernels' own
time, reads its inputs and writes its outputs in place, and takes any batch size.

`export` writes the graph to a directory (graph.json, the stacked weights, the inputs and the
N modules' own outputs); `run` runs such a directory, with the library when present, else with
the widejit binary, found in $WIDEJIT or on PATH (`go build -o widejit ./cmd/widejit`).

Tensors of N models are stacked along a new first dimension: [N, ...], model i at [i]. `pack`
and `unpack` convert between that and a list of N tensors.
"""

from __future__ import annotations

import inspect
import json
import os
import shutil
import subprocess
import tempfile
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple, Union, overload

import torch
import torch.nn as nn

from widejit._exporter import export as _exporter
from widejit._exporter import safetensors_io as _st
from widejit._native import LibraryNotFoundError, RunError, WideModel, library_available, library_path

__all__ = [
    "BinaryNotFoundError",
    "ExportError",
    "LibraryNotFoundError",
    "RunError",
    "WideModel",
    "compile",
    "export",
    "find_binary",
    "library_available",
    "library_path",
    "pack",
    "run",
    "unpack",
]

ExportError = _exporter.ExportError
"""Raised by `export` for models or inputs it cannot export (a ValueError); the message names
the model, argument, parameter key or graph node at fault."""

BUILD_HINT = "build it from a widejit checkout with `go build -o widejit ./cmd/widejit`"

#: What `export` and `run` accept for one input: a tensor ([N, ...] per model, or one tensor that
#: every model shares), or a list of N per-model tensors (stacked with `pack`).
InputValue = Union[torch.Tensor, Sequence[torch.Tensor]]

PathLike = Union[str, "os.PathLike[str]"]


class BinaryNotFoundError(FileNotFoundError):
    """Neither $WIDEJIT nor PATH leads to the widejit binary."""


def pack(tensors: Sequence[torch.Tensor]) -> torch.Tensor:
    """Stacks N tensors of one shape and dtype (one per model) into one [N, ...] tensor.

    Raises TypeError when tensors is not a non-empty list or tuple of tensors, and ValueError,
    naming the index, when their shapes, dtypes or devices differ.
    """
    if isinstance(tensors, torch.Tensor) or not isinstance(tensors, (list, tuple)):
        raise TypeError("pack: expected a list of tensors (one per model), got %s" % type(tensors).__name__)
    if not tensors:
        raise ValueError("pack: the list is empty; widejit needs at least one model")
    for i, t in enumerate(tensors):
        if not isinstance(t, torch.Tensor):
            raise TypeError("pack: tensors[%d] is a %s, not a torch.Tensor" % (i, type(t).__name__))
    first = tensors[0]
    for i, t in enumerate(tensors[1:], 1):
        if t.shape != first.shape:
            raise ValueError("pack: tensors[%d] has shape %s, tensors[0] has %s; every model's tensor must have "
                             "the same shape" % (i, list(t.shape), list(first.shape)))
        if t.dtype != first.dtype:
            raise ValueError("pack: tensors[%d] has dtype %s, tensors[0] has %s" % (i, t.dtype, first.dtype))
        if t.device != first.device:
            raise ValueError("pack: tensors[%d] is on %s, tensors[0] on %s" % (i, t.device, first.device))
    return torch.stack(list(tensors))


@overload
def unpack(stacked: torch.Tensor) -> List[torch.Tensor]: ...


@overload
def unpack(stacked: Mapping[str, torch.Tensor]) -> List[Dict[str, torch.Tensor]]: ...


def unpack(stacked: Union[torch.Tensor, Mapping[str, torch.Tensor]]) -> Union[List[torch.Tensor], List[Dict[str, torch.Tensor]]]:
    """Splits an [N, ...] tensor into the list of its N per-model tensors (views of it).

    Given a dict of [N, ...] tensors (what `run` returns), returns N dicts, one per model.
    Raises TypeError for anything else, ValueError for a 0-d tensor or tensors of different N.
    """
    if isinstance(stacked, torch.Tensor):
        if stacked.dim() == 0:
            raise ValueError("unpack: a 0-d tensor has no model dimension; expected [N, ...]")
        return list(stacked.unbind(0))
    if isinstance(stacked, Mapping):
        if not stacked:
            raise ValueError("unpack: the dict is empty")
        for name, t in stacked.items():
            if not isinstance(t, torch.Tensor):
                raise TypeError("unpack: %r is a %s, not a torch.Tensor" % (name, type(t).__name__))
        parts = {name: unpack(t) for name, t in stacked.items()}
        ns = {name: len(p) for name, p in parts.items()}
        if len(set(ns.values())) != 1:
            raise ValueError("unpack: the tensors hold different numbers of models: %s" % ", ".join(
                "%s: %d" % kv for kv in ns.items()))
        n = next(iter(ns.values()))
        return [{name: p[i] for name, p in parts.items()} for i in range(n)]
    raise TypeError("unpack: expected an [N, ...] tensor or a dict of them, got %s" % type(stacked).__name__)


def _as_tensor(name: str, value: InputValue, per_model: bool, where: str) -> torch.Tensor:
    """One input as the tensor written to safetensors: lists are packed (per-model inputs only)."""
    if isinstance(value, torch.Tensor):
        t = value
    elif isinstance(value, (list, tuple)):
        if not per_model:
            raise TypeError("%s[%r] is a list, but the input is shared by every model: pass one tensor" % (where, name))
        try:
            t = pack(value)
        except (TypeError, ValueError) as e:
            raise type(e)("%s[%r]: %s" % (where, name, e)) from None
    else:
        raise TypeError("%s[%r] is a %s; expected a tensor or a list of N tensors" % (where, name, type(value).__name__))
    return t.detach().cpu().contiguous()


def export(models: Sequence[nn.Module], inputs: Mapping[str, InputValue], out_dir: PathLike,
           shared_input: bool = False, train_batchnorm: bool = False,
           dynamic: Optional[Mapping[str, Sequence[int]]] = None) -> Dict[str, Any]:
    """Exports N models of one architecture to out_dir for widejit.

    models: N torch.nn.Module instances of one class built with the same arguments; only their
        weights (parameters and buffers) may differ. They run on the CPU, in eval mode while
        exporting; their training flags are restored afterwards.
    inputs: one tensor per `forward` argument, by name (arguments with defaults may be left out:
        they are fixed at their defaults). Unless shared_input, each is [N, ...] with model i's
        input at [i] (a list of N tensors is stacked with `pack`); with shared_input, each is one
        tensor, as `forward` takes it, that every model gets.
    out_dir: created if needed; receives graph.json, weights.safetensors (every parameter stacked
        [N, ...]), inputs.safetensors (these inputs) and expected.safetensors (the N modules' own
        outputs, stacked [N, ...]; `widejit run out_dir/graph.json --check` compares with it).
    train_batchnorm: BatchNorm layers normalise with the statistics of each model's own batch,
        as in training mode, instead of their running statistics (which are left unchanged).
    dynamic: {input name: [dim, ...]}, dims of a model's input besides the batch (dim 0 of a
        per-model input, always dynamic) whose size may change from run to run, e.g.
        {"idx": [1]} for a sequence length; a run at another size re-specialises the graph, or
        refuses naming the node where the model bakes the size in.

    Returns the graph (the dict written to graph.json). Raises ExportError (a ValueError) naming
    what cannot be exported: models of different classes or parameter shapes (with the key), an
    input of the wrong leading size, an op outside widejit's vocabulary (with the node and the
    source line).
    """
    feed = _feed(models, inputs, shared_input)
    return _exporter.export_modules(list(models), feed, os.fspath(out_dir), shared_input=shared_input,
                                    train_batchnorm=train_batchnorm, dynamic=dynamic)


def _feed(models: Sequence[nn.Module], inputs: Mapping[str, InputValue], shared_input: bool) -> Dict[str, torch.Tensor]:
    """export's checks of its arguments; the inputs as the exporter takes them."""
    if isinstance(models, nn.Module) or not isinstance(models, (list, tuple)):
        raise ExportError("models must be a list of torch.nn.Module instances, got %s" % type(models).__name__)
    if not isinstance(inputs, Mapping):
        raise ExportError("inputs must be a dict of forward argument name -> tensor, got %s" % type(inputs).__name__)
    try:
        return {name: _as_tensor(name, v, not shared_input, "inputs") for name, v in inputs.items()}
    except (TypeError, ValueError) as e:
        raise ExportError(str(e)) from None


def find_binary() -> str:
    """The widejit binary: $WIDEJIT when set (it must be an executable file), else `widejit` on
    PATH. Raises BinaryNotFoundError saying how to build it."""
    env = os.environ.get("WIDEJIT")
    if env:
        if not (os.path.isfile(env) and os.access(env, os.X_OK)):
            raise BinaryNotFoundError("$WIDEJIT is %s, which is not an executable file; %s" % (env, BUILD_HINT))
        return env
    found = shutil.which("widejit")
    if found is None:
        raise BinaryNotFoundError("the widejit binary is not on PATH and $WIDEJIT is not set; %s and put it on PATH "
                                  "or set WIDEJIT=/path/to/widejit" % BUILD_HINT)
    return found


def _graph_path(out_dir: PathLike) -> str:
    path = os.fspath(out_dir)
    if os.path.isdir(path):
        path = os.path.join(path, "graph.json")
    if not os.path.isfile(path):
        raise FileNotFoundError("%s: no graph.json there; widejit.export writes one" % os.fspath(out_dir))
    return path


def run(out_dir: PathLike, inputs: Optional[Mapping[str, InputValue]] = None, device: str = "auto", *,
        extra_args: Sequence[str] = (), timeout: Optional[float] = None,
        in_process: Optional[bool] = None) -> Dict[str, torch.Tensor]:
    """Runs the N models exported to out_dir, in this process with the shared library (see
    `library_path`) when it is present, else with the widejit binary (see `find_binary`).

    out_dir: a directory written by `export` (or export.py), or the path of its graph.json.
    inputs: one tensor per graph input, by name: [N, ...] (or a list of N tensors) for per-model
        inputs, the bare tensor for shared ones, as at export. None runs the inputs exported
        with the graph (out_dir/inputs.safetensors; without that file, the binary generates
        inputs from seed 0). The binary gets them through a temporary safetensors file.
    device: "auto" (a GPU when the CUDA driver finds one, else the CPU), a backend widejit
        registers ("cpu", "cuda"; `widejit info` lists them), or a list such as
        "cuda:0,cuda:1"; widejit checks it (RunError for one it does not know).
    extra_args: more `widejit run` flags, e.g. ["--mode", "sequential"] (the binary only).
    timeout: seconds before the binary is killed (subprocess.TimeoutExpired; the binary only).
    in_process: True requires the library, False the binary; None (the default) takes the
        library when it is present and neither extra_args, timeout nor generated inputs ask
        for the binary.

    Returns every graph output, stacked [N, ...], as CPU tensors in the graph's output order.
    Raises BinaryNotFoundError or LibraryNotFoundError without what it needs,
    ValueError/TypeError for inputs that do not match the graph's names, and RunError (with
    widejit's message) when widejit fails, e.g. on an input of the wrong shape, or when the
    binary's output file lacks an output of the graph.
    """
    if not isinstance(device, str) or not device:
        raise ValueError("device must be a non-empty string such as 'auto', 'cpu' or 'cuda', got %r" % (device,))
    graph_path = _graph_path(out_dir)
    with open(graph_path) as f:
        graph = json.load(f)
    declared = {i["name"]: i.get("per_model", True) for i in graph.get("inputs", [])}
    default_inputs = os.path.join(os.path.dirname(graph_path), "inputs.safetensors")
    feed = None
    if inputs is not None:
        if not isinstance(inputs, Mapping):
            raise TypeError("inputs must be a dict of input name -> tensor, got %s" % type(inputs).__name__)
        unknown = [name for name in inputs if name not in declared]
        missing = [name for name in declared if name not in inputs]
        if unknown or missing:
            raise ValueError("inputs do not match %s: %s (its inputs: %s)" % (graph_path, "; ".join(
                ["unknown input %r" % n for n in unknown] + ["missing input %r" % n for n in missing]),
                ", ".join(declared)))
        feed = {name: _as_tensor(name, inputs[name], declared[name], "inputs") for name in declared}
    if in_process is None:
        in_process = (library_available() and not extra_args and timeout is None and
                      (feed is not None or os.path.isfile(default_inputs)))
    if in_process:
        if extra_args or timeout is not None:
            raise ValueError("extra_args and timeout are the binary's: pass in_process=False (or None) with them")
        if feed is None:
            if not os.path.isfile(default_inputs):
                raise ValueError("%s: no inputs given and no inputs.safetensors beside the graph; in process, pass "
                                 "inputs (the binary generates them: in_process=False)" % graph_path)
            feed = _st.read(default_inputs)
        with WideModel(graph_path, {"device": device}) as model:
            outs = model.run(**feed)
        return _graph_outputs(graph_path, graph, outs)
    binary = find_binary()
    with tempfile.TemporaryDirectory(prefix="widejit-") as tmp:
        cmd = [binary, "run", graph_path, "--out", os.path.join(tmp, "outputs.safetensors"), "--device", device]
        if feed is None:
            if os.path.isfile(default_inputs):
                cmd += ["--inputs", default_inputs]
        else:
            path = os.path.join(tmp, "inputs.safetensors")
            _st.write(path, feed)
            cmd += ["--inputs", path]
        cmd += list(extra_args)
        # the binary's messages may quote bytes from files (names, paths) that are not UTF-8
        proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, encoding="utf-8",
                              errors="replace", timeout=timeout)
        if proc.returncode != 0:
            stderr = proc.stderr.strip()
            raise RunError("widejit run %s failed (exit %d):\n%s" % (graph_path, proc.returncode, stderr),
                           proc.returncode, stderr, cmd)
        outputs = _st.read(os.path.join(tmp, "outputs.safetensors"))
    return _graph_outputs(graph_path, graph, outputs, cmd)


def _graph_outputs(graph_path: str, graph: Mapping[str, Any], outputs: Mapping[str, torch.Tensor],
                   cmd: Optional[List[str]] = None) -> Dict[str, torch.Tensor]:
    """outputs in the graph's output order; a RunError when one of the graph's is missing."""
    names = graph.get("outputs", [])
    if not names:
        return dict(outputs)
    missing = [name for name in names if name not in outputs]
    if missing:
        msg = "widejit run %s: the outputs lack %s (the graph's outputs: %s; got: %s)" % (
            graph_path, ", ".join(repr(n) for n in missing), ", ".join(names), ", ".join(outputs) or "none")
        raise RunError(msg, 0, msg, cmd)
    return {name: outputs[name] for name in names}


def compile(models: Sequence[nn.Module], example_inputs: Union[Mapping[str, InputValue], torch.Tensor, Tuple[torch.Tensor, ...]],
            *, shared_input: bool = False, device: str = "auto", out_dir: Optional[PathLike] = None,
            dynamic: Optional[Mapping[str, Sequence[int]]] = None, **options: Any) -> WideModel:
    """Exports N models of one architecture and loads them into this process as one WideModel.

    models, shared_input, dynamic: as for `export`.
    example_inputs: the inputs to trace with, as for `export` (a dict by `forward` argument
        name), or a tensor (the first argument) or a tuple of tensors (the first arguments in
        order). Unless shared_input, each is [N, ...] (or a list of N tensors).
    device: "auto" (a GPU when the CUDA driver finds one, else the CPU), "cpu", "cuda", or a
        list of devices of one kind ("cuda:0,cuda:1"); like --device, it wins over the
        configuration file's device and WIDEJIT_DEVICE.
    out_dir: where to write the exported graph (as `export` writes it, then loaded from there).
        By default nothing is written: the graph and its weights go to the library in memory.
    options: the CLI's configuration keys (threads, cache_dir, no_cache, cache_read_only,
        launch_timeout, memory_limit_mib, plugins, plugin_deadline, plugin_memory_mib,
        config: a configuration file), layered over the configuration file and WIDEJIT_*
        environment as the CLI's flags are; and model_range=(lo, hi) or shard=(i, k) (run those
        models only), sequential=True (one model after another, the baseline), profile=True
        (time every kernel: see WideModel.profile), streams.

    Raises ExportError for models that cannot be exported, LibraryNotFoundError without the
    shared library, and RunError with the CLI's message when widejit refuses the graph or an
    option (returncode: the CLI's exit code).
    """
    if isinstance(example_inputs, torch.Tensor):
        example_inputs = (example_inputs,)
    if isinstance(example_inputs, tuple):
        if not isinstance(models, (list, tuple)) or not models or not isinstance(models[0], nn.Module):
            raise ExportError("models must be a list of torch.nn.Module instances, got %s" % type(models).__name__)
        params = [p for p in inspect.signature(type(models[0]).forward).parameters.values()][1:]
        if len(example_inputs) > len(params) or any(p.kind not in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) for p in params[:len(example_inputs)]):
            raise ExportError("%d example inputs given positionally, but %s.forward takes %s: pass a dict by argument name" % (
                len(example_inputs), type(models[0]).__name__, ", ".join(p.name for p in params) or "none"))
        example_inputs = {p.name: t for p, t in zip(params, example_inputs)}
    library_path()  # before the export's work: say at once when the library is missing
    if out_dir is not None:
        export(models, example_inputs, out_dir, shared_input=shared_input, dynamic=dynamic)
        return WideModel(os.path.join(os.fspath(out_dir), "graph.json"), dict(options, device=device))
    feed = _feed(models, example_inputs, shared_input)
    graph, weights = _exporter.trace_modules(list(models), feed, shared_input=shared_input, dynamic=dynamic)
    name = "widejit.compile(%s)/graph.json" % type(models[0]).__name__
    return WideModel(name, dict(options, device=device), _memory=(json.dumps(graph).encode(), _st.encode(weights)))
