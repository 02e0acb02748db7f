#!/usr/bin/env python3
"""Regenerates lowering/testdata/dynamic/<name>/: models of models_batch.py whose sequence
length is dynamic (--dynamic NAME:1), exported with exporters/torch/export.py at batch size 2
and sequence length 16 (graph.json, weights, inputs, expected), plus inputs and the outputs of
the same N PyTorch modules at other (batch, sequence length) pairs (inputs_b3_t20.safetensors,
expected_b3_t20.safetensors, ...), for the tests of dynamic dims:

    /usr/bin/python3 lowering/testdata/make_dynamic_fixtures.py  (from the repository root)
"""
import json
import os
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "exporters", "torch"))
sys.path.insert(0, HERE)
import export  # noqa: E402
import safetensors_io  # noqa: E402
from make_batch_fixtures import MODELS, N, SEED, VOCAB  # noqa: E402

B0, T0 = 2, 16
# name -> (class, constructor kwargs, input, its shape at (B0, T0), vocabulary of int64 tokens or None)
FIXTURES = {
    "gpt": ("GPT", {"block_size": 32}, "idx", [B0, T0], VOCAB),
    "seqvit": ("SeqViT", {}, "x", [B0, T0, 16], None),
}
SIZES = ((B0, 20), (B0, 9), (3, 20), (1, 32))  # (batch, sequence length) besides the export's


def main():
    os.chdir(ROOT)
    for name, (cls_name, kwargs, inp, shape, vocab) in FIXTURES.items():
        out = os.path.join(HERE, "dynamic", name)
        dtype = ":int64:0:%d" % vocab if vocab else ""
        argv = ["--module", MODELS + ":" + cls_name, "--kwargs", json.dumps(kwargs), "--n", str(N),
                "--seed", str(SEED), "--out", out, "--input", "%s=%s%s" % (inp, ",".join(map(str, shape)), dtype),
                "--dynamic", inp + ":1"]
        print("export.py " + " ".join(argv), flush=True)
        if export.main(argv) != 0:
            return 1
        with open(os.path.join(out, "graph.json")) as f:
            outputs = json.load(f)["outputs"]
        cls = export.load_class(MODELS + ":" + cls_name)
        models = []
        for i in range(N):
            export.seed_everything(SEED + i)
            models.append(cls(**kwargs).eval())
        for b, t in SIZES:
            gen = torch.Generator().manual_seed(SEED + 100 * b + t)
            s = [N, b, t] + shape[2:]
            x = torch.randint(0, vocab, s, generator=gen) if vocab else torch.randn(s, generator=gen)
            expected = [[] for _ in outputs]
            with torch.no_grad():
                for i, m in enumerate(models):
                    flat = export._flatten_values(m(x[i]), keep_none=False)
                    for j, y in enumerate(flat):
                        expected[j].append(y)
            safetensors_io.write(os.path.join(out, "inputs_b%d_t%d.safetensors" % (b, t)), {inp: x})
            safetensors_io.write(os.path.join(out, "expected_b%d_t%d.safetensors" % (b, t)),
                                 {o: torch.stack(ys) for o, ys in zip(outputs, expected)})
    return 0


if __name__ == "__main__":
    sys.exit(main())
