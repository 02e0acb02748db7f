"""Tests of widejit.compile and WideModel (the shared library, in process) against PyTorch.

    WIDEJIT_LIB=/path/to/libwidejit.so WIDEJIT=/path/to/widejit PYTHONPATH=python \\
        /usr/bin/python3 -m unittest discover -s python/tests -v

`go test ./exporters/torch/ -run Python` builds both and runs these. They skip without the
library ($WIDEJIT_LIB, or one installed with the package); the comparisons with the CLI's
messages skip without the binary.
"""

import importlib.util
import os
import shutil
import subprocess
import tempfile
import threading
import unittest
from unittest import mock

import torch
import torch.nn as nn
import torch.nn.functional as F

import widejit

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def library_or_skip(test):
    try:
        widejit.library_path()
    except widejit.LibraryNotFoundError as e:
        test.skipTest(str(e))


def example_models():
    """examples/models.py of the checkout."""
    spec = importlib.util.spec_from_file_location("widejit_examples", os.path.join(ROOT, "examples", "models.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


class ConvNet(nn.Module):
    """x [B, 3, 8, 8] -> Conv-BN-ReLU-MaxPool -> flatten -> Linear."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 6, 3, padding=1)
        self.bn = nn.BatchNorm2d(6)
        self.pool = nn.MaxPool2d(2)
        self.fc = nn.Linear(6 * 4 * 4, 5)
        with torch.no_grad():
            self.bn.running_mean.normal_(0.0, 0.2)
            self.bn.running_var.uniform_(0.5, 1.5)

    def forward(self, x):
        return self.fc(torch.flatten(self.pool(F.relu(self.bn(self.conv(x)))), 1))


class CausalBlock(nn.Module):
    """A decoder block: causal self-attention (a bool mask, True above the diagonal) and a
    feed-forward, both pre-norm, over x [B, T=6, 16]."""

    def __init__(self, t=6, d=16):
        super().__init__()
        self.norm1, self.norm2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.attn = nn.MultiheadAttention(d, 2, batch_first=True)
        self.ff1, self.ff2 = nn.Linear(d, 32), nn.Linear(32, d)
        self.register_buffer("mask", torch.ones(t, t, dtype=torch.bool).triu(1))

    def forward(self, x):
        h = self.norm1(x)
        x = x + self.attn(h, h, h, attn_mask=self.mask, need_weights=False)[0]
        return x + self.ff2(F.gelu(self.ff1(self.norm2(x))))


class SlicedCausalBlock(nn.Module):
    """CausalBlock over any sequence length up to 32: a learned positional table and a causal
    mask buffer, both sliced to T = x.size(1)."""

    def __init__(self, d=16):
        super().__init__()
        self.pos = nn.Parameter(torch.randn(32, d))
        self.norm = nn.LayerNorm(d)
        self.attn = nn.MultiheadAttention(d, 2, batch_first=True)
        self.ff = nn.Linear(d, d)
        self.register_buffer("mask", torch.ones(32, 32, dtype=torch.bool).triu(1))

    def forward(self, x):
        t = x.size(1)
        h = self.norm(x + self.pos[:t])
        x = x + self.attn(h, h, h, attn_mask=self.mask[:t, :t], need_weights=False)[0]
        return x + self.ff(x)


class LSTMHead(nn.Module):
    """x [B, T=5, 6] -> a batch-first LSTM -> the last step through a Linear; and the final h."""

    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(6, 8, batch_first=True)
        self.head = nn.Linear(8, 3)

    def forward(self, x):
        out, (h, _) = self.lstm(x)
        return self.head(out[:, -1]), h


class Embed(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(10, 4)

    def forward(self, tokens):
        return self.emb(tokens).sum(1)


class CatEmbed(nn.Module):
    """An embedding of computed indices (tokens twice, concatenated): no host check guards
    them, so the kernel itself reads whatever index it is given."""

    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(10, 4)

    def forward(self, tokens):
        return self.emb(torch.cat([tokens, tokens], dim=1))


def build(cls, n, seed=0):
    models = []
    for i in range(n):
        torch.manual_seed(seed + i)
        models.append(cls().eval())
    return models


def loop(models, *per_model):
    """The PyTorch loop: model i on its inputs [i], results stacked [N, ...] (tuples kept)."""
    with torch.no_grad():
        outs = [m(*[x[i] for x in per_model]) for i, m in enumerate(models)]
    if isinstance(outs[0], tuple):
        return tuple(torch.stack([o[k] for o in outs]) for k in range(len(outs[0])))
    return torch.stack(outs)


def no_child_processes():
    """Patches every way Python starts a process to fail the test."""
    def refuse(*args, **kwargs):
        raise AssertionError("a child process was started: %r" % (args[:1],))
    return [mock.patch.object(subprocess, "Popen", refuse), mock.patch.object(os, "fork", refuse),
            mock.patch.object(os, "posix_spawn", refuse), mock.patch.object(os, "posix_spawnp", refuse),
            mock.patch.object(os, "system", refuse), mock.patch.object(os, "execv", refuse)]


class InProcessTest(unittest.TestCase):
    def setUp(self):
        library_or_skip(self)
        self.cache = tempfile.mkdtemp(prefix="widejit-test-cache-")
        self.addCleanup(shutil.rmtree, self.cache, True)

    def compile(self, models, inputs, **kw):
        wide = widejit.compile(models, inputs, device="cpu", cache_dir=self.cache, **kw)
        self.addCleanup(wide.close)
        return wide

    def assertClose(self, got, want, what=""):
        self.assertEqual(got.shape, want.shape, what)
        self.assertEqual(got.dtype, want.dtype, what)
        bound = 1e-5 + 1e-4 * want.abs().max().item()
        diff = (got - want).abs().max().item()
        self.assertLessEqual(diff, bound, "%s: max |got - want| = %g > %g" % (what, diff, bound))

    def test_mlps_300_calls_in_process(self):
        """4 MLPs of examples/models.py: compile and 300 calls without a child process, each
        equal to the PyTorch loop; another batch size served by the same handle."""
        models = build(example_models().MLP, 4)
        gen = torch.Generator().manual_seed(1)
        xs = [torch.randn(4, 32, 64, generator=gen) for _ in range(3)]
        patches = no_child_processes()
        for p in patches:
            p.start()
        try:
            wide = self.compile(models, xs[0])
            for i in range(300):
                x = xs[i % 3]
                self.assertClose(wide(x), loop(models, x), "call %d" % i)
            x5 = torch.randn(4, 5, 64, generator=gen)
            self.assertClose(wide(x5), loop(models, x5), "batch 5")
        finally:
            for p in patches:
                p.stop()
        self.assertEqual(wide.profile()["batches"], [5, 32])

    def test_outputs_are_written_in_place(self):
        """The result is a fresh tensor per call; the input is read in place (not modified)."""
        models = build(example_models().MLP, 2)
        x = torch.randn(2, 3, 64)
        keep = x.clone()
        wide = self.compile(models, x)
        a, b = wide(x), wide(x)
        self.assertNotEqual(a.data_ptr(), b.data_ptr())
        self.assertTrue(torch.equal(a, b))
        self.assertTrue(torch.equal(x, keep))
        # a non-contiguous input is made contiguous first
        xt = torch.randn(2, 64, 3).transpose(1, 2)
        self.assertClose(wide(xt), loop(models, xt))

    def test_cnn_causal_transformer_lstm_at_two_batch_sizes(self):
        gen = torch.Generator().manual_seed(2)
        cases = [(ConvNet, (3, 8, 8)), (CausalBlock, (6, 16)), (LSTMHead, (5, 6))]
        for cls, shape in cases:
            with self.subTest(cls.__name__):
                models = build(cls, 3, seed=10)
                wide = self.compile(models, torch.randn(3, 4, *shape, generator=gen))
                for b in (4, 2):
                    x = torch.randn(3, b, *shape, generator=gen)
                    got, want = wide(x), loop(models, x)
                    if isinstance(want, tuple):
                        self.assertEqual(len(got), len(want))
                        for (name, g), w in zip(got.items(), want):
                            self.assertClose(g, w, "%s batch %d output %s" % (cls.__name__, b, name))
                    else:
                        self.assertClose(got, want, "%s batch %d" % (cls.__name__, b))

    def test_dynamic_sequence_length(self):
        gen = torch.Generator().manual_seed(3)
        models = build(SlicedCausalBlock, 3, seed=20)
        wide = self.compile(models, torch.randn(3, 2, 16, 16, generator=gen), dynamic={"x": [1]})
        for b, t in ((2, 20), (3, 9), (1, 32), (2, 16)):
            x = torch.randn(3, b, t, 16, generator=gen)
            self.assertClose(wide(x), loop(models, x), "batch %d, length %d" % (b, t))
        with self.assertRaises(widejit.RunError) as cm:
            wide(torch.randn(3, 2, 40, 16, generator=gen))
        self.assertIn('dim 1 of input "x", now 40', str(cm.exception))
        self.assertIn("baked in at 32", str(cm.exception))

    def test_shared_input_named_and_lists(self):
        models = build(example_models().MLP, 3)
        x = torch.randn(4, 64)
        wide = self.compile(models, {"x": x}, shared_input=True)
        want = loop(models, x.expand(3, 4, 64))
        self.assertClose(wide(x=x), want)
        per = wide.unpack(wide(x))
        self.assertEqual(len(per), 3)
        self.assertClose(per[1], want[1])
        wide2 = self.compile(models, torch.randn(3, 4, 64))
        xs = [torch.randn(2, 64) for _ in range(3)]
        self.assertClose(wide2(xs), loop(models, widejit.pack(xs)))

    def test_model_range(self):
        """model_range=(lo, hi) runs those of the N models only, on their rows of the inputs."""
        models = build(example_models().MLP, 4)
        wide = self.compile(models, torch.randn(4, 3, 64), model_range=(1, 3))
        self.assertEqual((wide.n, wide.models), (2, (1, 3, 4)))
        x = torch.randn(2, 5, 64)
        self.assertClose(wide(x), loop(models[1:3], x))

    def test_threads(self):
        """Several Python threads calling one WideModel (one plan: the same batch size) each
        get their own inputs' results: the runs take turns (unserialised, some come out wrong)."""
        models = build(example_models().MLP, 4)
        wide = self.compile(models, torch.randn(4, 8, 64))
        inputs = [torch.randn(4, 8, 64) for _ in range(8)]
        wants = [loop(models, x) for x in inputs]
        failures = []

        def work(t):
            try:
                for i in range(50):
                    if not torch.allclose(wide(inputs[t]), wants[t], rtol=1e-4, atol=1e-5):
                        failures.append("thread %d, call %d: wrong result" % (t, i))
            except Exception as e:  # reported below
                failures.append("thread %d: %r" % (t, e))

        threads = [threading.Thread(target=work, args=(t,)) for t in range(len(inputs))]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        self.assertEqual(failures, [])

    def test_explain_profile_close(self):
        models = build(example_models().MLP, 2)
        x = torch.randn(2, 3, 64)
        with widejit.compile(models, x, device="cpu", cache_dir=self.cache, profile=True) as wide:
            wide(x)
            self.assertIn("kernel", wide.explain())
            prof = wide.profile()
            self.assertGreater(len(prof["kernels"]), 0)
            self.assertEqual(prof["launches"], len([k for k in prof["kernels"] if not k["prepare"]]) +
                             len([k for k in prof["kernels"] if k["prepare"]]))
        with self.assertRaises(ValueError) as cm:
            wide(x)
        self.assertIn("closed", str(cm.exception))
        wide.close()  # again: nothing

    def test_compile_writes_no_file(self):
        """Without out_dir, the graph and weights go to the library in memory: no file is
        written from Python (and, with no_cache, none from Go: checked by the library's own
        tests), and a new batch size needs none either."""
        models = build(example_models().MLP, 3)
        real_open = open

        def no_writes(file, mode="r", *args, **kwargs):
            if any(c in mode for c in "wax+"):
                raise AssertionError("compile wrote %r" % (file,))
            return real_open(file, mode, *args, **kwargs)

        def refuse(*args, **kwargs):
            raise AssertionError("compile made a directory: %r" % (args[:1],))
        patches = [mock.patch("builtins.open", no_writes), mock.patch.object(os, "mkdir", refuse),
                   mock.patch.object(os, "makedirs", refuse), mock.patch.object(tempfile, "mkdtemp", refuse),
                   mock.patch.object(tempfile, "mkstemp", refuse)]
        for p in patches:
            p.start()
        try:
            wide = widejit.compile(models, torch.randn(3, 4, 64), device="cpu", no_cache=True)
            self.addCleanup(wide.close)
            x = torch.randn(3, 9, 64)
            got = wide(x)
        finally:
            for p in patches:
                p.stop()
        self.assertClose(got, loop(models, x))
        self.assertIn("widejit.compile(MLP)", wide.explain().splitlines()[0])

    def test_out_dir_is_kept(self):
        models = build(example_models().MLP, 2)
        out = tempfile.mkdtemp(prefix="widejit-test-out-")
        self.addCleanup(shutil.rmtree, out, True)
        wide = self.compile(models, torch.randn(2, 3, 64), out_dir=out)
        wide.close()
        self.assertTrue(os.path.isfile(os.path.join(out, "graph.json")))

    def test_run_uses_the_library(self):
        """widejit.run takes the library when present: no child process, the binary's results."""
        models = build(example_models().MLP, 3)
        out = tempfile.mkdtemp(prefix="widejit-test-run-")
        self.addCleanup(shutil.rmtree, out, True)
        widejit.export(models, {"x": torch.randn(3, 4, 64)}, out)
        x = torch.randn(3, 6, 64)
        patches = no_child_processes()
        for p in patches:
            p.start()
        try:
            got = widejit.run(out, {"x": x}, device="cpu")
        finally:
            for p in patches:
                p.stop()
        self.assertClose(next(iter(got.values())), loop(models, x))
        try:
            widejit.find_binary()
        except widejit.BinaryNotFoundError:
            return
        by_binary = widejit.run(out, {"x": x}, device="cpu", in_process=False)
        self.assertEqual(list(by_binary), list(got))
        for name in got:
            self.assertTrue(torch.equal(got[name], by_binary[name]), name)

    def test_errors(self):
        models = build(example_models().MLP, 2)
        wide = self.compile(models, torch.randn(2, 3, 64))
        with self.assertRaises(widejit.RunError) as cm:
            wide(torch.randn(2, 3, 65))
        self.assertIn('input "x" has shape [2 3 65], expected [2 3 64]', str(cm.exception))
        with self.assertRaises(TypeError) as cm:
            wide(torch.randn(2, 3, 64, dtype=torch.float64))
        self.assertIn("torch.float64", str(cm.exception))
        with self.assertRaises(TypeError):
            wide(torch.randn(2, 3, 64), torch.randn(1))
        with self.assertRaises(TypeError) as cm:
            wide(y=torch.randn(2, 3, 64))
        self.assertIn("no input 'y'", str(cm.exception))
        with self.assertRaises(widejit.RunError) as cm:
            widejit.compile(models, torch.randn(2, 3, 64), device="cpu", no_such_option=1)
        self.assertEqual(cm.exception.returncode, 2)
        self.assertIn('unknown option "no_such_option"', str(cm.exception))
        with self.assertRaises(widejit.RunError) as cm:
            widejit.compile(models, torch.randn(2, 3, 64), device="cpu", threads=-1)
        self.assertIn("threads: -1 must be >= 0", str(cm.exception))
        with self.assertRaises(widejit.ExportError) as cm:
            widejit.compile(models, (torch.randn(2, 3, 64), torch.randn(2, 3, 64)), device="cpu")
        self.assertIn("2 example inputs given positionally, but MLP.forward takes x", str(cm.exception))
        self.assertClose(wide(torch.randn(2, 3, 64) * 0), loop(models, torch.zeros(2, 3, 64)))

    def test_bad_indices_raise_and_the_interpreter_lives(self):
        """An embedding index out of range: of an input, refused by the host check before any
        kernel runs; computed (no host check sees it) and far beyond the table, stopped by the
        embedding kernel's device assertion. Both raise RunError, and the model goes on
        working."""
        cases = [(Embed, 10, 'input "tokens": index 10 at [1 2 3] is out of range for emb (10 rows)'),
                 (CatEmbed, 1000, "device assertion failed: embedding index out of range")]
        for cls, index, want in cases:
            with self.subTest(cls.__name__):
                models = build(cls, 2)
                tokens = torch.randint(0, 10, (2, 3, 5))
                wide = self.compile(models, tokens)
                self.assertClose(wide(tokens), loop(models, tokens))
                bad = tokens.clone()
                bad[1, 2, 3] = index
                with self.assertRaises(widejit.RunError) as cm:
                    wide(bad)
                self.assertIn(want, str(cm.exception))
                self.assertClose(wide(tokens), loop(models, tokens))

    def test_run_errors_carry_the_clis_text(self):
        """A kernel's device assertion during a run: the same message and exit code from the library
        as from the binary given the same inputs."""
        models = build(CatEmbed, 2)
        tokens = torch.randint(0, 10, (2, 3, 5))
        out = tempfile.mkdtemp(prefix="widejit-test-runerr-")
        self.addCleanup(shutil.rmtree, out, True)
        widejit.export(models, {"tokens": tokens}, out)
        bad = tokens.clone()
        bad[1, 2, 3] = 1000
        os.environ["WIDEJIT_CACHE_DIR"] = self.cache  # for the library and the binary alike
        self.addCleanup(os.environ.pop, "WIDEJIT_CACHE_DIR", None)
        with self.assertRaises(widejit.RunError) as lib:
            widejit.run(out, {"tokens": bad}, device="cpu", in_process=True)
        self.assertIn("device assertion failed: embedding index out of range", str(lib.exception))
        try:
            widejit.find_binary()
        except widejit.BinaryNotFoundError as e:
            self.skipTest(str(e))
        with self.assertRaises(widejit.RunError) as binary:
            widejit.run(out, {"tokens": bad}, device="cpu", in_process=False)
        self.assertEqual(lib.exception.returncode, binary.exception.returncode)
        self.assertEqual(lib.exception.stderr.strip(), binary.exception.stderr.strip())

    def test_graph_errors_carry_the_clis_text(self):
        """A graph the CLI refuses: the same message and exit code from the library."""
        d = tempfile.mkdtemp(prefix="widejit-test-bad-")
        self.addCleanup(shutil.rmtree, d, True)
        path = os.path.join(d, "graph.json")
        with open(path, "w") as f:
            f.write('{"format": "widejit.graph/v1", "n": 2, "init": {"seed": 1},\n'
                    ' "inputs": [{"name": "x", "type": "float32[3,4]"}], "params": [],\n'
                    ' "nodes": [{"name": "y", "op": "no_such_op", "inputs": ["x"]}], "outputs": ["y"]}\n')
        with self.assertRaises(widejit.RunError) as cm:
            widejit.WideModel.load(path, device="cpu", cache_dir=self.cache)
        self.assertEqual(cm.exception.returncode, 3)
        self.assertIn("no_such_op", str(cm.exception))
        try:
            binary = widejit.find_binary()
        except widejit.BinaryNotFoundError as e:
            self.skipTest(str(e))
        proc = subprocess.run([binary, "run", path, "--device", "cpu", "--cache-dir", self.cache],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, encoding="utf-8", errors="replace")
        self.assertEqual(proc.returncode, cm.exception.returncode)
        self.assertEqual(proc.stderr.strip(), str(cm.exception))

    def test_missing_library_says_how_to_build_it(self):
        old = os.environ.get("WIDEJIT_LIB")
        os.environ["WIDEJIT_LIB"] = os.path.join(self.cache, "no-such-lib.so")
        try:
            with self.assertRaises(widejit.LibraryNotFoundError) as cm:
                widejit.compile(build(example_models().MLP, 2), torch.randn(2, 3, 64))
            self.assertIn("go build -buildmode=c-shared", str(cm.exception))
        finally:
            if old is None:
                del os.environ["WIDEJIT_LIB"]
            else:
                os.environ["WIDEJIT_LIB"] = old


if __name__ == "__main__":
    unittest.main()
