{{- /*
Reductions along the last dim of a contiguous tensor viewed as [outer, R], for the CPU:
program (row block, model) reduces BLOCK_O rows at once as [BLOCK_O, BLOCK_R] tiles along
axis 1, walking R in BLOCK_R slices; otherwise as reduce.py.
Kind: "softmax", "log_softmax" (output [outer, R]), "sum", "mean", "amax" (output [outer]).
Data: Fn, Header, Kind, OnePass (R fits one BLOCK_R: softmax reads the row once).
*/ -}}
import triton
import triton.language as tl


# widejit kernel {{.Fn}} (template reduce_rows.py, {{.Kind}})
{{- range .Header}}
# {{.}}
{{- end}}
@triton.jit
def {{.Fn}}(
    x_ptr, x_mstride,
    out_ptr, out_mstride,
    R, OUTER,
    BLOCK_O: tl.constexpr, BLOCK_R: tl.constexpr,
):
    model = tl.program_id(1)
    ro = tl.program_id(0) * BLOCK_O + tl.arange(0, BLOCK_O)
    omask = ro[:, None] < OUTER
    rr0 = tl.arange(0, BLOCK_R)[None, :]
    x_rows = x_ptr + model * x_mstride + ro[:, None] * R
{{- if and .OnePass (eq .Kind "softmax")}}
    # the whole row in one tile: exp once
    msk = omask & (rr0 < R)
    xv = tl.load(x_rows + rr0, mask=msk, other=float("-inf")).to(tl.float32)
    e = tl.exp(xv - tl.max(xv, axis=1)[:, None])
    y = e / tl.sum(e, axis=1)[:, None]
    tl.store(out_ptr + model * out_mstride + ro[:, None] * R + rr0, y, mask=msk)
{{- else if or (eq .Kind "softmax") (eq .Kind "log_softmax")}}
    row_max = tl.full((BLOCK_O,), float("-inf"), tl.float32)
    for r0 in range(0, R, BLOCK_R):
        rr = r0 + rr0
        xv = tl.load(x_rows + rr, mask=omask & (rr < R), other=float("-inf")).to(tl.float32)
        row_max = tl.maximum(row_max, tl.max(xv, axis=1))
    denom = tl.zeros((BLOCK_O,), dtype=tl.float32)
    for r0 in range(0, R, BLOCK_R):
        rr = r0 + rr0
        xv = tl.load(x_rows + rr, mask=omask & (rr < R), other=float("-inf")).to(tl.float32)
        denom += tl.sum(tl.exp(xv - row_max[:, None]), axis=1)
{{- if eq .Kind "log_softmax"}}
    log_denom = tl.log(denom)
{{- end}}
    out_rows = out_ptr + model * out_mstride + ro[:, None] * R
    for r0 in range(0, R, BLOCK_R):
        rr = r0 + rr0
        msk = omask & (rr < R)
        xv = tl.load(x_rows + rr, mask=msk, other=0.0).to(tl.float32)
{{- if eq .Kind "softmax"}}
        y = tl.exp(xv - row_max[:, None]) / denom[:, None]
{{- else}}
        y = xv - row_max[:, None] - log_denom[:, None]
{{- end}}
        tl.store(out_rows + rr, y, mask=msk)
{{- else}}
{{- if eq .Kind "amax"}}
    acc = tl.full((BLOCK_O, BLOCK_R), float("-inf"), tl.float32)
    nan_acc = tl.zeros((BLOCK_O, BLOCK_R), dtype=tl.float32)
{{- else}}
    acc = tl.zeros((BLOCK_O, BLOCK_R), dtype=tl.float32)
{{- end}}
    for r0 in range(0, R, BLOCK_R):
        rr = r0 + rr0
        msk = omask & (rr < R)
{{- if eq .Kind "amax"}}
        xv = tl.load(x_rows + rr, mask=msk, other=float("-inf")).to(tl.float32)
        acc = tl.maximum(acc, xv)
        # torch.amax propagates NaN, tl.max drops it (see reduce.py)
        nan_acc += 0.0 / (xv * xv + 1.0)
    nan_any = tl.sum(nan_acc, axis=1)
    y = tl.where(nan_any != nan_any, nan_any, tl.max(acc, axis=1))
{{- else}}
        xv = tl.load(x_rows + rr, mask=msk, other=0.0).to(tl.float32)
        acc += xv
{{- if eq .Kind "mean"}}
    y = tl.sum(acc, axis=1) / R
{{- else}}
    y = tl.sum(acc, axis=1)
{{- end}}
{{- end}}
    tl.store(out_ptr + model * out_mstride + ro, y, mask=ro < OUTER)
{{- end}}
