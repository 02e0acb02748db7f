"""Modules the exporter must refuse, each with a clear message (see export_test.go)."""

import torch
import torch.nn as nn


class Erfinv(nn.Module):
    """torch.erfinv is not in the widejit vocabulary."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 8)

    def forward(self, x):
        return self.fc(torch.erfinv(torch.tanh(x)))


class UnknownModule(nn.Module):
    """nn.Bilinear is traced through and its F.bilinear call is refused."""

    def __init__(self):
        super().__init__()
        self.bilinear = nn.Bilinear(8, 8, 4)

    def forward(self, x):
        return self.bilinear(x, x)


class AdvancedIndex(nn.Module):
    """Indexing with a tensor (here a bool mask, whose result shape depends on the values) is
    advanced indexing, which widejit does not have (x[:, 0] and slices are supported)."""

    def forward(self, x):
        return x[x > 0]


class TrainModeBatchNorm(nn.Module):
    """A model whose train() keeps its BatchNorm in training mode (batch statistics)."""

    def __init__(self):
        super().__init__()
        self.bn = nn.BatchNorm1d(8)

    def train(self, mode=True):
        super().train(mode)
        self.bn.train()
        return self

    def forward(self, x):
        return self.bn(x)


class ControlFlow(nn.Module):
    """Python control flow on a tensor value cannot be traced."""

    def forward(self, x):
        if x.sum() > 0:
            return x
        return -x


class BitwiseNot(nn.Module):
    """~ of an integer tensor is a bitwise not, not the logical_not of a bool mask."""

    def __init__(self):
        super().__init__()
        self.register_buffer("bits", torch.arange(8))

    def forward(self, x):
        return x * ~self.bits


class DataDependent(nn.Module):
    """A value read out of a tensor cannot become a static graph constant."""

    def forward(self, x):
        return x * x.sum().item()


class LSTMProj(nn.Module):
    """An LSTM with a projection of its hidden state (proj_size) has no widejit op."""

    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(8, 6, proj_size=3)

    def forward(self, x):
        out, _ = self.lstm(x)
        return out


class EinsumTrace(nn.Module):
    """An index repeated within one einsum operand (a trace or diagonal) has no matmul form."""

    def forward(self, x):
        return torch.einsum("ii->", x[:, :3])


class IntCast(nn.Module):
    """widejit casts between float dtypes only."""

    def forward(self, x):
        return x.long()


class Bicubic(nn.Module):
    """F.interpolate's bicubic mode has no linear-map-per-dim form here."""

    def forward(self, x):
        return nn.functional.interpolate(x.view(1, 1, 3, 8), scale_factor=2, mode="bicubic")


class TensorClamp(nn.Module):
    """clamp with a tensor bound is not an element-wise op with constants."""

    def forward(self, x):
        return x.clamp(min=x.mean())
