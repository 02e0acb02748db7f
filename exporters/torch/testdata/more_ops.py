"""Models that exercise ops the committed examples do not, checked by reference.py (see
export_test.go). Not committed as examples: they only test the exporter's mapping."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class Vision(nn.Module):
    """Convolutions, pools and norms beyond the examples."""

    def __init__(self):
        super().__init__()
        self.conv1d = nn.Conv1d(3, 4, 3, stride=2, padding=1)
        self.conv = nn.Conv2d(3, 6, 3, padding="same", dilation=2, bias=False)
        self.grouped = nn.Conv2d(6, 6, 3, stride=2, padding=1, groups=3)
        self.up = nn.ConvTranspose2d(6, 4, 3, stride=2, padding=1, output_padding=1)
        self.gn = nn.GroupNorm(2, 4)
        self.inorm = nn.InstanceNorm2d(4, affine=True)
        self.avg = nn.AvgPool2d(2, stride=1, padding=1, count_include_pad=False)
        self.adapt = nn.AdaptiveAvgPool2d((2, None))
        self.prelu = nn.PReLU(4)
        self.pool1d = nn.MaxPool1d(2)
        self.apool1d = nn.AvgPool1d(2)
        self.adapt1d = nn.AdaptiveAvgPool1d(3)
        self.bn1d = nn.BatchNorm1d(4)
        self.up1d = nn.ConvTranspose1d(4, 2, 2, stride=2)
        with torch.no_grad():
            self.bn1d.running_mean.normal_()
            self.bn1d.running_var.uniform_(0.5, 2)

    def forward(self, img, sig):
        y = self.grouped(F.silu(self.conv(img)))
        y = self.prelu(self.inorm(self.gn(self.up(y))))
        y = self.adapt(self.avg(y))
        s = self.bn1d(self.conv1d(sig))
        s = self.up1d(self.adapt1d(self.apool1d(self.pool1d(s))))
        return F.hardswish(y), torch.sigmoid(s).sum(dim=[1, 2], keepdim=True)


class Sequence(nn.Module):
    """Recurrent layers, cross attention with masks, embeddings, and functional forms."""

    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(20, 8)
        self.gru = nn.GRU(8, 8, num_layers=2)
        self.rnn = nn.RNN(8, 8, nonlinearity="relu", batch_first=True)
        self.attn = nn.MultiheadAttention(8, 2, kdim=6, vdim=5, add_bias_kv=True)
        self.norm = nn.LayerNorm(8, elementwise_affine=False)
        self.scale = nn.Parameter(torch.randn(8))
        self.act = nn.ELU(alpha=0.5)
        self.soft = nn.Softplus(beta=2.0, threshold=5.0)
        self.leaky = nn.LeakyReLU(0.2)

    def forward(self, tok, mem_k, mem_v, h0):
        e = self.embed(tok)                                   # [T, B, 8]
        out, h = self.gru(e, h0)
        r, _ = self.rnn(out.transpose(0, 1))                  # [B, T, 8]
        q = r.transpose(0, 1)                                 # [T, B, 8]
        a, w = self.attn(q, mem_k, mem_v)
        z = self.norm(a + q) * self.scale
        z = torch.stack([self.act(z), self.soft(z), self.leaky(z), torch.tanh(z)], dim=2)
        parts = torch.split(z, [1, 3], dim=2)
        u = parts[0].squeeze(2) - parts[1].amax(dim=2) / 2.0
        v = torch.matmul(u, u.transpose(1, 2)).unsqueeze(1)
        v = (-v) ** 2 + F.gelu(v, approximate="tanh")
        return u.reshape(-1, 16).contiguous(), torch.div(v, 3.0, rounding_mode="floor"), w, h


class Defaults(nn.Module):
    """Forward arguments left at their defaults are fixed (torch.fx's guards on them are dropped);
    an input may also be returned as is, and a returned tensor may be used again."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x, mask=None, scale=2.0):
        y = self.fc(x) * scale
        if mask is not None:
            y = y + mask
        return y, F.relu(y).sum(dim=-1), x


class ScaledLinear(nn.Linear):
    """An nn.Linear subclass with its own forward is traced through to F.linear."""

    def forward(self, x):
        return F.linear(x, self.weight, self.bias) * 0.5


class Functional(nn.Module):
    """Functional forms whose weights are the module's parameters."""

    def __init__(self):
        super().__init__()
        self.emb = nn.Parameter(torch.randn(10, 6))
        self.conv_w = nn.Parameter(torch.randn(4, 2, 3, 3) * 0.3)
        self.conv_b = nn.Parameter(torch.randn(4))
        self.ln_w = nn.Parameter(torch.rand(6) + 0.5)
        self.proj = nn.Parameter(torch.randn(3, 6))
        self.lin = ScaledLinear(6, 6)

    def forward(self, tok, img):
        e = F.embedding(tok, self.emb, padding_idx=1)                     # [B, T, 6]
        e = F.layer_norm(self.lin(e), (6,), self.ln_w, None, 1e-6)
        y = e @ self.proj.t()                                             # [B, T, 3]
        c = F.conv2d(img, self.conv_w, self.conv_b, stride=1, padding=1, groups=2)
        return y, F.gelu(c)


class Volumes(nn.Module):
    """3-d convolutions, norms and pools; transposed convolutions called with output_size and
    through F.conv_transpose2d."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv3d(3, 4, 3, padding="same", dilation=2)
        self.bn = nn.BatchNorm3d(4)
        self.pool = nn.MaxPool3d(2, ceil_mode=True)
        self.avg = nn.AvgPool3d(3, stride=1, padding=1, count_include_pad=False, divisor_override=None)
        self.up = nn.ConvTranspose3d(4, 2, 2, stride=2, groups=2)
        self.adapt = nn.AdaptiveAvgPool3d((None, 2, 3))
        self.up2 = nn.ConvTranspose2d(3, 2, 3, stride=2, padding=1)
        self.w2 = nn.Parameter(torch.randn(2, 3, 2, 2) * 0.5)
        with torch.no_grad():
            self.bn.running_mean.normal_()
            self.bn.running_var.uniform_(0.5, 2)

    def forward(self, vol, img):
        v = self.avg(self.pool(torch.relu(self.bn(self.conv(vol)))))
        v = self.adapt(self.up(v))
        i = self.up2(img, output_size=(img.size(2) * 2, img.size(3) * 2))
        return v, F.conv_transpose2d(i, self.w2, stride=2, output_padding=1, dilation=2, groups=1)
