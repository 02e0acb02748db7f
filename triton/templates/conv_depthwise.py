{{- /*
Depthwise convolution (groups == in_channels; each output channel oc reads the single input
channel oc // MULT, MULT = out_channels / in_channels) as a direct kernel: no GEMM, so no
output-channel tile is wasted on a group of 1 or 2 channels. Program (tile, sample, model)
holds BLOCK_P output pixels x BLOCK_C output channels and walks the KH x KW taps with masks
for the zero padding. A 1-d convolution runs with H = KH = 1. The fused epilogue runs on the
fp32 accumulator before the single store, as in conv.py.
Data: Fn, Header, Epilogue []{Name, Load string} (loads addressed by bidx, oc_g, rp),
EpilogueArgs, ExtraArgs []string, Body []string (statements from `acc` to `y`).
*/ -}}
import triton
import triton.language as tl


# widejit kernel {{.Fn}} (template conv_depthwise.py)
{{- range .Header}}
# {{.}}
{{- end}}
@triton.jit
def {{.Fn}}(
    x_ptr, x_mstride, x_bstride, x_cstride,
    w_ptr, w_mstride,
    c_ptr, c_mstride, c_bstride,
    {{pyargs .EpilogueArgs}}
    H, W, OW, P, OC, MULT, KH, KW,
    stride_h, stride_w, pad_h, pad_w, dil_h, dil_w, tiles_c, {{pyargs .ExtraArgs}}
    BLOCK_P: tl.constexpr, BLOCK_C: tl.constexpr,
):
    pid = tl.program_id(0)
    bidx = tl.program_id(1)
    model = tl.program_id(2)
    pid_p = pid // tiles_c
    pid_c = pid % tiles_c
    rp = pid_p * BLOCK_P + tl.arange(0, BLOCK_P)
    rn = pid_c * BLOCK_C + tl.arange(0, BLOCK_C)
    oc_g = rn
    ih0 = (rp // OW) * stride_h - pad_h
    iw0 = (rp % OW) * stride_w - pad_w
    x_base = x_ptr + model * x_mstride + bidx * x_bstride + (oc_g // MULT)[None, :] * x_cstride
    w_base = w_ptr + model * w_mstride + oc_g * (KH * KW)
    cmask = (rp[:, None] < P) & (rn[None, :] < OC)
    acc = tl.zeros((BLOCK_P, BLOCK_C), dtype=tl.float32)
    for kh in range(0, KH):
        ih = ih0 + kh * dil_h
        for kw in range(0, KW):
            iw = iw0 + kw * dil_w
            pmask = (ih >= 0) & (ih < H) & (iw >= 0) & (iw < W)
            xv = tl.load(x_base + (ih * W + iw)[:, None], mask=cmask & pmask[:, None], other=0.0)
            wv = tl.load(w_base + kh * KW + kw, mask=rn < OC, other=0.0)
            acc += xv.to(tl.float32) * wv.to(tl.float32)[None, :]
{{- range .Epilogue}}
    {{.Name}} = {{.Load}}
{{- end}}
{{- range .Body}}
    {{.}}
{{- end}}
    c_offs = model * c_mstride + bidx * c_bstride + oc_g[None, :] * P + rp[:, None]
    tl.store(c_ptr + c_offs, y, mask=cmask)
