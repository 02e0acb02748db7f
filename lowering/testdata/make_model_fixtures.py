#!/usr/bin/env python3
"""Regenerates lowering/testdata/models/<model>_n<N>/ with exporters/torch/export.py:

    /usr/bin/python3 lowering/testdata/make_model_fixtures.py [models/NAME ...]   (from the repository root)

The real-model architectures of examples/models.py (GPT, ViT, MLPMixer) and the bench's
(bench/peers/real_models.py: its GPT, ViT, MLP-Mixer and dilated temporal conv net) at odd sizes: sequences
and token counts that are not multiples of 16, odd head dims, causal masks, token-mixing
transposes. Each fixture is a graph.json, weights, inputs and the outputs of N PyTorch modules
run one by one (expected.safetensors); TestModelFixtures runs the lowered plans against them.
"""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_conv_fixtures  # noqa: E402  (its main exports FIXTURES at NS)

MODELS = os.path.join("examples", "models.py")
REAL = os.path.join("bench", "peers", "real_models.py")  # the bench's --real models

FIXTURES = {
    # head dim 9, T = 19, a tied LM head over a vocabulary of 37
    "models/gpt": ["--module", MODELS + ":GPT", "--kwargs", json.dumps({"vocab": 37, "d_model": 36, "nhead": 4,
                                                                        "layers": 2, "seq": 19}),
                   "--input", "tokens=2,19:int64:0:37"],
    # T = 32, a multiple of the key block: the causal mask, added as -inf/0 on the CPU, is the
    # only thing that drops a score
    "models/gpt_t32": ["--module", MODELS + ":GPT", "--kwargs", json.dumps({"vocab": 37, "d_model": 36, "nhead": 4,
                                                                            "layers": 1, "seq": 32}),
                       "--input", "tokens=2,32:int64:0:37"],
    # 25 patches of 3x3, head dim 9
    "models/vit": ["--module", MODELS + ":ViT", "--kwargs", json.dumps({"image": 15, "patch": 3, "d_model": 18,
                                                                        "nhead": 2, "layers": 2, "classes": 5}),
                   "--input", "x=2,3,15,15"],
    # 25 tokens mixed through transposes, channels 20
    "models/mixer": ["--module", MODELS + ":MLPMixer", "--kwargs", json.dumps({"image": 15, "patch": 3, "d_model": 20,
                                                                               "layers": 2, "token_hidden": 19,
                                                                               "channel_hidden": 33, "classes": 5}),
                     "--input", "x=2,3,15,15"],
    # the bench's transformers, attention written out over heads split from a fused QKV
    # projection: head dim 9, 25 tokens; T = 19 causal
    "models/bench_vit": ["--module", REAL + ":vit", "--kwargs", json.dumps({"d": 18, "patch": 3, "image": 15, "heads": 2,
                                                                           "blocks": 2, "classes": 5}),
                         "--input", "x=2,3,15,15"],
    "models/bench_gpt": ["--module", REAL + ":gpt", "--kwargs", json.dumps({"vocab": 37, "d": 36, "tokens": 19, "heads": 4,
                                                                           "blocks": 2}),
                         "--input", "x=2,19:int64:0:37"],
    # the bench's MLP-Mixer: 25 tokens, d = 20, token MLP 25-19-25, channel MLP 20-33-20
    "models/bench_mixer": ["--module", REAL + ":mixer", "--kwargs", json.dumps({"d": 20, "patch": 3, "image": 15, "blocks": 2,
                                                                               "token_hidden": 19, "channel_hidden": 33,
                                                                               "classes": 5}),
                           "--input", "x=2,3,15,15"],
    # the bench's dilated temporal conv net: 13 channels, length 37, dilations 1, 2, 4, 8
    "models/bench_tcn": ["--module", REAL + ":tcn", "--kwargs", json.dumps({"channels": 13, "classes": 5}),
                         "--input", "x=2,13,37"],
}


if __name__ == "__main__":
    make_conv_fixtures.FIXTURES = FIXTURES
    # N = 8 adds files, not coverage: the wide path is the same at N = 3
    make_conv_fixtures.NS = {name: (1, 3) for name in FIXTURES}
    make_conv_fixtures.main()
