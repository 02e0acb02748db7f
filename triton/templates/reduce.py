{{- /*
Reductions along one dim run of a contiguous tensor viewed as [outer, R, inner]: program
(outer * iblocks + iblock, model) owns BLOCK_I columns of the inner dim and walks R in BLOCK_R
slices, so both a last-dim reduction (inner = 1) and a reduction over a leading dim (inner
large) read memory in contiguous runs.
Kind: "softmax", "log_softmax" (output [outer, R, inner]), "sum", "mean", "amax" (output
[outer, inner]).
Data: Fn, Header, Kind.
*/ -}}
import triton
import triton.language as tl


# widejit kernel {{.Fn}} (template reduce.py, {{.Kind}})
{{- range .Header}}
# {{.}}
{{- end}}
@triton.jit
def {{.Fn}}(
    x_ptr, x_mstride,
    out_ptr, out_mstride,
    R, inner, iblocks,
    BLOCK_R: tl.constexpr, BLOCK_I: tl.constexpr,
):
    pid = tl.program_id(0)
    model = tl.program_id(1)
    outer = pid // iblocks
    ri = (pid % iblocks) * BLOCK_I + tl.arange(0, BLOCK_I)
    imask = ri < inner
    rr0 = tl.arange(0, BLOCK_R)
    x_base = x_ptr + model * x_mstride + outer * R * inner
{{- if or (eq .Kind "softmax") (eq .Kind "log_softmax")}}
    row_max = tl.full((BLOCK_I,), float("-inf"), tl.float32)
    for r0 in range(0, R, BLOCK_R):
        rr = r0 + rr0
        msk = (rr[:, None] < R) & imask[None, :]
        xv = tl.load(x_base + rr[:, None] * inner + ri[None, :], mask=msk, other=float("-inf")).to(tl.float32)
        row_max = tl.maximum(row_max, tl.max(xv, axis=0))
    denom = tl.zeros((BLOCK_I,), dtype=tl.float32)
    for r0 in range(0, R, BLOCK_R):
        rr = r0 + rr0
        msk = (rr[:, None] < R) & imask[None, :]
        xv = tl.load(x_base + rr[:, None] * inner + ri[None, :], mask=msk, other=float("-inf")).to(tl.float32)
        denom += tl.sum(tl.exp(xv - row_max[None, :]), axis=0)
{{- if eq .Kind "log_softmax"}}
    log_denom = tl.log(denom)
{{- end}}
    out_base = out_ptr + model * out_mstride + outer * R * inner
    for r0 in range(0, R, BLOCK_R):
        rr = r0 + rr0
        msk = (rr[:, None] < R) & imask[None, :]
        xv = tl.load(x_base + rr[:, None] * inner + ri[None, :], mask=msk, other=0.0).to(tl.float32)
{{- if eq .Kind "softmax"}}
        y = tl.exp(xv - row_max[None, :]) / denom[None, :]
{{- else}}
        y = xv - row_max[None, :] - log_denom[None, :]
{{- end}}
        tl.store(out_base + rr[:, None] * inner + ri[None, :], y, mask=msk)
{{- else}}
{{- if eq .Kind "amax"}}
    acc = tl.full((BLOCK_R, BLOCK_I), float("-inf"), tl.float32)
    nan_acc = tl.zeros((BLOCK_R, BLOCK_I), dtype=tl.float32)
{{- else}}
    acc = tl.zeros((BLOCK_R, BLOCK_I), dtype=tl.float32)
{{- end}}
    for r0 in range(0, R, BLOCK_R):
        rr = r0 + rr0
        msk = (rr[:, None] < R) & imask[None, :]
{{- if eq .Kind "amax"}}
        xv = tl.load(x_base + rr[:, None] * inner + ri[None, :], mask=msk, other=float("-inf")).to(tl.float32)
        acc = tl.maximum(acc, xv)
        # tl.maximum and tl.max are maxnum (drop NaN) but torch.amax propagates it: 0/(x*x+1)
        # is 0 for every non-NaN x (inf included) and NaN for NaN, so nan_acc remembers a NaN
        # with vectorizable arithmetic
        nan_acc += 0.0 / (xv * xv + 1.0)
    nan_any = tl.sum(nan_acc, axis=0)
    y = tl.where(nan_any != nan_any, nan_any, tl.max(acc, axis=0))
{{- else}}
        xv = tl.load(x_base + rr[:, None] * inner + ri[None, :], mask=msk, other=0.0).to(tl.float32)
        acc += xv
{{- if eq .Kind "mean"}}
    y = tl.sum(acc, axis=0) / R
{{- else}}
    y = tl.sum(acc, axis=0)
{{- end}}
{{- end}}
    tl.store(out_ptr + model * out_mstride + outer * inner + ri, y, mask=imask)
{{- end}}
