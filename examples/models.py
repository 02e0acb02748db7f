"""PyTorch sources of the committed examples (exporters/torch/make_examples.py exports them).

Each class is built after torch.manual_seed(seed + i) by the exporter, so every random draw in
__init__ (including the BatchNorm running statistics randomised below) differs per model and is
reproducible.
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
