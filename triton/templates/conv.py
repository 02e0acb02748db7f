{{- /*
Convolution (1-d and 2-d; a 1-d convolution is a 2-d one with H = KH = 1) as an implicit GEMM:
for every model, sample and group, C[p, oc] = sum_k X_col[p, k] * W[oc, k], where p walks the
output pixels (OH*OW), oc the group's output channels and k = (ci, kh, kw) the group's input
channels times the kernel taps. X_col is never built: each K slice gathers its input pixels
with masks for the zero padding. One K loop runs over (channel, tap) pairs, which keeps the
dots full when a group has only a few channels. Grid axis 0 walks the BLOCK_P x BLOCK_OC
output tiles, axis 1 the (sample, group) pairs, axis 2 the model. The fused epilogue (bias, activation, eval
BatchNorm, residual add, dropout) runs on the fp32 accumulator before the single store.
Data: Fn, Header, Epilogue []{Name, Load string} (loads addressed by bidx, oc_g, rp),
EpilogueArgs, ExtraArgs []string, Body []string (statements from `acc` to `y`).
*/ -}}
import triton
import triton.language as tl


# widejit kernel {{.Fn}} (template conv.py)
{{- range .Header}}
# {{.}}
{{- end}}
@triton.jit
def {{.Fn}}(
    x_ptr, x_mstride, x_bstride, x_cstride,
    w_ptr, w_mstride,
    c_ptr, c_mstride, c_bstride,
    {{pyargs .EpilogueArgs}}
    H, W, OW, P, OCG, KTOT, KW, KHW, CG, GROUPS,
    stride_h, stride_w, pad_h, pad_w, dil_h, dil_w, tiles_oc, {{pyargs .ExtraArgs}}
    BLOCK_P: tl.constexpr, BLOCK_OC: tl.constexpr, BLOCK_K: tl.constexpr,
    INPUT_PRECISION: tl.constexpr,
):
    pid = tl.program_id(0)
    bg = tl.program_id(1)
    model = tl.program_id(2)
    bidx = bg // GROUPS
    grp = bg % GROUPS
    pid_p = pid // tiles_oc
    pid_oc = pid % tiles_oc
    rp = pid_p * BLOCK_P + tl.arange(0, BLOCK_P)
    rn = pid_oc * BLOCK_OC + tl.arange(0, BLOCK_OC)
    rk = tl.arange(0, BLOCK_K)
    oc_g = grp * OCG + rn
    # the top-left input pixel of each output pixel's receptive field
    ih0 = (rp // OW) * stride_h - pad_h
    iw0 = (rp % OW) * stride_w - pad_w
    x_base = x_ptr + model * x_mstride + bidx * x_bstride + grp * CG * x_cstride
    w_base = w_ptr + model * w_mstride + grp * OCG * KTOT
    acc = tl.zeros((BLOCK_P, BLOCK_OC), dtype=tl.float32)
    for k0 in range(0, KTOT, BLOCK_K):
        ks = k0 + rk
        ci = ks // KHW
        tap = ks % KHW
        ih = ih0[:, None] + (tap // KW)[None, :] * dil_h
        iw = iw0[:, None] + (tap % KW)[None, :] * dil_w
        xmask = (rp[:, None] < P) & (ks[None, :] < KTOT) & (ih >= 0) & (ih < H) & (iw >= 0) & (iw < W)
        a = tl.load(x_base + ci[None, :] * x_cstride + ih * W + iw, mask=xmask, other=0.0)
        b = tl.load(w_base + rn[None, :] * KTOT + ks[:, None],
                    mask=(ks[:, None] < KTOT) & (rn[None, :] < OCG), other=0.0)
        acc += tl.dot(a, b, input_precision=INPUT_PRECISION)
    cmask = (rp[:, None] < P) & (rn[None, :] < OCG)
{{- range .Epilogue}}
    {{.Name}} = {{.Load}}
{{- end}}
{{- range .Body}}
    {{.}}
{{- end}}
    c_offs = model * c_mstride + bidx * c_bstride + oc_g[None, :] * P + rp[:, None]
    tl.store(c_ptr + c_offs, y, mask=cmask)
