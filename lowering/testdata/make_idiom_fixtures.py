#!/usr/bin/env python3
"""Regenerates lowering/testdata/idioms/<model>_n3/ with exporters/torch/export.py:

    /usr/bin/python3 lowering/testdata/make_idiom_fixtures.py   (from the repository root)

The models (idiom_models.py) are PyTorch code as people write it; each fixture holds the graph,
weights, inputs and the outputs of N=3 PyTorch modules run one by one, and is re-checked with
exporters/torch/reference.py. lowering's TestIdiomFixtures runs them through the CPU pipeline.
"""
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
MODELS = os.path.join("lowering", "testdata", "idiom_models.py")

FIXTURES = {
    "indexing": ["Indexing", "x=3,5,7"],
    "causalselfattention": ["CausalSelfAttention", "x=2,7,15"],
    "maskedscores": ["MaskedScores", "x=2,5,6"],
    "mathops": ["MathOps", "x=3,13"],
    "transformers": ["Transformers", "src=2,7,12", "tgt=2,5,12"],
    "encoderstack": ["EncoderStack", "src=2,7,12"],
    "mhamasks": ["MHAMasks", "x=2,5,10", "mem=6,2,10", "pad=2,6:float32:0:1"],
    "ditblock": ["DiTBlock", "x=2,5,11", "t=2,7"],
    "halfmlp_bf16": ["HalfMLP", "x=5,19:bfloat16"],
}


def main():
    export = os.path.join(ROOT, "exporters", "torch", "export.py")
    reference = os.path.join(ROOT, "exporters", "torch", "reference.py")
    for name, spec in FIXTURES.items():
        cls, rest = spec[0], spec[1:]
        args = ["--module", MODELS + ":" + cls]
        i = 0
        while i < len(rest):
            if rest[i].startswith("--"):
                args += rest[i:i + 2]
                i += 2
            else:
                args += ["--input", rest[i]]
                i += 1
        out = os.path.join(HERE, "idioms", "%s_n3" % name)
        cmd = [sys.executable, export] + args + ["--n", "3", "--seed", "5", "--out", out]
        print(" ".join(cmd[1:]), flush=True)
        subprocess.run(cmd, cwd=ROOT, check=True)
        tol = ["--rtol", "1e-2", "--atol", "1e-2"] if "half" in name else []
        subprocess.run([sys.executable, reference, os.path.join(out, "graph.json")] + tol, cwd=ROOT, check=True)


if __name__ == "__main__":
    main()
