{{- /*
Element-wise kernel over an N-first index space: program (pid, model) handles BLOCK elements of
one model's output. Each operand is addressed through its own strides over the output's dims
(0 where it broadcasts), so broadcasting, permuted views and slices need no copies.
Data: Fn, Header []string, Operands []{Name, StrideArgs []string, Load string},
OutStrideArgs []string, SizeArgs []string, ExtraArgs []string, Coords []string,
Body []string (statements ending with `y = ...`), OutOffset string.
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
    BLOCK: tl.constexpr,
):
    pid = tl.program_id(0)
    model = tl.program_id(1)
    idx = pid * BLOCK + tl.arange(0, BLOCK)
    mask = idx < numel
{{- if .Coords}}
    # coordinates of each element in the output's per-model shape
    rem = idx
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
