"""Models of the dot families kept in float16 or bfloat16 (make_half_fixtures.py): every
convolution path (1-d, 2-d, 3-d, strided, grouped, depthwise, pointwise) with pooling, attention
(causal and masked), the recurrent layers and a fused MLP, with the element-wise and norm ops
around them."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class HalfConvs(nn.Module):
    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv1d(5, 6, 3, stride=2, padding=1)
        self.stem = nn.Conv2d(3, 8, 3, padding=1)
        self.bn = nn.BatchNorm2d(8)
        self.grouped = nn.Conv2d(8, 8, 3, stride=2, padding=1, groups=2)
        self.dw = nn.Conv2d(8, 8, 3, padding=1, groups=8)
        self.dws = nn.Conv2d(8, 16, 3, stride=2, padding=1, groups=8, bias=False)
        self.pw = nn.Conv2d(8, 5, 1)
        self.wide = nn.Conv2d(8, 6, 5, padding=2)  # a longer reduction: 8 * 25 = 200
        self.c3 = nn.Conv3d(3, 4, (2, 3, 3), padding=1)  # conv_nd.py (PyTorch 1.13's CPU cannot
        # run a bf16 ConvTranspose2d: it checks the weight's channels the wrong way round)
        with torch.no_grad():  # BatchNorm statistics that are not the identity
            self.bn.running_mean.uniform_(-0.5, 0.5)
            self.bn.running_var.uniform_(0.5, 2.0)
            self.bn.weight.uniform_(0.5, 1.5)
            self.bn.bias.uniform_(-0.5, 0.5)

    def forward(self, x, s, v):
        a = F.relu(self.bn(self.stem(x)))
        b = self.grouped(a)
        c = F.gelu(self.dw(b)) + b
        d = self.pw(c)
        pooled = F.max_pool2d(a, 2) + F.avg_pool2d(a, 2)
        return self.c1(s).tanh(), self.dws(b), d, self.wide(a), self.c3(v), pooled, F.adaptive_avg_pool2d(c, 1)


class HalfAttention(nn.Module):
    def __init__(self, d=16, heads=2):
        super().__init__()
        self.attn = nn.MultiheadAttention(d, heads, batch_first=True)
        self.norm = nn.LayerNorm(d)
        self.register_buffer("causal", torch.triu(torch.ones(7, 7, dtype=torch.bool), diagonal=1))

    def forward(self, x, pad):
        a, _ = self.attn(x, x, x, attn_mask=self.causal, need_weights=False)
        b, w = self.attn(x, x, x, key_padding_mask=pad > 0.7)
        return self.norm(x + a), b, w


class HalfRecurrent(nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(6, 10, num_layers=2, batch_first=True)
        self.gru = nn.GRU(6, 8, bidirectional=True, batch_first=True)
        self.rnn = nn.RNN(6, 7, nonlinearity="relu", batch_first=True)

    def forward(self, x):
        a, (h, c) = self.lstm(x)
        b, hg = self.gru(x)
        r, _ = self.rnn(x)
        return a, h, c, b, hg, r


class HalfMLP(nn.Module):
    """Linear-GELU-Linear (one fused MLP kernel) and a residual LayerNorm."""

    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(40, 67)
        self.fc2 = nn.Linear(67, 40)
        self.ln = nn.LayerNorm(40)

    def forward(self, x):
        return self.ln(x + self.fc2(F.gelu(self.fc1(x))))


class HalfTransposed(nn.Module):
    """Transposed convolutions (conv_nd.py), float16 only: PyTorch 1.13's CPU cannot run a
    bf16 ConvTranspose2d (it checks the weight's channels the wrong way round)."""

    def __init__(self):
        super().__init__()
        self.up2 = nn.ConvTranspose2d(5, 4, 3, stride=2, padding=1, output_padding=1)
        self.up1 = nn.ConvTranspose1d(6, 3, 4, stride=2, groups=3)

    def forward(self, x, s):
        return F.relu(self.up2(x)), self.up1(s)
