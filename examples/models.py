"""PyTorch sources of the committed examples (exporters/torch/make_examples.py exports them).

Each class is built after torch.manual_seed(seed + i) by the exporter, so every random draw in
__init__ (including the BatchNorm running statistics randomised below) differs per model and is
reproducible.

GPT, ViT and MLPMixer are small real-model architectures (issue 26) for the bench and the speed
tests; export them with e.g. `--module examples/models.py:GPT --n 3 --input tokens=2,32:int64:0:96`
or `--module examples/models.py:ViT --n 3 --input x=2,3,32,32`.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F


def randomize_batch_norm(module):
    """Gives every BatchNorm non-trivial running statistics and affine parameters, so that eval
    mode really uses them (fresh ones are mean 0, var 1, weight 1, bias 0)."""
    for m in module.modules():
        if isinstance(m, nn.modules.batchnorm._BatchNorm):
            with torch.no_grad():
                m.running_mean.normal_(0.0, 0.5)
                m.running_var.uniform_(0.5, 2.0)
                m.weight.uniform_(0.5, 1.5)
                m.bias.normal_(0.0, 0.2)


class MLP(nn.Module):
    """The anchor's zoo MLP: Linear 64->128, ReLU, Linear 128->64."""

    def __init__(self, d_in=64, hidden=128, d_out=64):
        super().__init__()
        self.fc1 = nn.Linear(d_in, hidden)
        self.act = nn.ReLU()
        self.fc2 = nn.Linear(hidden, d_out)

    def forward(self, x):
        return self.fc2(self.act(self.fc1(x)))


class DeepMLP(nn.Module):
    """4 x (Linear 64->64 + GELU)."""

    def __init__(self, width=64, depth=4):
        super().__init__()
        layers = []
        for _ in range(depth):
            layers += [nn.Linear(width, width), nn.GELU()]
        self.layers = nn.Sequential(*layers)

    def forward(self, x):
        return self.layers(x)


class ResBlock(nn.Module):
    """Conv 3x3, BN, ReLU, Conv 3x3, BN, + identity, ReLU."""

    def __init__(self, channels=64):
        super().__init__()
        self.conv1 = nn.Conv2d(channels, channels, 3, padding=1)
        self.bn1 = nn.BatchNorm2d(channels)
        self.relu = nn.ReLU()
        self.conv2 = nn.Conv2d(channels, channels, 3, padding=1)
        self.bn2 = nn.BatchNorm2d(channels)
        randomize_batch_norm(self)

    def forward(self, x):
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        out = out + x
        return torch.relu(out)


class ConvNet(nn.Module):
    """Conv2d 3->32->32->32, 3x3 pad 1, ReLU after each."""

    def __init__(self, channels=32):
        super().__init__()
        self.conv1 = nn.Conv2d(3, channels, 3, padding=1)
        self.conv2 = nn.Conv2d(channels, channels, 3, padding=1)
        self.conv3 = nn.Conv2d(channels, channels, 3, padding=1)

    def forward(self, x):
        x = F.relu(self.conv1(x))
        x = F.relu(self.conv2(x))
        return F.relu(self.conv3(x))


class Classifier(nn.Module):
    """Conv, BN, ReLU, MaxPool2d, flatten via x.view(x.size(0), -1), Linear, log_softmax(dim=1)."""

    def __init__(self, in_channels=3, channels=16, image=16, classes=10):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, channels, 3, padding=1)
        self.bn = nn.BatchNorm2d(channels)
        self.pool = nn.MaxPool2d(2)
        self.fc = nn.Linear(channels * (image // 2) ** 2, classes)
        randomize_batch_norm(self)

    def forward(self, x):
        x = self.pool(F.relu(self.bn(self.conv(x))))
        x = x.view(x.size(0), -1)
        return F.log_softmax(self.fc(x), dim=1)


class TransformerEncoderLayer(nn.Module):
    """What nn.TransformerEncoderLayer(64, 4, 128, activation=F.gelu, batch_first=True) computes
    in eval mode (post-norm, norm_first=False; same state_dict keys), written out because that
    module's fast-path checks do not trace."""

    def __init__(self, d_model=64, nhead=4, dim_feedforward=128, dropout=0.1):
        super().__init__()
        self.self_attn = nn.MultiheadAttention(d_model, nhead, dropout=dropout, batch_first=True)
        self.linear1 = nn.Linear(d_model, dim_feedforward)
        self.dropout = nn.Dropout(dropout)
        self.linear2 = nn.Linear(dim_feedforward, d_model)
        self.norm1 = nn.LayerNorm(d_model)
        self.norm2 = nn.LayerNorm(d_model)
        self.dropout1 = nn.Dropout(dropout)
        self.dropout2 = nn.Dropout(dropout)
        self.activation = nn.GELU()
        with torch.no_grad():  # LayerNorm affine away from the trivial 1/0 so it is tested
            for norm in (self.norm1, self.norm2):
                norm.weight.uniform_(0.5, 1.5)
                norm.bias.normal_(0.0, 0.2)

    def forward(self, src):
        attn = self.self_attn(src, src, src, need_weights=False)[0]
        x = self.norm1(src + self.dropout1(attn))
        ff = self.linear2(self.dropout(self.activation(self.linear1(x))))
        return self.norm2(x + self.dropout2(ff))


class EmbeddingBag(nn.Module):
    """Embedding(50, 32, padding_idx=0) on int64 tokens, mean over tokens, Linear 32->8."""

    def __init__(self, vocab=50, dim=32, classes=8):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim, padding_idx=0)
        self.fc = nn.Linear(dim, classes)

    def forward(self, tok):
        return self.fc(self.embed(tok).mean(dim=1))


class Patterns(nn.Module):
    """The patterns the anchor gets wrong (shared/design/primitives.md), in one small model:
    a depthwise conv (groups=channels), a parameter and a buffer used directly in forward, cat of a
    list with a positive dim, softmax and mean over positive dims, a scalar operand, chunk with
    getitem, nn.Flatten and torch.flatten(x, 1) heads, attention whose weights are used (a tuple
    output of a module), and a tuple output of the model. (Recurrent layers come with their own
    lowering in a later wave.)"""

    def __init__(self, channels=4, size=6, classes=3):
        super().__init__()
        self.depthwise = nn.Conv2d(channels, channels, 3, padding=1, groups=channels)
        self.scale = nn.Parameter(torch.rand(channels, 1, 1) + 0.5)
        self.register_buffer("shift", torch.randn(channels, 1, 1) * 0.1)
        self.flatten = nn.Flatten()
        self.head = nn.Linear(2 * channels * size, classes)
        self.attn = nn.MultiheadAttention(size, 2, batch_first=True)
        self.proj = nn.Linear(size, classes)

    def forward(self, x):
        h = self.depthwise(x) * self.scale + self.shift            # [B, C, H, W]
        c = torch.cat([h, x], dim=1)                                # [B, 2C, H, W]
        s = torch.softmax(c, dim=1)
        m = s.mean(dim=3)                                           # [B, 2C, H]
        logits = self.head(self.flatten(m)) * 0.5                   # [B, classes]
        a, b = torch.chunk(m, 2, dim=1)                             # [B, C, H] each
        seq = torch.flatten(a.permute(0, 2, 1) - b.transpose(1, 2), 1)  # [B, H*C]
        seq = seq.view(x.size(0), x.size(1), -1)                    # [B, C, H]
        out, weights = self.attn(seq, seq, seq)                     # weights: [B, C, C]
        pooled = self.proj(out.mean(dim=1)) + self.proj(out.amax(dim=1))
        return F.log_softmax(logits, dim=1), pooled, weights


class GPTBlock(nn.Module):
    """Pre-norm decoder block: x + attn(LN(x)) under a causal mask, then x + MLP(LN(x)) with GELU."""

    def __init__(self, d_model, nhead, hidden):
        super().__init__()
        self.ln1 = nn.LayerNorm(d_model)
        self.attn = nn.MultiheadAttention(d_model, nhead, batch_first=True)
        self.ln2 = nn.LayerNorm(d_model)
        self.fc1 = nn.Linear(d_model, hidden)
        self.fc2 = nn.Linear(hidden, d_model)
        with torch.no_grad():  # LayerNorm affine away from the trivial 1/0 so it is tested
            for norm in (self.ln1, self.ln2):
                norm.weight.uniform_(0.5, 1.5)
                norm.bias.normal_(0.0, 0.2)

    def forward(self, x, causal):
        h = self.ln1(x)
        x = x + self.attn(h, h, h, attn_mask=causal, need_weights=False)[0]
        return x + self.fc2(F.gelu(self.fc1(self.ln2(x))))


class GPT(nn.Module):
    """GPT-style language model on int64 tokens [B, T]: token + learned position embeddings,
    pre-norm causal blocks, a final LayerNorm and an LM head tied to the token embedding
    (logits [B, T, vocab])."""

    def __init__(self, vocab=96, d_model=64, nhead=4, layers=2, seq=32):
        super().__init__()
        self.tok = nn.Embedding(vocab, d_model)
        self.pos = nn.Parameter(torch.randn(seq, d_model) * 0.1)
        self.blocks = nn.ModuleList(GPTBlock(d_model, nhead, 4 * d_model) for _ in range(layers))
        self.ln_f = nn.LayerNorm(d_model)
        self.register_buffer("causal", torch.ones(seq, seq, dtype=torch.bool).triu(1))

    def forward(self, tokens):
        x = self.tok(tokens) + self.pos
        for block in self.blocks:
            x = block(x, self.causal)
        return F.linear(self.ln_f(x), self.tok.weight)


class ViTBlock(nn.Module):
    """Pre-norm encoder block (no mask): x + attn(LN(x)), then x + MLP(LN(x)) with GELU."""

    def __init__(self, d_model, nhead, hidden):
        super().__init__()
        self.ln1 = nn.LayerNorm(d_model)
        self.attn = nn.MultiheadAttention(d_model, nhead, batch_first=True)
        self.ln2 = nn.LayerNorm(d_model)
        self.fc1 = nn.Linear(d_model, hidden)
        self.fc2 = nn.Linear(hidden, d_model)

    def forward(self, x):
        h = self.ln1(x)
        x = x + self.attn(h, h, h, need_weights=False)[0]
        return x + self.fc2(F.gelu(self.fc1(self.ln2(x))))


class ViT(nn.Module):
    """Small vision transformer on [B, 3, image, image]: a strided Conv2d patch embedding,
    learned position embeddings, pre-norm blocks, a final LayerNorm, mean pooling over the patches
    (no class token) and a Linear head."""

    def __init__(self, image=32, patch=4, d_model=64, nhead=4, layers=2, classes=10):
        super().__init__()
        tokens = (image // patch) ** 2
        self.embed = nn.Conv2d(3, d_model, patch, stride=patch)
        self.pos = nn.Parameter(torch.randn(tokens, d_model) * 0.1)
        self.blocks = nn.ModuleList(ViTBlock(d_model, nhead, 2 * d_model) for _ in range(layers))
        self.ln = nn.LayerNorm(d_model)
        self.head = nn.Linear(d_model, classes)

    def forward(self, x):
        x = self.embed(x).flatten(2).transpose(1, 2) + self.pos   # [B, tokens, d]
        for block in self.blocks:
            x = block(x)
        return self.head(self.ln(x).mean(dim=1))


class MixerBlock(nn.Module):
    """MLP-Mixer block: token mixing (LN, transpose, MLP over the tokens, transpose back) and
    channel mixing (LN, MLP over the channels), each with a residual."""

    def __init__(self, tokens, d_model, token_hidden, channel_hidden):
        super().__init__()
        self.ln1 = nn.LayerNorm(d_model)
        self.tok1 = nn.Linear(tokens, token_hidden)
        self.tok2 = nn.Linear(token_hidden, tokens)
        self.ln2 = nn.LayerNorm(d_model)
        self.ch1 = nn.Linear(d_model, channel_hidden)
        self.ch2 = nn.Linear(channel_hidden, d_model)

    def forward(self, x):
        t = self.ln1(x).transpose(1, 2)                              # [B, d, tokens]
        x = x + self.tok2(F.gelu(self.tok1(t))).transpose(1, 2)
        return x + self.ch2(F.gelu(self.ch1(self.ln2(x))))


class MLPMixer(nn.Module):
    """MLP-Mixer on [B, 3, image, image]: strided Conv2d patch embedding (image 32, patch 4: 64
    tokens), mixer blocks, a final LayerNorm, mean pooling over the tokens and a Linear head."""

    def __init__(self, image=32, patch=4, d_model=96, layers=3, token_hidden=128, channel_hidden=192,
                 classes=10):
        super().__init__()
        tokens = (image // patch) ** 2
        self.embed = nn.Conv2d(3, d_model, patch, stride=patch)
        self.blocks = nn.Sequential(*(MixerBlock(tokens, d_model, token_hidden, channel_hidden)
                                      for _ in range(layers)))
        self.ln = nn.LayerNorm(d_model)
        self.head = nn.Linear(d_model, classes)

    def forward(self, x):
        x = self.embed(x).flatten(2).transpose(1, 2)                 # [B, tokens, d]
        return self.head(self.ln(self.blocks(x)).mean(dim=1))
