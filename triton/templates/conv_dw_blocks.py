{{- /*
Depthwise convolution over channel blocks, for the CPU (oneDNN's nChw16c idea): the input comes
zero-padded (conv_pad.py's Blocks) as [sample, channel block, (phases,) Hp, Wp, BLOCK_C], the
BLOCK_C channels of a block last (output channel c's input, channel c // MULT, is copied to
block c // BLOCK_C, so a multiplier costs nothing here). Numbering pixels q = oh*Wp + ow over
the padded width as conv_flat.py does, tap (kh, kw) is one flat shift of q, and the tile
[BLOCK_P pixels, BLOCK_C channels] at that shift is one contiguous block of the input, which
the CPU backend reads in place: per tap, that block times the tap's weight per channel
(broadcast over the pixels, the weight relaid once as [tap, channel] so that a tap's weights
are one contiguous row), accumulated; no per-channel row is copied and every lane is a
channel. The accumulator is transposed once for the epilogue and the stores. Strided: the input comes as conv_pad.py's phase planes, as for conv_flat.py. Pixels
past Q in the last tile read the buffer's slack into accumulator rows that are never stored,
as do the Wp - OW columns past each output row.
Program (pixel tile x channel block, sample, model); the fused epilogue (bias, eval BatchNorm,
activation, residual add) runs on the fp32 accumulator [BLOCK_C, BLOCK_P] before the stores
to the dense output.
Data: Fn, Header, Epilogue []{Name, Load string} (loads addressed by bidx, oc_g, rp),
EpilogueArgs, ExtraArgs []string, Body []string (statements from `acc` to `y`), Strided,
HalfProducts (fp16/bf16 data, multiplied in fp32).
*/ -}}
import triton
import triton.language as tl


# widejit kernel {{.Fn}} (template conv_dw_blocks.py)
{{- range .Header}}
# {{.}}
{{- end}}
@triton.jit
def {{.Fn}}(
    x_ptr, x_mstride, x_bstride, x_kstride,
    w_ptr, w_mstride,
    c_ptr, c_mstride, c_bstride,
    {{pyargs .EpilogueArgs}}
    Wp, OW, OH, Q, P, OC, KW, KHW, dil_h, dil_w, tiles_c,{{if .Strided}} stride_h, stride_w, PHW, PLANE,{{end}} {{pyargs .ExtraArgs}}
    BLOCK_P: tl.constexpr, BLOCK_C: tl.constexpr,
):
    pid = tl.program_id(0)
    bidx = tl.program_id(1)
    model = tl.program_id(2)
    cb = pid % tiles_c
    q = (pid // tiles_c) * BLOCK_P + tl.arange(0, BLOCK_P)
    rc = tl.arange(0, BLOCK_C)
    rn = cb * BLOCK_C + rc
    oc_g = rn
    x_tile = x_ptr + model * x_mstride + bidx * x_bstride + cb * x_kstride + q[:, None] * BLOCK_C + rc[None, :]
    # the weight comes as [tap, channel] (conv_weight.py): a tap's channels are one contiguous row
    w_row = w_ptr + model * w_mstride + rn
    acc = tl.zeros((BLOCK_P, BLOCK_C), dtype=tl.float32)
    for kt in range(0, KHW):
{{- if .Strided}}
        th = (kt // KW) * dil_h
        tw = (kt % KW) * dil_w
        toff = ((th % stride_h) * PHW + tw % stride_w) * PLANE + (th // stride_h) * Wp + tw // stride_w
{{- else}}
        toff = (kt // KW) * (dil_h * Wp) + (kt % KW) * dil_w
{{- end}}
        wv = tl.load(w_row + kt * OC, mask=rn < OC, other=0.0)
        xv = tl.load(x_tile + toff * BLOCK_C)
{{- if .HalfProducts}}
        # fp16/bf16 data: a product of two half values would be rounded to their dtype
        acc += xv.to(tl.float32) * wv.to(tl.float32)[None, :]
{{- else}}
        acc += xv * wv[None, :]
{{- end}}
    # channels on rows from here, as conv_flat.py's accumulator: the stores below move runs of
    # output pixels (one per channel and output row) where [pixel, channel] would scatter
    acc = tl.trans(acc)
    ow = q % Wp
    rp = (q // Wp) * OW + ow
    cmask = (rn[:, None] < OC) & (ow[None, :] < OW) & (q[None, :] < Q)
{{- range .Epilogue}}
    {{.Name}} = {{.Load}}
{{- end}}
{{- range .Body}}
    {{.}}
{{- end}}
    # one output row at a time: pixels oh*Wp .. oh*Wp + OW - 1 of q are output row oh
    c_base = c_ptr + model * c_mstride + bidx * c_bstride + oc_g[:, None] * P
    q0 = (pid // tiles_c) * BLOCK_P
    qs = q0 + tl.arange(0, BLOCK_P)
    for oh in range(q0 // Wp, min((q0 + BLOCK_P - 1) // Wp + 1, OH)):
        lo = oh * Wp
        tl.store(c_base + (oh * OW - lo) + qs[None, :], y, mask=(rn[:, None] < OC) & (qs[None, :] >= lo) & (qs[None, :] < lo + OW))
