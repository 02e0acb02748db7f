{{- /*
Max and average pooling (1-d and 2-d; 1-d runs with H = OH = KH = 1) for the CPU, one output row
of BLOCK_PL planes at a time: program (plane block x output row, model) walks the KH x KW window,
each tap one load of a [plane, output column] tile whose columns are stride_w apart in the
input, an affine tile with interval masks (the columns inside the input), so the CPU backend
moves rows instead of gathering elements. A window row outside the input has no live column.
Kind "max": max over the dilated window, NaN-propagating like torch's; padding reads as -inf.
Kind "avg": sum over the window divided by the window size clipped to the padded input
(CountPad), by the number of real input elements (not CountPad), or by divisor_override
(Divisor: the DIVISOR argument).
The output's planes are O_PLANE apart, its rows O_ROW, its first element at O_OFF: dense, or the
interior of the zero-padded planes a convolution reads (lowering's takePooledInput).
CopyStore: the same values stored again into such planes (c_ptr: C_PLANE, C_ROW, C_OFF).
Data: Fn, Header, Kind, CountPad, Divisor bool, CopyStore bool, Compute (tl.float32, or tl.float64
for fp64).
*/ -}}
import triton
import triton.language as tl


# widejit kernel {{.Fn}} (template pool_rows.py, {{.Kind}})
{{- range .Header}}
# {{.}}
{{- end}}
@triton.jit
def {{.Fn}}(
    x_ptr, x_mstride,
    out_ptr, out_mstride,
{{- if .CopyStore}}
    c_ptr, c_mstride, C_PLANE, C_ROW, C_OFF,
{{- end}}
    PLANES, H, W, OH, OW, KH, KW, stride_h, stride_w, pad_h, pad_w, dil_h, dil_w, DIVISOR,
    O_PLANE, O_ROW, O_OFF,
    BLOCK_PL: tl.constexpr, BLOCK_W: tl.constexpr,
):
    pid = tl.program_id(0)
    model = tl.program_id(1)
    oh = pid % OH
    pl = (pid // OH) * BLOCK_PL + tl.arange(0, BLOCK_PL)
    rw = tl.arange(0, BLOCK_W)
    x_base = x_ptr + model * x_mstride + pl[:, None] * (H * W)
    o_base = out_ptr + model * out_mstride + pl[:, None] * O_PLANE + oh * O_ROW + O_OFF
{{- if .CopyStore}}
    c_base = c_ptr + model * c_mstride + pl[:, None] * C_PLANE + oh * C_ROW + C_OFF
{{- end}}
    h0 = oh * stride_h - pad_h
    for w0 in range(0, OW, BLOCK_W):
        ow = w0 + rw
        iw0 = ow * stride_w - pad_w
{{- if eq .Kind "max"}}
        acc = tl.full((BLOCK_PL, BLOCK_W), float("-inf"), {{.Compute}})
{{- else}}
        acc = tl.zeros((BLOCK_PL, BLOCK_W), dtype={{.Compute}})
{{- end}}
        for kh in range(0, KH):
            ih = h0 + kh * dil_h
            # the columns a window row may read: all inside the input, none outside
            w_live = tl.where((ih >= 0) & (ih < H), W, 0)
            for kw in range(0, KW):
                iw = iw0 + kw * dil_w
                ok = (pl[:, None] < PLANES) & (iw[None, :] >= 0) & (iw[None, :] < w_live)
{{- if eq .Kind "max"}}
                v = tl.load(x_base + ih * W + iw[None, :], mask=ok, other=float("-inf")).to({{.Compute}})
                acc = tl.maximum(acc, v, propagate_nan=tl.PropagateNan.ALL)
{{- else}}
                v = tl.load(x_base + ih * W + iw[None, :], mask=ok, other=0.0).to({{.Compute}})
                acc += v
{{- end}}
{{- if eq .Kind "max"}}
        y = acc
{{- else if .Divisor}}
        y = acc / DIVISOR
{{- else}}
{{- if .CountPad}}
        # the window clipped to the padded input
        hh = tl.minimum(h0 + KH, H + pad_h) - h0
        ww = tl.minimum(iw0 + KW, W + pad_w) - iw0
{{- else}}
        # the window clipped to the real input
        hh = tl.minimum(h0 + KH, H) - tl.maximum(h0, 0)
        ww = tl.minimum(iw0 + KW, W) - tl.maximum(iw0, 0)
{{- end}}
        y = acc / (hh * ww[None, :]).to({{.Compute}})
{{- end}}
        tl.store(o_base + ow[None, :], y, mask=(pl[:, None] < PLANES) & (ow[None, :] < OW))
{{- if .CopyStore}}
        tl.store(c_base + ow[None, :], y, mask=(pl[:, None] < PLANES) & (ow[None, :] < OW))
{{- end}}
