"""Minimal safetensors reader and writer (torch + numpy only, no extra package).

The writer is deterministic: tensors are laid out in sorted key order, the JSON header has sorted
keys and no whitespace, and it is padded with spaces to a multiple of 8 bytes (as the reference
implementation does) so the data that follows is aligned.
"""

import json
import struct

import numpy as np
import torch

_TORCH_TO_ST = {
    torch.float32: "F32",
    torch.float16: "F16",
    torch.bfloat16: "BF16",
    torch.float64: "F64",
    torch.int64: "I64",
    torch.int32: "I32",
    torch.int16: "I16",
    torch.int8: "I8",
    torch.uint8: "U8",
    torch.bool: "BOOL",
}
_ST_TO_TORCH = {v: k for k, v in _TORCH_TO_ST.items()}
_ST_TO_NUMPY = {
    "F32": "<f4",
    "F16": "<f2",
    "BF16": "<i2",  # numpy has no bfloat16: carried as raw 16-bit words
    "F64": "<f8",
    "I64": "<i8",
    "I32": "<i4",
    "I16": "<i2",
    "I8": "i1",
    "U8": "u1",
    "BOOL": "?",
}

# Sanity bound for the header, as other readers use; a bigger one means a corrupt file.
_MAX_HEADER = 100 * 1024 * 1024


def _tensor_bytes(t):
    t = t.detach().cpu().contiguous()
    code = _TORCH_TO_ST[t.dtype]
    if t.dtype == torch.bfloat16:
        t = t.view(torch.int16)
    return t.numpy().astype(_ST_TO_NUMPY[code], copy=False).tobytes()


def dtype_code(dtype):
    """The safetensors code of a torch dtype (e.g. torch.float32 -> "F32")."""
    if dtype not in _TORCH_TO_ST:
        raise ValueError("dtype %s cannot be stored in safetensors by this writer" % dtype)
    return _TORCH_TO_ST[dtype]


def encode(tensors):
    """A dict name -> tensor as the bytes of a safetensors file, bit-for-bit reproducibly."""
    header = {}
    blobs = []
    offset = 0
    for name in sorted(tensors):
        t = tensors[name]
        data = _tensor_bytes(t)
        header[name] = {
            "dtype": dtype_code(t.dtype),
            "shape": [int(d) for d in t.shape],
            "data_offsets": [offset, offset + len(data)],
        }
        offset += len(data)
        blobs.append(data)
    head = json.dumps(header, separators=(",", ":"), sort_keys=True).encode("utf-8")
    head += b" " * ((8 - len(head) % 8) % 8)
    return b"".join([struct.pack("<Q", len(head)), head] + blobs)


def write(path, tensors):
    """Writes a dict name -> tensor to path as safetensors (encode)."""
    with open(path, "wb") as f:
        f.write(encode(tensors))


def read(path):
    """Reads a safetensors file into a dict name -> torch tensor, checking the header."""
    with open(path, "rb") as f:
        raw = f.read()
    if len(raw) < 8:
        raise ValueError("%s: %d bytes, too short for a safetensors header" % (path, len(raw)))
    (hlen,) = struct.unpack("<Q", raw[:8])
    if hlen > _MAX_HEADER or 8 + hlen > len(raw):
        raise ValueError("%s: header length %d does not fit in %d bytes" % (path, hlen, len(raw)))
    header = json.loads(raw[8 : 8 + hlen].decode("utf-8"))
    data = raw[8 + hlen :]
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        code = info["dtype"]
        begin, end = info["data_offsets"]
        if not 0 <= begin <= end <= len(data):
            raise ValueError("%s: tensor %r has offsets %r outside the data" % (path, name, info["data_offsets"]))
        arr = np.frombuffer(data[begin:end], dtype=_ST_TO_NUMPY[code]).copy()
        count = int(np.prod(info["shape"])) if info["shape"] else 1
        if arr.size != count:
            raise ValueError("%s: tensor %r holds %d elements, shape %r needs %d" % (path, name, arr.size, info["shape"], count))
        t = torch.from_numpy(arr.reshape(info["shape"]))
        if code == "BF16":
            t = t.view(torch.bfloat16)
        out[name] = t
    return out
