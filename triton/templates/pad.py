{{- /*
F.pad over an N-first index space: program (pid, model) writes BLOCK elements of one model's
padded output. Each element's coordinates are mapped back to the input's (Body: per dim, the
coordinate, its source by the mode, the input offset and, for constant padding, whether it
lies inside); elements outside take the fill value.
Data: Fn, Header []string, SizeArgs []string, Body []string, Result string.
*/ -}}
import triton
import triton.language as tl


# widejit kernel {{.Fn}} (template pad.py)
{{- range .Header}}
# {{.}}
{{- end}}
@triton.jit
def {{.Fn}}(
    x_ptr, x_mstride, out_ptr, out_mstride, numel, {{pyargs .SizeArgs}}
    BLOCK: tl.constexpr,
):
    pid = tl.program_id(0)
    model = tl.program_id(1)
    idx = pid * BLOCK + tl.arange(0, BLOCK)
    mask = idx < numel
    rem = idx
    off = idx * 0
    inside = mask
{{- range .Body}}
    {{.}}
{{- end}}
    v = tl.load(x_ptr + model * x_mstride + off, mask=inside, other=0)
    tl.store(out_ptr + model * out_mstride + idx, {{.Result}}, mask=mask)
