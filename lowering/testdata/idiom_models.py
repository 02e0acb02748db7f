"""PyTorch code written the way real models are (nanoGPT, Flux/DiT, nn.Transformer*): indexing
and slicing, shape-derived Python scalars, masks, rsqrt, chunk/split, and the nn.Transformer
layers. make_idiom_fixtures.py exports each with exporters/torch/export.py at odd N and sizes."""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class Indexing(nn.Module):
    """x[:, 0], x[:, -1], out[-1], scale[:, None], a registered buffer sliced by a size."""

    def __init__(self):
        super().__init__()
        self.scale = nn.Linear(7, 5)
        self.register_buffer("table", torch.randn(1, 2, 9, 9))

    def forward(self, x):
        B, T, C = x.size()
        cls = x[:, 0]
        last = x[:, -1]
        out = x.transpose(0, 1)[-1]
        s = self.scale(x[:, 1:, :].mean(1))
        mod = x[..., :5] * s[:, None]
        tab = self.table[:, :, :T, :T] + x[:, None, :, :T]
        odd = x[1:, ::2, None, 2] * 2.0
        return cls, last + out, mod, tab, odd


class CausalSelfAttention(nn.Module):
    """nanoGPT's attention: a tril buffer sliced to T, masked_fill(-inf), 1/sqrt(size)."""

    def __init__(self, n_embd=15, n_head=3, block_size=11):
        super().__init__()
        self.c_attn = nn.Linear(n_embd, 3 * n_embd)
        self.c_proj = nn.Linear(n_embd, n_embd)
        self.n_head, self.n_embd = n_head, n_embd
        self.register_buffer("bias", torch.tril(torch.ones(block_size, block_size)).view(1, 1, block_size, block_size))

    def forward(self, x):
        B, T, C = x.size()
        q, k, v = self.c_attn(x).split(self.n_embd, dim=2)
        k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        att = att.masked_fill(self.bias[:, :, :T, :T] == 0, float("-inf"))
        att = F.softmax(att, dim=-1)
        y = att @ v
        y = y.transpose(1, 2).contiguous().view(B, T, C)
        return self.c_proj(y)


class MaskedScores(nn.Module):
    """Masks built in forward: torch.tril of ones (folded to a constant), a comparison, where,
    and the k.size(-1) ** -0.5 scale."""

    def __init__(self):
        super().__init__()
        self.qk = nn.Linear(6, 12)

    def forward(self, x):
        T = x.size(1)
        q, k = self.qk(x).chunk(2, dim=-1)
        scores = q @ k.transpose(-2, -1) * k.size(-1) ** -0.5
        causal = torch.tril(torch.ones(T, T, dtype=torch.bool, device=x.device))
        a = F.softmax(scores.masked_fill(~causal, float("-inf")), dim=-1)
        b = torch.where(scores > 0.1, scores, scores * 0.5) + torch.where(scores < 0.3, -1.0, scores)
        c = torch.where(causal, scores, float("-inf")).softmax(-1)
        d = torch.tril(scores, diagonal=-1) + torch.triu(scores, 2)
        return a, b, c, d, scores < 0


class MathOps(nn.Module):
    """A hand-written RMSNorm (rsqrt), sqrt/exp/log, chunk and split."""

    def __init__(self):
        super().__init__()
        self.weight = nn.Parameter(torch.rand(13) + 0.5)
        self.eps = 1e-6

    def forward(self, x):
        rms = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight
        a, b = x.chunk(2, dim=-1)
        c, d, e = torch.split(x, [4, 4, 5], dim=-1)
        f = torch.sqrt(x * x + 1.0) + torch.exp(-x.abs() if False else -x * x) + torch.log(x * x + 2.0)
        return rms, a * 2.0, b.sum(-1), c - d, e, f


class Transformers(nn.Module):
    """nn.TransformerEncoderLayer (post-norm, relu) and pre-norm gelu with masks, and
    nn.TransformerDecoderLayer with a causal target mask and memory padding."""

    def __init__(self, d=12, heads=3):
        super().__init__()
        self.enc = nn.TransformerEncoderLayer(d, heads, dim_feedforward=20, dropout=0.1, batch_first=True)
        self.enc_pre = nn.TransformerEncoderLayer(d, heads, dim_feedforward=17, activation="gelu",
                                                  batch_first=True, norm_first=True, layer_norm_eps=1e-6)
        self.dec = nn.TransformerDecoderLayer(d, heads, dim_feedforward=19, batch_first=True)
        self.register_buffer("causal", torch.triu(torch.full((5, 5), float("-inf")), diagonal=1))
        self.register_buffer("pad", torch.tensor([[False] * 5 + [True, True], [False] * 7]))

    def forward(self, src, tgt):
        a = self.enc(src)
        b = self.enc_pre(src, src_key_padding_mask=self.pad)
        c = self.dec(tgt, a, tgt_mask=self.causal, memory_key_padding_mask=self.pad)
        return a, b, c


class EncoderStack(nn.Module):
    """nn.TransformerEncoder with a final norm, and a sequence-first layer with a bool mask."""

    def __init__(self, d=12, heads=2):
        super().__init__()
        layer = nn.TransformerEncoderLayer(d, heads, dim_feedforward=14, batch_first=True)
        self.stack = nn.TransformerEncoder(layer, num_layers=2, norm=nn.LayerNorm(d))
        self.seq_first = nn.TransformerEncoderLayer(d, heads, dim_feedforward=14)
        self.register_buffer("mask", torch.triu(torch.ones(7, 7, dtype=torch.bool), diagonal=1))

    def forward(self, src):
        return self.stack(src), self.seq_first(src.transpose(0, 1), src_mask=self.mask)


class MHAMasks(nn.Module):
    """nn.MultiheadAttention with bool and float attn_mask and a key_padding_mask."""

    def __init__(self, d=10, heads=2):
        super().__init__()
        self.attn = nn.MultiheadAttention(d, heads, batch_first=True)
        self.cross = nn.MultiheadAttention(d, heads)
        self.register_buffer("bool_mask", torch.triu(torch.ones(5, 5, dtype=torch.bool), diagonal=1))
        self.register_buffer("float_mask", torch.randn(5, 6))

    def forward(self, x, mem, pad):
        a, _ = self.attn(x, x, x, attn_mask=self.bool_mask, need_weights=False)
        b, w = self.attn(x, x, x, key_padding_mask=pad[:, :5] > 0.8)
        c, _ = self.cross(x.transpose(0, 1), mem, mem, attn_mask=self.float_mask, key_padding_mask=pad > 0.8)
        return a, b, w, c


def _sdpa_math(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None):
    """F.scaled_dot_product_attention's documented math, for torch versions without it."""
    L, S = query.size(-2), key.size(-2)
    s = query @ key.transpose(-2, -1) * (1 / math.sqrt(query.size(-1)) if scale is None else scale)
    if is_causal:
        s = s.masked_fill(torch.ones(L, S, dtype=torch.bool).tril().logical_not(), float("-inf"))
    if attn_mask is not None:
        s = s.masked_fill(attn_mask.logical_not(), float("-inf")) if attn_mask.dtype == torch.bool else s + attn_mask
    return torch.softmax(s, dim=-1) @ value


if not hasattr(F, "scaled_dot_product_attention"):  # torch < 2.0: the exporter maps this stand-in
    F.scaled_dot_product_attention = _sdpa_math


class SDPA(nn.Module):
    """F.scaled_dot_product_attention: causal, with a bool mask, with a float mask and a scale."""

    def __init__(self, d=12, heads=3):
        super().__init__()
        self.qkv = nn.Linear(d, 3 * d)
        self.heads = heads
        self.register_buffer("keep", torch.rand(5, 5) > 0.3)
        self.register_buffer("bias", torch.randn(5, 5))

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.qkv(x).view(B, T, 3, self.heads, C // self.heads).permute(2, 0, 3, 1, 4)
        keep = self.keep | torch.eye(T, dtype=torch.bool)  # every query keeps one key
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        b = F.scaled_dot_product_attention(q, k, v, attn_mask=keep)
        c = F.scaled_dot_product_attention(q, k, v, attn_mask=self.bias)
        return a.transpose(1, 2).reshape(B, T, C), b, c


class MLPEmbedder(nn.Module):
    """Flux's MLPEmbedder, as in flux/modules/layers.py."""

    def __init__(self, in_dim, hidden_dim):
        super().__init__()
        self.in_layer = nn.Linear(in_dim, hidden_dim, bias=True)
        self.silu = nn.SiLU()
        self.out_layer = nn.Linear(hidden_dim, hidden_dim, bias=True)

    def forward(self, x):
        return self.out_layer(self.silu(self.in_layer(x)))


class AdaLayerNormZero(nn.Module):
    """diffusers' AdaLayerNormZero (without the class/timestep embedding), as in
    diffusers/models/normalization.py."""

    def __init__(self, embedding_dim):
        super().__init__()
        self.emb = None
        self.silu = nn.SiLU()
        self.linear = nn.Linear(embedding_dim, 6 * embedding_dim, bias=True)
        self.norm = nn.LayerNorm(embedding_dim, elementwise_affine=False, eps=1e-6)

    def forward(self, x, timestep=None, class_labels=None, hidden_dtype=None, emb=None):
        emb = self.linear(self.silu(emb))
        shift_msa, scale_msa, gate_msa, shift_mlp, scale_mlp, gate_mlp = emb.chunk(6, dim=1)
        x = self.norm(x) * (1 + scale_msa[:, None]) + shift_msa[:, None]
        return x, gate_msa, shift_mlp, scale_mlp, gate_mlp


class DiTBlock(nn.Module):
    """A DiT-style block: a timestep MLPEmbedder conditions AdaLayerNormZero modulation."""

    def __init__(self, d=11, t_dim=7):
        super().__init__()
        self.time_in = MLPEmbedder(t_dim, d)
        self.norm1 = AdaLayerNormZero(d)
        self.fc = nn.Linear(d, d)
        with torch.no_grad():  # diffusers zero-inits the modulation; random weights test it
            self.norm1.linear.weight.uniform_(-0.5, 0.5)

    def forward(self, x, t):
        temb = self.time_in(t)
        h, gate_msa, shift_mlp, scale_mlp, gate_mlp = self.norm1(x, emb=temb)
        h = x + gate_msa.unsqueeze(1) * self.fc(h)
        return h * (1 + scale_mlp[:, None]) + shift_mlp[:, None], gate_mlp, temb


class HalfMLP(nn.Module):
    """A Linear-GELU-Linear MLP and a LayerNorm kept in bfloat16 (checked with the looser
    half-precision tolerance)."""

    def __init__(self, dtype="bfloat16"):
        super().__init__()
        self.fc1 = nn.Linear(19, 37)
        self.fc2 = nn.Linear(37, 13)
        self.ln = nn.LayerNorm(13)
        self.to(getattr(torch, dtype))

    def forward(self, x):
        return self.ln(self.fc2(F.gelu(self.fc1(x)))) * 2.0


class RowTails(nn.Module):
    """Row ops after a Linear, which CPU plans run inside the matmul kernel: softmax and
    log_softmax over odd widths (the tile's last columns masked), a post-norm residual
    LayerNorm, softmax then LayerNorm over a full tile, a LayerNorm without affine; and ones
    that stay kernels of their own: a row wider than a program holds, a Linear output read
    twice."""

    def __init__(self):
        super().__init__()
        self.cls = nn.Linear(24, 131)
        self.logp = nn.Linear(24, 100)
        self.post = nn.Linear(24, 24)
        self.norm = nn.LayerNorm(24)
        self.gate = nn.Linear(24, 64)
        self.gnorm = nn.LayerNorm(64, eps=1e-6)
        self.plain = nn.Linear(24, 40)
        self.bare = nn.LayerNorm(40, elementwise_affine=False)
        self.wide = nn.Linear(24, 300)
        self.twice = nn.Linear(24, 40)

    def forward(self, x):
        a = torch.softmax(self.cls(x), dim=-1)
        b = F.log_softmax(self.logp(x), dim=-1)
        c = self.norm(x + self.post(x))
        d = self.gnorm(torch.softmax(self.gate(x), dim=-1))
        e = self.bare(self.plain(x))
        f = self.wide(x).softmax(-1)
        t = self.twice(x)
        g = torch.softmax(t, dim=-1) + t
        return a, b, c, d, e, f, g


class RowHeads(nn.Module):
    """LayerNorms before a Linear, which CPU plans apply inside the Linear's kernel as it loads
    its rows: an odd width (the K tile's last columns masked), without affine, before a fused
    MLP, and before a Linear that a softmax ends (norm, Linear and softmax in one kernel); and
    ones that stay kernels of their own: rows wider than one K tile, a norm read twice."""

    def __init__(self):
        super().__init__()
        self.n1, self.l1 = nn.LayerNorm(37), nn.Linear(37, 20)
        self.n2, self.l2 = nn.LayerNorm(37, elementwise_affine=False), nn.Linear(37, 16)
        self.n3, self.f1, self.f2 = nn.LayerNorm(37), nn.Linear(37, 29), nn.Linear(29, 11)
        self.n4, self.l4 = nn.LayerNorm(37, eps=1e-3), nn.Linear(37, 50)
        self.up, self.n5, self.l5 = nn.Linear(37, 600), nn.LayerNorm(600), nn.Linear(600, 8)
        self.n6, self.l6 = nn.LayerNorm(37), nn.Linear(37, 9)

    def forward(self, x):
        a = self.l1(self.n1(x))
        b = self.l2(self.n2(x))
        c = self.f2(F.gelu(self.f1(self.n3(x))))
        d = torch.softmax(self.l4(self.n4(x)), dim=-1)
        e = self.l5(self.n5(self.up(x)))
        h = self.n6(x)
        f = self.l6(h) + h.sum(-1, keepdim=True)
        return a, b, c, d, e, f


class HardActs(nn.Module):
    """MobileNet's hard activations and clamps as modules, functions and methods, after a
    convolution and a Linear (fused into their epilogues), torchvision's StochasticDepth and an
    eval-mode F.dropout (removed at export)."""

    def __init__(self):
        super().__init__()
        from torchvision.ops import StochasticDepth
        self.conv = nn.Conv2d(3, 5, 3, padding=1)
        self.hsig, self.relu6, self.htanh = nn.Hardsigmoid(), nn.ReLU6(), nn.Hardtanh(-0.5, 0.7)
        self.fc = nn.Linear(11, 7)
        self.sd = StochasticDepth(0.3, "row")

    def forward(self, x):
        c = self.relu6(self.conv(x) * 2.0)
        s = self.hsig(self.fc(x))
        h = self.htanh(x) + F.hardsigmoid(x) - F.relu6(x * 3.0) + F.hardtanh(x, -2.0, 1.5)
        k = x.clamp(min=-0.3) * torch.clamp(x, max=0.4) + torch.clip(x, -0.2, 0.2) + x.clamp(-1.0, 1.0)
        d = self.sd(F.dropout(s, 0.2, self.training)) + s.clamp(min=0.1, max=0.6)
        return c, d, h, k


class FunctionalPools(nn.Module):
    """Pools called as functions, as densenet, inception and hand-written nets do."""

    def forward(self, x):
        a = F.max_pool2d(x, 3, 2, 1, ceil_mode=True)
        b = F.avg_pool2d(x, kernel_size=3, stride=1, padding=1)
        c = F.avg_pool2d(x, 2, count_include_pad=False, ceil_mode=True, padding=1)
        g = F.adaptive_avg_pool2d(x, (1, 1)).flatten(1)
        e = F.adaptive_avg_pool2d(F.relu(x), 3)
        f = F.max_pool1d(x.flatten(2), 4, 3)
        h = F.avg_pool1d(x.flatten(2), 5) + F.adaptive_avg_pool1d(x.flatten(2), 1)
        return a, b, c, g, e, f, h


def rope(pos, dim, theta):
    """Flux's rope (flux/math.py), as written there but for einops' rearrange (the view)."""
    assert dim % 2 == 0
    scale = torch.arange(0, dim, 2, dtype=torch.float64, device=pos.device) / dim
    omega = 1.0 / (theta**scale)
    out = torch.einsum("...n,d->...nd", pos, omega)
    out = torch.stack([torch.cos(out), -torch.sin(out), torch.sin(out), torch.cos(out)], dim=-1)
    out = out.view(*out.shape[:-1], 2, 2)
    return out.float()


def apply_rope(xq, xk, freqs_cis):
    """Flux's apply_rope (flux/math.py), verbatim."""
    xq_ = xq.float().reshape(*xq.shape[:-1], -1, 1, 2)
    xk_ = xk.float().reshape(*xk.shape[:-1], -1, 1, 2)
    xq_out = freqs_cis[..., 0] * xq_[..., 0] + freqs_cis[..., 1] * xq_[..., 1]
    xk_out = freqs_cis[..., 0] * xk_[..., 0] + freqs_cis[..., 1] * xk_[..., 1]
    return xq_out.reshape(*xq.shape).type_as(xq), xk_out.reshape(*xk.shape).type_as(xk)


class RopeEinsum(nn.Module):
    """Flux's RoPE with float64 frequencies, sin/cos, .float()/type_as, unbind and the einsum
    patterns of attention and projections."""

    def __init__(self):
        super().__init__()
        self.qkv = nn.Linear(12, 36)
        self.w = nn.Parameter(torch.randn(12, 5))

    def forward(self, x, pos):
        B, L, _ = x.shape
        q, k, v = self.qkv(x).view(B, L, 3, 2, 6).permute(2, 0, 3, 1, 4).unbind(0)
        pe = rope(pos.double(), 6, 10000).unsqueeze(1)
        q, k = apply_rope(q, k, pe)
        att = torch.einsum("bhld,bhmd->bhlm", q, k).softmax(dim=-1)
        o = torch.einsum("bhlm,bhmd->blhd", att, v)
        proj = torch.einsum("bld,de->ble", x, self.w)
        tr = torch.einsum("ij->ji", x[0]) + torch.einsum("bij->j", x)[None, :, None]
        outer = torch.einsum("bi,bj->bij", x[:, 0], x[:, -1])
        dot = torch.einsum("bld,bld->bl", x, x).sin() + x.cos().sum(-1)
        return o, proj, tr, outer, dot


class BatchStats(nn.Module):
    """BatchNorm with batch statistics (exported with --train-batchnorm): 2-d after a
    convolution, 1-d without affine parameters on [B, C] and on [B, C, L]."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3)
        self.bn2d = nn.BatchNorm2d(4)
        self.bn1d = nn.BatchNorm1d(4, affine=False, eps=1e-3)
        self.bnl = nn.BatchNorm1d(4)

    def forward(self, x):
        h = F.relu(self.bn2d(self.conv(x)))
        return self.bn1d(h.mean((2, 3))), self.bnl(h.flatten(2))


class PadInterp(nn.Module):
    """F.pad in every mode and F.interpolate as a U-Net's decoder writes it: nearest by 2 and by
    a size, bilinear with align_corners both ways, linear on 1-d signals."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3)

    def forward(self, x):
        h = self.conv(x)
        a = F.pad(h, (1, 2, 0, 1), value=0.5) + F.pad(h, (1, 2, 0, 1))
        b = F.pad(x, (2, 1, 1, 2), mode="reflect") - F.pad(x, (2, 1, 1, 2), mode="replicate")
        c = F.pad(x, (1, 2, 2, 1), mode="circular") * 2.0
        crop = F.pad(x, (-1, 1, 0, -2))
        up = F.interpolate(h, scale_factor=2, mode="nearest")
        sz = F.interpolate(h, size=(9, 5), mode="nearest")
        bl = F.interpolate(h, scale_factor=2, mode="bilinear", align_corners=False)
        ba = F.interpolate(h, size=(6, 10), mode="bilinear", align_corners=True)
        ln = F.interpolate(x.flatten(2), scale_factor=1.5, mode="linear")
        return a, b, c, crop, up, sz, bl, ba, ln


class MatmulParams(nn.Module):
    """Parameters as the right operand of a matmul in the layouts einsum and hand-written code
    leave them: transposed (x @ w.t(), einsum "bld,ed->ble"), one column ([K, 1]), a vector."""

    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(torch.randn(6, 9))
        self.col = nn.Parameter(torch.randn(9, 1))
        self.vec = nn.Parameter(torch.randn(9))

    def forward(self, x):
        return (x @ self.w.t(), torch.einsum("bld,ed->ble", x, self.w), x @ self.col,
                torch.einsum("bld,d->bl", x, self.vec))
