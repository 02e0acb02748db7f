{{- /*
Row-wise normalisation: program (row, model) normalises one row of R contiguous elements with a
two-pass mean/variance in fp32 (Center) or the root mean square (RMSNorm), then applies the
affine parameters and the fused epilogue. The affine index of column c of row r is
(r % rows_per_sample) * ch_per_row + c // spatial, which covers LayerNorm/RMSNorm (the column),
GroupNorm (the channel within the group) and InstanceNorm (the row's channel).
Data: Fn, Header, Center, HasW, HasB, Epilogue []{Name, Load}, EpilogueArgs, ExtraArgs,
Body []string (from `acc` to `y`).
*/ -}}
import triton
import triton.language as tl


# widejit kernel {{.Fn}} (template norm.py)
{{- range .Header}}
# {{.}}
{{- end}}
@triton.jit
def {{.Fn}}(
    x_ptr, x_mstride,{{if .HasW}} w_ptr, w_mstride,{{end}}{{if .HasB}} b_ptr, b_mstride,{{end}}
    out_ptr, out_mstride,
    {{pyargs .EpilogueArgs}}
    R, rows_per_sample, ch_per_row, spatial, eps, {{pyargs .ExtraArgs}}
    BLOCK: tl.constexpr,
):
    row = tl.program_id(0)
    model = tl.program_id(1)
    cols0 = tl.arange(0, BLOCK)
    x_row = x_ptr + model * x_mstride + row * R
{{- if .Center}}
    sum_acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for c0 in range(0, R, BLOCK):
        cols = c0 + cols0
        sum_acc += tl.load(x_row + cols, mask=cols < R, other=0.0).to(tl.float32)
    mean = tl.sum(sum_acc, axis=0) / R
{{- end}}
    sq_acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for c0 in range(0, R, BLOCK):
        cols = c0 + cols0
        xv = tl.load(x_row + cols, mask=cols < R, other=0.0).to(tl.float32)
{{- if .Center}}
        d = tl.where(cols < R, xv - mean, 0.0)
{{- else}}
        d = xv
{{- end}}
        sq_acc += d * d
    rstd = 1.0 / tl.sqrt(tl.sum(sq_acc, axis=0) / R + eps)
    for c0 in range(0, R, BLOCK):
        cols = c0 + cols0
        cmask = cols < R
        xv = tl.load(x_row + cols, mask=cmask, other=0.0).to(tl.float32)
{{- if .Center}}
        acc = (xv - mean) * rstd
{{- else}}
        acc = xv * rstd
{{- end}}
{{- if or .HasW .HasB}}
        ch = (row % rows_per_sample) * ch_per_row + cols // spatial
{{- end}}
{{- if .HasW}}
        acc = acc * tl.load(w_ptr + model * w_mstride + ch, mask=cmask, other=0.0).to(tl.float32)
{{- end}}
{{- if .HasB}}
        acc = acc + tl.load(b_ptr + model * b_mstride + ch, mask=cmask, other=0.0).to(tl.float32)
{{- end}}
{{- range .Epilogue}}
        {{.Name}} = {{.Load}}
{{- end}}
{{- range .Body}}
        {{.}}
{{- end}}
        tl.store(out_ptr + model * out_mstride + row * R + cols, y, mask=cmask)
