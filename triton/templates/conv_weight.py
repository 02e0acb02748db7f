{{- /*
Weight relayout for conv_rows.py: w[oc, c, tap] (a convolution weight [OC, CG, KH, KW], per
model) to o[tap, oc, c], so that each tap's [out, in] tile has contiguous rows; o's taps are
o_tstride apart (OC * O_CG, or more: conv_grouped.py's groups padded to its blocks). Program
(oc, -, model) moves one output channel: [BLOCK_C, BLOCK_T] tiles read along the taps,
transposed, written along the channels. Block-diagonal (conv_flat.py's merged groups, DIAG of
them a merged group): o's rows are O_CG = DIAG * CG long and output channel oc's group (of OCG
channels) lands in block (oc // OCG) % DIAG of its row; the rest stays zero (a new buffer's).
Otherwise DIAG = 1 and O_CG = CG.
Cropped: w is the live taps of a larger kernel (lowering's cropDeadTaps), a strided view: tap t
of the KHW is (t // TKW, t % TKW) of a [.., TKW]-wide window, element (oc, c, kh, kw) at
oc*w_ostride + c*w_cstride + kh*w_hstride + kw*w_wstride.
Data: Fn, Header, Cropped.
*/ -}}
import triton
import triton.language as tl


# widejit kernel {{.Fn}} (template conv_weight.py)
{{- range .Header}}
# {{.}}
{{- end}}
@triton.jit
def {{.Fn}}(
    w_ptr, w_mstride, o_ptr, o_mstride, OC, CG, KHW, o_tstride, O_CG, OCG, DIAG,{{if .Cropped}} w_ostride, w_cstride, w_hstride, w_wstride, TKW,{{end}}
    BLOCK_C: tl.constexpr, BLOCK_T: tl.constexpr,
):
    oc = tl.program_id(0)
    model = tl.program_id(2)
    rc = tl.arange(0, BLOCK_C)
    rt = tl.arange(0, BLOCK_T)
{{- if .Cropped}}
    w_base = w_ptr + model * w_mstride + oc * w_ostride
    w_taps = (rt // TKW) * w_hstride + (rt % TKW) * w_wstride
{{- else}}
    w_base = w_ptr + model * w_mstride + oc * CG * KHW
{{- end}}
    o_base = o_ptr + model * o_mstride + oc * O_CG + ((oc // OCG) % DIAG) * CG
    for c0 in range(0, CG, BLOCK_C):
        cs = c0 + rc
{{- if .Cropped}}
        t = tl.load(w_base + cs[:, None] * w_cstride + w_taps[None, :],
                    mask=(cs[:, None] < CG) & (rt[None, :] < KHW), other=0.0)
{{- else}}
        t = tl.load(w_base + cs[:, None] * KHW + rt[None, :],
                    mask=(cs[:, None] < CG) & (rt[None, :] < KHW), other=0.0)
{{- end}}
        tl.store(o_base + rt[:, None] * o_tstride + cs[None, :], tl.trans(t),
                 mask=(rt[:, None] < KHW) & (cs[None, :] < CG))
