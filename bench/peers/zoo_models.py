"""PyTorch sources of the bench-only zoo cases (bench/zoo/*.json); the first four cases come from
examples/models.py. Parameter names are the graphs' param names (state_dict keys)."""

import torch
import torch.nn as nn


class Chain(nn.Module):
    """Named layers applied in order: a Linear/Conv2d stack with activations, e.g.
    Chain(("fc1", nn.Linear(512, 1024)), ("act", nn.GELU()), ("fc2", nn.Linear(1024, 512)))."""

    def __init__(self, *layers):
        super().__init__()
        for name, layer in layers:
            self.add_module(name, layer)

    def forward(self, x):
        for layer in self.children():
            x = layer(x)
        return x


def linear256():
    return Chain(("fc", nn.Linear(256, 128)))


def linear_odd():
    return Chain(("fc", nn.Linear(257, 131)))


def linear1024():
    return Chain(("fc", nn.Linear(1024, 1024)))


def mlp1024():
    return Chain(("fc1", nn.Linear(512, 1024)), ("act", nn.GELU()), ("fc2", nn.Linear(1024, 512)))


def conv3x3():
    return Chain(("conv1", nn.Conv2d(16, 32, 3, padding=1)), ("relu1", nn.ReLU()),
                 ("conv2", nn.Conv2d(32, 32, 3, padding=1)), ("relu2", nn.ReLU()))


def conv64():
    return Chain(("conv1", nn.Conv2d(3, 64, 3, padding=1)), ("relu1", nn.ReLU()),
                 ("conv2", nn.Conv2d(64, 64, 3, padding=1)), ("relu2", nn.ReLU()))


class PreNormBlock(nn.Module):
    """One pre-norm transformer encoder block (batch_first):
    h = x + MHA(LN1(x)); out = h + Linear2(GELU(Linear1(LN2(h))))."""

    def __init__(self, d_model=128, nhead=4, dim_feedforward=512):
        super().__init__()
        self.norm1 = nn.LayerNorm(d_model)
        self.self_attn = nn.MultiheadAttention(d_model, nhead, batch_first=True)
        self.norm2 = nn.LayerNorm(d_model)
        self.linear1 = nn.Linear(d_model, dim_feedforward)
        self.act = nn.GELU()
        self.linear2 = nn.Linear(dim_feedforward, d_model)
        self.nhead = nhead

    def forward(self, x):
        h = self.norm1(x)
        h = x + self.self_attn(h, h, h, need_weights=False)[0]
        return h + self.linear2(self.act(self.linear1(self.norm2(h))))


class NormSoftmax(nn.Module):
    """LayerNorm, Linear d->d, softmax over the last dim, LayerNorm."""

    def __init__(self, d=256):
        super().__init__()
        self.norm1 = nn.LayerNorm(d)
        self.fc = nn.Linear(d, d)
        self.norm2 = nn.LayerNorm(d)

    def forward(self, x):
        return self.norm2(torch.softmax(self.fc(self.norm1(x)), dim=-1))


def transformer():
    return PreNormBlock(128, 4, 512)


def norm_softmax():
    return NormSoftmax(256)

