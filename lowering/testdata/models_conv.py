"""Tiny PyTorch modules for lowering's convolution, pooling and attention fixtures, with sizes
that are neither powers of two nor multiples of the kernels' block sizes.
make_conv_fixtures.py exports each at N in {1, 3, 8} with exporters/torch/export.py."""
import torch
import torch.nn as nn
import torch.nn.functional as F


def _randomize(module, lo=-1.0, hi=1.0):
    with torch.no_grad():
        for p in module.parameters():
            p.uniform_(lo, hi)


class ConvsA(nn.Module):
    """Conv2d: plain (+ReLU), strided, dilated, depthwise, grouped."""

    def __init__(self):
        super().__init__()
        self.plain = nn.Conv2d(6, 10, 3, padding=1)
        self.strided = nn.Conv2d(6, 7, (3, 4), stride=(2, 3), padding=(1, 2))
        self.dilated = nn.Conv2d(6, 5, 3, dilation=2, padding=2)
        self.depthwise = nn.Conv2d(6, 12, 3, padding=1, groups=6)
        self.grouped = nn.Conv2d(6, 9, (2, 3), padding=(1, 0), groups=3)

    def forward(self, img):
        return (torch.relu(self.plain(img)), self.strided(img), self.dilated(img), self.depthwise(img),
                self.grouped(img))


class ConvsB(nn.Module):
    """Conv2d 'same' with an even kernel, 'valid', no bias with a residual add, conv + eval
    BatchNorm + ReLU; Conv1d plain (+GELU), 'same' with an even kernel, strided and grouped,
    depthwise and dilated without bias."""

    def __init__(self):
        super().__init__()
        self.same_even = nn.Conv2d(6, 5, (4, 2), padding="same", dilation=(1, 2))
        self.valid = nn.Conv2d(6, 4, (5, 3), padding="valid")
        self.residual = nn.Conv2d(6, 6, 3, padding=1, bias=False)
        self.conv_bn = nn.Conv2d(6, 8, 1)
        self.bn = nn.BatchNorm2d(8)
        self.c1 = nn.Conv1d(6, 11, 3, padding=1)
        self.c1_same = nn.Conv1d(6, 7, 4, padding="same")
        self.c1_strided = nn.Conv1d(6, 4, 3, stride=2, padding=1, groups=2)
        self.c1_depthwise = nn.Conv1d(6, 6, 3, dilation=3, padding=3, groups=6, bias=False)
        with torch.no_grad():
            self.bn.running_mean.uniform_(-1.0, 1.0)
            self.bn.running_var.uniform_(0.5, 2.0)
            self.bn.weight.uniform_(0.5, 1.5)

    def forward(self, img, seq):
        return (self.same_even(img), self.valid(img), self.residual(img) + img,
                torch.relu(self.bn(self.conv_bn(img))),
                F.gelu(self.c1(seq)), self.c1_same(seq), self.c1_strided(seq), self.c1_depthwise(seq))


class ConvPatches(nn.Module):
    """Patch embeddings (kernel == stride, no padding), which CPU plans run as a patch copy and
    a pointwise GEMM: images not a multiple of the patch (the rest dropped), rectangular
    patches (+GELU), one patch covering the whole image, a transposed (strided) input, Conv1d,
    an unbatched image; a grouped one and one over many channels keep the strided path."""

    def __init__(self):
        super().__init__()
        self.square = nn.Conv2d(6, 10, 4, stride=4)
        self.rect = nn.Conv2d(6, 7, (2, 3), stride=(2, 3))
        self.whole = nn.Conv2d(6, 4, (19, 17), stride=(19, 17), bias=False)
        self.transposed = nn.Conv2d(6, 5, 3, stride=3)
        self.grouped = nn.Conv2d(6, 4, 2, stride=2, groups=2)
        self.c1 = nn.Conv1d(5, 6, 3, stride=3)
        self.unbatched = nn.Conv2d(6, 3, 3, stride=3)
        self.expand = nn.Conv2d(6, 20, 1)
        self.many = nn.Conv2d(20, 4, 2, stride=2)

    def forward(self, img, seq, one):
        return (self.square(img), F.gelu(self.rect(img)), self.whole(img), self.transposed(img.transpose(2, 3)),
                self.grouped(img), self.c1(seq), self.unbatched(one), self.many(self.expand(img)))


class ConvUnbatched(nn.Module):
    """Unbatched [C, H, W] and [C, L] inputs; several output-channel tiles (1x1 to 70
    channels, depthwise with 4 channels per input channel) and pixel tiles (L = 150)."""

    def __init__(self):
        super().__init__()
        self.c2 = nn.Conv2d(5, 7, 3, stride=2, padding=1)
        self.c1 = nn.Conv1d(5, 3, 2, groups=1)
        self.pool = nn.MaxPool2d(2)
        self.pool1 = nn.AvgPool1d(3, 2, 1)
        self.wide = nn.Conv1d(5, 70, 1)
        self.multiplier = nn.Conv1d(5, 20, 3, groups=5)
        self.long = nn.Conv1d(3, 4, 5, padding=2)
        self.long_depthwise = nn.Conv1d(3, 3, 3, padding=1, groups=3)

    def forward(self, img, seq, long):
        return (self.pool(torch.relu(self.c2(img))), self.c1(seq), self.pool1(seq), self.wide(seq),
                self.multiplier(seq), self.long(long), self.long_depthwise(long))


class Pools(nn.Module):
    """Max/avg/adaptive pooling, 2-d and 1-d: padding, dilation, ceil_mode, count_include_pad,
    divisor_override. (Modules: the exporter maps pooling modules, not the functionals.)"""

    def __init__(self):
        super().__init__()
        self.img_pools = nn.ModuleList([
            nn.MaxPool2d(3, stride=2, padding=1),
            nn.MaxPool2d(3, stride=2, ceil_mode=True),
            nn.MaxPool2d((2, 3), stride=(1, 2), dilation=(2, 1), padding=(1, 1)),
            nn.AvgPool2d(3, stride=2, padding=1),
            nn.AvgPool2d(3, stride=2, padding=1, count_include_pad=False),
            nn.AvgPool2d((3, 2), stride=2, padding=1, ceil_mode=True),
            nn.AvgPool2d((3, 2), stride=2, padding=1, ceil_mode=True, count_include_pad=False),
            nn.AvgPool2d(2, divisor_override=3),
            nn.AdaptiveAvgPool2d((4, 3)),
            nn.AdaptiveAvgPool2d((5, None)),
            nn.AdaptiveAvgPool2d(1),
        ])
        self.seq_pools = nn.ModuleList([
            nn.MaxPool1d(4, stride=3, padding=2, ceil_mode=True),
            nn.MaxPool1d(3, dilation=2),
            nn.AvgPool1d(3, stride=2, padding=1, ceil_mode=True, count_include_pad=False),
            nn.AvgPool1d(4, stride=3, padding=2),
            nn.AdaptiveAvgPool1d(5),
        ])

    def forward(self, img, seq):
        return tuple(p(img) for p in self.img_pools) + tuple(p(seq) for p in self.seq_pools)


def _randomize_bn(bn):
    with torch.no_grad():
        bn.running_mean.uniform_(-1.0, 1.0)
        bn.running_var.uniform_(0.5, 2.0)
        bn.weight.uniform_(0.5, 1.5)
        bn.bias.uniform_(-0.5, 0.5)


class ConvsDepthwise(nn.Module):
    """Depthwise convolutions at odd sizes (MobileNet, EfficientNet, ConvNeXt): 3x3, 5x5 and 7x7,
    stride 1 and 2, dilated, a multiplier of 2, 24 and 40 channels (not multiples of 16) and 128,
    maps from 11x9 down to 3x2 (smaller than the 7x7 kernel), with eval BatchNorm + ReLU,
    hardswish and SiLU epilogues, a bias, a residual add; a 1-d one; a 5x5 on the 3x2 map with
    SiLU (EfficientNet's last stages: the map smaller than the kernel)."""

    def __init__(self):
        super().__init__()
        self.dw3 = nn.Conv2d(24, 24, 3, padding=1, groups=24, bias=False)
        self.bn3 = nn.BatchNorm2d(24)
        self.dw5_s2 = nn.Conv2d(24, 24, 5, stride=2, padding=2, groups=24, bias=False)
        self.bn5 = nn.BatchNorm2d(24)
        self.dw7 = nn.Conv2d(24, 24, 7, padding=3, groups=24)
        self.dw3_s2 = nn.Conv2d(24, 24, 3, stride=2, padding=1, groups=24)
        self.dilated = nn.Conv2d(24, 24, 3, padding=2, dilation=2, groups=24)
        self.mult = nn.Conv2d(24, 48, 3, stride=2, padding=1, groups=24)
        self.wide5 = nn.Conv2d(40, 40, 5, padding=2, groups=40, bias=False)
        self.bn_wide = nn.BatchNorm2d(40)
        self.big7 = nn.Conv2d(128, 128, 7, padding=3, groups=128)
        self.big3_s2 = nn.Conv2d(128, 128, 3, stride=2, padding=1, groups=128, bias=False)
        self.c1 = nn.Conv1d(24, 24, 5, padding=2, groups=24)
        self.tiny5 = nn.Conv2d(128, 128, 5, padding=2, groups=128)
        for bn in (self.bn3, self.bn5, self.bn_wide):
            _randomize_bn(bn)

    def forward(self, img, wide, big, seq):
        return (torch.relu(self.bn3(self.dw3(img))), F.hardswish(self.bn5(self.dw5_s2(img))), self.dw7(img) + img,
                F.silu(self.dw3_s2(img)), self.dilated(img), self.mult(img), F.silu(self.bn_wide(self.wide5(wide))),
                self.big7(big), self.big3_s2(big), self.c1(seq), F.silu(self.tiny5(big)))


class ConvsDepthwiseSmallMaps(nn.Module):
    """Depthwise convolutions on maps smaller than the kernel's reach, whose taps that read only
    padding the CPU plans drop: 5x5 on a 2x2 map with eval BatchNorm + hardswish (MobileNet's
    last stages; 37 channels, blocks of 16, the last one partial), 7x7 with a bias and a
    residual add (ConvNeXt's), a 3x3 dilated by 2 (one live tap), a 7x7 on a 3x1 map (5x1 live),
    a multiplier of 2 with 5x5 on it (5x1), and a 1-d 7-tap one on 3 steps (5 live)."""

    def __init__(self):
        super().__init__()
        self.tiny5 = nn.Conv2d(37, 37, 5, padding=2, groups=37, bias=False)
        self.bn5 = nn.BatchNorm2d(37)
        self.tiny7 = nn.Conv2d(37, 37, 7, padding=3, groups=37)
        self.dilated = nn.Conv2d(37, 37, 3, padding=2, dilation=2, groups=37)
        self.col7 = nn.Conv2d(20, 20, 7, padding=3, groups=20)
        self.mult = nn.Conv2d(20, 40, 5, padding=2, groups=20, bias=False)
        self.c1 = nn.Conv1d(12, 12, 7, padding=3, groups=12)
        _randomize_bn(self.bn5)

    def forward(self, tiny, col, seq):
        return (F.hardswish(self.bn5(self.tiny5(tiny))), self.tiny7(tiny) + tiny, self.dilated(tiny),
                self.col7(col), self.mult(col), self.c1(seq))


class ConvsGrouped(nn.Module):
    """Grouped convolutions with narrow groups (RegNet's group width 8) at odd sizes: group widths
    2, 3, 4, 8, 12 and 16, stride 1 and 2, padded and not, dilated, an asymmetric kernel, more
    output than input channels a group, 37 groups (blocks of 16 groups, the last one partial),
    a 3x3 map (RegNet's last stage) at stride 1 and 2, groups of 16 on it (regnet_x_400mf's last
    stage), with eval BatchNorm + ReLU, SiLU, bias and residual epilogues; a 1-d one."""

    def __init__(self):
        super().__init__()
        self.g16_s2 = nn.Conv2d(48, 48, 3, stride=2, padding=1, groups=3)
        self.g8 = nn.Conv2d(48, 48, 3, padding=1, groups=6, bias=False)
        self.bn8 = nn.BatchNorm2d(48)
        self.g8_s2 = nn.Conv2d(48, 48, 3, stride=2, padding=1, groups=6, bias=False)
        self.bn8_s2 = nn.BatchNorm2d(48)
        self.g4_s2 = nn.Conv2d(48, 60, 3, stride=2, padding=1, groups=12)
        self.g2 = nn.Conv2d(48, 48, 5, padding=2, groups=24)
        self.g12_dil = nn.Conv2d(48, 20, 3, padding=2, dilation=2, groups=4)
        self.g3_nopad = nn.Conv2d(48, 32, (2, 3), groups=16, bias=False)
        self.g2_37 = nn.Conv2d(74, 74, 3, padding=1, groups=37)
        self.g8_small = nn.Conv2d(80, 80, 3, padding=1, groups=10, bias=False)
        self.bn_small = nn.BatchNorm2d(80)
        self.g8_small_s2 = nn.Conv2d(80, 80, 3, stride=2, padding=1, groups=10)
        self.c1 = nn.Conv1d(16, 16, 3, padding=1, groups=2)
        for bn in (self.bn8, self.bn8_s2, self.bn_small):
            _randomize_bn(bn)
        self.g16_small = nn.Conv2d(80, 80, 3, padding=1, groups=5)

    def forward(self, img, wide, small, seq):
        return (F.silu(self.g16_s2(img)), torch.relu(self.bn8(self.g8(img))), torch.relu(self.bn8_s2(self.g8_s2(img))),
                self.g4_s2(img), self.g2(img) + img, self.g12_dil(img), self.g3_nopad(img), self.g2_37(wide),
                torch.relu(self.bn_small(self.g8_small(small)) + small), self.g8_small_s2(small), self.c1(seq),
                torch.relu(self.g16_small(small)))


class ConvsGroupedFolded(nn.Module):
    """Grouped 3x3 convolutions on small maps whose input a 1x1 convolution produces: the CPU
    plans store that input as padded planes [channel, sample] and fold the samples into the
    grouped convolution's pixels. Groups of 8 (merged in pairs over a block-diagonal weight),
    with eval BatchNorm, a residual add and ReLU, and two infinities and a NaN in its input
    (the merged groups' recomputation); groups of 16 with bias and SiLU on a 5x6 map; 16 input
    and 24 output channels a group on a 6x6 map; a 2x3 kernel under padding="same" (no top
    padding, one row at the bottom) and a dilated 3x3 (two rows and columns of padding); groups
    of 8 on an 11x9 map; a 1-d one (a row a band, no zero rows)."""

    def __init__(self):
        super().__init__()
        self.pa = nn.Conv2d(40, 80, 1, bias=False)
        self.bna = nn.BatchNorm2d(80)
        self.g8 = nn.Conv2d(80, 80, 3, padding=1, groups=10, bias=False)
        self.bn8 = nn.BatchNorm2d(80)
        self.pb = nn.Conv2d(40, 64, 1)
        self.g16 = nn.Conv2d(64, 64, 3, padding=1, groups=4)
        self.pc = nn.Conv2d(24, 32, 1)
        self.g24 = nn.Conv2d(32, 48, 3, padding=1, groups=2)
        self.pd = nn.Conv2d(24, 32, 1)
        self.g_same = nn.Conv2d(32, 32, (2, 3), padding="same", groups=2)
        self.pe = nn.Conv2d(40, 32, 1)
        self.g_dil = nn.Conv2d(32, 32, 3, padding=2, dilation=2, groups=2, bias=False)
        self.pf = nn.Conv2d(20, 32, 1)
        self.g_big = nn.Conv2d(32, 32, 3, padding=1, groups=4)
        self.pg = nn.Conv1d(12, 32, 1)
        self.g1d = nn.Conv1d(32, 32, 3, padding=1, groups=2)
        for bn in (self.bna, self.bn8):
            _randomize_bn(bn)
        poison = torch.zeros(2, 80, 5, 6)
        poison[0, 17, 2, 3] = float("inf")
        poison[1, 40, 4, 5] = float("nan")
        poison[1, 70, 0, 0] = float("-inf")
        self.register_buffer("poison", poison)

    def forward(self, small, res, six, big, seq):
        x = torch.relu(self.bna(self.pa(small))) + self.poison
        return (torch.relu(self.bn8(self.g8(x)) + res), F.silu(self.g16(torch.relu(self.pb(small)))),
                self.g24(torch.relu(self.pc(six))), self.g_same(torch.relu(self.pd(six))),
                self.g_dil(torch.relu(self.pe(small))), self.g_big(torch.relu(self.pf(big))),
                self.g1d(torch.relu(self.pg(seq))))


class ConvsGroupedNonFinite(nn.Module):
    """Grouped convolutions with 8-channel groups (RegNet's), whose input is infinite or NaN at a
    few pixels of ONE group's channels (a fixed buffer added to the input: +inf, -inf and NaN in
    channels 8-15, group 1): that group's outputs near them are non-finite, every other group's
    stay finite. Stride 1 (+ eval BatchNorm + ReLU) and 2, and 5 groups of 8 (channels 8-47):
    the shapes whose groups the CPU plans merge over a block-diagonal weight (2 and 5 a group),
    where 0 * inf in the zero blocks must not reach the other groups."""

    def __init__(self):
        super().__init__()
        self.g8 = nn.Conv2d(48, 48, 3, padding=1, groups=6, bias=False)
        self.bn8 = nn.BatchNorm2d(48)
        self.g8_s2 = nn.Conv2d(48, 48, 3, stride=2, padding=1, groups=6)
        self.g5 = nn.Conv2d(40, 40, 3, padding=1, groups=5)
        _randomize_bn(self.bn8)
        poison = torch.zeros(2, 48, 9, 11)
        poison[0, 9, 2, 3] = float("inf")
        poison[1, 12, 6, 10] = float("-inf")
        poison[0, 14, 7, 0] = float("nan")
        poison[1, 10, 0, 0] = float("inf")
        self.register_buffer("poison", poison)

    def forward(self, img):
        x = img + self.poison
        return torch.relu(self.bn8(self.g8(x))), self.g8_s2(x), self.g5(x[:, 8:])


class ConvsCNN(nn.Module):
    """The convolution and pooling shapes of torchvision's CNNs at odd sizes: the 7x7 stride-2
    stem (+BN+ReLU) and a 3x3 stride-2 padded max pool; stride-2 3x3 with many channels feeding
    a unit-stride 3x3 (ResNet's first block of a stage) and a 1x1 stride-2 shortcut added to it;
    a grouped stride-2 3x3 (RegNet, 8 channels a group); depthwise 3x3, 5x5 and 7x7 (MobileNet,
    EfficientNet, ConvNeXt) strided and not; a dilated stride-2 conv, an asymmetric stride
    (2, 1), an even kernel with stride 2, a padded 1x1 stride 2; strided avg pools; a
    squeeze-excite block (global pool, 1x1 FCs, per-channel scale)."""

    def __init__(self):
        super().__init__()
        self.stem = nn.Conv2d(3, 10, 7, stride=2, padding=3, bias=False)
        self.stem_bn = nn.BatchNorm2d(10)
        self.pool = nn.MaxPool2d(3, stride=2, padding=1)
        self.down = nn.Conv2d(10, 16, 3, stride=2, padding=1, bias=False)
        self.down_bn = nn.BatchNorm2d(16)
        self.conv = nn.Conv2d(16, 16, 3, padding=1, bias=False)
        self.shortcut = nn.Conv2d(10, 16, 1, stride=2, bias=False)
        self.grouped = nn.Conv2d(16, 24, 3, stride=2, padding=1, groups=2)
        self.dw3 = nn.Conv2d(16, 16, 3, stride=2, padding=1, groups=16)
        self.dw5 = nn.Conv2d(16, 16, 5, stride=2, padding=2, groups=16)
        self.dw7 = nn.Conv2d(16, 16, 7, padding=3, groups=16)
        self.dilated = nn.Conv2d(10, 6, 3, stride=2, dilation=2, padding=2)
        self.asym = nn.Conv2d(10, 6, (3, 1), stride=(2, 1), padding=(1, 0))
        self.even = nn.Conv2d(10, 5, 4, stride=2)
        self.padded_1x1 = nn.Conv2d(10, 4, 1, stride=2, padding=1)
        self.se_pool = nn.AdaptiveAvgPool2d(1)
        self.se_reduce = nn.Conv2d(16, 4, 1)
        self.se_expand = nn.Conv2d(4, 16, 1)
        self.avg = nn.AvgPool2d(3, stride=2, padding=1)
        self.avg_exclude = nn.AvgPool2d(3, stride=2, padding=1, count_include_pad=False, ceil_mode=True)
        self.max2 = nn.MaxPool2d(2, ceil_mode=True)
        self.max_seq = nn.MaxPool1d(3, stride=2, padding=1)
        for bn in (self.stem_bn, self.down_bn):
            _randomize_bn(bn)

    def forward(self, img, seq):
        x = torch.relu(self.stem_bn(self.stem(img)))
        p = self.pool(x)
        y = self.conv(torch.relu(self.down_bn(self.down(p))))
        y = torch.relu(y + self.shortcut(p))
        s = torch.sigmoid(self.se_expand(torch.relu(self.se_reduce(self.se_pool(y)))))
        return (p, y, y * s, self.grouped(y), self.dw3(y), self.dw5(y), self.dw7(y), self.dilated(p),
                self.asym(p), self.even(p), self.padded_1x1(p), self.avg(x), self.avg_exclude(x), self.max2(x),
                self.max_seq(seq))


class ConvsStridedShared(nn.Module):
    """1x1 strided convolutions next to a wider strided one of the same input (ResNet's
    downsampling shortcut beside its block's 3x3 stride-2 conv), at odd sizes: unpadded (phase
    (1, 1) of the 3x3's copy), padded like it (phase (0, 0)), beside a 5x5 padded by 2 (phase
    (0, 0) one row and column in), an asymmetric stride (2, 1), and padded beyond the other
    (no phase holds its border: it needs its own copy); the shortcut added to the 3x3's
    output as a residual."""

    def __init__(self):
        super().__init__()
        self.down = nn.Conv2d(6, 8, 3, stride=2, padding=1, bias=False)
        self.short = nn.Conv2d(6, 8, 1, stride=2)
        self.short_p = nn.Conv2d(6, 4, 1, stride=2, padding=1)
        self.short_far = nn.Conv2d(6, 3, 1, stride=2, padding=2)
        self.big = nn.Conv2d(5, 6, 5, stride=2, padding=2)
        self.short2 = nn.Conv2d(5, 6, 1, stride=2, groups=1)
        self.asym = nn.Conv2d(4, 6, 3, stride=(2, 1), padding=1)
        self.short3 = nn.Conv2d(4, 6, 1, stride=(2, 1))

    def forward(self, img, img2, img3):
        y = torch.relu(self.down(img) + self.short(img))
        return (y, self.short_p(img), self.short_far(img), self.big(img2), self.short2(img2), self.asym(img3),
                self.short3(img3))


class ConvsPhaseStore(nn.Module):
    """Strided convolutions whose input a 1x1 convolution produces, on an image whose width the
    strides divide (the 1x1 then stores their stride phase planes itself): RegNet's f.a -> f.b
    (BatchNorm + ReLU, a grouped 3x3 stride 2), a 1x1 with a bias and SiLU -> a dense 3x3
    stride 2, -> a 5x5 stride 2 padded by 2, -> an asymmetric stride (2, 1), -> a 3x3 stride 3,
    a 1x1 with a residual add -> an unpadded 3x3 stride 2 (phase (1, 0) columns first), and a
    1x1 stride 2 (one phase read: the pad kernel's copy). Depthwise convolutions over channel
    blocks (the 1x1 stores the blocks, channels last): 3x3 stride 2 (EfficientNet's expansion,
    BatchNorm + SiLU), 5x5 stride 1 over 40 channels (a partial block), 5x5 stride 2, and one
    with a channel multiplier of 2 (the pad kernel's copy)."""

    def __init__(self):
        super().__init__()
        self.pa, self.bn_a, self.ga = nn.Conv2d(12, 16, 1, bias=False), nn.BatchNorm2d(16), nn.Conv2d(16, 16, 3, stride=2, padding=1, groups=2)
        self.pb, self.cb = nn.Conv2d(12, 8, 1), nn.Conv2d(8, 7, 3, stride=2, padding=1)
        self.pc, self.c5 = nn.Conv2d(12, 8, 1), nn.Conv2d(8, 5, 5, stride=2, padding=2, bias=False)
        self.pd, self.asym = nn.Conv2d(12, 6, 1), nn.Conv2d(6, 4, 3, stride=(2, 1), padding=1)
        self.pe, self.s3 = nn.Conv2d(12, 6, 1), nn.Conv2d(6, 5, 3, stride=3, padding=1)
        self.pf, self.unpadded = nn.Conv2d(12, 12, 1), nn.Conv2d(12, 6, 3, stride=2)
        self.pg, self.down_1x1 = nn.Conv2d(12, 6, 1), nn.Conv2d(6, 4, 1, stride=2)
        self.ph, self.bn_h = nn.Conv2d(12, 24, 1, bias=False), nn.BatchNorm2d(24)
        self.dw3_s2 = nn.Conv2d(24, 24, 3, stride=2, padding=1, groups=24, bias=False)
        self.pi, self.dw5 = nn.Conv2d(12, 40, 1), nn.Conv2d(40, 40, 5, padding=2, groups=40)
        self.pj, self.dw5_s2 = nn.Conv2d(12, 20, 1), nn.Conv2d(20, 20, 5, stride=2, padding=2, groups=20)
        self.pk, self.mult = nn.Conv2d(12, 8, 1), nn.Conv2d(8, 16, 3, padding=1, groups=8)
        _randomize_bn(self.bn_a)
        _randomize_bn(self.bn_h)

    def forward(self, img):
        return (torch.relu(self.ga(torch.relu(self.bn_a(self.pa(img))))), self.cb(F.silu(self.pb(img))), self.c5(self.pc(img)),
                self.asym(self.pd(img)), self.s3(self.pe(img)), self.unpadded(torch.relu(self.pf(img) + img)),
                self.down_1x1(self.pg(img)), self.dw3_s2(F.silu(self.bn_h(self.ph(img)))), self.dw5(torch.relu(self.pi(img))),
                self.dw5_s2(self.pj(img)), self.mult(self.pk(img)))


class ConvsStem(nn.Module):
    """A ResNet stem at odd sizes, its pools storing the zero-padded planes of the convolution
    after them: 7x7 stride-2 conv + BN + ReLU, a 3x3 stride-2 padded max pool read by a 3x3
    conv (+BN) and as that one's residual (+ReLU); a ceil-mode max pool whose one reader is a
    3x3 conv (the padded planes only); an average pool read by a dilated 3x3 and returned too;
    and a max pool read by a strided conv (the pad kernel's phase copy). Beside it, the other
    models' stem on the same image: a 3x3 stride-2 conv (+bias, ReLU6) of its 3 channels, and a
    5x3 one at strides 3 and 2 padded 2 and 0 (3 x 2 stride phases of the image)."""

    def __init__(self):
        super().__init__()
        self.stem = nn.Conv2d(3, 8, 7, stride=2, padding=3, bias=False)
        self.stem_bn = nn.BatchNorm2d(8)
        self.pool = nn.MaxPool2d(3, stride=2, padding=1)
        self.conv, self.bn = nn.Conv2d(8, 8, 3, padding=1, bias=False), nn.BatchNorm2d(8)
        self.pool_ceil, self.after_ceil = nn.MaxPool2d(3, stride=2, ceil_mode=True), nn.Conv2d(8, 5, 3, padding=1)
        self.avg, self.dilated = nn.AvgPool2d(3, stride=2, padding=1), nn.Conv2d(8, 6, 3, padding=2, dilation=2)
        self.strided = nn.Conv2d(8, 4, 3, stride=2, padding=1)
        self.stem3 = nn.Conv2d(3, 5, 3, stride=2, padding=1)
        self.stem_s3 = nn.Conv2d(3, 4, (5, 3), stride=(3, 2), padding=(2, 0), bias=False)
        _randomize_bn(self.stem_bn)
        _randomize_bn(self.bn)

    def forward(self, img):
        x = torch.relu(self.stem_bn(self.stem(img)))
        p = self.pool(x)
        a = self.avg(x)
        return (torch.relu(self.bn(self.conv(p)) + p), self.after_ceil(self.pool_ceil(x)), a, self.dilated(a),
                self.strided(self.pool(-x)), F.relu6(self.stem3(img)), self.stem_s3(img))


class ConvsSmallMaps(nn.Module):
    """The dense convolutions of a ResNet's last stages, on maps of at most 64 pixels (the CPU's
    columns path, conv_cols.py): a stride-2 3x3 (+BN+ReLU) and a 1x1 stride-2 shortcut (+BN)
    added to the unit-stride 3x3 after it (+ReLU), a second block reading the first's output
    twice (its conv and its residual), a dilated 3x3 with a bias, a 2x3 kernel without padding;
    at odd channel counts (K = channels x taps no multiple of a tile) and 3 samples of 7x6
    pixels (several pixel tiles of all samples). Two convolutions over larger maps read a
    small-map output zero-padded: one as its only reader, one beside another reader."""

    def __init__(self):
        super().__init__()
        self.down = nn.Conv2d(24, 40, 3, stride=2, padding=1, bias=False)
        self.down_bn = nn.BatchNorm2d(40)
        self.conv = nn.Conv2d(40, 40, 3, padding=1, bias=False)
        self.conv_bn = nn.BatchNorm2d(40)
        self.shortcut = nn.Conv2d(24, 40, 1, stride=2, bias=False)
        self.shortcut_bn = nn.BatchNorm2d(40)
        self.conv2 = nn.Conv2d(40, 40, 3, padding=1, bias=False)
        self.conv2_bn = nn.BatchNorm2d(40)
        self.conv3 = nn.Conv2d(40, 40, 3, padding=1, bias=False)
        self.conv3_bn = nn.BatchNorm2d(40)
        self.dilated = nn.Conv2d(40, 12, 3, dilation=2, padding=2)
        self.kernel23 = nn.Conv2d(40, 9, (2, 3))
        self.pre = nn.Conv2d(40, 9, 3, padding=1)
        self.grow = nn.Conv2d(9, 8, 3, padding=2)
        self.grow2 = nn.Conv2d(12, 8, 3, padding=2)
        for bn in (self.down_bn, self.conv_bn, self.shortcut_bn, self.conv2_bn, self.conv3_bn):
            _randomize_bn(bn)

    def forward(self, img):
        y = torch.relu(self.down_bn(self.down(img)))
        y = torch.relu(self.conv_bn(self.conv(y)) + self.shortcut_bn(self.shortcut(img)))
        z = torch.relu(self.conv2_bn(self.conv2(y)))
        z = torch.relu(self.conv3_bn(self.conv3(z)) + y)
        d = torch.relu(self.dilated(z))
        return z, d, self.kernel23(z), self.grow(torch.relu(self.pre(y))), self.grow2(d)


class ConvsWideK(nn.Module):
    """Convolutions whose reduction K = channels x taps passes 1024 (the weight's rows 4 KB or
    more apart: the CPU's dots prefetch them along their rows) at odd channel counts: on small
    maps (the folded GEMM over conv_cols.py's columns) a 3x3 from 115 channels to 21 (+BN+ReLU)
    and a stride-2 3x3 from 115 to 37, and per sample a 3x3 from 120 to 19 on a 13x11 map."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(115, 21, 3, padding=1, bias=False)
        self.bn = nn.BatchNorm2d(21)
        self.down = nn.Conv2d(115, 37, 3, stride=2, padding=1)
        self.big = nn.Conv2d(120, 19, 3, padding=1)
        _randomize_bn(self.bn)

    def forward(self, img, big):
        return torch.relu(self.bn(self.conv(img))), self.down(img), self.big(big)


class ConvsWidePadding(nn.Module):
    """Paddings as wide as the kernel or wider on tiny maps, so that whole output rows and
    columns see only padding: a 3x3 padded by 3 on a 6x4 map, a 5x5 padded by 4 (with a
    ReLU between), a (3, 1) padded by (4, 0) and a 1-d kernel 3 padded by 3. The 3x3 and a
    grouped (5, 3) on the (3, 1)'s 16-pixel output run twice each: wide3_1 reads the parameter
    "wide3.weight", which was also the name of wide3's relaid weight copy (and grouped_1 of
    grouped's), so wide3_1 read that copy and relaid it again."""

    def __init__(self):
        super().__init__()
        self.wide3 = nn.Conv2d(5, 7, 3, padding=3)
        self.wide5 = nn.Conv2d(7, 6, 5, padding=4)
        self.tall = nn.Conv2d(5, 4, (3, 1), padding=(4, 0))
        self.seq = nn.Conv1d(5, 3, 3, padding=3)
        self.grouped = nn.Conv2d(4, 4, (5, 3), groups=2)

    def forward(self, img, seq):
        y = self.wide3(img)
        t = self.tall(img)
        return (y, self.wide5(torch.relu(y)), t, self.seq(seq), self.wide3(torch.relu(img)), self.grouped(t),
                self.grouped(torch.relu(t)))


class _SqueezeExcite(nn.Module):
    """torchvision.ops.SqueezeExcitation's form: avgpool, fc1, activation, fc2, scale_activation,
    then scale * input."""

    def __init__(self, channels, squeeze, activation, scale_activation, bias2=True):
        super().__init__()
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.fc1 = nn.Conv2d(channels, squeeze, 1)
        self.fc2 = nn.Conv2d(squeeze, channels, 1, bias=bias2)
        self.activation = activation()
        self.scale_activation = scale_activation()

    def forward(self, x):
        s = self.scale_activation(self.fc2(self.activation(self.fc1(self.avgpool(x)))))
        return s * x


class ConvsSqueezeExcite(nn.Module):
    """Squeeze-excite blocks at odd sizes, each scale read by a 1x1 convolution as in the
    models: RegNet's (ReLU, sigmoid) over 37 channels on 7x5 maps, EfficientNet's (SiLU,
    sigmoid) over 130 on 11x9, MobileNetV3's (ReLU, hardsigmoid) over 69 on 4x3; one over 300
    channels into 75 (channel, hidden and output blocks walked); one over 8 channels of 33x32
    pixels (pixel blocks walked), its second FC without bias; a pool written as
    x.mean((2, 3), keepdim=True); and a pool that is also a graph output (its own kernel)."""

    def __init__(self):
        super().__init__()
        self.regnet = _SqueezeExcite(37, 9, nn.ReLU, nn.Sigmoid)
        self.regnet_project = nn.Conv2d(37, 11, 1)
        self.effnet = _SqueezeExcite(130, 7, nn.SiLU, nn.Sigmoid)
        self.effnet_project = nn.Conv2d(130, 21, 1)
        self.mobile = _SqueezeExcite(69, 17, nn.ReLU, nn.Hardsigmoid)
        self.mobile_project = nn.Conv2d(69, 13, 1)
        self.wide = _SqueezeExcite(300, 75, nn.ReLU, nn.Sigmoid)
        self.wide_project = nn.Conv2d(300, 5, 1)
        self.big = _SqueezeExcite(8, 3, nn.SiLU, nn.Sigmoid, bias2=False)
        self.big_project = nn.Conv2d(8, 3, 1)
        self.mean_fc1, self.mean_fc2 = nn.Conv2d(37, 6, 1), nn.Conv2d(6, 37, 1)
        self.shared_fc1, self.shared_fc2 = nn.Conv2d(37, 5, 1), nn.Conv2d(5, 37, 1)

    def forward(self, img, eff, mob, wide, big):
        m = img.mean((2, 3), keepdim=True)
        sm = torch.sigmoid(self.mean_fc2(torch.relu(self.mean_fc1(m))))
        p = F.adaptive_avg_pool2d(img, 1)
        sp = torch.sigmoid(self.shared_fc2(torch.relu(self.shared_fc1(p))))
        return (self.regnet_project(self.regnet(img)), self.effnet_project(self.effnet(eff)),
                self.mobile_project(self.mobile(mob)), self.wide_project(self.wide(wide)),
                self.big_project(self.big(big)), img * sm, img * sp, p)


class ConvsScaledSmallMaps(nn.Module):
    """RegNet's and EfficientNet's squeeze-excite-scaled 1x1 convolutions on small maps at odd
    sizes, with more output channels than one tile of 64 (lowering's scaledSmallMap: every
    output channel one tile, the input tile scaled): RegNet's f.c over 83 channels on 5x7
    maps (the scale, the 1x1, eval BatchNorm, the residual add and ReLU), a 45 -> 150 project
    on 3x3 maps with BatchNorm, and a 70 -> 97 one on a 1x3 map with a bias."""

    def __init__(self):
        super().__init__()
        self.regnet = _SqueezeExcite(83, 9, nn.ReLU, nn.Sigmoid)
        self.regnet_fc, self.regnet_bn = nn.Conv2d(83, 83, 1, bias=False), nn.BatchNorm2d(83)
        self.tiny = _SqueezeExcite(45, 7, nn.SiLU, nn.Sigmoid)
        self.tiny_project, self.tiny_bn = nn.Conv2d(45, 150, 1, bias=False), nn.BatchNorm2d(150)
        self.row = _SqueezeExcite(70, 5, nn.ReLU, nn.Hardsigmoid)
        self.row_project = nn.Conv2d(70, 97, 1)
        _randomize_bn(self.regnet_bn)
        _randomize_bn(self.tiny_bn)

    def forward(self, x, tiny, row):
        y = torch.relu(self.regnet_bn(self.regnet_fc(self.regnet(x))) + x)
        return y, self.tiny_bn(self.tiny_project(self.tiny(tiny))), self.row_project(self.row(row))


class ConvsMobile(nn.Module):
    """The blocks of mobile CNNs at odd sizes. Squeeze-excite scales read by a 1x1 convolution:
    `scale * input` as torchvision writes it over 32 channels (MobileNetV3: hardsigmoid, then
    a 1x1 without bias and eval BatchNorm), `x * s` over 5 channels with a bias (fewer than a
    tap-major reduction takes), the same scaled tensor read by a 1x1 in 4 groups (8 channels each), and a scaled
    tensor with another reader (a graph output) besides its 1x1. ShuffleNetV2's unit: chunk,
    a 1x1 branch, cat and the channel shuffle (view, transpose, flatten), read by a 1x1; a
    shuffle in groups that the cat's parts straddle (view, transpose, contiguous, view).
    Strided convolutions whose input a convolution produces (MobileNet's and RegNet's
    downsampling blocks). ResNet's basic blocks, whose outputs have several readers.
    Squeeze-excite at 3x2 pixels into more output channels than pixels."""

    def __init__(self):
        super().__init__()
        self.expand = nn.Conv2d(12, 32, 1)
        self.dw = nn.Conv2d(32, 32, 3, padding=1, groups=32)
        self.se_reduce = nn.Conv2d(32, 6, 1)
        self.se_expand = nn.Conv2d(6, 32, 1)
        self.project = nn.Conv2d(32, 10, 1, bias=False)
        self.project_bn = nn.BatchNorm2d(10)
        self.grouped = nn.Conv2d(32, 8, 1, groups=4)
        self.other = nn.Conv2d(32, 6, 1)
        self.small = nn.Conv2d(12, 5, 3, padding=1)
        self.small_reduce = nn.Conv2d(5, 3, 1)
        self.small_expand = nn.Conv2d(3, 5, 1)
        self.small_project = nn.Conv2d(5, 7, 1)
        self.branch = nn.Conv2d(16, 16, 1)
        self.after_shuffle = nn.Conv2d(32, 9, 1)
        self.after_shuffle4 = nn.Conv2d(32, 3, 1)
        self.pw_a, self.dw3_s2 = nn.Conv2d(12, 16, 1), nn.Conv2d(16, 16, 3, stride=2, padding=1, groups=16)
        self.pw_b, self.g_s2 = nn.Conv2d(12, 16, 1), nn.Conv2d(16, 16, 3, stride=2, padding=1, groups=2)
        self.pw_c, self.dw5_s2 = nn.Conv2d(12, 8, 1), nn.Conv2d(8, 8, 5, stride=2, padding=2, groups=8)
        self.pw_d, self.down_1x1 = nn.Conv2d(12, 6, 1), nn.Conv2d(6, 4, 1, stride=2)
        self.c3, self.c3_s2 = nn.Conv2d(12, 8, 3, padding=1), nn.Conv2d(8, 8, 3, stride=2, padding=1)
        self.s2a, self.s2b = nn.Conv2d(12, 8, 3, stride=2, padding=1), nn.Conv2d(8, 8, 3, stride=2, padding=1)
        self.res_a, self.res_b = nn.Conv2d(12, 12, 3, padding=1), nn.Conv2d(12, 12, 3, padding=1)
        self.res_c, self.res_d = nn.Conv2d(12, 12, 3, padding=1), nn.Conv2d(12, 6, 5, padding=2)
        self.tiny, self.tiny_fc, self.tiny_project = nn.Conv2d(12, 16, 3, stride=4, padding=1), nn.Conv2d(16, 16, 1), nn.Conv2d(16, 40, 1)
        self.tiny5, self.tiny5_fc, self.tiny5_project = nn.Conv2d(12, 5, 3, stride=4, padding=1), nn.Conv2d(5, 5, 1), nn.Conv2d(5, 33, 1)
        self.tiny12, self.tiny12_fc, self.tiny12_project = nn.Conv2d(12, 12, 3, stride=4, padding=1), nn.Conv2d(12, 12, 1), nn.Conv2d(12, 20, 1)
        _randomize_bn(self.project_bn)

    def forward(self, img):
        d = torch.relu(self.dw(torch.relu(self.expand(img))))
        s = F.hardsigmoid(self.se_expand(torch.relu(self.se_reduce(F.adaptive_avg_pool2d(d, 1)))))
        a = self.project_bn(self.project(s * d))
        g = self.grouped(d * s)
        m = d * s
        t = torch.relu(self.small(img))
        s2 = torch.sigmoid(self.small_expand(torch.relu(self.small_reduce(F.adaptive_avg_pool2d(t, 1)))))
        b = self.small_project(t * s2)
        x1, x2 = d.chunk(2, dim=1)
        y = torch.cat((x1, torch.relu(self.branch(x2))), dim=1)
        n, c, h, w = y.shape
        y = y.view(n, 2, c // 2, h, w).transpose(1, 2).flatten(1, 2)
        # groups of 8 channels: the cat's 16-channel parts straddle them
        z = torch.cat((x1, x2), dim=1).view(n, 4, c // 4, h, w).transpose(1, 2).contiguous().view(n, -1, h, w)
        # strided convolutions reading a convolution's output: 1x1 -> depthwise 3x3 and 5x5
        # stride 2, a grouped 3x3 stride 2 and a 1x1 stride 2 (one phase read); 3x3 -> 3x3
        # stride 2 and 3x3 stride 2 -> 3x3 stride 2
        e = (self.dw3_s2(F.hardswish(self.pw_a(img))), self.g_s2(torch.relu(self.pw_b(img))), self.dw5_s2(self.pw_c(img)),
             self.down_1x1(torch.relu(self.pw_d(img))), self.c3_s2(torch.relu(self.c3(img))), self.s2b(self.s2a(img)))
        # ResNet's basic blocks: a block output read by the next block's 3x3 and its residual
        # add, then by a 5x5 (wider padded planes) and as a graph output
        r = torch.relu(self.res_b(torch.relu(self.res_a(img))) + img)
        r2 = torch.relu(self.res_c(r) + r)
        # squeeze-excite at 3x2 pixels into 40, 33 and 20 channels (the late stages of a mobile
        # CNN: more output channels than pixels), over 16, 5 and 12 channels
        u = torch.relu(self.tiny(img))
        tp = self.tiny_project(u * torch.sigmoid(self.tiny_fc(F.adaptive_avg_pool2d(u, 1))))
        u5 = torch.relu(self.tiny5(img))
        tp5 = self.tiny5_project(torch.sigmoid(self.tiny5_fc(F.adaptive_avg_pool2d(u5, 1))) * u5)
        u12 = torch.relu(self.tiny12(img))
        tp12 = self.tiny12_project(u12 * torch.sigmoid(self.tiny12_fc(F.adaptive_avg_pool2d(u12, 1))))
        return (a, g, b, self.other(m), m, self.after_shuffle(y), self.after_shuffle4(z)) + e + (self.res_d(r2), r2, tp, tp5, tp12)


class ConvTransposes(nn.Module):
    """ConvTranspose2d: stride 2 with output_padding 1 (+ReLU), dilated and strided unevenly
    in groups of 2, depthwise without bias, + eval BatchNorm, called with output_size;
    ConvTranspose1d: strided and dilated in groups of 2, depthwise, and F.conv_transpose1d."""

    def __init__(self):
        super().__init__()
        self.t2 = nn.ConvTranspose2d(6, 5, 3, stride=2, padding=1, output_padding=1)
        self.t2_dil = nn.ConvTranspose2d(6, 4, (3, 2), stride=(2, 3), padding=(2, 1), output_padding=(1, 2),
                                         dilation=(2, 1), groups=2)
        self.t2_depthwise = nn.ConvTranspose2d(6, 12, 3, stride=2, padding=1, groups=6, bias=False)
        self.t2_bn = nn.ConvTranspose2d(6, 7, 2, stride=2)
        self.bn = nn.BatchNorm2d(7)
        self.t2_size = nn.ConvTranspose2d(6, 3, 3, stride=2, padding=1)
        self.t1 = nn.ConvTranspose1d(6, 7 * 2, 3, stride=3, padding=2, output_padding=1, dilation=2, groups=2)
        self.t1_depthwise = nn.ConvTranspose1d(6, 6, 4, stride=2, output_padding=1, groups=6)
        self.w1 = nn.Parameter(torch.randn(6, 5, 3) * 0.3)
        _randomize_bn(self.bn)

    def forward(self, img, seq):
        return (torch.relu(self.t2(img)), self.t2_dil(img), self.t2_depthwise(img), self.bn(self.t2_bn(img)),
                self.t2_size(img, output_size=[img.size(2) * 2, img.size(3) * 2 - 1]),
                self.t1(seq), self.t1_depthwise(seq), F.conv_transpose1d(seq, self.w1, stride=2, padding=1))


class Convs3d(nn.Module):
    """Conv3d: plain (+ReLU), strided, padding='same' with dilation 2, 'same' with an even
    kernel, groups 2, depthwise, 1x1x1 + eval BatchNorm3d + ReLU; BatchNorm3d alone;
    ConvTranspose3d strided with output_padding."""

    def __init__(self):
        super().__init__()
        self.plain = nn.Conv3d(6, 7, 3, padding=1)
        self.strided = nn.Conv3d(6, 5, (3, 2, 3), stride=2, padding=(1, 0, 1))
        self.same = nn.Conv3d(6, 3, 3, padding="same", dilation=2)
        self.same_even = nn.Conv3d(6, 5, (2, 3, 4), padding="same", dilation=(1, 2, 1))
        self.grouped = nn.Conv3d(6, 4, (1, 3, 3), padding=(0, 1, 1), groups=2)
        self.depthwise = nn.Conv3d(6, 6, 3, padding=1, groups=6, bias=False)
        self.pointwise = nn.Conv3d(6, 5, 1)
        self.bn_fused = nn.BatchNorm3d(5)
        self.bn = nn.BatchNorm3d(6, affine=False)
        self.transposed = nn.ConvTranspose3d(6, 2, (2, 3, 3), stride=(2, 1, 2), padding=(0, 1, 1), output_padding=(1, 0, 1))
        _randomize_bn(self.bn_fused)
        with torch.no_grad():
            self.bn.running_mean.uniform_(-1.0, 1.0)
            self.bn.running_var.uniform_(0.5, 2.0)

    def forward(self, vol):
        return (torch.relu(self.plain(vol)), self.strided(vol), self.same(vol), self.same_even(vol),
                self.grouped(vol), self.depthwise(vol), torch.relu(self.bn_fused(self.pointwise(vol))),
                self.bn(vol), self.transposed(vol))


class ConvNDUnbatched(nn.Module):
    """Unbatched [C, D, H, W], [C, H, W] and [C, L] inputs: Conv3d, ConvTranspose2d and
    ConvTranspose1d with more output channels than one channel tile (70)."""

    def __init__(self):
        super().__init__()
        self.c3 = nn.Conv3d(3, 5, 2, stride=(1, 2, 2))
        self.t2 = nn.ConvTranspose2d(3, 5, 3, stride=2, output_padding=1)
        self.t1 = nn.ConvTranspose1d(3, 70, 2, stride=2)

    def forward(self, vol, img, seq):
        return self.c3(vol), self.t2(img), self.t1(seq)


class Pools3d(nn.Module):
    """MaxPool3d, AvgPool3d, AdaptiveAvgPool3d: padding, dilation, ceil_mode,
    count_include_pad, divisor_override, None output sizes."""

    def __init__(self):
        super().__init__()
        self.pools = nn.ModuleList([
            nn.MaxPool3d(3, stride=2, padding=1),
            nn.MaxPool3d((2, 3, 2), stride=(1, 2, 2), dilation=(2, 1, 1), ceil_mode=True),
            nn.AvgPool3d(3, stride=2, padding=1),
            nn.AvgPool3d((3, 2, 3), stride=2, padding=1, ceil_mode=True, count_include_pad=False),
            nn.AvgPool3d(2, divisor_override=3),
            nn.AdaptiveAvgPool3d((2, 3, None)),
            nn.AdaptiveAvgPool3d(1),
        ])

    def forward(self, vol):
        return tuple(p(vol) for p in self.pools)


L, B, E, H, S = 7, 3, 12, 4, 9


class AttentionA(nn.Module):
    """MultiheadAttention: self-attention (batch_first false) with a float attn_mask and
    averaged weights; batch_first with a bool key_padding_mask (input made contiguous from a
    transpose); a bool causal attn_mask."""

    def __init__(self):
        super().__init__()
        self.self_attn = nn.MultiheadAttention(E, H)
        self.padded = nn.MultiheadAttention(E, H, batch_first=True)
        self.causal = nn.MultiheadAttention(E, 2, batch_first=True)
        g = torch.Generator().manual_seed(5)
        self.register_buffer("float_mask", torch.randn(L, L, generator=g))
        pad = torch.zeros(B, L, dtype=torch.bool)
        pad[0, 5:] = True
        pad[2, 1] = True
        pad[2, 3] = True
        self.register_buffer("pad_mask", pad)
        self.register_buffer("causal_mask", torch.triu(torch.ones(L, L, dtype=torch.bool), diagonal=1))

    def forward(self, x):
        # x: [L, B, E]
        xb = x.transpose(0, 1)
        a, aw = self.self_attn(x, x, x, attn_mask=self.float_mask)
        b = self.padded(xb, xb, xb, key_padding_mask=self.pad_mask, need_weights=False)[0]
        c, cw = self.causal(xb, xb, xb, attn_mask=self.causal_mask)
        return a + x, aw, b, c, cw


class AttentionB(nn.Module):
    """MultiheadAttention: a 3-D float attn_mask per (sample, head) with per-head weights;
    cross-attention with kdim/vdim and a key_padding_mask; cross-attention through row slices
    of in_proj_weight (key = value, not the query); no bias."""

    def __init__(self):
        super().__init__()
        self.per_head = nn.MultiheadAttention(E, 3)
        self.cross = nn.MultiheadAttention(E, H, kdim=11, vdim=5, batch_first=True)
        self.nobias = nn.MultiheadAttention(E, H, bias=False)
        self.cross_same = nn.MultiheadAttention(E, H)
        g = torch.Generator().manual_seed(6)
        self.register_buffer("head_mask", torch.randn(B * 3, L, L, generator=g))
        cross_pad = torch.zeros(B, S, dtype=torch.bool)
        cross_pad[1, 4:] = True
        self.register_buffer("cross_pad", cross_pad)

    def forward(self, x, mem, kv):
        # x: [L, B, E]; mem: [B, S, 11]; kv: [B, S, 5]
        d, dw = self.per_head(x, x, x, attn_mask=self.head_mask, average_attn_weights=False)
        e, ew = self.cross(x.transpose(0, 1), mem, kv, key_padding_mask=self.cross_pad)
        f = self.nobias(x, x, x, need_weights=False)[0]
        m = x * 0.5
        h = self.cross_same(x, m, m, need_weights=False)[0]
        return d, dw, e, ew, f, h


class AttentionUnbatched(nn.Module):
    """Unbatched [L, E] self-attention: a bool attn_mask with a bool key_padding_mask, and a
    float key_padding_mask alone (torch 1.13 turns a float key_padding_mask into a bool one
    when a bool attn_mask is also given; widejit follows the documented additive meaning)."""

    def __init__(self):
        super().__init__()
        self.mha = nn.MultiheadAttention(E, H)
        self.mha_float = nn.MultiheadAttention(E, 2)
        m = torch.zeros(L, L, dtype=torch.bool)
        m[0, 3] = True
        m[4, 0:2] = True
        self.register_buffer("mask", m)
        pad = torch.zeros(L, dtype=torch.bool)
        pad[2] = True
        self.register_buffer("pad", pad)
        self.register_buffer("float_pad", torch.linspace(-1.0, 0.0, L))

    def forward(self, x):
        a, aw = self.mha(x, x, x, attn_mask=self.mask, key_padding_mask=self.pad)
        b, bw = self.mha_float(x, x, x, key_padding_mask=self.float_pad)
        return a, aw, b, bw


class AttentionLong(nn.Module):
    """Sequences longer than one block (L = S = 70 > 64): causal self-attention with a bool
    key_padding_mask across query and key blocks; cross-attention of 5 queries over 70 keys with
    averaged weights."""

    def __init__(self):
        super().__init__()
        self.self_attn = nn.MultiheadAttention(8, 2)
        self.cross = nn.MultiheadAttention(8, 2, batch_first=True)
        self.register_buffer("causal_mask", torch.triu(torch.ones(70, 70, dtype=torch.bool), diagonal=1))
        pad = torch.zeros(2, 70, dtype=torch.bool)
        pad[1, 60:] = True
        pad[0, 3] = True
        self.register_buffer("pad", pad)

    def forward(self, x, q):
        # x: [70, 2, 8]; q: [2, 5, 8]
        a = self.self_attn(x, x, x, attn_mask=self.causal_mask, key_padding_mask=self.pad, need_weights=False)[0]
        xb = x.transpose(0, 1)
        b, bw = self.cross(q, xb, xb, key_padding_mask=self.pad)
        return a, b, bw


class SmallRowLinears(nn.Module):
    """Linears on a few rows (M = 1, 2, 3, 7: a classifier or a squeeze-excite block, memory-bound
    on its weight) with N and K not multiples of 16: bias and GELU, hardswish, a chain of two, no
    bias and a wide N; squeeze-excite 1x1 convolutions on 1x1 maps with ReLU and hardsigmoid."""

    def __init__(self):
        super().__init__()
        self.one = nn.Linear(37, 131)
        self.two_a = nn.Linear(70, 131)
        self.two_b = nn.Linear(131, 45)
        self.three = nn.Linear(37, 200, bias=False)
        self.seven = nn.Linear(70, 150)
        self.se_reduce = nn.Conv2d(40, 67, 1)
        self.se_expand = nn.Conv2d(67, 40, 1)

    def forward(self, one, two, three, seven, se):
        return (F.gelu(self.one(one)), self.two_b(F.hardswish(self.two_a(two))), self.three(three),
                F.gelu(self.seven(seven)), se * F.hardsigmoid(self.se_expand(torch.relu(self.se_reduce(se)))))


class ConvNextBlocks(nn.Module):
    """ConvNeXt blocks (torchvision's CNBlock): depthwise 7x7 conv, permute to channels last,
    LayerNorm -> Linear(4C) -> GELU -> Linear(C), permute back, layer scale and the residual add,
    on maps whose width is shorter than their channel count (the element-wise layer scale and add
    then walk channels as their rows), once with a stochastic-depth-free second block."""

    def __init__(self, c=24):
        super().__init__()
        self.blocks = nn.ModuleList()
        self.scales = nn.ParameterList()
        for _ in range(2):
            self.blocks.append(nn.Sequential(
                nn.Conv2d(c, c, 7, padding=3, groups=c), Permute(0, 2, 3, 1), nn.LayerNorm(c, eps=1e-6),
                nn.Linear(c, 4 * c), nn.GELU(), nn.Linear(4 * c, c), Permute(0, 3, 1, 2)))
            self.scales.append(nn.Parameter(torch.rand(c, 1, 1) + 0.5))

    def forward(self, img):
        for block, scale in zip(self.blocks, self.scales):
            img = scale * block(img) + img
        return img


class Permute(nn.Module):
    def __init__(self, *dims):
        super().__init__()
        self.dims = dims

    def forward(self, x):
        return x.permute(*self.dims)


class ConvsFewChannels(nn.Module):
    """Unit-stride convolutions over an image's few channels on maps past the small-map
    bound (the zoo's convnet and conv64 first convolutions): one GEMM over their columns
    (conv_cols.py) at odd sizes: a padded 3x3 (3 -> 5) with BatchNorm and ReLU read by a
    wider 3x3 (its padded planes stored by the GEMM), an unpadded 3x3 (3 -> 6) with a bias,
    a dilated 2x3 over 2 channels padded (1, 2), and a 5x5 over one channel (K = 25) whose
    output is added to a 1x1 of the same input as a residual."""

    def __init__(self):
        super().__init__()
        self.first = nn.Conv2d(3, 5, 3, padding=1, bias=False)
        self.bn = nn.BatchNorm2d(5)
        self.second = nn.Conv2d(5, 7, 3, padding=1)
        self.valid = nn.Conv2d(3, 6, 3)
        self.dilated = nn.Conv2d(2, 4, (2, 3), padding=(1, 2), dilation=2)
        self.five = nn.Conv2d(1, 4, 5, padding=2)
        self.point = nn.Conv2d(1, 4, 1)
        with torch.no_grad():
            self.bn.running_mean.uniform_(-1.0, 1.0)
            self.bn.running_var.uniform_(0.5, 2.0)

    def forward(self, img, img2, img3):
        y = self.second(torch.relu(self.bn(self.first(img))))
        return y, self.valid(img), self.dilated(img2), torch.relu(self.five(img3) + self.point(img3))


class ConvsRowTiles(nn.Module):
    """Maps of more than one 512-pixel tile whose padded rows have dead columns after them, which
    conv_flat.py tiles in whole rows (RowTiles): a 3x3 pair on 32x32 maps with BatchNorm and a
    residual (the zoo's pair: tiles of 15 rows of 34), a 29x37 map (13 rows of 39), a dilated
    one, and a stride-2 one over phase planes."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(4, 8, 3, padding=1)
        self.conv2 = nn.Conv2d(8, 8, 3, padding=1, bias=False)
        self.bn = nn.BatchNorm2d(8)
        self.odd = nn.Conv2d(8, 5, 3, padding=1)
        self.dilated = nn.Conv2d(8, 4, 3, padding=2, dilation=2)
        self.down = nn.Conv2d(4, 6, 3, stride=2, padding=1)
        _randomize(self)
        _randomize_bn(self.bn)

    def forward(self, img, odd, big):
        y = torch.relu(self.conv1(img))
        z = torch.relu(self.bn(self.conv2(y)) + y)
        return z, self.odd(odd), torch.relu(self.dilated(odd)), torch.relu(self.down(big))
