"""The bench's real models (go run ./bench --real): torchvision CNNs, two small transformers, an
MLP-Mixer and a dilated temporal conv net, and (--real --extra) their families' other members;
each a class constructed without arguments, so that exporters/torch/export.py exports it
(--module bench/peers/real_models.py:NAME) and the PyTorch peer builds the same modules with the
exported weights. INPUTS gives each one's per-model input (export.py's --input syntax); the Go
side reads it from here (realInputs in bench/real.go keeps the same table)."""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class _TorchVision(nn.Module):
    """A torchvision model by factory name (random weights, 1000 classes)."""
    factory = ""

    def __init__(self):
        super().__init__()
        import torchvision.models as tvm  # imported here: the zoo runs without torchvision
        self.m = getattr(tvm, self.factory)()

    def forward(self, x):
        return self.m(x)


class resnet18(_TorchVision):
    factory = "resnet18"


class regnet_y_400mf(_TorchVision):
    factory = "regnet_y_400mf"


class mobilenet_v3_small(_TorchVision):
    factory = "mobilenet_v3_small"


class efficientnet_b0(_TorchVision):
    factory = "efficientnet_b0"


class convnext_tiny(_TorchVision):
    factory = "convnext_tiny"


class shufflenet_v2_x0_5(_TorchVision):
    factory = "shufflenet_v2_x0_5"


# The families' other members (go run ./bench --real --extra): deeper and wider torchvision
# relatives of the models above, at their family member's input size.
class resnet34(_TorchVision):
    factory = "resnet34"


class resnet50(_TorchVision):
    factory = "resnet50"


class regnet_x_400mf(_TorchVision):
    factory = "regnet_x_400mf"


class regnet_y_800mf(_TorchVision):
    factory = "regnet_y_800mf"


class mobilenet_v3_large(_TorchVision):
    factory = "mobilenet_v3_large"


class efficientnet_b1(_TorchVision):
    factory = "efficientnet_b1"


class shufflenet_v2_x1_0(_TorchVision):
    factory = "shufflenet_v2_x1_0"


class _Block(nn.Module):
    """Pre-norm transformer block: x + proj(attention(LN(x))), then x + MLP(LN(x)) (GELU);
    attention written out (q k^T / sqrt(dh) + mask, softmax, @ v) over heads."""

    def __init__(self, d, heads, tokens, causal):
        super().__init__()
        self.d, self.heads, self.tokens = d, heads, tokens
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.fc1, self.fc2 = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)
        mask = torch.zeros(tokens, tokens)
        if causal:
            mask = torch.triu(torch.full((tokens, tokens), float("-inf")), 1)
        self.register_buffer("mask", mask)

    def forward(self, x):
        t, h, dh = self.tokens, self.heads, self.d // self.heads
        q, k, v = self.qkv(self.ln1(x)).chunk(3, dim=-1)
        q = q.reshape(-1, t, h, dh).transpose(1, 2)
        k = k.reshape(-1, t, h, dh).transpose(1, 2)
        v = v.reshape(-1, t, h, dh).transpose(1, 2)
        att = torch.softmax(q @ k.transpose(-2, -1) * (1.0 / math.sqrt(dh)) + self.mask, dim=-1)
        y = (att @ v).transpose(1, 2).reshape(-1, t, self.d)
        x = x + self.proj(y)
        return x + self.fc2(F.gelu(self.fc1(self.ln2(x))))


class gpt(nn.Module):
    """GPT-style LM: token and position embeddings, 2 causal blocks, d=64, 4 heads, T=32,
    vocabulary 256, final LayerNorm and a head tied to the token embedding."""

    def __init__(self, vocab=256, d=64, tokens=32, heads=4, blocks=2):
        super().__init__()
        self.tok = nn.Embedding(vocab, d)
        self.pos = nn.Parameter(torch.randn(tokens, d) * 0.02)
        self.blocks = nn.Sequential(*[_Block(d, heads, tokens, True) for _ in range(blocks)])
        self.ln = nn.LayerNorm(d)

    def forward(self, x):
        x = self.blocks(self.tok(x) + self.pos)
        return F.linear(self.ln(x), self.tok.weight)


class gpt_wide(gpt):
    """The GPT's wider, deeper relative (--extra): 4 causal blocks, d=128, 4 heads, T=64."""

    def __init__(self):
        super().__init__(d=128, tokens=64, heads=4, blocks=4)


class vit(nn.Module):
    """ViT: 32x32 images in 4x4 patches (64 tokens), d=64, 4 heads, 2 blocks, mean-pooled tokens,
    a 10-class head."""

    def __init__(self, d=64, patch=4, image=32, heads=4, blocks=2, classes=10):
        super().__init__()
        tokens = (image // patch) ** 2
        self.embed = nn.Conv2d(3, d, patch, stride=patch)
        self.pos = nn.Parameter(torch.randn(tokens, d) * 0.02)
        self.blocks = nn.Sequential(*[_Block(d, heads, tokens, False) for _ in range(blocks)])
        self.ln = nn.LayerNorm(d)
        self.head = nn.Linear(d, classes)

    def forward(self, x):
        x = self.embed(x).flatten(2).transpose(1, 2) + self.pos
        return self.head(self.ln(self.blocks(x)).mean(dim=1))


class vit_p8(vit):
    """The ViT's relative (--extra): 8x8 patches (16 tokens), d=128, 4 heads, 4 blocks."""

    def __init__(self):
        super().__init__(d=128, patch=8, heads=4, blocks=4)


class _MixerBlock(nn.Module):
    """MLP-Mixer block: token mixing (LN, the transposed [channels, tokens] through an MLP over
    the tokens, transposed back) and channel mixing (LN, MLP over the channels), GELU MLPs,
    each with a residual."""

    def __init__(self, tokens, d, token_hidden, channel_hidden):
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.tok1, self.tok2 = nn.Linear(tokens, token_hidden), nn.Linear(token_hidden, tokens)
        self.ch1, self.ch2 = nn.Linear(d, channel_hidden), nn.Linear(channel_hidden, d)

    def forward(self, x):
        x = x + self.tok2(F.gelu(self.tok1(self.ln1(x).transpose(1, 2)))).transpose(1, 2)
        return x + self.ch2(F.gelu(self.ch1(self.ln2(x))))


class mixer(nn.Module):
    """MLP-Mixer: 32x32 images in 4x4 patches (64 tokens), d=96, 3 blocks (token MLP 64-128-64,
    channel MLP 96-192-96), final LayerNorm, mean-pooled tokens, a 10-class head."""

    def __init__(self, d=96, patch=4, image=32, blocks=3, token_hidden=128, channel_hidden=192, classes=10):
        super().__init__()
        tokens = (image // patch) ** 2
        self.embed = nn.Conv2d(3, d, patch, stride=patch)
        self.blocks = nn.Sequential(*[_MixerBlock(tokens, d, token_hidden, channel_hidden) for _ in range(blocks)])
        self.ln = nn.LayerNorm(d)
        self.head = nn.Linear(d, classes)

    def forward(self, x):
        x = self.embed(x).flatten(2).transpose(1, 2)
        return self.head(self.ln(self.blocks(x)).mean(dim=1))


class tcn(nn.Module):
    """Dilated temporal conv net on [B, channels, length] sequences: residual blocks of two
    kernel-3 Conv1d with dilation 1, 2, 4, 8 (padded to keep the length), ReLUs, then the
    time-averaged channels through a 10-class head."""

    def __init__(self, channels=64, dilations=(1, 2, 4, 8), classes=10):
        super().__init__()
        self.convs = nn.ModuleList(nn.ModuleList(nn.Conv1d(channels, channels, 3, dilation=dil, padding=dil)
                                                 for _ in range(2)) for dil in dilations)
        self.head = nn.Linear(channels, classes)

    def forward(self, x):
        for a, b in self.convs:
            x = torch.relu(x + b(torch.relu(a(x))))
        return self.head(x.mean(dim=2))


# per-model input of each, batch 2 (export.py's --input NAME=SHAPE[:DTYPE[:LOW:HIGH]]); the
# --extra models after the blank line, each at its family member's size
INPUTS = {
    "resnet18": "x=2,3,96,96", "regnet_y_400mf": "x=2,3,96,96", "shufflenet_v2_x0_5": "x=2,3,96,96",
    "mobilenet_v3_small": "x=2,3,64,64", "efficientnet_b0": "x=2,3,64,64", "convnext_tiny": "x=2,3,64,64",
    "gpt": "x=2,32:int64:0:256", "vit": "x=2,3,32,32", "mixer": "x=2,3,32,32", "tcn": "x=2,64,256",

    "resnet34": "x=2,3,96,96", "resnet50": "x=2,3,96,96", "regnet_x_400mf": "x=2,3,96,96",
    "regnet_y_800mf": "x=2,3,96,96", "shufflenet_v2_x1_0": "x=2,3,96,96",
    "mobilenet_v3_large": "x=2,3,64,64", "efficientnet_b1": "x=2,3,64,64",
    "gpt_wide": "x=2,64:int64:0:256", "vit_p8": "x=2,3,32,32",
}

MAKERS = {name: globals()[name] for name in INPUTS}
