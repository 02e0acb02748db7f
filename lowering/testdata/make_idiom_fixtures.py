#!/usr/bin/env python3
"""Regenerates lowering/testdata/idioms/<model>_n3/ with exporters/torch/export.py:

    /usr/bin/python3 lowering/testdata/make_idiom_fixtures.py [--out DIR]   (from the repository root)

The models (idiom_models.py) are PyTorch code as people write it; each fixture holds the graph,
weights, inputs and the outputs of N=3 PyTorch modules run one by one, and is re-checked with
exporters/torch/reference.py. lowering's TestIdiomFixtures runs them through the CPU pipeline.
"""
import argparse
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
MODELS = os.path.join("lowering", "testdata", "idiom_models.py")
sys.path.insert(0, os.path.join(ROOT, "exporters", "torch"))
import export  # noqa: E402  (in this process: torch is imported once for every fixture)
import reference  # noqa: E402

FIXTURES = {
    "indexing": ["Indexing", "x=3,5,7"],
    "causalselfattention": ["CausalSelfAttention", "x=2,7,15"],
    "maskedscores": ["MaskedScores", "x=2,5,6"],
    "mathops": ["MathOps", "x=3,13"],
    "transformers": ["Transformers", "src=2,7,12", "tgt=2,5,12"],
    "encoderstack": ["EncoderStack", "src=2,7,12"],
    "mhamasks": ["MHAMasks", "x=2,5,10", "mem=6,2,10", "pad=2,6:float32:0:1"],
    "ditblock": ["DiTBlock", "x=2,5,11", "t=2,7"],
    "sdpa": ["SDPA", "x=2,5,12"],
    "halfmlp_bf16": ["HalfMLP", "x=5,19:bfloat16"],
    "rowtails": ["RowTails", "x=2,5,24"],
    "rowheads": ["RowHeads", "x=2,5,37"],
    "hardacts": ["HardActs", "x=2,3,9,11:float32:-5:5"],
    "functionalpools": ["FunctionalPools", "x=2,3,9,11"],
    "ropeeinsum": ["RopeEinsum", "x=2,5,12", "pos=2,5:float32:0:20"],
    "batchstats": ["BatchStats", "x=3,3,7,9", "--train-batchnorm"],
    "padinterp": ["PadInterp", "x=2,3,7,9"],
    "matmulparams": ["MatmulParams", "x=3,5,9"],
}
FLAGS = {"--train-batchnorm"}  # export.py flags that take no value


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.path.join(HERE, "idioms"), help="where to write (default: the committed fixtures)")
    out_dir = ap.parse_args().out
    os.chdir(ROOT)
    for name, spec in FIXTURES.items():
        cls, rest = spec[0], spec[1:]
        args = ["--module", MODELS + ":" + cls]
        i = 0
        while i < len(rest):
            if rest[i] in FLAGS:
                args.append(rest[i])
                i += 1
            elif rest[i].startswith("--"):
                args += rest[i:i + 2]
                i += 2
            else:
                args += ["--input", rest[i]]
                i += 1
        out = os.path.join(out_dir, "%s_n3" % name)
        argv = args + ["--n", "3", "--seed", "5", "--out", out]
        print("export.py " + " ".join(argv), flush=True)
        if export.main(argv) != 0:
            return 1
        tol = ["--rtol", "1e-2", "--atol", "1e-2"] if "half" in name else []
        if reference.main([os.path.join(out, "graph.json")] + tol) != 0:
            return 1
        print("%s: reference check ok" % name, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
