{{- /*
Zero padding for conv_flat.py: x[plane, H, W] (plane = sample x channel, per model) copied into
the interior of o[plane, Hp, Wp], at element pad_off of each padded plane. The border is never
written: it keeps the zeros the buffer was allocated with (jit.Device.Alloc), so only H rows
of W move. Program (planes, -, model) copies BLOCK_PL planes.
Phases (strided convolutions): each plane becomes PHH x PHW phase planes [Hp, Wp], PLANE
elements apart: padded pixel (r, c) = (i + pad_h, j + pad_w) goes to (r // stride_h,
c // stride_w) of phase (r % stride_h, c % stride_w); pixels of phases or rows and columns
that no tap reads are dropped.
PlaneTiles (Phases, few large planes: the stems' images): program (plane, -, model) moves one
plane, each (row phase, column phase) of it as [row, column] tiles whose rows are stride_h
image rows apart and columns stride_w apart (both affine), a few steps a plane where the row
walk takes H x PHW of them.
Blocks (conv_dw_blocks.py's channel blocks): program (sample x block, -, model) moves the
BLOCK_PL channels of one block (output channel c reads input channel c // MULT when Mult) to
o[sample, block, (phases,) Hp, Wp, BLOCK_PL], BLOCK_STRIDE elements a block: the same planes,
each pixel's BLOCK_PL channels side by side, so the tile is stored transposed, [column,
channel], one contiguous run per row (channels past OC load and store the zeros they hold).
Grouped (conv_grouped.py's blocks): lane rc of block pid % CB = (group block, in-group channel
ci) holds group (pid % CB) // CG * BLOCK_PL + rc, of OC groups, its input channel group * CG + ci;
the tile is stored as loaded, [channel, column], each channel's row one run BLOCK_PL apart
(blocks of 8 or 16 channels made the transposed tile's stores a short row per column).
Data: Fn, Header, Phases, PlaneTiles, Blocks, Mult, Grouped.
*/ -}}
import triton
import triton.language as tl


# widejit kernel {{.Fn}} (template conv_pad.py)
{{- range .Header}}
# {{.}}
{{- end}}
@triton.jit
def {{.Fn}}(
    x_ptr, x_mstride, o_ptr, o_mstride, H, W, Hp, Wp, pad_off, PLANES,{{if .Phases}} pad_h, pad_w, stride_h, stride_w, PHH, PHW, PLANE,{{end}}{{if .Blocks}} x_bstride, OC, CB, BLOCK_STRIDE,{{if .Mult}} MULT,{{end}}{{if .Grouped}} CG,{{end}}{{end}}
    BLOCK_PL: tl.constexpr, BLOCK_W: tl.constexpr,{{if .PlaneTiles}} BLOCK_H: tl.constexpr,{{end}}
):
    # one image row i of BLOCK_PL planes at a time: both tiles [plane, column] are affine
    # (planes H*W apart in x, Hp*Wp apart in o), so each moves as rows after one bounds check
    pid = tl.program_id(0)
    model = tl.program_id(2)
    rw = tl.arange(0, BLOCK_W)
{{- if .PlaneTiles}}
    # one plane: per row phase ph, image rows i_first + s*stride_h (padded row r_first + s of
    # the phase), per column phase pc, columns j_first + t*stride_w (column c_first + t)
    rh = tl.arange(0, BLOCK_H)
    x_base = x_ptr + model * x_mstride + pid * (H * W)
    o_base = o_ptr + model * o_mstride + pid * (PHH * PHW * PLANE)
    for ph in range(0, PHH):
        i_first = (ph - pad_h % stride_h + stride_h) % stride_h
        r_first = (i_first + pad_h) // stride_h
        for pc in range(0, PHW):
            j_first = (pc - pad_w % stride_w + stride_w) % stride_w
            c_first = (j_first + pad_w) // stride_w
            for s0 in range(0, (H + stride_h - 1) // stride_h, BLOCK_H):
                s = s0 + rh
                i = i_first + s * stride_h
                rr = r_first + s
                for t0 in range(0, (W + stride_w - 1) // stride_w, BLOCK_W):
                    t = t0 + rw
                    j = j_first + t * stride_w
                    cc = c_first + t
                    # (rows and columns no tap reads, past Hp and Wp, are dropped)
                    inside = (i[:, None] < H) & (rr[:, None] < Hp) & (j[None, :] < W) & (cc[None, :] < Wp)
                    v = tl.load(x_base + i[:, None] * W + j[None, :], mask=inside, other=0.0)
                    tl.store(o_base + (ph * PHW + pc) * PLANE + rr[:, None] * Wp + cc[None, :], v, mask=inside)
{{- else}}
{{- if .Blocks}}
    rc = tl.arange(0, BLOCK_PL)
{{- if .Grouped}}
    oc = ((pid % CB) // CG) * BLOCK_PL + rc
    live = oc[:, None] < OC
    x_base = x_ptr + model * x_mstride + (pid // CB) * x_bstride + (oc * CG + (pid % CB) % CG)[:, None] * (H * W)
    o_base = o_ptr + model * o_mstride + pid * BLOCK_STRIDE + rc[:, None]
{{- else}}
    oc = (pid % CB) * BLOCK_PL + rc
    live = oc[:, None] < OC
    x_base = x_ptr + model * x_mstride + (pid // CB) * x_bstride + {{if .Mult}}(oc // MULT){{else}}oc{{end}}[:, None] * (H * W)
    o_base = o_ptr + model * o_mstride + pid * BLOCK_STRIDE
{{- end}}
{{- else}}
    pl = pid * BLOCK_PL + tl.arange(0, BLOCK_PL)
    live = pl[:, None] < PLANES
    x_base = x_ptr + model * x_mstride + pl[:, None] * (H * W)
{{- if .Phases}}
    o_base = o_ptr + model * o_mstride + pl[:, None] * (PHH * PHW * PLANE)
{{- else}}
    o_base = o_ptr + model * o_mstride + pl[:, None] * (Hp * Wp)
{{- end}}
{{- end}}
{{- if .Phases}}
    # one image row and column phase at a time: the phase's columns are every stride_w-th of
    # the row, moved to contiguous ones (both tiles affine, a row's lanes one interval)
    for i in range(0, H):
        r = i + pad_h
        # the columns kept: all, or none when no tap reads this row
        w_live = tl.where(((r % stride_h) < PHH) & ((r // stride_h) < Hp), Wp, 0)
        r_off = (r % stride_h) * PHW * PLANE + (r // stride_h) * Wp
        for pc in range(0, PHW):
            j_first = (pc - pad_w % stride_w + stride_w) % stride_w
            c_first = (j_first + pad_w) // stride_w
            # (t counts the phase's columns: cdiv(W, stride_w) at most)
            for t0 in range(0, (W + stride_w - 1) // stride_w, BLOCK_W):
                t = t0 + rw
                j = j_first + t * stride_w
                cc = c_first + t
                # (a row no tap reads is not even loaded: half the rows of a 1x1 stride-2 input)
                inside = live & (j[None, :] < W) & (cc[None, :] < w_live)
                v = tl.load(x_base + i * W + j[None, :], mask=inside, other=0.0)
{{- if .Grouped}}
                tl.store(o_base + (r_off + pc * PLANE + cc[None, :]) * BLOCK_PL, v,
                         mask=(j[None, :] < W) & (cc[None, :] < w_live))
{{- else if .Blocks}}
                tl.store(o_base + (r_off + pc * PLANE + cc[:, None]) * BLOCK_PL + rc[None, :], tl.trans(v),
                         mask=(j[:, None] < W) & (cc[:, None] < w_live))
{{- else}}
                tl.store(o_base + r_off + pc * PLANE + cc[None, :], v, mask=inside)
{{- end}}
{{- else}}
    for i in range(0, H):
        for j0 in range(0, W, BLOCK_W):
            j = j0 + rw
            inside = live & (j[None, :] < W)
            v = tl.load(x_base + i * W + j[None, :], mask=inside, other=0.0)
{{- if .Grouped}}
            tl.store(o_base + (pad_off + i * Wp + j[None, :]) * BLOCK_PL, v, mask=j[None, :] < W)
{{- else if .Blocks}}
            tl.store(o_base + (pad_off + i * Wp + j[:, None]) * BLOCK_PL + rc[None, :], tl.trans(v), mask=j[:, None] < W)
{{- else}}
            tl.store(o_base + pad_off + i * Wp + j[None, :], v, mask=inside)
{{- end}}
{{- end}}
{{- end}}
