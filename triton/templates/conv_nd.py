{{- /*
Convolution over three spatial dims (Conv3d) and transposed convolution (ConvTranspose1d/2d/3d;
1-d and 2-d run with leading sizes and kernel sizes of 1) as an implicit GEMM, as conv.py: for
every model, sample and group, C[p, oc] = sum_k X_col[p, k] * W[k, oc], where p walks the flat
output pixels (od, oh, ow), oc the group's output channels and k = (ci, kd, kh, kw) the group's
input channels times the taps. X_col is never built: each K slice gathers its input pixels.
Convolution: input coordinate i = o*stride - pad + k*dil, masked outside the input (zero
padding). Transposed (TRANSPOSED): output o receives input i when o = i*stride - pad + k*dil,
so i = (o + pad - k*dil) / stride where the division is exact; the holes of the stride-dilated
input are masked lanes, never a buffer. The weight is read in place: element (ci, oc, tap) of
group grp at grp*CG*OCG*KT + ci*w_cstride + oc*w_ocstride + tap, which covers both layouts
(convolution [OC, CG, *k]: w_cstride = KT, w_ocstride = CG*KT; transposed [IC, OCG, *k]:
w_cstride = OCG*KT, w_ocstride = KT). TAPS_OUTER loops over the taps and then over blocks of
BLOCK_K channels (the input pixels of a tap are then computed once per tile, on vectors; for
groups of many channels), else one K loop runs over (channel, tap) pairs (full dots for groups
of a few channels, with the index arithmetic on [BLOCK_P, BLOCK_K] tiles). Grid axis 0 walks the BLOCK_P x BLOCK_OC output tiles,
axis 1 the (sample, group) pairs, axis 2 the model. The fused epilogue (bias, activation, eval
BatchNorm, residual add, dropout) runs on the fp32 accumulator before the single store.
Data: Fn, Header, Epilogue []{Name, Load string} (loads addressed by bidx, oc_g, rp),
EpilogueArgs, ExtraArgs []string, Body []string (statements from `acc` to `y`).
*/ -}}
import triton
import triton.language as tl


@triton.jit
def _input_pixel(od, oh, ow, kd, kh, kw, D, H, W, stride_d, stride_h, stride_w, pad_d, pad_h, pad_w,
                 dil_d, dil_h, dil_w, TRANSPOSED: tl.constexpr):
    """The input pixel output pixel (od, oh, ow) reads through tap (kd, kh, kw), as an offset
    in its [D, H, W] plane, and whether there is one (zero padding, a hole of the transposed
    convolution's stride); the arguments broadcast, tiles or vectors alike."""
    if TRANSPOSED:
        td = od + pad_d - kd * dil_d
        th = oh + pad_h - kh * dil_h
        tw = ow + pad_w - kw * dil_w
        idd = td // stride_d
        ih = th // stride_h
        iw = tw // stride_w
        # a negative t is no input (// rounds toward zero there, so test t, not i)
        ok = (td >= 0) & (th >= 0) & (tw >= 0) & (td % stride_d == 0) & (th % stride_h == 0) & (tw % stride_w == 0)
    else:
        idd = od * stride_d - pad_d + kd * dil_d
        ih = oh * stride_h - pad_h + kh * dil_h
        iw = ow * stride_w - pad_w + kw * dil_w
        ok = (idd >= 0) & (ih >= 0) & (iw >= 0)
    return (idd * H + ih) * W + iw, ok & (idd < D) & (ih < H) & (iw < W)


# widejit kernel {{.Fn}} (template conv_nd.py)
{{- range .Header}}
# {{.}}
{{- end}}
@triton.jit
def {{.Fn}}(
    x_ptr, x_mstride, x_bstride, x_cstride,
    w_ptr, w_mstride,
    c_ptr, c_mstride, c_bstride,
    {{pyargs .EpilogueArgs}}
    D, H, W, OH, OW, P, OCG, KTOT, KT, KH, KW, KHW, CG, GROUPS, w_cstride, w_ocstride,
    stride_d, stride_h, stride_w, pad_d, pad_h, pad_w, dil_d, dil_h, dil_w, tiles_oc, {{pyargs .ExtraArgs}}
    BLOCK_P: tl.constexpr, BLOCK_OC: tl.constexpr, BLOCK_K: tl.constexpr, TRANSPOSED: tl.constexpr,
    TAPS_OUTER: tl.constexpr,
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
    od = rp // (OH * OW)
    oh = (rp // OW) % OH
    ow = rp % OW
    x_base = x_ptr + model * x_mstride + bidx * x_bstride + grp * CG * x_cstride
    w_base = w_ptr + model * w_mstride + grp * CG * OCG * KT
    acc = tl.zeros((BLOCK_P, BLOCK_OC), dtype=tl.float32)
    if TAPS_OUTER:
        # taps outside, blocks of BLOCK_K channels inside: a tap's input pixels are computed
        # once on [BLOCK_P] vectors and the channel loop only adds channel offsets; a tap no
        # pixel of the tile receives (a transposed convolution's other phases) runs no steps
        for tap in range(0, KT):
            poff, pmask = _input_pixel(od, oh, ow, tap // KHW, (tap // KW) % KH, tap % KW,
                                       D, H, W, stride_d, stride_h, stride_w, pad_d, pad_h, pad_w, dil_d, dil_h, dil_w, TRANSPOSED)
            pmask = pmask & (rp < P)
            c_end = tl.where(tl.max(pmask.to(tl.int32), axis=0) > 0, CG, 0)
            for c0 in range(0, c_end, BLOCK_K):
                cs = c0 + rk
                a = tl.load(x_base + cs[None, :] * x_cstride + poff[:, None],
                            mask=pmask[:, None] & (cs[None, :] < CG), other=0.0)
                b = tl.load(w_base + cs[:, None] * w_cstride + rn[None, :] * w_ocstride + tap,
                            mask=(cs[:, None] < CG) & (rn[None, :] < OCG), other=0.0)
                acc += tl.dot(a, b, input_precision=INPUT_PRECISION)
    else:
        # one K loop over (channel, tap) pairs, which keeps the dots full when a group has
        # only a few channels (depthwise, an RGB input)
        for k0 in range(0, KTOT, BLOCK_K):
            ks = k0 + rk
            ci = ks // KT
            tap = ks % KT
            poff, ok = _input_pixel(od[:, None], oh[:, None], ow[:, None],
                                    (tap // KHW)[None, :], ((tap // KW) % KH)[None, :], (tap % KW)[None, :],
                                    D, H, W, stride_d, stride_h, stride_w, pad_d, pad_h, pad_w, dil_d, dil_h, dil_w, TRANSPOSED)
            xmask = ok & (rp[:, None] < P) & (ks[None, :] < KTOT)
            a = tl.load(x_base + ci[None, :] * x_cstride + poff, mask=xmask, other=0.0)
            b = tl.load(w_base + ci[:, None] * w_cstride + rn[None, :] * w_ocstride + tap[:, None],
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
