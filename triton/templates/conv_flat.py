{{- /*
Convolution with unit strides (1-d and 2-d, groups >= 1, any padding and dilation) as an
implicit GEMM over flat padded pixels, for the CPU: the input comes zero-padded
(conv_pad.py) as planes [Hp, Wp], so output pixel (oh, ow) reads input (oh + kh*dil_h,
ow + kw*dil_w) of its plane and, numbering pixels q = oh*Wp + ow over the padded width, each
k = (channel, kh, kw) of the reduction is one flat shift of q: the input tile [BLOCK_K,
BLOCK_P] has contiguous rows BLOCK_P long at per-row offsets, with no masks but the reduction's
unless QMask: the pixels of the last tile past Q read the next planes or the buffer's slack,
finite or not, into accumulator columns that are never stored, so the tile stays whole (a
partial one makes tl.dot check the weight tile for infinities at every step, which costs more
than a few dead columns); QMask masks them when they are more (lowering's flatQMask). The Wp - OW columns past each output row but the last (Q = (OH-1)*Wp +
OW ends at the last output pixel) are computed from the next row's border and dropped at the
store. The weight [OC, CG*KH*KW] is read as it lies, rows
contiguous; with TapMajor (groups of many channels) the reduction runs tap by tap over the
weight relaid as [KH*KW, OC, CG] (conv_weight.py), w_tstride = OC*CG apart, so that every
operand tile of tl.dot is affine and the CPU backend reads it in place (without EvenK, channel
blocks outside and taps inside: the index tiles are built once per block). Strided: the input
comes as stride_h x stride_w phase planes [Hp, Wp] per channel (PHH x PHW of them, PLANE
elements each, conv_pad.py's phases), padded pixel (r, c) at (r // stride_h, c // stride_w) of
phase (r % stride_h, c % stride_w), so tap (kh, kw) is again one flat shift of q within one
phase plane, and the strided convolution runs as a unit-stride one. Depthwise: no dot, each
output channel's taps multiply-add its one input plane (channels on rows, across all groups).
Program (pixel tile x channel tile, sample x group, model); the fused epilogue
(bias, activation, eval BatchNorm, residual add, dropout) runs on the fp32 accumulator
[BLOCK_OC, BLOCK_P] before the single store.
Data: Fn, Header, Epilogue []{Name, Load string} (loads addressed by bidx, oc_g, rp),
EpilogueArgs, ExtraArgs []string, Body []string (statements from `acc` to `y`), TapMajor, PaddedStore,
EvenK, Strided, Depthwise, Pointwise, DenseStore, QMask, HalfProducts (depthwise on fp16/bf16 data), CopyStore and
CopyPaddedStore (with p_ptr...: a zero-padded copy stored too, as PaddedStore or row by row), Scale,
ScaleInput (with s_ptr...: scale input channel c of sample bidx by s[bidx, c], applied to the
weight tile's column c), Folded (with QS, NB: the samples folded into the pixels), Merged (TapMajor,
with DIAG: each group is DIAG narrow ones over a block-diagonal weight, conv_weight.py's).
PhaseStore (Pointwise, with o_sh...: the output stored as the zero-padded stride phase planes a
strided next convolution reads, conv_pad.py's phases): the pixel axis runs (column residue pc,
tile) over Q = OH*WS pixels a residue (W = o_sw*WS), pixel q of residue pc being input pixel
o_sw*q + pc (lanes o_sw apart), so that each output row's pixels of a residue are one
contiguous run of one phase plane's row.
BlockStore (Pointwise, with o_bc): the output stored as a depthwise next convolution's channel
blocks (conv_dw_blocks.py, conv_pad.py's Blocks: [sample, block, (phases,) Hp, Wp, o_bc], blocks
c_cstride apart, rows c_rstride pixels, the interior at pixel c_off), zero-padded (as its phases
with PhaseStore): the tile transposed, [pixel, channel], each output row of a block one run.
Folded (small maps): x is the convolution's columns (conv_cols.py: rows k = (channel, kh, kw),
x_cstride apart; column q = flat padded pixel q % QS of sample q // QS, QS = (OH-1)*Wp + OW),
run as one pointwise GEMM (TapMajor, KHW = 1, CG = KTOT) with the grid's sample axis 1, so
each weight tile is read once for every sample (NB of them, Q = NB*QS pixels); the epilogue
addresses sample qb = q // QS per column, and the store goes row by row of each sample.
FoldedPlanes (Folded, grouped convolutions on small maps): x is the zero-padded planes laid out
[channel, sample], a sample's plane QS = Hp*Wp past the previous one, so the taps stay flat
shifts of q (tap-major; the grid's second axis the groups alone: a program per group); the rows
of a plane past the output (q % QS beyond (OH-1)*Wp + OW) are masked as the dropped columns are.
OneBlock (TapMajor, EvenK, grouped convolutions whose group's channels are one block: BLOCK_K
== CG; no Scale): the taps' loop alone (TAPS = KH*KW, TAPS_W = KW, constexprs), unrolled with StaticTaps.
RowTiles (with TILE_Q, a whole number of padded rows <= BLOCK_P): the pixel tiles start
TILE_Q apart, each on a row, the columns past its rows masked from the stores as the next
tile's (lowering's rowTileQ), so that the CPU backend can cut the rows into strips of live
columns.
SamplesInner (Pointwise, one pixel tile a sample): the grid is (sample x group, channel tile,
model), so that the programs reading one weight tile follow one another (a worker takes
consecutive programs) and all but the first find it in cache.
*/ -}}
import triton
import triton.language as tl


# widejit kernel {{.Fn}} (template conv_flat.py)
{{- range .Header}}
# {{.}}
{{- end}}
@triton.jit
def {{.Fn}}(
    x_ptr, x_mstride, x_bstride, x_cstride,
    w_ptr, w_mstride,{{if .Scale}} s_ptr, s_mstride, s_bstride, s_cstride,{{end}}
    c_ptr, c_mstride, c_bstride, c_cstride, c_rstride, c_off,{{if .CopyStore}} p_ptr, p_mstride, p_bstride, p_cstride, p_rstride, p_off,{{end}}
    {{pyargs .EpilogueArgs}}
    Wp, OW, OH, Q, P, OCG, KTOT, KW, KHW, CG, GROUPS, dil_h, dil_w, w_tstride, tiles_oc,{{if .Strided}} stride_h, stride_w, PHW, PLANE,{{end}}{{if .Depthwise}} MULT,{{end}}{{if .Folded}} QS, NB,{{end}}{{if .Merged}} DIAG,{{end}}{{if .PhaseStore}} WS, o_sh, o_sw, o_pad_h, o_pad_w, o_phw, o_hp, o_wp, o_plane,{{end}}{{if .BlockStore}} o_bc,{{end}}{{if .RowTiles}} TILE_Q,{{end}} {{pyargs .ExtraArgs}}
    BLOCK_P: tl.constexpr, BLOCK_OC: tl.constexpr, BLOCK_K: tl.constexpr,{{if .OneBlock}} TAPS: tl.constexpr, TAPS_W: tl.constexpr,{{end}}
    INPUT_PRECISION: tl.constexpr,
):
{{- if .SamplesInner}}
    pid = tl.program_id(1)
    bg = tl.program_id(0)
{{- else}}
    pid = tl.program_id(0)
    bg = tl.program_id(1)
{{- end}}
    model = tl.program_id(2)
    bidx = bg // GROUPS
    grp = bg % GROUPS
    pid_oc = pid % tiles_oc
{{- if .PhaseStore}}
    tiles_q = (Q + BLOCK_P - 1) // BLOCK_P
    pc = (pid // tiles_oc) // tiles_q
    q0 = ((pid // tiles_oc) % tiles_q) * BLOCK_P
{{- else if .RowTiles}}
    # (tiles of whole padded rows: the tile's columns past them are the next tile's)
    q0 = (pid // tiles_oc) * TILE_Q
    q_end = min(Q, q0 + TILE_Q)
{{- else}}
    q0 = (pid // tiles_oc) * BLOCK_P
{{- end}}
    q = q0 + tl.arange(0, BLOCK_P)
    rn = pid_oc * BLOCK_OC + tl.arange(0, BLOCK_OC)
    rk = tl.arange(0, BLOCK_K)
    oc_g = grp * OCG + rn
    x_base = x_ptr + model * x_mstride + bidx * x_bstride + grp * CG * x_cstride{{if .PhaseStore}} + pc{{end}}
    ocmask = rn[:, None] < OCG
    acc = tl.zeros((BLOCK_OC, BLOCK_P), dtype=tl.float32)
    # the store's mask before the loop (the row-by-row stores and them with their rows): the
    # CPU backend then knows that the accumulator's rows past OCG and columns past Q are never
    # seen, so its dots skip the operands' infinity scan and the epilogue covers the live
    # rectangle alone (jit/cpu observed.go)
    smask = ocmask & (q[None, :] < {{if .RowTiles}}q_end{{else}}Q{{end}})
{{- if .BlockStore}}
    # (the same of the transposed tile the channel-block stores write)
    smask_t = (q[:, None] < Q) & (rn[None, :] < OCG)
{{- end}}
{{- if .Scale}}
    # the input channels' scale (squeeze-excite's x * s, s per sample and channel): as
    # sum_c W[o, c] (x[c, p] s[c]) = sum_c (W[o, c] s[c]) x[c, p], it scales the weight
    # tile's columns, or with ScaleInput the input tile's rows: whichever tile is smaller
    s_base = s_ptr + model * s_mstride + bidx * s_bstride + grp * CG * s_cstride
{{- end}}
{{- if .Depthwise}}
    # depthwise (run with GROUPS = 1, OCG = every output channel, CG = 1): output channel rn
    # reads input plane rn // MULT alone, so per tap the tile is one shift of those planes
    # (rows x_cstride apart, read in place) times the tap's weight per channel; no dot
    x_rows = x_base + (rn // MULT)[:, None] * x_cstride
    w_rows = w_ptr + model * w_mstride + rn[:, None] * KHW
    for kt in range(0, KHW):
{{- if .Strided}}
        th = (kt // KW) * dil_h
        tw = (kt % KW) * dil_w
        toff = ((th % stride_h) * PHW + tw % stride_w) * PLANE + (th // stride_h) * Wp + tw // stride_w
{{- else}}
        toff = (kt // KW) * (dil_h * Wp) + (kt % KW) * dil_w
{{- end}}
        a = tl.load(w_rows + kt, mask=ocmask, other=0.0)
        b = tl.load(x_rows + toff + q[None, :], mask=ocmask{{if .QMask}} & (q[None, :] < Q){{end}}, other=0.0)
{{- if .HalfProducts}}
        # fp16/bf16 data: a product of two half values would be rounded to their dtype
        acc += a.to(tl.float32) * b.to(tl.float32)
{{- else}}
        acc += a * b
{{- end}}
{{- else if .Pointwise}}
    # pointwise (1x1, unit stride, no padding, the input's own planes): one loop over the
    # channels, no taps, so that the dot's accumulator is carried by that loop alone and the
    # CPU backend sees that the store's mask (smask, before the loop) bounds what is seen of it
    w_base = w_ptr + model * w_mstride + grp * OCG * CG
    for c0 in range(0, CG, BLOCK_K):
        cs = c0 + rk
{{- if .EvenK}}
        a = tl.load(w_base + rn[:, None] * CG + cs[None, :], mask=ocmask, other=0.0)
        b = tl.load(x_base + cs[:, None] * x_cstride + {{if .PhaseStore}}q[None, :] * o_sw{{else}}q[None, :]{{end}}, mask=q[None, :] < Q, other=0.0)
{{- else}}
        a = tl.load(w_base + rn[:, None] * CG + cs[None, :], mask=ocmask & (cs[None, :] < CG), other=0.0)
        b = tl.load(x_base + cs[:, None] * x_cstride + {{if .PhaseStore}}q[None, :] * o_sw{{else}}q[None, :]{{end}}, mask=(cs[:, None] < CG) & (q[None, :] < Q), other=0.0)
{{- end}}
{{- if .ScaleInput}}
        b = b * tl.load(s_base + cs * s_cstride, mask=cs < CG, other=0.0)[:, None]
{{- else if .Scale}}
        a = a * tl.load(s_base + cs * s_cstride, mask=cs < CG, other=0.0)[None, :]
{{- end}}
        acc += tl.dot(a, b, input_precision=INPUT_PRECISION)
{{- else if .TapMajor}}
    # tap-major reduction: per tap one shift of the whole tile, channels along k; both tiles
    # are affine (weight [tap, OC, CG] rows, input planes x_cstride apart), read in place
    w_base = w_ptr + model * w_mstride + grp * OCG * CG
{{- if not .EvenK}}
    # a k mask (groups of fewer channels than BLOCK_K): channel blocks outside, taps inside,
    # so that the tiles' pointers and masks (and the input scale) are built once per channel
    # block and each tap moves the pointers by a scalar; the CPU backend then runs a few steps
    # a tap around the dot instead of rebuilding every index tile (most of the time of a
    # grouped convolution's small programs)
    for c0 in range(0, CG, BLOCK_K):
        cs = c0 + rk
        a_ptrs = w_base + rn[:, None] * CG + cs[None, :]
        a_mask = ocmask & (cs[None, :] < CG)
        b_ptrs = x_base + cs[:, None] * x_cstride + q[None, :]
        b_mask = (cs[:, None] < CG){{if .QMask}} & (q[None, :] < Q){{end}}
{{- if .ScaleInput}}
        scale = tl.load(s_base + cs * s_cstride, mask=cs < CG, other=0.0)[:, None]
{{- else if .Scale}}
        scale = tl.load(s_base + cs * s_cstride, mask=cs < CG, other=0.0)[None, :]
{{- end}}
        for tap in range(0, KHW):
{{- if .Strided}}
            th = (tap // KW) * dil_h
            tw = (tap % KW) * dil_w
            toff = ((th % stride_h) * PHW + tw % stride_w) * PLANE + (th // stride_h) * Wp + tw // stride_w
{{- else}}
            toff = (tap // KW) * (dil_h * Wp) + (tap % KW) * dil_w
{{- end}}
            a = tl.load(a_ptrs + tap * w_tstride, mask=a_mask, other=0.0)
            b = tl.load(b_ptrs + toff, mask=b_mask, other=0.0)
{{- if .ScaleInput}}
            b = b * scale
{{- else if .Scale}}
            a = a * scale
{{- end}}
            acc += tl.dot(a, b, input_precision=INPUT_PRECISION)
{{- else}}
    # BLOCK_K divides the channels: no k mask, and the pointer tiles are built once, each step
    # moving them by a scalar (the loop body is a few steps around the dot)
    a_ptrs = w_base + rn[:, None] * CG + rk[None, :]
    b_ptrs = x_base + rk[:, None] * x_cstride + q[None, :]
{{- if .OneBlock}}
    # a group's channels are one block: no channel loop, a tap is its offset, two loads and
    # the dot; unrolled (StaticTaps) where the tile has no dead rows or columns to skip (the
    # CPU backend's skipping needs the loop), so that the offsets are constants too
    for t in {{if .StaticTaps}}tl.static_range{{else}}range{{end}}(0, TAPS):
{{- if .Strided}}
        th = (t // TAPS_W) * dil_h
        tw = (t % TAPS_W) * dil_w
        toff = ((th % stride_h) * PHW + tw % stride_w) * PLANE + (th // stride_h) * Wp + tw // stride_w
{{- else}}
        toff = (t // TAPS_W) * (dil_h * Wp) + (t % TAPS_W) * dil_w
{{- end}}
        a = tl.load(a_ptrs + t * w_tstride, mask=ocmask, other=0.0)
        b = tl.load(b_ptrs + toff{{if .QMask}}, mask=q[None, :] < Q, other=0.0{{end}})
        acc += tl.dot(a, b, input_precision=INPUT_PRECISION)
{{- else}}
    for tap in range(0, KHW):
{{- if .Strided}}
        th = (tap // KW) * dil_h
        tw = (tap % KW) * dil_w
        toff = ((th % stride_h) * PHW + tw % stride_w) * PLANE + (th // stride_h) * Wp + tw // stride_w
{{- else}}
        toff = (tap // KW) * (dil_h * Wp) + (tap % KW) * dil_w
{{- end}}
        for c0 in range(0, CG, BLOCK_K):
            a = tl.load(a_ptrs + (tap * w_tstride + c0), mask=ocmask, other=0.0)
            b = tl.load(b_ptrs + (toff + c0 * x_cstride){{if .QMask}}, mask=q[None, :] < Q, other=0.0{{end}})
{{- if .ScaleInput}}
            b = b * tl.load(s_base + (c0 + rk) * s_cstride)[:, None]
{{- else if .Scale}}
            a = a * tl.load(s_base + (c0 + rk) * s_cstride)[None, :]
{{- end}}
            acc += tl.dot(a, b, input_precision=INPUT_PRECISION)
{{- end}}
{{- end}}
{{- else}}
    w_base = w_ptr + model * w_mstride + grp * OCG * KTOT
    for k0 in range(0, KTOT, BLOCK_K):
        ks = k0 + rk
        a = tl.load(w_base + rn[:, None] * KTOT + ks[None, :], mask=ocmask & (ks[None, :] < KTOT), other=0.0)
        bmask = (ks[:, None] < KTOT){{if .QMask}} & (q[None, :] < Q){{end}}
        # k = (channel, kh, kw) as in the weight's own layout; each is one flat shift of q
        # (computed after ks's affine uses: the CPU backend keeps those symbolic)
        tap = ks % KHW
{{- if .Strided}}
        th = (tap // KW) * dil_h
        tw = (tap % KW) * dil_w
        koff = (ks // KHW) * x_cstride + ((th % stride_h) * PHW + tw % stride_w) * PLANE + (th // stride_h) * Wp + tw // stride_w
{{- else}}
        koff = (ks // KHW) * x_cstride + (tap // KW) * (dil_h * Wp) + (tap % KW) * dil_w
{{- end}}
        b = tl.load(x_base + (koff[:, None] + q[None, :]), mask=bmask, other=0.0)
{{- if .ScaleInput}}
        b = b * tl.load(s_base + (ks // KHW) * s_cstride, mask=ks < KTOT, other=0.0)[:, None]
{{- else if .Scale}}
        a = a * tl.load(s_base + (ks // KHW) * s_cstride, mask=ks < KTOT, other=0.0)[None, :]
{{- end}}
        acc += tl.dot(a, b, input_precision=INPUT_PRECISION)
{{- end}}
{{- if .Merged}}
    # merged groups (DIAG narrow groups run as one over a block-diagonal weight): an infinite
    # or NaN input channel of one group meets the other groups' zero weights, and 0 * inf
    # would make their outputs NaN where a grouped convolution keeps them finite. A tile whose
    # sum is not finite (s - s is 0 for a finite s alone) is recomputed group by group, each
    # over its own input channels (the others' loaded as zeros), so that every output is
    # finite, infinite or NaN as PyTorch's. (The sum of the whole tile: a mask would cost the
    # CPU backend a select over it; a non-finite dead lane only costs a recomputation.)
    acc_sum = tl.sum(acc)
    if acc_sum - acc_sum != 0.0:
        CGD = CG // DIAG
        for j in range(0, DIAG):
            part = tl.zeros((BLOCK_OC, BLOCK_P), dtype=tl.float32)
            for c0 in range(j * CGD, j * CGD + CGD, BLOCK_K):
                cs = c0 + rk
                kmask = cs < j * CGD + CGD
                for tap in range(0, KHW):
{{- if .Strided}}
                    th = (tap // KW) * dil_h
                    tw = (tap % KW) * dil_w
                    toff = ((th % stride_h) * PHW + tw % stride_w) * PLANE + (th // stride_h) * Wp + tw // stride_w
{{- else}}
                    toff = (tap // KW) * (dil_h * Wp) + (tap % KW) * dil_w
{{- end}}
                    a = tl.load(w_base + tap * w_tstride + rn[:, None] * CG + cs[None, :], mask=ocmask & kmask[None, :], other=0.0)
                    b = tl.load(x_base + toff + cs[:, None] * x_cstride + q[None, :], mask=kmask[:, None]{{if .QMask}} & (q[None, :] < Q){{end}}, other=0.0)
                    part += tl.dot(a, b, input_precision=INPUT_PRECISION)
            acc = tl.where((rn // (OCG // DIAG))[:, None] == j, part, acc)
{{- end}}
{{- if .Folded}}
    # (the // and % on qi, a fresh q: the CPU backend keeps q symbolic only while no such op
    # has turned it into plain values, and the epilogue reads its padded operands at q)
    qi = q0 + tl.arange(0, BLOCK_P)
    qb = qi // QS
    qr = qi % QS
    ow = qr % Wp
    rp = (qr // Wp) * OW + ow
{{- if .FoldedPlanes}}
    # (a sample's plane: its rows past the output's are dropped too)
    cmask = ocmask & (ow[None, :] < OW) & (qr[None, :] < (OH - 1) * Wp + OW) & (q[None, :] < Q)
{{- else}}
    cmask = ocmask & (ow[None, :] < OW) & (q[None, :] < Q)
{{- end}}
{{- else if .PhaseStore}}
    # pixel q of residue pc is output pixel o_sw * q + pc (dense operands: lanes o_sw apart)
    rp = q * o_sw + pc
    cmask = smask
{{- else if .DenseStore}}
    # every column is an output pixel (Wp == OW): the epilogue's dense operands (a residual)
    # are read at q itself, an affine tile
    rp = q
    cmask = smask
{{- else}}
    # (the // and % on qi, a fresh q: the CPU backend keeps q symbolic only while no such op
    # has turned it into plain values, and the epilogue reads its padded operands at q)
    qi = q0 + tl.arange(0, BLOCK_P)
    ow = qi % Wp
    rp = (qi // Wp) * OW + ow
    cmask = ocmask & (ow[None, :] < OW) & (q[None, :] < {{if .RowTiles}}q_end{{else}}Q{{end}})
{{- end}}
{{- range .Epilogue}}
    {{.Name}} = {{.Load}}
{{- end}}
{{- range .Body}}
    {{.}}
{{- end}}
    # (qs is q afresh: the epilogue's // and % may have turned q into plain values, and the
    # CPU backend keeps only untouched index tiles symbolic)
{{- if .BlockStore}}
    # (rs, like qs, afresh; the channel blocks the tile spans, each block's pixels a row)
    rs = pid_oc * BLOCK_OC + tl.arange(0, BLOCK_OC)
    b_base = c_ptr + model * c_mstride + bidx * c_bstride
    blk0 = (pid_oc * BLOCK_OC) // o_bc
    blk1 = min((pid_oc * BLOCK_OC + BLOCK_OC - 1) // o_bc + 1, (OCG + o_bc - 1) // o_bc)
    yt = tl.trans(y)
{{- else}}
    c_base = c_ptr + model * c_mstride + c_off + bidx * c_bstride + oc_g[:, None] * c_cstride
{{- end}}
    qs = q0 + tl.arange(0, BLOCK_P)
    # the row stores below build their pointer tile and pixel row once, each store moving the
    # pointers by a scalar: the CPU backend runs a loop body's steps once a row, up to a dozen
    # rows a program on small maps (dead code where no row loop reads q_row)
    q_row = qs[None, :]
{{- if .Folded}}
    # one output row of one sample at a time: row oh of sample sb is pixels sb*QS + oh*Wp ..
    # + OW - 1 of q (those of the tile's samples and rows only)
    c_q = c_base + qs[None, :]
    for sb in range(q0 // QS, min((q0 + BLOCK_P - 1) // QS + 1, NB)):
        s_lo = sb * QS
        s_off = sb * c_bstride - s_lo
        for oh in range(max(q0 - s_lo, 0) // Wp, min((q0 + BLOCK_P - 1 - s_lo) // Wp + 1, OH)):
            lo = s_lo + oh * Wp
            tl.store(c_q + (s_off + oh * (c_rstride - Wp)), y, mask=smask & (q_row >= lo) & (q_row < lo + OW))
{{- else if .PhaseStore}}
    # the next convolution is strided: output pixel (oh, ow) is its padded pixel (r, c) =
    # (oh + o_pad_h, ow + o_pad_w), at (r // o_sh, c // o_sw) of phase (r % o_sh, c % o_sw)
    # (c_cstride spans a channel's phases), where conv_pad.py would copy it; the tile's pixels
    # share ow % o_sw = pc, so one output row's are one run of one phase plane's row: a store
    # of contiguous rows per output row (rows and columns no tap reads are dropped)
    cph = (pc + o_pad_w) % o_sw
    col0 = (pc + o_pad_w) // o_sw
{{- if not .BlockStore}}
    c_q = c_base + qs[None, :]
{{- end}}
    for oh in range(q0 // WS, min((q0 + BLOCK_P - 1) // WS + 1, OH)):
        r = oh + o_pad_h
        lo = oh * WS
        n_live = tl.where((r // o_sh) < o_hp, min(WS, o_wp - col0), 0)
        row = ((r % o_sh) * o_phw + cph) * o_plane + (r // o_sh) * o_wp + col0
{{- if .BlockStore}}
        for blk in range(blk0, blk1):
            tl.store(b_base + blk * c_cstride + (row - lo + qs[:, None]) * o_bc + (rs[None, :] - blk * o_bc), yt,
                     mask=smask_t & (qs[:, None] >= lo) & (qs[:, None] < lo + n_live) & (rs[None, :] >= blk * o_bc) & (rs[None, :] < min(blk * o_bc + o_bc, OCG)))
{{- else}}
        tl.store(c_q + (row - lo), y, mask=smask & (q_row >= lo) & (q_row < lo + n_live))
{{- end}}
{{- else if .BlockStore}}
    # one output row (pixels oh*Wp .. oh*Wp + OW - 1 of q) and channel block at a time: its
    # pixels' channels, side by side, are one contiguous run of the padded block
    for blk in range(blk0, blk1):
        for oh in range(q0 // Wp, min((q0 + BLOCK_P - 1) // Wp + 1, OH)):
            lo = oh * Wp
            tl.store(b_base + blk * c_cstride + (c_off + oh * c_rstride - lo + qs[:, None]) * o_bc + (rs[None, :] - blk * o_bc), yt,
                     mask=smask_t & (qs[:, None] >= lo) & (qs[:, None] < lo + OW) & (rs[None, :] >= blk * o_bc) & (rs[None, :] < min(blk * o_bc + o_bc, OCG)))
{{- else if .PaddedStore}}
    # the next convolution's zero-padded planes are as wide as this one's input (Wp), or the
    # output is dense and Wp == OW (a pointwise convolution): pixel q lies at q past the
    # first, and the dropped columns fall on the border, written as the zeros it holds, so
    # the whole tile is one store of contiguous rows
{{- if .DenseStore}}
    tl.store(c_base + qs[None, :], y, mask=smask)
{{- else}}
    tl.store(c_base + qs[None, :], tl.where(ow[None, :] < OW, y, 0.0), mask=smask)
{{- end}}
{{- else}}
    # one output row at a time: pixels oh*Wp .. oh*Wp + OW - 1 of q are output row oh,
    # contiguous in memory (its planes c_cstride apart, rows c_rstride), so each store is rows
    # of live intervals (no gathered offsets)
    c_q = c_base + qs[None, :]
    for oh in range(q0 // Wp, min((q0 + {{if .RowTiles}}TILE_Q{{else}}BLOCK_P{{end}} - 1) // Wp + 1, OH)):
        lo = oh * Wp
        tl.store(c_q + oh * (c_rstride - Wp), y, mask=smask & (q_row >= lo) & (q_row < lo + OW))
{{- end}}
{{- if .CopyStore}}
    # the output has other readers: a zero-padded copy for the convolution reading it, from the
    # same registers (planes p_cstride apart, rows p_rstride, the interior at p_off)
    p_base = p_ptr + model * p_mstride + p_off + bidx * p_bstride + oc_g[:, None] * p_cstride
{{- if .Folded}}
    p_q = p_base + qs[None, :]
    for sb in range(q0 // QS, min((q0 + BLOCK_P - 1) // QS + 1, NB)):
        s_lo = sb * QS
        s_off = sb * p_bstride - s_lo
        for oh in range(max(q0 - s_lo, 0) // Wp, min((q0 + BLOCK_P - 1 - s_lo) // Wp + 1, OH)):
            lo = s_lo + oh * Wp
            tl.store(p_q + (s_off + oh * (p_rstride - Wp)), y, mask=smask & (q_row >= lo) & (q_row < lo + OW))
{{- else if .CopyPaddedStore}}
    tl.store(p_base + qs[None, :], tl.where(ow[None, :] < OW, y, 0.0), mask=smask)
{{- else}}
    p_q = p_base + qs[None, :]
    for oh in range(q0 // Wp, min((q0 + {{if .RowTiles}}TILE_Q{{else}}BLOCK_P{{end}} - 1) // Wp + 1, OH)):
        lo = oh * Wp
        tl.store(p_q + oh * (p_rstride - Wp), y, mask=smask & (q_row >= lo) & (q_row < lo + OW))
{{- end}}
{{- end}}
