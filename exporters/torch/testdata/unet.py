"""A small U-Net as segmentation code writes it, for export_test.go's TestUNetExports: two
levels down with F.max_pool2d, back up with F.interpolate (bilinear by a scale factor, nearest to
the skip's size), skips concatenated along the channels, BatchNorm and ReLU after every 3x3
convolution, a 1x1 head."""

import torch
import torch.nn as nn
import torch.nn.functional as F


def block(c_in, c_out):
    return nn.Sequential(nn.Conv2d(c_in, c_out, 3, padding=1), nn.BatchNorm2d(c_out), nn.ReLU())


class UNet(nn.Module):
    def __init__(self, c_in=3, width=6, c_out=2):
        super().__init__()
        self.enc1 = block(c_in, width)
        self.enc2 = block(width, 2 * width)
        self.mid = block(2 * width, 2 * width)
        self.dec2 = block(4 * width, width)
        self.dec1 = block(2 * width, width)
        self.head = nn.Conv2d(width, c_out, 1)

    def forward(self, x):
        e1 = self.enc1(x)
        e2 = self.enc2(F.max_pool2d(e1, 2))
        m = self.mid(F.max_pool2d(e2, 2))
        d2 = self.dec2(torch.cat([F.interpolate(m, scale_factor=2, mode="bilinear", align_corners=False), e2], 1))
        d1 = self.dec1(torch.cat([F.interpolate(d2, size=e1.shape[-2:], mode="nearest"), e1], 1))
        return self.head(d1)
