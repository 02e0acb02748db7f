{{- /*
The columns of a convolution over small maps, for conv_flat.py's Folded form: the input comes
as conv_flat.py reads it (zero-padded planes [Hp, Wp], or phase planes when Strided, x_cstride
apart, a sample x_bstride), and each tap's flat shift of a sample's QS = (OH-1)*Wp + OW padded
pixels is copied to row (channel, tap) of o[C*KH*KW, NQ] (rows NQ apart: B*QS rounded up to a power of two; as the weight
[OC, C, KH, KW] orders its reduction), at column b*QS. One GEMM over every sample's pixels
then reads each weight once a launch (a sample a program would stream the weight once per
sample). Program (channel tile, sample, model): per tap one [BLOCK_C, BLOCK_Q] tile, affine
(read in place; its last columns may read past QS, into the next plane or the buffer's slack,
and are not stored; with QMask, for maps whose tile reaches past that slack, not read either).
Data: Fn, Header, Strided, QMask.
*/ -}}
import triton
import triton.language as tl


# widejit kernel {{.Fn}} (template conv_cols.py)
{{- range .Header}}
# {{.}}
{{- end}}
@triton.jit
def {{.Fn}}(
    x_ptr, x_mstride, x_bstride, x_cstride, o_ptr, o_mstride, Wp, QS, NQ, KW, KHW, dil_h, dil_w,{{if .Strided}} stride_h, stride_w, PHW, PLANE,{{end}}
    BLOCK_C: tl.constexpr, BLOCK_Q: tl.constexpr,
):
    pid = tl.program_id(0)
    b = tl.program_id(1)
    model = tl.program_id(2)
    # BLOCK_C divides the channels: the only mask is the columns', one row for every channel
    rc = pid * BLOCK_C + tl.arange(0, BLOCK_C)
    q = tl.arange(0, BLOCK_Q)
    live = (q < QS)[None, :]
    x_base = x_ptr + model * x_mstride + b * x_bstride + rc[:, None] * x_cstride + q[None, :]
    o_base = o_ptr + model * o_mstride + rc[:, None] * (KHW * NQ) + b * QS + q[None, :]
    for tap in range(0, KHW):
{{- if .Strided}}
        th = (tap // KW) * dil_h
        tw = (tap % KW) * dil_w
        toff = ((th % stride_h) * PHW + tw % stride_w) * PLANE + (th // stride_h) * Wp + tw // stride_w
{{- else}}
        toff = (tap // KW) * (dil_h * Wp) + (tap % KW) * dil_w
{{- end}}
{{- if .QMask}}
        tl.store(o_base + tap * NQ, tl.load(x_base + toff, mask=live, other=0.0), mask=live)
{{- else}}
        tl.store(o_base + tap * NQ, tl.load(x_base + toff), mask=live)
{{- end}}
