"""Tiny PyTorch modules exercising every primitive lowering/ implements, with sizes that are
neither powers of two nor multiples of the kernels' block sizes. make_fixtures.py exports each
at N in {1, 3, 8} with exporters/torch/export.py."""
import torch
import torch.nn as nn
import torch.nn.functional as F


def _randomize(module, lo=-1.0, hi=1.0):
    with torch.no_grad():
        for p in module.parameters():
            p.uniform_(lo, hi)


class Activations(nn.Module):
    def __init__(self):
        super().__init__()
        self.prelu_c = nn.PReLU(37)
        self.prelu_1 = nn.PReLU()
        _randomize(self.prelu_c, 0.0, 0.5)
        _randomize(self.prelu_1, 0.0, 0.5)
        self.act = nn.GELU(approximate="tanh")
        self.leaky = nn.LeakyReLU(0.2)
        self.elu = nn.ELU(alpha=0.7)
        self.softplus = nn.Softplus(beta=2.0, threshold=3.0)
        self.hardswish = nn.Hardswish()

    def forward(self, x):
        x = x * 3.0
        return (torch.relu(x), F.gelu(x), self.act(x), F.silu(x), torch.sigmoid(x), torch.tanh(x),
                self.leaky(x), self.elu(x), self.softplus(x), self.hardswish(x), self.prelu_c(x),
                self.prelu_1(x), -x)


class Arithmetic(nn.Module):
    def __init__(self):
        super().__init__()
        self.p = nn.Parameter(torch.rand(7) + 0.5)

    def forward(self, x, y):
        a = x + y
        b = torch.sub(x, self.p, alpha=2.0)
        c = x * 0.5 + 1.0
        d = x / (self.p * self.p + 1.0)
        e = x ** 2 + x.pow(3)
        f = torch.pow(x * x + 1.0, 0.37)
        g = torch.div(x * 10.0, 3.0, rounding_mode="floor")
        h = torch.div(x * 10.0, 3.0, rounding_mode="trunc")
        i = torch.neg(x) * y - y / 3.0
        return a, b, c, d, e, f, g, h, i


class Norms(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln = nn.LayerNorm(7)
        self.ln_plain = nn.LayerNorm([5, 7], elementwise_affine=False)
        self.gn = nn.GroupNorm(3, 6)
        self.inorm = nn.InstanceNorm2d(6, affine=True)
        self.bn1 = nn.BatchNorm1d(6)
        self.bn2 = nn.BatchNorm2d(6)
        for m in (self.ln, self.gn, self.inorm, self.bn1, self.bn2):
            _randomize(m, 0.5, 1.5)
        with torch.no_grad():
            for bn in (self.bn1, self.bn2):
                bn.running_mean.uniform_(-1.0, 1.0)
                bn.running_var.uniform_(0.5, 2.0)

    def forward(self, x, c, img):
        return (F.gelu(self.ln(x)), self.ln_plain(x) * 2.0, self.gn(c), self.inorm(img),
                self.bn1(c.mean(dim=2)), torch.relu(self.bn2(img)))


class Reductions(nn.Module):
    def forward(self, x):
        return (F.softmax(x, dim=0), F.softmax(x, dim=1), F.log_softmax(x, dim=-1),
                torch.softmax(x * 2.0, 2), x.mean(dim=1), x.sum(dim=(0, 2)),
                x.amax(dim=-1, keepdim=True), x.mean(), x.sum(dim=(0, 1), keepdim=True))


class Shapes(nn.Module):
    def __init__(self):
        super().__init__()
        self.ident = nn.Identity()
        self.inorm = nn.InstanceNorm1d(3)

    def forward(self, x, y):
        p = x.permute(2, 0, 1)
        t = torch.relu(x.transpose(0, 2))
        cat = torch.cat([x, x * 2.0], dim=1)
        st = torch.stack([x, y], dim=2)
        c0, c1, c2 = x.chunk(3, dim=2)
        s0, s1 = torch.split(x, [1, 2], dim=1)
        u = x.unsqueeze(1).squeeze(1) + 1.0
        v = x.view(2, 15)
        r = x.transpose(1, 2).reshape(6, 5)
        f = torch.flatten(x, 0, 1)
        tc = self.ident(x.transpose(1, 2).contiguous()) * 2.0
        h = x.view(x.size(0), -1)
        return (p, t, cat, st, c0, c1 + c2.sum(dim=2, keepdim=True), s0 * 3.0, s1, u, v, r, f, tc, h,
                self.inorm(x))


class Matmuls(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(7, 9)
        self.fc_nobias = nn.Linear(7, 9, bias=False)
        self.w = nn.Parameter(torch.randn(7, 5))

    def forward(self, x, b, v):
        return (torch.matmul(x, self.w), torch.matmul(x, b), torch.matmul(x.sum(dim=0), b),
                v @ self.w, self.fc(x), torch.relu(self.fc_nobias(x)) * 0.5)


class Blocks(nn.Module):
    """Fusion patterns: Linear-act-Linear, a residual epilogue, norm + activation, dropout."""

    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(19, 37)
        self.fc2 = nn.Linear(37, 19)
        self.fc3 = nn.Linear(19, 19)
        self.ln = nn.LayerNorm(19)
        self.drop = nn.Dropout(0.3)
        self.emb = nn.Embedding(23, 19, padding_idx=2)

    def forward(self, x, tok):
        h = self.fc2(F.silu(self.fc1(x)))
        h = self.drop(h)
        r = torch.relu(self.fc3(h) + x)
        n = torch.tanh(self.ln(r))
        e = self.emb(tok).mean(dim=1)
        return n, e


class Views(nn.Module):
    """Strided views feeding kernels that need rows (copies) or read strides directly."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(5, 6)
        self.fc_sq = nn.Linear(7, 7)
        self.ln = nn.LayerNorm(3)
        _randomize(self.ln, 0.5, 1.5)

    def forward(self, x, y):
        a = self.fc(x.transpose(1, 2))
        b = F.softmax(x.transpose(0, 2), dim=1)
        c = self.ln(x.permute(1, 2, 0))
        d = torch.matmul(x.transpose(1, 2), x)
        e = x.transpose(1, 2).reshape(3, 35)
        f = torch.relu(self.fc_sq(x) + y.transpose(1, 2))
        g = torch.cat([x.transpose(1, 2), y], dim=2)
        return a, b, c, d, e, f, g
