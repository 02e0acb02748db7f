#!/usr/bin/env python3
"""Regenerates lowering/testdata/fixtures/<model>_n<N>/ with exporters/torch/export.py:

    /usr/bin/python3 lowering/testdata/make_fixtures.py   (from the repository root)

Each fixture is a graph.json, weights, inputs and the outputs of N PyTorch modules run one by
one (expected.safetensors); lowering's tests run the lowered plans against them.
"""
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
MODELS = os.path.join("lowering", "testdata", "fixture_models.py")

FIXTURES = {
    "activations": ["--module", MODELS + ":Activations", "--input", "x=3,37"],
    "arithmetic": ["--module", MODELS + ":Arithmetic", "--input", "x=3,5,7", "--input", "y=5,1"],
    "norms": ["--module", MODELS + ":Norms", "--input", "x=3,5,7", "--input", "c=4,6,5", "--input", "img=2,6,3,5"],
    "reductions": ["--module", MODELS + ":Reductions", "--input", "x=3,5,7"],
    "shapes": ["--module", MODELS + ":Shapes", "--input", "x=2,3,5", "--input", "y=2,3,5"],
    "matmuls": ["--module", MODELS + ":Matmuls", "--input", "x=2,3,7", "--input", "b=2,7,4", "--input", "v=7"],
    "blocks": ["--module", MODELS + ":Blocks", "--input", "x=5,19", "--input", "tok=3,7:int64:0:23"],
    "views": ["--module", MODELS + ":Views", "--input", "x=3,5,7", "--input", "y=3,7,5"],
    "blocks_shared": ["--module", MODELS + ":Blocks", "--input", "x=5,19", "--input", "tok=3,7:int64:0:23", "--shared-input"],
}


def main():
    for name, args in FIXTURES.items():
        for n in (1, 3, 8):
            if name == "blocks_shared" and n != 3:
                continue
            out = os.path.join(HERE, "fixtures", "%s_n%d" % (name, n))
            cmd = [sys.executable, os.path.join(ROOT, "exporters", "torch", "export.py")] + args + \
                ["--n", str(n), "--seed", "3", "--out", out]
            print(" ".join(cmd[1:]), flush=True)
            subprocess.run(cmd, cwd=ROOT, check=True)


if __name__ == "__main__":
    main()
