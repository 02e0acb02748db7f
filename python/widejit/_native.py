"""The widejit shared library (cmd/libwidejit) through ctypes, and WideModel, a loaded model run
inside this process.

The library is $WIDEJIT_LIB when set, else libwidejit.so inside this package (`pip install`
builds it when Go and gcc are present). Nothing is compiled at import time. ctypes releases
the GIL during every library call, so Python threads run other work meanwhile; runs of one
WideModel are serialised by the library.
"""

from __future__ import annotations

import ctypes
import json
import os
import threading
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple, Union

import torch

LIB_ENV = "WIDEJIT_LIB"
LIB_NAME = "libwidejit.so"
BUILD_HINT = ("build it from a widejit checkout with `go build -buildmode=c-shared -o libwidejit.so ./cmd/libwidejit` "
              "(Go and gcc) and set WIDEJIT_LIB=/path/to/libwidejit.so, or reinstall the package with Go and gcc "
              "present (`pip install --no-build-isolation --no-index ./python`)")

_DTYPES = {
    "float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16, "float64": torch.float64,
    "int64": torch.int64, "int32": torch.int32, "int16": torch.int16, "int8": torch.int8, "uint8": torch.uint8,
    "bool": torch.bool,
}


class LibraryNotFoundError(FileNotFoundError):
    """The widejit shared library is neither at $WIDEJIT_LIB nor installed with the package."""


class RunError(RuntimeError):
    """widejit failed: the binary exited non-zero, or the library returned an error.

    The message is widejit's own (for the library, the line the CLI prints for the same
    error); returncode is the CLI's exit code (1 the work failed, 2 usage, 3 an input file);
    stderr holds the binary's stderr or the library's message; cmd the binary's command line
    (None for the library).
    """

    def __init__(self, message: str, returncode: int, stderr: str, cmd: Optional[List[str]]) -> None:
        super().__init__(message)
        self.returncode = returncode
        self.stderr = stderr
        self.cmd = cmd


def library_path() -> str:
    """The shared library's path: $WIDEJIT_LIB, else the one installed with the package.
    Raises LibraryNotFoundError saying how to build it."""
    env = os.environ.get(LIB_ENV)
    if env:
        if not os.path.isfile(env):
            raise LibraryNotFoundError("$%s is %s, which is not a file; %s" % (LIB_ENV, env, BUILD_HINT))
        return env
    here = os.path.dirname(os.path.abspath(__file__))
    path = os.path.join(here, LIB_NAME)
    if not os.path.isfile(path):
        why = ""
        try:  # written by setup.py: why the install could not build the library
            with open(os.path.join(here, "_library.json")) as f:
                why = json.load(f).get("missing", "")
        except (OSError, ValueError):
            pass
        raise LibraryNotFoundError("the widejit shared library is not installed with the package (%s)%s and $%s is "
                                   "not set; %s" % (path, " because, at install, " + why if why else "", LIB_ENV,
                                                    BUILD_HINT))
    return path


_lib = None
_lib_lock = threading.Lock()

_c = ctypes
_P = _c.POINTER


def _library() -> ctypes.CDLL:
    global _lib
    with _lib_lock:
        if _lib is None:
            lib = ctypes.CDLL(library_path())
            err = _P(_c.c_void_p)  # char **: a string the library allocates (_Str)
            lib.widejit_load.argtypes = [_c.c_char_p, _c.c_char_p, _P(_c.c_int64), err]
            lib.widejit_load_memory.argtypes = [_c.c_char_p, _c.c_char_p, _c.c_int64, _c.c_char_p, _c.c_int64,
                                                _c.c_char_p, _P(_c.c_int64), err]
            tensor_args = [_c.c_int, _P(_c.c_char_p), _P(_c.c_char_p), _P(_c.c_int), _P(_c.c_int64)]
            lib.widejit_outputs.argtypes = [_c.c_int64] + tensor_args + [err, err]
            lib.widejit_run.argtypes = [_c.c_int64] + tensor_args + [_P(_c.c_void_p)] + tensor_args + [_P(_c.c_void_p), err]
            for name in ("widejit_info", "widejit_explain", "widejit_profile"):
                getattr(lib, name).argtypes = [_c.c_int64, err, err]
            lib.widejit_close.argtypes = [_c.c_int64, err]
            # c_void_p, not c_char_p: the pointer must reach widejit_free unconverted
            lib.widejit_free.argtypes = [_c.c_void_p]
            lib.widejit_free.restype = None
            for name in ("widejit_load", "widejit_load_memory", "widejit_outputs", "widejit_run", "widejit_info", "widejit_explain",
                         "widejit_profile", "widejit_close"):
                getattr(lib, name).restype = _c.c_int
            _lib = lib
        return _lib


def library_available() -> bool:
    """Whether the shared library can be found (it is not loaded)."""
    try:
        library_path()
        return True
    except LibraryNotFoundError:
        return False


class _Str(ctypes.c_void_p):
    """An out-parameter for a string the library allocates: read, then freed."""

    def take(self, lib: ctypes.CDLL) -> str:
        if not self.value:
            return ""
        try:
            return ctypes.string_at(self.value).decode("utf-8", errors="replace")
        finally:
            lib.widejit_free(self.value)
            self.value = None


def _check(lib: ctypes.CDLL, code: int, err: _Str) -> None:
    if code != 0:
        msg = err.take(lib)
        raise RunError(msg, code, msg, None)


def _call_string(lib: ctypes.CDLL, fn: Any, *args: Any) -> str:
    out, err = _Str(), _Str()
    code = fn(*args, _c.byref(out), _c.byref(err))
    _check(lib, code, err)
    return out.take(lib)


class _Signature:
    """The ctypes arrays describing one set of input shapes, and the outputs they give."""

    __slots__ = ("n_in", "names", "dtypes", "ranks", "shapes", "outputs", "n_out", "out_names", "out_dtypes",
                 "out_ranks", "out_shapes")

    def __init__(self, lib: ctypes.CDLL, handle: int, specs: List[Dict[str, Any]],
                 shapes: Tuple[Tuple[int, ...], ...]) -> None:
        self.n_in, self.names, self.dtypes, self.ranks, self.shapes = _describe(
            [(s["name"], s["dtype"], shape) for s, shape in zip(specs, shapes)])
        text = _call_string(lib, lib.widejit_outputs, handle, self.n_in, self.names, self.dtypes, self.ranks, self.shapes)
        outs = json.loads(text)
        self.outputs = [(o["name"], _DTYPES[o["dtype"]], tuple(o["shape"])) for o in outs]
        self.n_out, self.out_names, self.out_dtypes, self.out_ranks, self.out_shapes = _describe(
            [(o["name"], o["dtype"], o["shape"]) for o in outs])


def _describe(tensors: List[Tuple[str, str, Sequence[int]]]) -> Tuple[Any, ...]:
    """The C arrays describing tensors (name, dtype, shape): count, names, dtypes, ranks, dims."""
    n = len(tensors)
    flat = [d for _, _, shape in tensors for d in shape]
    return (n, (_c.c_char_p * max(n, 1))(*[name.encode() for name, _, _ in tensors]),
            (_c.c_char_p * max(n, 1))(*[dtype.encode() for _, dtype, _ in tensors]),
            (_c.c_int * max(n, 1))(*[len(shape) for _, _, shape in tensors]),
            (_c.c_int64 * max(len(flat), 1))(*flat))


class WideModel:
    """N models of one architecture loaded as one wide model and run inside this process.

    Made by `widejit.compile` (or `WideModel.load` for an exported graph). Call it with torch
    tensors, positionally in the graph's input order or by name: a per-model input stacked
    [N, ...] (model i's at [i]; a list of N tensors is stacked with `widejit.pack`), a shared
    input as the model's `forward` takes it. Inputs of any batch size are taken (a new batch
    size is compiled on its first use and kept). The result is a CPU tensor [N, ...] for a
    graph with one output, else a dict of them by output name. Contiguous CPU tensors of the
    graph's dtype are read in place and outputs are written straight into the returned
    tensors' memory (no copy on the CPU); other tensors are made contiguous, or copied to the
    CPU, first. A dtype other than the graph's is an error (it is not converted).

    Safe to call from several threads (runs of one WideModel take turns, each without the
    GIL). `close()` (or a `with` block) frees it.
    """

    def __init__(self, path: str, options: Optional[Mapping[str, Any]] = None, *,
                 _memory: Optional[Tuple[bytes, bytes]] = None) -> None:
        """Loads the graph at path (a directory or graph.json), or, with _memory (graph.json's
        and the weights file's content), the graph held in memory that path names."""
        self._handle: Optional[int] = None
        self._lib = _library()
        handle, err = _c.c_int64(), _Str()
        opts = dict(options or {})
        if "model_range" in opts:  # the library's "models": a keyword compile's models argument would take
            opts["models"] = list(opts.pop("model_range"))
        opts = json.dumps(opts).encode()
        if _memory is None:
            code = self._lib.widejit_load(os.fsencode(path), opts, _c.byref(handle), _c.byref(err))
        else:
            graph_json, weights = _memory
            code = self._lib.widejit_load_memory(os.fsencode(path), graph_json, len(graph_json), weights, len(weights),
                                                 opts, _c.byref(handle), _c.byref(err))
        _check(self._lib, code, err)
        self._handle = handle.value
        info = json.loads(self._call_string(self._lib.widejit_info))
        self.n: int = info["n"]
        """The number of models."""
        self.device: str = info["device"]
        """The device the models run on: "cpu" or "cuda"."""
        self.inputs: List[Dict[str, Any]] = info["inputs"]
        """The graph's inputs (name, dtype, shape at the exported batch size, shared)."""
        self.outputs: List[Dict[str, Any]] = info["outputs"]
        """The graph's outputs (name, dtype, shape [N, ...] at the exported batch size)."""
        self.models: Tuple[int, int, int] = tuple(info["models"])
        """The models this WideModel runs: (lo, hi, total)."""
        self._names = [i["name"] for i in self.inputs]
        self._dtypes = [_DTYPES[i["dtype"]] for i in self.inputs]
        self._signatures: Dict[Tuple[Tuple[int, ...], ...], _Signature] = {}

    @classmethod
    def load(cls, path: Union[str, "os.PathLike[str]"], *, device: str = "auto", **options: Any) -> "WideModel":
        """Loads an exported graph (its directory or graph.json) with options (see `compile`)."""
        return cls(os.fspath(path), dict(options, device=device))

    def _call_string(self, fn: Any) -> str:
        return _call_string(self._lib, fn, self._live())

    def _live(self) -> int:
        if self._handle is None:
            raise ValueError("this WideModel is closed")
        return self._handle

    def _feed(self, args: Sequence[Any], named: Mapping[str, Any]) -> List[torch.Tensor]:
        names = self._names
        if len(args) > len(names):
            raise TypeError("the model takes %d inputs (%s), got %d positional" % (len(names), ", ".join(names), len(args)))
        values = dict(zip(names, args))
        for name, v in named.items():
            if name not in names:
                raise TypeError("the model has no input %r (its inputs: %s)" % (name, ", ".join(names)))
            if name in values:
                raise TypeError("input %r given twice" % name)
            values[name] = v
        feed = []
        for spec, dtype in zip(self.inputs, self._dtypes):
            name = spec["name"]
            if name not in values:
                raise TypeError("input %r is missing (the model's inputs: %s)" % (name, ", ".join(names)))
            t = values[name]
            if isinstance(t, (list, tuple)) and not spec["shared"]:
                from widejit import pack
                t = pack(t)
            if not isinstance(t, torch.Tensor):
                raise TypeError("input %r is a %s; expected a torch.Tensor" % (name, type(t).__name__))
            if t.dtype != dtype:
                raise TypeError("input %r is %s; the graph takes %s" % (name, t.dtype, dtype))
            if t.device.type != "cpu":
                t = t.cpu()
            if t.requires_grad:
                t = t.detach()
            feed.append(t.contiguous())
        return feed

    def run(self, *args: Any, **named: Any) -> Dict[str, torch.Tensor]:
        """Runs the models; returns every output by name (see the class docstring)."""
        lib, handle = self._lib, self._live()
        feed = self._feed(args, named)
        key = tuple(tuple(t.shape) for t in feed)
        sig = self._signatures.get(key)
        if sig is None:
            sig = _Signature(lib, handle, self.inputs, key)
            self._signatures[key] = sig
        outs = [torch.empty(shape, dtype=dtype) for _, dtype, shape in sig.outputs]
        data = (_c.c_void_p * max(sig.n_in, 1))(*[t.data_ptr() for t in feed])
        out_data = (_c.c_void_p * max(sig.n_out, 1))(*[t.data_ptr() for t in outs])
        err = _Str()
        code = lib.widejit_run(handle, sig.n_in, sig.names, sig.dtypes, sig.ranks, sig.shapes, data, sig.n_out,
                               sig.out_names, sig.out_dtypes, sig.out_ranks, sig.out_shapes, out_data, _c.byref(err))
        _check(lib, code, err)
        return {name: t for (name, _, _), t in zip(sig.outputs, outs)}

    def __call__(self, *args: Any, **named: Any) -> Union[torch.Tensor, Dict[str, torch.Tensor]]:
        outs = self.run(*args, **named)
        return next(iter(outs.values())) if len(outs) == 1 else outs

    @staticmethod
    def unpack(out: Union[torch.Tensor, Mapping[str, torch.Tensor]]) -> Union[List[torch.Tensor], List[Dict[str, torch.Tensor]]]:
        """The N per-model results of a call (`widejit.unpack`)."""
        from widejit import unpack
        return unpack(out)

    def explain(self) -> str:
        """Which graph nodes went into which kernel, with which strategy and why, for the plan of
        the latest call's batch size."""
        return self._call_string(self._lib.widejit_explain)

    def profile(self) -> Dict[str, Any]:
        """The plan of the latest call's batch size: kernel times per run (mean ms; needs
        compile(..., profile=True), else the list is empty), launches, compile_ms, strategies,
        cache (hits, misses) and the batch sizes compiled."""
        return json.loads(self._call_string(self._lib.widejit_profile))

    def close(self) -> None:
        """Frees the model (after the run in flight, if any). Calling it again does nothing."""
        handle, self._handle = self._handle, None
        if handle is not None:
            err = _Str()
            _check(self._lib, self._lib.widejit_close(handle, _c.byref(err)), err)

    def __enter__(self) -> "WideModel":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __del__(self) -> None:
        if getattr(self, "_handle", None) is not None:
            try:
                self.close()
            except Exception:
                pass

    def __repr__(self) -> str:
        state = "closed" if self._handle is None else "on %s" % self.device
        return "WideModel(n=%d, inputs=%s, %s)" % (self.n, [i["name"] for i in self.inputs], state)
