#!/usr/bin/env python3
"""Regenerates lowering/testdata/rnn/<model>_n<N>/ with exporters/torch/export.py:

    /usr/bin/python3 lowering/testdata/make_rnn_fixtures.py [NAME ...]   (from the repository root)

NAME (e.g. rnn/lstm) limits the run to those fixtures.

Each fixture is a graph.json, weights, inputs and the outputs of N PyTorch modules run one by
one (expected.safetensors); lowering's recurrent tests run the lowered plans against them.
"""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
MODELS = os.path.join("lowering", "testdata", "models_rnn.py")
sys.path.insert(0, os.path.join(ROOT, "exporters", "torch"))
import export  # noqa: E402  (in process: torch is imported once for all fixtures)

# x [T=5, B=3, 5]; initial states [layers * directions, B, 7]; u an unbatched [T=4, 5]
STATES = ["--input", "hb=4,3,7", "--input", "hc=2,3,7"]
FIXTURES = {
    "rnn/rnn_tanh": ["--module", MODELS + ":RNNTanh", "--input", "x=5,3,5"] + STATES + ["--input", "u=4,5"],
    "rnn/rnn_relu": ["--module", MODELS + ":RNNRelu", "--input", "x=5,3,5"] + STATES + ["--input", "u=4,5"],
    "rnn/gru": ["--module", MODELS + ":GRUs", "--input", "x=5,3,5"] + STATES + ["--input", "u=4,5"],
    "rnn/lstm": ["--module", MODELS + ":LSTMs", "--input", "x=5,3,5", "--input", "hb=4,3,7", "--input", "cb=4,3,7",
                 "--input", "hc=2,3,7", "--input", "cc=2,3,7", "--input", "u=4,5"],
    "rnn/wide": ["--module", MODELS + ":Wide", "--input", "x=2,3,3", "--input", "h=2,2,20", "--input", "c=2,2,20"],
}


def main():
    os.chdir(ROOT)  # the module paths are relative to the repository root
    only = set(sys.argv[1:])
    jobs = [(name, n) for name in FIXTURES if not only or name in only for n in (1, 3)]
    for name, n in jobs:
        argv = FIXTURES[name] + ["--n", str(n), "--seed", "5", "--out", os.path.join(HERE, "%s_n%d" % (name, n))]
        print("export.py " + " ".join(argv), flush=True)
        if export.main(argv) != 0:
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
