"""A wrapper holding examples/models.py's MLP as self.m: its state dict keys are the MLP's with
the prefix "m.", so a bare MLP checkpoint fits it only with --add-prefix m."""
import os
import sys

import torch.nn as nn

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "examples"))
from models import MLP  # noqa: E402


class Wrapped(nn.Module):
    def __init__(self, **kwargs):
        super().__init__()
        self.m = MLP(**kwargs)

    def forward(self, x):
        return self.m(x)
