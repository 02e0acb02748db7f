#!/usr/bin/env python3
"""Regenerates lowering/testdata/half/<model>_<dtype>_n3/ (models_half.py):

    /usr/bin/python3 lowering/testdata/make_half_fixtures.py [--out DIR]   (from the repository root)

Each model is built N=3 times in float32 and converted to the fixture's dtype, which rounds its
weights; its inputs are drawn in float32 and rounded too. bfloat16: PyTorch runs the bf16
modules (PyTorch 1.13's CPU has every op of them in bf16), so expected.safetensors holds
PyTorch's own bf16 outputs. float16: PyTorch 1.13's CPU has no fp16 convolution, matmul or
LayerNorm, so the exporter traces and runs the fp32 copies of the modules (the same rounded
weights and inputs) and expected.safetensors holds their outputs rounded to float16: lowering's
half tests compare with a tolerance derived from fp16's epsilon and each model's reduction
length.
"""
import argparse
import os
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "exporters", "torch"))
sys.path.insert(0, HERE)
import export  # noqa: E402
import models_half  # noqa: E402

N = 3
# model -> inputs: name -> (shape, low, high)
FIXTURES = {
    "convs": ("HalfConvs", {"x": ((2, 3, 9, 11), -2, 2), "s": ((2, 5, 13), -2, 2), "v": ((2, 3, 4, 5, 5), -2, 2)}),
    "attention": ("HalfAttention", {"x": ((2, 7, 16), -2, 2), "pad": ((2, 7), 0, 1)}),
    "recurrent": ("HalfRecurrent", {"x": ((2, 5, 6), -2, 2)}),
    "mlp": ("HalfMLP", {"x": ((2, 5, 40), -2, 2)}),
    "transposed": ("HalfTransposed", {"x": ((2, 5, 6, 7), -2, 2), "s": ((2, 6, 9), -2, 2)}),
}
# PyTorch 1.13's CPU cannot run a bf16 ConvTranspose2d
DTYPES = {"transposed": (torch.float16,)}


def build(cls, dtype):
    models = []
    for i in range(N):
        torch.manual_seed(11 + i)
        models.append(getattr(models_half, cls)().eval().to(dtype))
    gen = torch.Generator().manual_seed(7)
    return models, gen


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.path.join(HERE, "half"), help="where to write (default: the committed fixtures)")
    out_dir = ap.parse_args().out
    for name, (cls, specs) in FIXTURES.items():
        for dtype in DTYPES.get(name, (torch.bfloat16, torch.float16)):
            models, gen = build(cls, dtype)
            inputs = {k: (torch.rand((N,) + shape, generator=gen) * (hi - lo) + lo).to(dtype)
                      for k, (shape, lo, hi) in specs.items()}
            dname = str(dtype).replace("torch.", "")
            out = os.path.join(out_dir, "%s_%s_n3" % (name, dname))
            export.export_modules(models, inputs, out)
            print("%s: written" % out, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
