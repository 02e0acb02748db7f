{{- /*
Pooling (1-d, 2-d and 3-d; fewer dims run with leading sizes of 1: D = OD = KD = 1, and for 1-d
also H = OH = KH = 1) over a contiguous [planes, D, H, W] view of each model's input, planes =
batch * channels: program (pid, model) computes BLOCK output elements of one model and walks the
KD x KH x KW window with masks.
Kind "max": max over the dilated window; padding reads as -inf.
Kind "avg": sum over the window divided by the window size clipped to the padded input
(count_include_pad), by the number of real input elements (not count_include_pad), or by
divisor_override (Divisor: the DIVISOR argument).
Kind "adaptive": the window of output o along a dim of size I -> O is
[floor(o*I/O), ceil((o+1)*I/O)); KD, KH, KW bound the window sizes.
Data: Fn, Header, Kind, CountPad, Divisor bool, Compute (the accumulation dtype: tl.float32, or
tl.float64 for fp64 inputs).
*/ -}}
import triton
import triton.language as tl


# widejit kernel {{.Fn}} (template pool.py, {{.Kind}})
{{- range .Header}}
# {{.}}
{{- end}}
@triton.jit
def {{.Fn}}(
    x_ptr, x_mstride,
    out_ptr, out_mstride,
    numel, D, H, W, OD, OH, OW, KD, KH, KW,
    stride_d, stride_h, stride_w, pad_d, pad_h, pad_w, dil_d, dil_h, dil_w, DIVISOR,
    BLOCK: tl.constexpr,
):
    pid = tl.program_id(0)
    model = tl.program_id(1)
    idx = pid * BLOCK + tl.arange(0, BLOCK)
    mask = idx < numel
    ow = idx % OW
    oh = (idx // OW) % OH
    od = (idx // (OW * OH)) % OD
    plane = idx // (OW * OH * OD)
    x_base = x_ptr + model * x_mstride + plane * (D * H * W)
{{- if eq .Kind "adaptive"}}
    d0 = (od * D) // OD
    d1 = ((od + 1) * D + OD - 1) // OD
    h0 = (oh * H) // OH
    h1 = ((oh + 1) * H + OH - 1) // OH
    w0 = (ow * W) // OW
    w1 = ((ow + 1) * W + OW - 1) // OW
{{- else}}
    d0 = od * stride_d - pad_d
    h0 = oh * stride_h - pad_h
    w0 = ow * stride_w - pad_w
{{- end}}
{{- if eq .Kind "max"}}
    acc = tl.full((BLOCK,), float("-inf"), {{.Compute}})
    nan_acc = tl.zeros((BLOCK,), dtype={{.Compute}})
{{- else}}
    acc = tl.zeros((BLOCK,), dtype={{.Compute}})
{{- end}}
    for kd in range(0, KD):
{{- if eq .Kind "adaptive"}}
        idd = d0 + kd
        dok = mask & (idd < d1)
{{- else}}
        idd = d0 + kd * dil_d
        dok = mask & (idd >= 0) & (idd < D)
{{- end}}
        for kh in range(0, KH):
{{- if eq .Kind "adaptive"}}
            ih = h0 + kh
            hok = dok & (ih < h1)
{{- else}}
            ih = h0 + kh * dil_h
            hok = dok & (ih >= 0) & (ih < H)
{{- end}}
            for kw in range(0, KW):
{{- if eq .Kind "adaptive"}}
                iw = w0 + kw
                ok = hok & (iw < w1)
{{- else}}
                iw = w0 + kw * dil_w
                ok = hok & (iw >= 0) & (iw < W)
{{- end}}
{{- if eq .Kind "max"}}
                v = tl.load(x_base + (idd * H + ih) * W + iw, mask=ok, other=float("-inf")).to({{.Compute}})
                acc = tl.maximum(acc, v)
                # tl.maximum is maxnum (drops NaN) but torch's max_pool propagates it: 0/(v*v+1)
                # is 0 for every non-NaN v (inf included) and NaN for NaN, so nan_acc remembers a
                # NaN in the window with vectorizable arithmetic
                nan_acc += 0.0 / (v * v + 1.0)
{{- else}}
                v = tl.load(x_base + (idd * H + ih) * W + iw, mask=ok, other=0.0).to({{.Compute}})
                acc += v
{{- end}}
{{- if eq .Kind "max"}}
    y = tl.where(nan_acc != nan_acc, nan_acc, acc)
{{- else if eq .Kind "adaptive"}}
    y = acc / ((d1 - d0) * (h1 - h0) * (w1 - w0)).to({{.Compute}})
{{- else}}
{{- if .Divisor}}
    y = acc / DIVISOR
{{- else}}
{{- if .CountPad}}
    # the window clipped to the padded input
    dd = tl.minimum(d0 + KD, D + pad_d) - d0
    hh = tl.minimum(h0 + KH, H + pad_h) - h0
    ww = tl.minimum(w0 + KW, W + pad_w) - w0
{{- else}}
    # the window clipped to the real input
    dd = tl.minimum(d0 + KD, D) - tl.maximum(d0, 0)
    hh = tl.minimum(h0 + KH, H) - tl.maximum(h0, 0)
    ww = tl.minimum(w0 + KW, W) - tl.maximum(w0, 0)
{{- end}}
    y = acc / (dd * hh * ww).to({{.Compute}})
{{- end}}
{{- end}}
    tl.store(out_ptr + model * out_mstride + idx, y, mask=mask)
