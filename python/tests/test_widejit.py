"""Tests of the widejit Python package against PyTorch (unittest only).

    WIDEJIT=/path/to/widejit PYTHONPATH=python /usr/bin/python3 -m unittest discover -s python/tests -v

`go test ./exporters/torch/ -run Python` builds the binary and runs these. Tests that run the binary skip when it is
not found ($WIDEJIT or PATH).
"""

import os
import shutil
import sys
import tempfile
import unittest

import torch
import torch.nn as nn
import torch.nn.functional as F

import widejit


class ArangeScale(nn.Module):
    """x [B, T] scaled by torch.arange(T): a tensor built in forward whose size follows T."""

    def forward(self, x):
        return x * torch.arange(x.size(1)).float()


class ShiftedTable(nn.Module):
    """x [B, T] plus a table sliced to [1:T+1]: a slice end that follows T but is not T."""

    def __init__(self):
        super().__init__()
        self.table = nn.Parameter(torch.randn(32))

    def forward(self, x):
        return x + self.table[1:x.size(1) + 1]


class ExpandToT(nn.Module):
    """x [B, T] plus a [1, 1] parameter expanded to x's shape, T included."""

    def __init__(self):
        super().__init__()
        self.b = nn.Parameter(torch.randn(1, 1))

    def forward(self, x):
        return x + self.b.expand(x.size(0), x.size(1))


class Net(nn.Module):
    """A small regression head: Linear, LayerNorm, GELU, Linear."""

    def __init__(self, d_in=8, hidden=16, d_out=3):
        super().__init__()
        self.fc1 = nn.Linear(d_in, hidden)
        self.norm = nn.LayerNorm(hidden)
        self.fc2 = nn.Linear(hidden, d_out)

    def forward(self, x):
        return self.fc2(F.gelu(self.norm(self.fc1(x))))


class Other(Net):
    pass


def trained(seed, lr, steps=5, **kwargs):
    """A Net after a few SGD steps on a fixed regression task: weights unlike any initialisation,
    and different for every (seed, lr)."""
    torch.manual_seed(seed)
    m = Net(**kwargs)
    gen = torch.Generator().manual_seed(100)
    x = torch.randn(64, m.fc1.in_features, generator=gen)
    y = torch.randn(64, m.fc2.out_features, generator=gen)
    opt = torch.optim.SGD(m.parameters(), lr=lr, momentum=0.9)
    for _ in range(steps):
        opt.zero_grad()
        F.mse_loss(m(x), y).backward()
        opt.step()
    return m


def one_by_one(models, xs):
    with torch.no_grad():
        return torch.stack([m(x) for m, x in zip(models, xs)])


def binary_or_skip(test):
    try:
        return widejit.find_binary()
    except widejit.BinaryNotFoundError as e:
        test.skipTest(str(e))


class Close:
    def assertClose(self, got, want):
        """|got - want| <= 1e-5 + 1e-4 * max|want| everywhere (widejit's --check bound)."""
        self.assertEqual(got.shape, want.shape)
        self.assertEqual(got.dtype, want.dtype)
        bound = 1e-5 + 1e-4 * want.abs().max().item()
        diff = (got - want).abs().max().item()
        self.assertLessEqual(diff, bound, "max |got - want| = %g > %g" % (diff, bound))


class ExportRunTest(unittest.TestCase, Close):
    @classmethod
    def setUpClass(cls):
        cls.models = [trained(seed, lr) for seed, lr in [(0, 0.1), (1, 0.05), (2, 0.02)]]
        cls.tmp = tempfile.TemporaryDirectory(prefix="widejit-py-test-")

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def out(self, name):
        return os.path.join(self.tmp.name, name)

    def test_models_are_trained_and_differ(self):
        w = [m.fc1.weight for m in self.models]
        self.assertFalse(torch.equal(w[0], w[1]))
        torch.manual_seed(0)
        self.assertFalse(torch.equal(Net().fc1.weight, w[0]), "training did not change the weights")

    def test_per_model_inputs_match_pytorch(self):
        binary_or_skip(self)
        gen = torch.Generator().manual_seed(1)
        xs = [torch.randn(4, 8, generator=gen) for _ in self.models]
        out = self.out("per_model")
        graph = widejit.export(self.models, {"x": widejit.pack(xs)}, out)
        self.assertEqual(graph["n"], 3)
        self.assertEqual(graph["inputs"], [{"name": "x", "shape": [4, 8], "dtype": "float32", "per_model": True}])
        for f in ("graph.json", "weights.safetensors", "inputs.safetensors", "expected.safetensors"):
            self.assertTrue(os.path.isfile(os.path.join(out, f)), f)

        # The exported inputs (inputs=None), then new ones, as a tensor and as a list.
        got = widejit.run(out, device="cpu")
        self.assertEqual(list(got), graph["outputs"])
        self.assertClose(got[graph["outputs"][0]], one_by_one(self.models, xs))
        new = [torch.randn(4, 8, generator=gen) * 3 for _ in self.models]
        want = one_by_one(self.models, new)
        (name,) = graph["outputs"]
        self.assertClose(widejit.run(out, {"x": widejit.pack(new)}, device="cpu")[name], want)
        per_model = widejit.unpack(widejit.run(os.path.join(out, "graph.json"), {"x": new}, device="cpu"))
        self.assertEqual(len(per_model), 3)
        for i, outs in enumerate(per_model):
            self.assertClose(outs[name], want[i])

        # The sequential mode through extra_args gives the same.
        self.assertClose(widejit.run(out, {"x": new}, device="cpu", extra_args=["--mode", "sequential"])[name], want)

    def test_shared_input_matches_pytorch(self):
        binary_or_skip(self)
        gen = torch.Generator().manual_seed(2)
        x = torch.randn(5, 8, generator=gen)
        out = self.out("shared")
        graph = widejit.export(self.models, {"x": x}, out, shared_input=True)
        self.assertFalse(graph["inputs"][0]["per_model"])
        x2 = torch.randn(5, 8, generator=gen)
        got = widejit.run(out, {"x": x2}, device="cpu")[graph["outputs"][0]]
        self.assertClose(got, one_by_one(self.models, [x2] * 3))

    def test_batch_statistics(self):
        binary_or_skip(self)
        torch.manual_seed(5)
        models = [nn.Sequential(nn.Linear(8, 6), nn.BatchNorm1d(6), nn.ReLU()) for _ in range(3)]
        saved = [m[1].running_mean.clone() for m in models]
        gen = torch.Generator().manual_seed(6)
        xs = [torch.randn(5, 8, generator=gen) * 2 + 1 for _ in models]
        graph = widejit.export(models, {"input": widejit.pack(xs)}, self.out("bn"), train_batchnorm=True)
        for m, mean in zip(models, saved):
            self.assertTrue(torch.equal(m[1].running_mean, mean), "the export changed the running statistics")
            self.assertTrue(m.training)
        new = [torch.randn(5, 8, generator=gen) * 3 - 1 for _ in models]
        with torch.no_grad():
            want = torch.stack([m(x) for m, x in zip(models, new)])  # training mode: batch statistics
        (name,) = graph["outputs"]
        self.assertClose(widejit.run(self.out("bn"), {"input": widejit.pack(new)}, device="cpu")[name], want)

    def test_export_restores_training_mode(self):
        models = [trained(3, 0.1), trained(4, 0.1)]
        models[0].train()
        models[1].eval()
        widejit.export(models, {"x": torch.randn(2, 4, 8)}, self.out("modes"))
        self.assertTrue(models[0].training)
        self.assertTrue(models[0].fc1.training)
        self.assertFalse(models[1].training)

    def test_export_errors(self):
        x = torch.randn(3, 4, 8)
        cases = [
            ("not a list", Net(), {"x": x}, "list of torch.nn.Module"),
            ("empty", [], {"x": x}, "non-empty list"),
            ("not a module", [Net(), "net"], {"x": x[:2]}, "models[1] is a str"),
            ("two classes", [Net(), Other(), Net()], {"x": x}, "models[1] is a Other, models[0] a Net"),
            ("another shape", [Net(), Net(hidden=12), Net()], {"x": x}, "models[1] does not have models[0]'s "
             "parameters and buffers: key 'fc1.weight' has shape [12, 8], expected [16, 8]"),
            ("another dtype", [Net(), Net().double(), Net()], {"x": x}, "key 'fc1.weight' has dtype float64, "
             "expected float32"),
            ("another eps", [Net(), _with_eps(Net(), 1e-3), Net()], {"x": x}, "models[1] is built differently"),
            ("leading size", self.models, {"x": torch.randn(2, 4, 8)}, "inputs['x'] has shape [2, 4, 8]: per-model "
             "inputs are [N, ...] with N = 3 models"),
            ("unknown input", self.models, {"x": x, "y": x}, "inputs['y']: Net.forward has no argument 'y'"),
            ("missing input", self.models, {}, "inputs must be a non-empty dict"),
            ("list of other shapes", self.models, {"x": [x[0], x[1], x[2, :3]]}, "inputs['x']: pack: tensors[2] has "
             "shape [3, 8]"),
            ("not a tensor", self.models, {"x": 3.0}, "inputs['x'] is a float"),
            ("shared list", self.models, {"x": [x[0]] * 3}, "shared by every model"),
            ("forward fails", self.models, {"x": torch.randn(3, 4, 7)}, "Net.forward failed on the sample inputs"),
        ]
        for name, models, inputs, want in cases:
            with self.subTest(name):
                with self.assertRaises(widejit.ExportError) as cm:
                    widejit.export(models, inputs, self.out("bad"), shared_input=(name == "shared list"))
                self.assertIn(want, str(cm.exception))
                self.assertIsInstance(cm.exception, ValueError)
        self.assertFalse(os.path.exists(self.out("bad")), "a refused export wrote files")

    def test_dynamic_export_errors(self):
        x = torch.randn(3, 4, 8)
        cases = [
            ("unknown input", self.models, {"x": [1], "y": [1]}, "dynamic names 'y', which is not one of the inputs"),
            ("the batch", self.models, {"x": [0]}, "dim 0 is the batch, dynamic already"),
            ("a Linear over it", self.models, {"x": [1]}, "Net does not run with dim 1 of its input 0 one longer"),
            ("arange beyond an embedding", [ArangeScale() for _ in range(3)], {"x": [1]},
             "node 'mul' (call_function operator.mul) at test_widejit.py:26 `return x * torch.arange(x.size(1)).float()`: "
             "other is torch.arange over dim 1 of input 'x', which is dynamic; widejit follows it only as an nn.Embedding's index"),
            ("a slice end other than T", [ShiftedTable() for _ in range(3)], {"x": [1]},
             "the slice end changes with dim 1 of input 'x', which is dynamic; only a slice's end that is that dim's size"),
            ("an expand to T", [ExpandToT() for _ in range(3)], {"x": [1]},
             "Tensor.expand: dim 1 of its output follows dim 1 of input 'x', which is dynamic, but its input's does not"),
        ]
        for name, models, dynamic, want in cases:
            with self.subTest(name):
                with self.assertRaises(widejit.ExportError) as cm:
                    widejit.export(models, {"x": x}, self.out("bad"), dynamic=dynamic)
                self.assertIn(want, str(cm.exception))
        self.assertFalse(os.path.exists(self.out("bad")), "a refused export wrote files")

    def test_run_errors(self):
        out = self.out("for_errors")
        widejit.export(self.models, {"x": torch.randn(3, 4, 8)}, out)
        with self.assertRaises(ValueError) as cm:
            widejit.run(out, {"x": torch.randn(3, 4, 8), "y": torch.randn(1)})
        self.assertIn("unknown input 'y'", str(cm.exception))
        with self.assertRaises(ValueError) as cm:
            widejit.run(out, {})
        self.assertIn("missing input 'x'", str(cm.exception))
        with self.assertRaises(ValueError) as cm:
            widejit.run(out, device="")
        self.assertIn("non-empty string", str(cm.exception))
        with self.assertRaises(FileNotFoundError) as cm:
            widejit.run(self.out("nowhere"))
        self.assertIn("no graph.json", str(cm.exception))

        old = os.environ.get("WIDEJIT")
        try:
            os.environ["WIDEJIT"] = self.out("no-such-binary")
            with self.assertRaises(widejit.BinaryNotFoundError) as cm:
                widejit.run(out, in_process=False)
            self.assertIn("go build -o widejit ./cmd/widejit", str(cm.exception))
        finally:
            if old is None:
                del os.environ["WIDEJIT"]
            else:
                os.environ["WIDEJIT"] = old

        binary_or_skip(self)
        with self.assertRaises(widejit.RunError) as cm:  # the binary knows its backends
            widejit.run(out, device="tpu")
        self.assertIn('"tpu": no such backend', str(cm.exception))
        with self.assertRaises(widejit.RunError) as cm:
            widejit.run(out, {"x": torch.randn(3, 4, 9)}, device="cpu")
        self.assertNotEqual(cm.exception.returncode, 0)
        self.assertIn("x", cm.exception.stderr)
        self.assertIn(cm.exception.stderr, str(cm.exception))


FAKE_BINARY = r"""#!%s
# A stand-in for the widejit binary: writes non-UTF-8 bytes to stdout and stderr, then the
# outputs named in $FAKE_OUTPUTS (comma-separated) to --out, and exits with $FAKE_EXIT.
import json, os, struct, sys
os.write(1, b"stdout \xff\xfe caf\xe9\n")
os.write(2, b"stderr \xff caf\xe9\n")
out = sys.argv[sys.argv.index("--out") + 1]
names = [n for n in os.environ["FAKE_OUTPUTS"].split(",") if n]
header = {n: {"dtype": "F32", "shape": [1], "data_offsets": [4 * i, 4 * i + 4]} for i, n in enumerate(names)}
h = json.dumps(header).encode()
with open(out, "wb") as f:
    f.write(struct.pack("<Q", len(h)) + h + struct.pack("<%%df" %% len(names), *range(len(names))))
sys.exit(int(os.environ.get("FAKE_EXIT", "0")))
"""


class FakeBinaryTest(unittest.TestCase):
    """`run` with a stand-in binary: what it prints is decoded whatever its bytes, and an
    output file without the graph's outputs is an error, not {}."""

    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="widejit-fake-")
        self.addCleanup(shutil.rmtree, self.dir, True)
        self.graph = widejit.export([trained(0, 0.1), trained(1, 0.1)], {"x": torch.randn(2, 3, 8)}, self.dir)
        fake = os.path.join(self.dir, "fake-widejit")
        with open(fake, "w") as f:
            f.write(FAKE_BINARY % sys.executable)
        os.chmod(fake, 0o755)
        env = {"WIDEJIT": fake, "FAKE_EXIT": "0"}
        old = {k: os.environ.get(k) for k in list(env) + ["FAKE_OUTPUTS"]}

        def restore():
            for k, v in old.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v
        self.addCleanup(restore)
        os.environ.update(env)

    def run_fake(self, outputs, code=0):
        os.environ["FAKE_OUTPUTS"] = ",".join(outputs)
        os.environ["FAKE_EXIT"] = str(code)
        return widejit.run(self.dir, in_process=False)

    def test_non_utf8_output_is_decoded(self):
        names = self.graph["outputs"]
        got = self.run_fake(names)
        self.assertEqual(list(got), names)
        with self.assertRaises(widejit.RunError) as cm:
            self.run_fake(names, code=3)
        self.assertEqual(cm.exception.returncode, 3)
        self.assertIn("stderr \ufffd caf\ufffd", str(cm.exception))

    def test_missing_outputs_raise(self):
        with self.assertRaises(widejit.RunError) as cm:
            self.run_fake(["something_else"])
        msg = str(cm.exception)
        self.assertIn("the outputs lack %r" % self.graph["outputs"][0], msg)
        self.assertIn("got: something_else", msg)
        with self.assertRaises(widejit.RunError) as cm:
            self.run_fake([])
        self.assertIn("got: none", str(cm.exception))


def _with_eps(m, eps):
    m.norm.eps = eps
    return m


class PackTest(unittest.TestCase):
    def test_round_trip(self):
        ts = [torch.randn(2, 3) for _ in range(4)]
        packed = widejit.pack(ts)
        self.assertEqual(packed.shape, (4, 2, 3))
        back = widejit.unpack(packed)
        self.assertEqual(len(back), 4)
        for a, b in zip(ts, back):
            self.assertTrue(torch.equal(a, b))
        self.assertTrue(torch.equal(widejit.pack(tuple(back)), packed))
        ints = widejit.pack([torch.arange(3), torch.arange(3) + 1])
        self.assertEqual(ints.dtype, torch.int64)
        self.assertEqual(widejit.unpack(ints)[1].tolist(), [1, 2, 3])

    def test_unpack_dict(self):
        outs = {"a": torch.randn(3, 2), "b": torch.randn(3)}
        per_model = widejit.unpack(outs)
        self.assertEqual(len(per_model), 3)
        self.assertTrue(torch.equal(per_model[2]["a"], outs["a"][2]))
        self.assertEqual(per_model[1]["b"].item(), outs["b"][1].item())

    def test_errors(self):
        cases = [
            (lambda: widejit.pack([]), ValueError, "empty"),
            (lambda: widejit.pack(torch.randn(2, 3)), TypeError, "expected a list of tensors"),
            (lambda: widejit.pack([torch.randn(2), 3]), TypeError, "tensors[1] is a int"),
            (lambda: widejit.pack([torch.randn(2), torch.randn(3)]), ValueError, "tensors[1] has shape [3], tensors[0] has [2]"),
            (lambda: widejit.pack([torch.randn(2), torch.randn(2).double()]), ValueError, "tensors[1] has dtype torch.float64"),
            (lambda: widejit.unpack(torch.tensor(1.0)), ValueError, "0-d tensor"),
            (lambda: widejit.unpack([torch.randn(2)]), TypeError, "expected an [N, ...] tensor or a dict"),
            (lambda: widejit.unpack({"a": torch.randn(2), "b": torch.randn(3)}), ValueError, "different numbers of models"),
            (lambda: widejit.unpack({"a": 1}), TypeError, "'a' is a int"),
        ]
        for i, (call, exc, want) in enumerate(cases):
            with self.subTest(i=i, want=want):
                with self.assertRaises(exc) as cm:
                    call()
                self.assertIn(want, str(cm.exception))


if __name__ == "__main__":
    unittest.main()
