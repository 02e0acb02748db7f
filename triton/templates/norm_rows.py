{{- /*
Row-wise normalisation for the CPU: program (row block, model) normalises BLOCK_O rows of R
contiguous elements at once, as [BLOCK_O, BLOCK] tiles reduced along axis 1, so one program's
work is a few large tile operations rather than one row's; otherwise as norm.py (two-pass
mean/variance in fp32 or the root mean square, the affine parameters at
(row % rows_per_sample) * ch_per_row + col // spatial, the fused epilogue).
Data: Fn, Header, Center, HasW, HasB, ColsOnly (the affine index is the column: LayerNorm), FullRows (R == BLOCK), OneTile (R <= BLOCK: one column block, x read once), Epilogue []{Name, Load}, EpilogueArgs, ExtraArgs,
Body []string (from `acc` to `y`).
*/ -}}
import triton
import triton.language as tl


# widejit kernel {{.Fn}} (template norm_rows.py)
{{- range .Header}}
# {{.}}
{{- end}}
@triton.jit
def {{.Fn}}(
    x_ptr, x_mstride,{{if .HasW}} w_ptr, w_mstride,{{end}}{{if .HasB}} b_ptr, b_mstride,{{end}}
    out_ptr, out_mstride,
    {{pyargs .EpilogueArgs}}
    R, ROWS, rows_per_sample, ch_per_row, spatial, eps, {{pyargs .ExtraArgs}}
    BLOCK_O: tl.constexpr, BLOCK: tl.constexpr,
):
    model = tl.program_id(1)
    row = tl.program_id(0) * BLOCK_O + tl.arange(0, BLOCK_O)[:, None]
    rmask = row < ROWS
    cols0 = tl.arange(0, BLOCK)[None, :]
    x_rows = x_ptr + model * x_mstride + row * R
{{- if .OneTile}}
    # the whole row in one tile: x is read once
    cmask = rmask & (cols0 < R)
    xv = tl.load(x_rows + cols0, mask=cmask, other=0.0).to(tl.float32)
{{- if and .Center .FullRows}}
    d = xv - tl.sum(xv, axis=1)[:, None] / R  # no lane to mask (masked rows are never stored)
{{- else if .Center}}
    d = tl.where(cmask, xv - tl.sum(xv, axis=1)[:, None] / R, 0.0)
{{- else}}
    d = xv
{{- end}}
    rstd = 1.0 / tl.sqrt(tl.sum(d * d, axis=1)[:, None] / R + eps)
{{- else}}
{{- if .Center}}
    sum_acc = tl.zeros((BLOCK_O, BLOCK), dtype=tl.float32)
    for c0 in range(0, R, BLOCK):
        cols = c0 + cols0
        sum_acc += tl.load(x_rows + cols, mask=rmask & (cols < R), other=0.0).to(tl.float32)
    mean = tl.sum(sum_acc, axis=1)[:, None] / R
{{- end}}
    sq_acc = tl.zeros((BLOCK_O, BLOCK), dtype=tl.float32)
    for c0 in range(0, R, BLOCK):
        cols = c0 + cols0
        cmask = rmask & (cols < R)
        xv = tl.load(x_rows + cols, mask=cmask, other=0.0).to(tl.float32)
{{- if and .Center .FullRows}}
        d = xv - mean  # rows fill the tile: no lane to mask (masked rows are never stored)
{{- else if .Center}}
        d = tl.where(cmask, xv - mean, 0.0)
{{- else}}
        d = xv
{{- end}}
        sq_acc += d * d
    rstd = 1.0 / tl.sqrt(tl.sum(sq_acc, axis=1)[:, None] / R + eps)
{{- end}}
    for c0 in range(0, R, BLOCK):
        cols = c0 + cols0
        cmask = rmask & (cols < R)
{{- if .OneTile}}
        acc = d * rstd  # one iteration: cols is cols0
{{- else if .Center}}
        xv = tl.load(x_rows + cols, mask=cmask, other=0.0).to(tl.float32)
        acc = (xv - mean) * rstd
{{- else}}
        xv = tl.load(x_rows + cols, mask=cmask, other=0.0).to(tl.float32)
        acc = xv * rstd
{{- end}}
{{- if and (or .HasW .HasB) .ColsOnly}}
        # one [1, BLOCK] row of parameters for every row
        ch = cols
        pmask = cols < R
{{- else if or .HasW .HasB}}
        ch = (row % rows_per_sample) * ch_per_row + cols // spatial
        pmask = cmask
{{- end}}
{{- if .HasW}}
        acc = acc * tl.load(w_ptr + model * w_mstride + ch, mask=pmask, other=0.0).to(tl.float32)
{{- end}}
{{- if .HasB}}
        acc = acc + tl.load(b_ptr + model * b_mstride + ch, mask=pmask, other=0.0).to(tl.float32)
{{- end}}
{{- range .Epilogue}}
        {{.Name}} = {{.Load}}
{{- end}}
{{- range .Body}}
        {{.}}
{{- end}}
        tl.store(out_ptr + model * out_mstride + row * R + cols, y, mask=cmask)
