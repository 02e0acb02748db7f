#!/usr/bin/env python3
"""Regenerates every committed example under examples/ (or under --out).

    /usr/bin/python3 exporters/torch/make_examples.py [--out DIR] [--only NAME ...] [--print-commands]

Each example is exactly what export.py writes for the command line listed in EXAMPLES (run
in-process, so all of them cost one Python start); --print-commands prints those command lines.
After writing, each example is checked with reference.py (graph.json re-executed with
torch.nn.functional, compared with expected.safetensors).
"""

import argparse
import os
import shlex
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)

import export  # noqa: E402
import reference  # noqa: E402

MODELS = "examples/models.py"

# name -> export.py arguments (paths relative to the repository root).
EXAMPLES = {
    "mlp": ["--module", MODELS + ":MLP", "--n", "8", "--input", "x=32,64"],
    "deep_mlp": ["--module", MODELS + ":DeepMLP", "--n", "6", "--input", "x=32,64"],
    "resblock": ["--module", MODELS + ":ResBlock", "--n", "4", "--input", "x=4,64,16,16", "--shared-input"],
    "convnet": ["--module", MODELS + ":ConvNet", "--n", "4", "--input", "x=4,3,32,32", "--shared-input"],
    "classifier": ["--module", MODELS + ":Classifier", "--n", "8", "--input", "x=4,3,16,16"],
    "transformer": ["--module", MODELS + ":TransformerEncoderLayer", "--n", "4", "--input", "src=2,16,64"],
    "embedding": ["--module", MODELS + ":EmbeddingBag", "--n", "5", "--input", "tok=4,11:int64:0:50"],
    "patterns": ["--module", MODELS + ":Patterns", "--n", "4", "--input", "x=2,4,6,6", "--seed", "7"],
    # from checkpoints (examples/sweep/train.py trained and saved them): N = the number of files
    "sweep": ["--module", MODELS + ":MLP", "--kwargs", '{"d_in": 16, "hidden": 32, "d_out": 4}',
              "--state-dict", "examples/sweep/checkpoints/*.pt", "--input", "x=8,16", "--shared-input"],
}


def command(name, out):
    return ["python3", "exporters/torch/export.py"] + EXAMPLES[name] + ["--out", out]


def main(argv=None):
    ap = argparse.ArgumentParser(prog="make_examples.py", description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default=os.path.join(ROOT, "examples"), help="parent directory (default: examples/)")
    ap.add_argument("--only", nargs="*", default=None, help="example names (default: all)")
    ap.add_argument("--print-commands", action="store_true")
    args = ap.parse_args(argv)
    names = args.only or list(EXAMPLES)
    for name in names:
        if name not in EXAMPLES:
            print("make_examples.py: error: unknown example %r (one of %s)" % (name, ", ".join(EXAMPLES)), file=sys.stderr)
            return 2
    if args.print_commands:
        for name in names:
            print(" ".join(shlex.quote(a) for a in command(name, "examples/" + name)))
        return 0
    os.chdir(ROOT)  # module paths are relative to the repository root
    out_root = os.path.abspath(args.out)
    failed = 0
    for name in names:
        out = os.path.join(out_root, name)
        rc = export.main(EXAMPLES[name] + ["--out", out])
        if rc != 0:
            failed += 1
            continue
        try:
            report = reference.check(os.path.join(out, "graph.json"))
        except reference.GraphCheckError as e:
            print("make_examples.py: %s: reference check failed: %s" % (name, e), file=sys.stderr)
            failed += 1
            continue
        print("  %s: reference check ok (%s)" % (name, report))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
