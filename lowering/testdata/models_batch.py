"""Small PyTorch modules exported at batch size 4 and run at other batch sizes
(make_batch_fixtures.py): views that bake the batch in, a conv net, a batch-first transformer
encoder layer with a [B*T, C] reshape, time-major (seq-first) LSTM and attention, a ViT whose
class token is expanded to the batch, and a nanoGPT language model."""
import torch
import torch.nn as nn
import torch.nn.functional as F
from idiom_models import CausalSelfAttention


class MLPView(nn.Module):
    """x [B, 3, 4] -> x.view(x.size(0), -1) (a literal batch) -> Linear-GELU-Linear."""

    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(12, 16)
        self.fc2 = nn.Linear(16, 5)

    def forward(self, x):
        h = x.view(x.size(0), -1)
        return self.fc2(F.gelu(self.fc1(h)))


class ConvNet(nn.Module):
    """x [B, 3, 8, 8] -> Conv-BN-ReLU-MaxPool -> torch.flatten(x, 1) -> Linear."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 6, 3, padding=1)
        self.bn = nn.BatchNorm2d(6)
        self.pool = nn.MaxPool2d(2)
        self.fc = nn.Linear(6 * 4 * 4, 5)
        with torch.no_grad():
            self.bn.running_mean.normal_(0.0, 0.2)
            self.bn.running_var.uniform_(0.5, 1.5)
            self.bn.weight.uniform_(0.5, 1.5)
            self.bn.bias.normal_(0.0, 0.2)

    def forward(self, x):
        h = self.pool(F.relu(self.bn(self.conv(x))))
        return self.fc(torch.flatten(h, 1))


class Encoder(nn.Module):
    """src [B, T=5, 16] -> nn.TransformerEncoderLayer(batch_first=True) -> reshape(B*T, C)
    (folded to literal sizes) -> Linear -> view(B, T, 8) -> mean over T."""

    def __init__(self):
        super().__init__()
        self.layer = nn.TransformerEncoderLayer(16, 2, 32, dropout=0.0, batch_first=True)
        self.proj = nn.Linear(16, 8)

    def forward(self, src):
        h = self.layer(src)
        B, T, C = h.size()
        p = self.proj(h.reshape(B * T, C))
        return p.view(B, T, 8).mean(dim=1), h


class SeqFirst(nn.Module):
    """Time-major inputs: x [T=5, B, 6], h0 and c0 [1, B, 8] -> LSTM (seq-first), the last
    step through a Linear; nn.MultiheadAttention(batch_first=False) on x."""

    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(6, 8)
        self.head = nn.Linear(8, 3)
        self.attn = nn.MultiheadAttention(6, 2)

    def forward(self, x, h0, c0):
        out, (h_n, c_n) = self.lstm(x, (h0, c0))
        a = self.attn(x, x, x, need_weights=False)[0]
        return self.head(out[-1]), h_n, a


class ViT(nn.Module):
    """A small ViT: patches by a strided convolution, the class token expanded to the batch
    (self.cls.expand(B, -1, -1)), register tokens repeated (repeat(B, 1, 1)), a zeros(B, 1, C),
    expand_as and expand(h.shape) terms, positional embeddings, one encoder layer, the class
    token's head."""

    def __init__(self):
        super().__init__()
        self.patch = nn.Conv2d(3, 12, 4, stride=4)
        self.cls = nn.Parameter(torch.randn(1, 1, 12))
        self.reg = nn.Parameter(torch.randn(1, 2, 12))
        self.tok_bias = nn.Parameter(torch.randn(1, 1, 12))
        self.pos = nn.Parameter(torch.randn(1, 7, 12))
        self.layer = nn.TransformerEncoderLayer(12, 2, 24, dropout=0.0, batch_first=True)
        self.head = nn.Linear(12, 5)

    def forward(self, x):
        B = x.shape[0]
        p = self.patch(x).flatten(2).transpose(1, 2)
        cls = self.cls.expand(B, -1, -1) + torch.zeros(B, 1, 12)
        h = torch.cat([cls, self.reg.repeat(B, 1, 1), p], dim=1) + self.pos
        h = self.layer(h + self.tok_bias.expand_as(h) + self.tok_bias.expand(h.shape))
        return self.head(h[:, 0]), p.repeat(1, 2, 1)


class GPT(nn.Module):
    """nanoGPT in small: token and position embeddings (torch.arange(0, t)), one pre-norm block
    with nanoGPT's causal attention (idiom_models.py: a registered tril buffer sliced to [:T, :T],
    q, k, v viewed as (B, T, n_head, C // n_head)), a GELU MLP, the final LayerNorm and the LM
    head."""

    def __init__(self, vocab=23, block_size=8, n_embd=12, n_head=3):
        super().__init__()
        self.wte, self.wpe = nn.Embedding(vocab, n_embd), nn.Embedding(block_size, n_embd)
        self.ln_1, self.ln_2, self.ln_f = nn.LayerNorm(n_embd), nn.LayerNorm(n_embd), nn.LayerNorm(n_embd)
        self.attn = CausalSelfAttention(n_embd, n_head, block_size)
        self.fc, self.proj = nn.Linear(n_embd, 4 * n_embd), nn.Linear(4 * n_embd, n_embd)
        self.lm_head = nn.Linear(n_embd, vocab, bias=False)

    def forward(self, idx):
        b, t = idx.size()
        pos = torch.arange(0, t, dtype=torch.long, device=idx.device)
        x = self.wte(idx) + self.wpe(pos)
        x = x + self.attn(self.ln_1(x))
        x = x + self.proj(F.gelu(self.fc(self.ln_2(x))))
        return self.lm_head(self.ln_f(x))


class SeqViT(nn.Module):
    """A ViT-like encoder over a sequence of flattened patches x [B, T, 16] (any T up to 32):
    a Linear patch embedding, a learned positional table sliced to T (self.pos[:, :t]), the
    class token expanded to the batch and put first, one encoder layer, the class token's
    head and every token's features."""

    def __init__(self):
        super().__init__()
        self.embed = nn.Linear(16, 12)
        self.pos = nn.Parameter(torch.randn(1, 32, 12))
        self.cls = nn.Parameter(torch.randn(1, 1, 12))
        self.layer = nn.TransformerEncoderLayer(12, 2, 24, dropout=0.0, batch_first=True)
        self.norm = nn.LayerNorm(12)
        self.head = nn.Linear(12, 5)

    def forward(self, x):
        b, t, _ = x.shape
        h = self.embed(x) + self.pos[:, :t]
        h = torch.cat([self.cls.expand(b, -1, -1), h], dim=1)
        h = self.norm(self.layer(h))
        return self.head(h[:, 0]), h[:, 1:]
