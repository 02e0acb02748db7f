{{- /*
Convolution (1-d and 2-d, groups >= 1) as an implicit GEMM over output rows, for the CPU's
affine fast paths: program (row tile, sample x group, model) computes C[oc, ow] for BLOCK_OC
output channels and BLOCK_P pixels of ONE output row oh. Loops run over the taps (kh, kw) and
then over blocks of BLOCK_K input channels, so the input tile [BLOCK_K, BLOCK_P] is
x[c, ih, ow*stride_w + kw*dil_w - pad_w]: contiguous along P when stride_w == 1, with the
zero padding as an interval mask on iw (at most 4 interval conditions, which the CPU backend
keeps symbolic) and a tap row in the padding skipped; no // or % per
element. The weight comes laid out as [KH*KW, OC, CG] (lowering copies it so; a 1x1 weight
is that already), so the weight tile [BLOCK_OC, BLOCK_K] of one tap has contiguous rows, and the dot W x X needs no
transpose; the accumulator is [BLOCK_OC, BLOCK_P], so the store is contiguous along P.
A 1x1 convolution with stride 1 and no padding runs with the whole image as one row.
The fused epilogue (bias, activation, eval BatchNorm, residual add, dropout) runs on the fp32
accumulator before the single store.
Data: Fn, Header, Epilogue []{Name, Load string} (loads addressed by bidx, oc_g, rp),
EpilogueArgs, ExtraArgs []string, Body []string (statements from `acc` to `y`).
*/ -}}
import triton
import triton.language as tl


# widejit kernel {{.Fn}} (template conv_rows.py)
{{- range .Header}}
# {{.}}
{{- end}}
@triton.jit
def {{.Fn}}(
    x_ptr, x_mstride, x_bstride, x_cstride,
    w_ptr, w_mstride,
    c_ptr, c_mstride, c_bstride,
    {{pyargs .EpilogueArgs}}
    H, W, OW, P, OC, OCG, KH, KW, CG, GROUPS,
    stride_h, stride_w, pad_h, pad_w, dil_h, dil_w, tiles_ow, tiles_oc, {{pyargs .ExtraArgs}}
    BLOCK_P: tl.constexpr, BLOCK_OC: tl.constexpr, BLOCK_K: tl.constexpr,
    INPUT_PRECISION: tl.constexpr,
):
    pid = tl.program_id(0)
    bg = tl.program_id(1)
    model = tl.program_id(2)
    bidx = bg // GROUPS
    grp = bg % GROUPS
    pid_oc = pid % tiles_oc
    pid_row = pid // tiles_oc
    oh = pid_row // tiles_ow
    ow = (pid_row % tiles_ow) * BLOCK_P + tl.arange(0, BLOCK_P)
    rn = pid_oc * BLOCK_OC + tl.arange(0, BLOCK_OC)
    rc = tl.arange(0, BLOCK_K)
    oc_g = grp * OCG + rn
    rp = oh * OW + ow
    iwp0 = ow * stride_w
    ih0 = oh * stride_h - pad_h
    x_base = x_ptr + model * x_mstride + bidx * x_bstride + grp * CG * x_cstride
    w_base = w_ptr + model * w_mstride + grp * OCG * CG
    ocmask = rn[:, None] < OCG
    acc = tl.zeros((BLOCK_OC, BLOCK_P), dtype=tl.float32)
    for kh in range(0, KH):
        ih = ih0 + kh * dil_h
        # a tap row in the padding contributes nothing: its channel loop runs no steps
        c_end = tl.where((ih >= 0) & (ih < H), CG, 0)
        for kw in range(0, KW):
            # iw + pad_w, so that every bound is a runtime scalar: a comparison with a literal
            # (iw >= 0) is not kept symbolic by the CPU backend, and its load is gathered
            iwp = iwp0[None, :] + kw * dil_w
            pmask = (iwp >= pad_w) & (iwp < W + pad_w) & (ow[None, :] < OW)
            for c0 in range(0, c_end, BLOCK_K):
                cs = c0 + rc
                a = tl.load(w_base + (kh * KW + kw) * OC * CG + rn[:, None] * CG + cs[None, :],
                            mask=ocmask & (cs[None, :] < CG), other=0.0)
                b = tl.load(x_base + cs[:, None] * x_cstride + (ih * W - pad_w) + iwp,
                            mask=(cs[:, None] < CG) & pmask, other=0.0)
                acc += tl.dot(a, b, input_precision=INPUT_PRECISION)
    cmask = ocmask & (ow[None, :] < OW)
{{- range .Epilogue}}
    {{.Name}} = {{.Load}}
{{- end}}
{{- range .Body}}
    {{.}}
{{- end}}
    c_offs = model * c_mstride + bidx * c_bstride + oc_g[:, None] * P + rp[None, :]
    tl.store(c_ptr + c_offs, y, mask=cmask)
