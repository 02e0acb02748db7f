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


class TensorSlice(nn.Module):
    """Slicing a tensor is not an op widejit has."""

    def forward(self, x):
        return x[:, 0]


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
