{{- /*
Grouped convolution with narrow groups (RegNet's group width 8), for the CPU: conv_dw_blocks.py's
channel blocks with a group's channels one block apart. The input comes zero-padded
(conv_pad.py's Blocks, Grouped) as [sample, group block, in-group channel ci, (phases,) Hp, Wp,
BLOCK_C]: for one ci, the same channel of BLOCK_C groups side by side. With pixels q = oh*Wp + ow
over the padded width, tap (kh, kw) of channel ci is one contiguous [BLOCK_P pixels, BLOCK_C
groups] tile, read in place, and in-group output channel co of every group is
acc[q, group] += x[q + shift, ci, group] * w[co, ci, tap, group] over the taps x CG steps: an
element-wise multiply-add whose lanes are groups, so no product ever mixes two groups (a
block-diagonal dot's zero weights would turn another group's inf into NaN). The weight comes
relaid as [OCG, CG, KH*KW, GP] (conv_weight.py, once; GP: the groups padded to whole blocks,
zeros past GROUPS), so a step's weights are one contiguous row, loaded unmasked.
Pixels past Q read the buffer's slack into accumulator rows that are never stored, as do the
Wp - OW columns past each output row.
Program (pixel tile x group block x co, sample, model); the fused epilogue (bias, eval
BatchNorm, activation, residual add) runs on the transposed fp32 accumulator [BLOCK_C, BLOCK_P]
(output channel oc_g = group * OCG + co) before the stores to the dense output.
Data: Fn, Header, Epilogue []{Name, Load string} (loads addressed by bidx, oc_g, rp),
EpilogueArgs, ExtraArgs []string, Body []string (statements from `acc` to `y`), Strided,
HalfProducts (fp16/bf16 data, multiplied in fp32). BLOCK_C is the groups a block (its lanes).
*/ -}}
import triton
import triton.language as tl


# widejit kernel {{.Fn}} (template conv_grouped.py)
{{- range .Header}}
# {{.}}
{{- end}}
@triton.jit
def {{.Fn}}(
    x_ptr, x_mstride, x_bstride, x_kstride,
    w_ptr, w_mstride,
    c_ptr, c_mstride, c_bstride,
    {{pyargs .EpilogueArgs}}
    Wp, OW, OH, Q, P, GROUPS, GP, CG, OCG, KH, KW, dil_h, dil_w, tiles_g,{{if .Strided}} stride_h, stride_w, PHW, PLANE,{{end}} {{pyargs .ExtraArgs}}
    BLOCK_P: tl.constexpr, BLOCK_C: tl.constexpr,
):
    pid = tl.program_id(0)
    bidx = tl.program_id(1)
    model = tl.program_id(2)
    gb = pid % tiles_g
    q = (pid // tiles_g) * BLOCK_P + tl.arange(0, BLOCK_P)
    rg = tl.arange(0, BLOCK_C)
    rn = gb * BLOCK_C + rg
    x_tile = x_ptr + model * x_mstride + bidx * x_bstride + gb * CG * x_kstride + q[:, None] * BLOCK_C + rg[None, :]
    w_row = w_ptr + model * w_mstride + rn
    w_cstride = KH * KW * GP
    w_ostride = CG * w_cstride
{{- range .Outs}}
    acc{{.}} = tl.zeros((BLOCK_P, BLOCK_C), dtype=tl.float32)
{{- end}}
    # taps outer, channels inner: each input tile loaded once for every output channel of the
    # group (an accumulator each, unrolled), its pointers one product and sum from the tap's
    for kh in range(0, KH):
        for kw in range(0, KW):
{{- if .Strided}}
            th = kh * dil_h
            tw = kw * dil_w
            x_k = x_tile + (((th % stride_h) * PHW + tw % stride_w) * PLANE + (th // stride_h) * Wp + tw // stride_w) * BLOCK_C
{{- else}}
            x_k = x_tile + (kh * (dil_h * Wp) + kw * dil_w) * BLOCK_C
{{- end}}
            w_k = w_row + (kh * KW + kw) * GP
            for ci in range(0, CG):
                xv = tl.load(x_k + ci * x_kstride)
{{- if .HalfProducts}}
                # fp16/bf16 data: a product of two half values would be rounded to their dtype
                xv = xv.to(tl.float32)
{{- end}}
                w_c = w_k + ci * w_cstride
{{- range .Outs}}
                wv = tl.load(w_c + {{.}} * w_ostride)
                acc{{.}} += xv * wv{{if $.HalfProducts}}.to(tl.float32){{end}}[None, :]
{{- end}}
    ow = q % Wp
    rp = (q // Wp) * OW + ow
    cmask = (rn[:, None] < GROUPS) & (ow[None, :] < OW) & (q[None, :] < Q)
    c_tile = c_ptr + model * c_mstride + bidx * c_bstride
    q0 = (pid // tiles_g) * BLOCK_P
    qs = q0 + tl.arange(0, BLOCK_P)
{{- range .Outs}}
    # output channel {{.}} of each group: channels on rows from here, as conv_dw_blocks.py's
    # accumulator, so the stores move runs of output pixels (one per channel and output row)
    acc = tl.trans(acc{{.}})
    oc_g = rn * OCG + {{.}}
{{- range $.Epilogue}}
    {{.Name}} = {{.Load}}
{{- end}}
{{- range $.Body}}
    {{.}}
{{- end}}
    # one output row at a time: pixels oh*Wp .. oh*Wp + OW - 1 of q are output row oh
    c_base = c_tile + oc_g[:, None] * P
    for oh in range(q0 // Wp, min((q0 + BLOCK_P - 1) // Wp + 1, OH)):
        lo = oh * Wp
        tl.store(c_base + (oh * OW - lo) + qs[None, :], y, mask=(rn[:, None] < GROUPS) & (qs[None, :] >= lo) & (qs[None, :] < lo + OW))
{{- end}}
