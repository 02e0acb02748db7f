#!/usr/bin/env python3
"""Exports a representative subset of torchvision 0.14's classifiers with N = 3 for
export_test.go's TestTorchvisionClassifiers, which runs each with widejit and --check:

    /usr/bin/python3 exporters/torch/testdata/torchvision_zoo.py --out DIR [NAME ...]

Each model i is torchvision.models.NAME(num_classes=10) made after torch.manual_seed(i), with
its BatchNorm statistics and affine parameters randomised (at their defaults BatchNorm is close
to the identity), its last Linear (or convolution) scaled so that its outputs reach about 1 (the check's
tolerance has an absolute part), and inputs [2, 3, 32, 32] of its own (--size for others). A model whose outputs
are still too small to tell a wrong result from a right one is refused here.
ConvNeXt is torchvision's ConvNeXt class with two small stages (convnext_tiny's 28M parameters
times 3 are too large for a test); everything else is the real architecture.
"""
import argparse
import os
import sys

import torch
import torch.nn as nn
import torchvision

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import export  # noqa: E402

# densenet121 exports and matches too, but its 900 kernels take a test's time budget alone.
SUBSET = ["resnet18", "mobilenet_v2", "mobilenet_v3_small", "efficientnet_b0", "shufflenet_v2_x0_5",
          "squeezenet1_1", "regnet_x_400mf", "mnasnet0_5", "convnext"]


def build(name):
    if name == "convnext":
        from torchvision.models.convnext import CNBlockConfig, ConvNeXt
        return ConvNeXt([CNBlockConfig(16, 32, 2), CNBlockConfig(32, None, 1)], stochastic_depth_prob=0.1,
                        num_classes=10)
    kwargs = {"aux_logits": False, "init_weights": True} if name in ("googlenet", "inception_v3") else {}
    if name.startswith("vit_"):
        kwargs = {"image_size": 32}
    return getattr(torchvision.models, name)(num_classes=10, **kwargs)


def randomise(m, gen):
    with torch.no_grad():
        for mod in m.modules():
            if isinstance(mod, nn.modules.batchnorm._BatchNorm):
                c = mod.num_features
                mod.running_mean.copy_(torch.randn(c, generator=gen) * 0.1)
                mod.running_var.copy_(torch.rand(c, generator=gen) + 0.5)
                if mod.affine:
                    mod.weight.copy_(torch.rand(c, generator=gen) + 0.5)
                    mod.bias.copy_(torch.randn(c, generator=gen) * 0.1)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--size", type=int, default=32, help="input height and width (inception_v3 needs 75)")
    ap.add_argument("names", nargs="*", default=SUBSET)
    args = ap.parse_args()
    for name in args.names:
        models = []
        for i in range(3):
            torch.manual_seed(i)
            m = build(name)
            randomise(m, torch.Generator().manual_seed(100 + i))
            models.append(m.eval())
        x = torch.randn(3, 2, 3, args.size, args.size, generator=torch.Generator().manual_seed(7))
        with torch.no_grad():
            for i, m in enumerate(models):
                last = [mod for mod in m.modules() if isinstance(mod, (nn.Linear, nn.Conv2d))][-1]
                if not last.weight.any():  # a head initialised to zeros (vit_b_16)
                    last.weight.normal_(0, 0.02, generator=torch.Generator().manual_seed(200 + i))
                s = m(x[i]).abs().max().item()
                if 0 < s < 0.5:
                    last.weight.mul_(1 / s)
                    last.bias.mul_(1 / s)
            scale = min(models[i](x[i]).abs().max().item() for i in range(3))
        if scale < 0.1:
            print("%s: outputs of a model at most %.3g: too small for the check to tell" % (name, scale), file=sys.stderr)
            return 1
        try:
            export.export_modules(models, {"x": x}, os.path.join(args.out, name))
        except export.ExportError as e:
            print("%s: %s" % (name, e), file=sys.stderr)
            return 1
        print("%s: exported (every model's outputs reach %.3g or more)" % (name, scale), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
