{{- /*
Element-wise kernel over an N-first index space: program (pid, model) handles BLOCK elements of
one model's output. Each operand is addressed through its own strides over the output's dims
(0 where it broadcasts), so broadcasting, permuted views and slices need no copies.
With Rows, a program handles BLOCK_R whole rows of the last dim (BLOCK_C >= its size) as a 2-D
tile: the coordinates of the leading dims are computed once per row, not per element, and each
operand's row is one strided run.
Data: Fn, Header []string, Operands []{Name, StrideArgs []string, Load string},
OutStrideArgs []string, SizeArgs []string, ExtraArgs []string, Coords []string,
Body []string (statements ending with `y = ...`), OutOffset string, Rows bool, Last string
(the last dim's coordinate, Rows only).
*/ -}}
import triton
import triton.language as tl


# widejit kernel {{.Fn}} (template elementwise.py)
{{- range .Header}}
# {{.}}
{{- end}}
@triton.jit
def {{.Fn}}(
{{- range .Operands}}
    {{.Name}}_ptr, {{.Name}}_mstride, {{pyargs .StrideArgs}}
{{- end}}
    out_ptr, out_mstride, {{pyargs .OutStrideArgs}}
    numel, {{pyargs .SizeArgs}} {{pyargs .ExtraArgs}}
{{- if .Rows}}
    BLOCK_R: tl.constexpr, BLOCK_C: tl.constexpr,
{{- else}}
    BLOCK: tl.constexpr,
{{- end}}
):
    pid = tl.program_id(0)
    model = tl.program_id(1)
{{- if .Rows}}
    rows = pid * BLOCK_R + tl.arange(0, BLOCK_R)
    {{.Last}} = tl.arange(0, BLOCK_C)
    rmask = rows[:, None] < nrows
    cmask = {{.Last}}[None, :] < size_last
    mask = rmask & cmask
    idx = rows[:, None] * size_last + {{.Last}}[None, :]
{{- else}}
    idx = pid * BLOCK + tl.arange(0, BLOCK)
    mask = idx < numel
{{- end}}
{{- if .Coords}}
    # coordinates of each element in the output's per-model shape
{{- if .Rows}}
    rem = rows
{{- else}}
    rem = idx
{{- end}}
{{- range .Coords}}
    {{.}}
{{- end}}
{{- end}}
{{- range .Operands}}
    {{.Name}} = {{.Load}}
{{- end}}
{{- range .Body}}
    {{.}}
{{- end}}
    tl.store(out_ptr + model * out_mstride + {{.OutOffset}}, y, mask=mask)
