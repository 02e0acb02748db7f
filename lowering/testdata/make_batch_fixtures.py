#!/usr/bin/env python3
"""Regenerates lowering/testdata/batch/<name>/: each model of models_batch.py exported with
exporters/torch/export.py at batch size 4 (graph.json, weights, inputs, expected), plus inputs
and the outputs of the same N PyTorch modules at batch sizes 1 and 7 (inputs_b1.safetensors,
expected_b1.safetensors, ...), for the tests of the dynamic batch size:

    /usr/bin/python3 lowering/testdata/make_batch_fixtures.py [NAME ...]  (from the repository root)
"""
import json
import os
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "exporters", "torch"))
import export  # noqa: E402
import safetensors_io  # noqa: E402

MODELS = os.path.join("lowering", "testdata", "models_batch.py")
N, SEED = 3, 11
VOCAB = 23  # token inputs: int64 in [0, VOCAB)
# name -> (class, {input: (shape at batch 4, batch dim[, vocabulary of int64 tokens])})
FIXTURES = {
    "mlp": ("MLPView", {"x": ([4, 3, 4], 0)}),
    "convnet": ("ConvNet", {"x": ([4, 3, 8, 8], 0)}),
    "encoder": ("Encoder", {"src": ([4, 5, 16], 0)}),
    "seqfirst": ("SeqFirst", {"x": ([5, 4, 6], 1), "h0": ([1, 4, 8], 1), "c0": ([1, 4, 8], 1)}),
    "vit": ("ViT", {"x": ([4, 3, 8, 8], 0)}),
    "gpt": ("GPT", {"idx": ([4, 6], 0, VOCAB)}),
}
BATCHES = (1, 7)


def main():
    os.chdir(ROOT)
    only = sys.argv[1:]  # names to regenerate; default all
    for name, (cls_name, inputs) in FIXTURES.items():
        if only and name not in only:
            continue
        out = os.path.join(HERE, "batch", name)
        argv = ["--module", MODELS + ":" + cls_name, "--n", str(N), "--seed", str(SEED), "--out", out]
        for k, (shape, _, *vocab) in inputs.items():
            dtype = ":int64:0:%d" % vocab[0] if vocab else ""
            argv += ["--input", "%s=%s%s" % (k, ",".join(map(str, shape)), dtype)]
        print("export.py " + " ".join(argv), flush=True)
        if export.main(argv) != 0:
            return 1
        with open(os.path.join(out, "graph.json")) as f:
            outputs = json.load(f)["outputs"]
        cls = export.load_class(MODELS + ":" + cls_name)
        models = []
        for i in range(N):
            export.seed_everything(SEED + i)
            models.append(cls().eval())
        for b in BATCHES:
            gen = torch.Generator().manual_seed(SEED + b)
            feed = {}
            for k, (shape, dim, *vocab) in inputs.items():
                s = list(shape)
                s[dim] = b
                feed[k] = torch.randint(0, vocab[0], [N] + s, generator=gen) if vocab else \
                    torch.randn([N] + s, generator=gen)
            expected = [[] for _ in outputs]
            with torch.no_grad():
                for i, m in enumerate(models):
                    flat = export._flatten_values(m(**{k: v[i] for k, v in feed.items()}), keep_none=False)
                    assert len(flat) == len(outputs), (name, len(flat), outputs)
                    for j, t in enumerate(flat):
                        expected[j].append(t)
            safetensors_io.write(os.path.join(out, "inputs_b%d.safetensors" % b), feed)
            safetensors_io.write(os.path.join(out, "expected_b%d.safetensors" % b),
                                 {o: torch.stack(ts) for o, ts in zip(outputs, expected)})
    return 0


if __name__ == "__main__":
    sys.exit(main())
