#!/usr/bin/env python3
"""Writes the checkpoints TestStateDictCheckpoints exports (export_test.go), into --out:

- good_0.pt, good_1.pt, good_2.pt: examples/models.py MLP(**KWARGS) made after
  torch.manual_seed(10 + i), saved as a bare state dict, as {"state_dict": sd} and as
  {"epoch": 3, "model": sd}; stacked.safetensors holds their tensors stacked [3, ...], what
  weights.safetensors must hold;
- one bad file per way a checkpoint can fail to fit (see export_test.go).
"""

import argparse
import os
import sys
from typing import Tuple

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
sys.path.insert(0, os.path.join(ROOT, "examples"))
sys.path.insert(0, os.path.dirname(HERE))
from models import MLP  # noqa: E402
import safetensors_io  # noqa: E402

KWARGS = {"d_in": 6, "hidden": 5, "d_out": 3}


class Scripted(torch.nn.Module):
    """A module whose scripted __setstate__ overwrites the file at canary with byte 88 when the
    archive is loaded: the code a TorchScript checkpoint can carry."""

    def __init__(self, canary: str):
        super().__init__()
        self.canary = canary
        self.mapped = torch.zeros(8, dtype=torch.uint8)

    def forward(self, x):
        return x

    @torch.jit.export
    def __getstate__(self) -> Tuple[str, bool]:
        return (self.canary, self.training)

    @torch.jit.export
    def __setstate__(self, state: Tuple[str, bool]) -> None:
        self.canary = state[0]
        self.training = state[1]
        self.mapped = torch.from_file(self.canary, shared=True, size=8, dtype=torch.uint8)
        self.mapped.fill_(88)


def model(seed, **kw):
    torch.manual_seed(seed)
    return MLP(**dict(KWARGS, **kw))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    out = ap.parse_args().out
    os.makedirs(out, exist_ok=True)

    def save(name, obj):
        torch.save(obj, os.path.join(out, name))

    sds = [model(10 + i).state_dict() for i in range(3)]
    save("good_0.pt", sds[0])
    save("good_1.pt", {"state_dict": sds[1]})
    save("good_2.pt", {"epoch": 3, "model": sds[2]})
    safetensors_io.write(os.path.join(out, "stacked.safetensors"),
                         {k: torch.stack([sd[k] for sd in sds]) for k in sds[0]})

    sd = dict(sds[0])
    del sd["fc2.bias"]
    save("missing_key.pt", sd)
    save("extra_key.pt", dict(sds[0], **{"fc3.weight": torch.zeros(2, 2)}))
    save("shape.pt", model(0, hidden=7).state_dict())
    save("dtype.pt", model(0).double().state_dict())
    save("list.pt", [sds[0]])
    save("other_key.pt", {"weights": sds[0]})
    save("floats.pt", {"model": sds[0], "lr": 0.1})
    save("dataparallel.pt", {"module." + k: v for k, v in sds[0].items()})
    for i in (1, 2):  # all three with the prefix: --strip-prefix module. gives good_*.pt
        save("dataparallel_%d.pt" % i, {"module." + k: v for k, v in sds[i].items()})
    canary = os.path.join(out, "canary.txt")
    with open(canary, "w") as f:
        f.write("the user's file\n")
    torch.jit.save(torch.jit.script(Scripted(canary)), os.path.join(out, "scripted.pt"))
    with open(os.path.join(out, "text.pt"), "w") as f:
        f.write("not a checkpoint\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
