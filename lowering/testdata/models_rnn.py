"""Tiny PyTorch recurrent modules for lowering's RNN/GRU/LSTM fixtures (input 5, hidden 7, T=5,
B=3: sizes that are neither powers of two nor block multiples). make_rnn_fixtures.py exports
each with exporters/torch/export.py.

Every class holds four layers of one kind covering, between them: 1 and 2 layers, one and two
directions, batch_first true and false (the batch-first ones read x.transpose(0, 1), a strided
view), given and zero initial states, bias=False, eval-mode dropout between layers, an
unbatched [T, input] sequence, and a Linear reading h_n. Every output of every layer is
returned."""
import torch
import torch.nn as nn

IN, HID = 5, 7


def _layers(cls, **kw):
    return nn.ModuleDict({
        # 1 layer, time-major, zero initial state, biases
        "a": cls(IN, HID, **kw),
        # 2 layers, bidirectional, batch first, given initial state
        "b": cls(IN, HID, num_layers=2, bidirectional=True, batch_first=True, **kw),
        # 2 layers, time-major, no bias, given initial state, dropout (identity in eval mode)
        "c": cls(IN, HID, num_layers=2, bias=False, dropout=0.25, **kw),
        # 1 layer, bidirectional, batch first, no bias, zero initial state; an unbatched input
        "d": cls(IN, HID, bidirectional=True, batch_first=True, bias=False, **kw),
    })


class _Recurrent(nn.Module):
    def __init__(self, cls, **kw):
        super().__init__()
        self.rnn = _layers(cls, **kw)
        self.head = nn.Linear(HID, 3)


class RNNTanh(_Recurrent):
    """nn.RNN with tanh. x [T, B, IN]; hb [4, B, HID] for b, hc [2, B, HID] for c; u [T, IN]."""

    def __init__(self, nonlinearity="tanh"):
        super().__init__(nn.RNN, nonlinearity=nonlinearity)

    def forward(self, x, hb, hc, u):
        out_a, h_a = self.rnn["a"](x)
        out_b, h_b = self.rnn["b"](x.transpose(0, 1), hb)
        out_c, h_c = self.rnn["c"](x, hc)
        out_d, h_d = self.rnn["d"](u)
        return torch.relu(out_a) + 1.0, self.head(h_a), out_b, h_b, out_c, h_c, out_d, h_d


class RNNRelu(RNNTanh):
    """nn.RNN with relu; same layers and inputs as RNNTanh."""

    def __init__(self):
        super().__init__(nonlinearity="relu")


class GRUs(_Recurrent):
    """nn.GRU; same layers and inputs as RNNTanh."""

    def __init__(self):
        super().__init__(nn.GRU)

    forward = RNNTanh.forward


class LSTMs(_Recurrent):
    """nn.LSTM. x [T, B, IN]; (hb, cb) [4, B, HID] for b, (hc, cc) [2, B, HID] for c; u [T, IN]."""

    def __init__(self):
        super().__init__(nn.LSTM)

    def forward(self, x, hb, cb, hc, cc, u):
        out_a, (h_a, c_a) = self.rnn["a"](x)
        out_b, (h_b, c_b) = self.rnn["b"](x.transpose(0, 1), (hb, cb))
        out_c, (h_c, c_c) = self.rnn["c"](x, (hc, cc))
        out_d, (h_d, c_d) = self.rnn["d"](u)
        return (torch.relu(out_a) + 1.0, self.head(h_a), c_a, out_b, h_b, c_b, out_c, h_c, c_c,
                out_d, h_d, c_d)


class Wide(nn.Module):
    """Hidden 20: several BLOCK_J x BLOCK_K slices when the test caps the blocks at 16. A
    2-layer batch-first LSTM with given states and a reverse GRU reading the LSTM's output.
    x [B, T, 3]; h, c [2, B, 20]."""

    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(3, 20, num_layers=2, batch_first=True)
        self.gru = nn.GRU(20, 20, bidirectional=True, batch_first=True)

    def forward(self, x, h, c):
        out, (h_n, c_n) = self.lstm(x, (h, c))
        g, g_n = self.gru(out)
        return out, h_n, c_n, g, g_n
