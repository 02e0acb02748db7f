{{- /*
The columns of a convolution over small maps (im2col), for conv_flat.py's Folded form: the
input x[B, C, H, W] (per model, dense) becomes o[C*KH*KW, B*OH*OW] (rows QC apart), row
(channel, kh, kw) as in the weight's own [OC, C, KH, KW] layout, column (sample, oh, ow), with
zeros where a tap falls on the padding. One GEMM over every sample's pixels then reads each
weight once a launch (a sample a program would stream the weight once per sample), and a
strided convolution needs no phase planes: the stride is in these loads. Program (channel
tile, sample, model): per tap and output row one [BLOCK_C, BLOCK_W] tile, affine in both
(channels H*W apart, columns stride_w apart), stored as contiguous columns.
Data: Fn, Header.
*/ -}}
import triton
import triton.language as tl


# widejit kernel {{.Fn}} (template conv_cols.py)
{{- range .Header}}
# {{.}}
{{- end}}
@triton.jit
def {{.Fn}}(
    x_ptr, x_mstride, o_ptr, o_mstride, C, H, W, OH, OW, KW, KHW, QC,
    stride_h, stride_w, pad_h, pad_w, dil_h, dil_w,
    BLOCK_C: tl.constexpr, BLOCK_W: tl.constexpr,
):
    pid = tl.program_id(0)
    b = tl.program_id(1)
    model = tl.program_id(2)
    rc = pid * BLOCK_C + tl.arange(0, BLOCK_C)
    ow = tl.arange(0, BLOCK_W)
    live = (rc[:, None] < C) & (ow[None, :] < OW)
    x_base = x_ptr + model * x_mstride + (b * C + rc[:, None]) * (H * W)
    o_base = o_ptr + model * o_mstride + rc[:, None] * (KHW * QC) + b * (OH * OW) + ow[None, :]
    for tap in range(0, KHW):
        iw = ow * stride_w + ((tap % KW) * dil_w - pad_w)
        cols = live & (iw[None, :] >= 0) & (iw[None, :] < W)
        for oh in range(0, OH):
            ih = oh * stride_h + ((tap // KW) * dil_h - pad_h)
            # a row on the padding reads no column: its tile is all zeros
            w_end = tl.where((ih >= 0) & (ih < H), W, 0)
            v = tl.load(x_base + ih * W + iw[None, :], mask=cols & (iw[None, :] < w_end), other=0.0)
            tl.store(o_base + tap * QC + oh * OW, v, mask=live)
