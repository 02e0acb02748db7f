#!/usr/bin/env python3
"""Trains the checkpoints of examples/sweep: a learning-rate sweep of one small classifier.

    /usr/bin/python3 examples/sweep/train.py

Four copies of examples/models.py's MLP (16 -> 32 -> 4) start from one initialisation and are
trained with SGD at learning rates 0.3, 0.1, 0.03 and 0.01 on the same synthetic task (four
Gaussian blobs in 16 dimensions), and each is saved as a training loop would save it:
torch.save({"epoch": ..., "model": model.state_dict()}, "checkpoints/lr_<lr>.pt").

The checkpoints are committed; make_examples.py exports them with --state-dict (the export
reads them, it does not retrain), so examples/sweep is reproducible bit for bit.
"""

import os
import sys

import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
from models import MLP  # noqa: E402

KWARGS = {"d_in": 16, "hidden": 32, "d_out": 4}
LEARNING_RATES = [0.3, 0.1, 0.03, 0.01]
EPOCHS = 5


def task(gen, n=256):
    centers = torch.randn(4, KWARGS["d_in"], generator=gen) * 0.5
    labels = torch.randint(0, 4, (n,), generator=gen)
    return centers[labels] + torch.randn(n, KWARGS["d_in"], generator=gen), labels


def main():
    torch.set_num_threads(1)
    x, y = task(torch.Generator().manual_seed(0))
    os.makedirs(os.path.join(HERE, "checkpoints"), exist_ok=True)
    for lr in LEARNING_RATES:
        torch.manual_seed(0)
        model = MLP(**KWARGS)
        opt = torch.optim.SGD(model.parameters(), lr=lr, momentum=0.9)
        for _ in range(EPOCHS):
            for i in range(0, len(x), 32):
                opt.zero_grad()
                F.cross_entropy(model(x[i:i + 32]), y[i:i + 32]).backward()
                opt.step()
        with torch.no_grad():
            acc = (model(x).argmax(1) == y).float().mean().item()
        path = os.path.join(HERE, "checkpoints", "lr_%g.pt" % lr)
        torch.save({"epoch": EPOCHS, "model": model.state_dict()}, path)
        print("%s: lr %g, train accuracy %.2f" % (os.path.relpath(path), lr, acc))


if __name__ == "__main__":
    main()
