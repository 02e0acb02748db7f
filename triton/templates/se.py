{{- /*
A squeeze-excite block's squeeze and excitation in one kernel, for the CPU: program (sample,
model) pools x [C, R] (the sample's planes, R pixels each) to the channel means p, computes
h = act(W1 p + b1) (W1 [S, C], rows w1_ss apart), then s = gate(W2 h + b2) (W2 [N, S], rows
w2_sn apart), and stores s [N]. The pool and the first FC walk the channels together in
BLOCK_C blocks (each block's means go straight into its part of W1 p); the hidden vector is
whole (BLOCK_S covers S); the second FC walks the outputs in BLOCK_N blocks. Every step is a
one-row dot whose other operand is rows read in place (the CPU's gemv path): the planes
against a row of ones (the sums), the weights' rows against the means and the hidden vector.
Grid: (samples, 1, models). CPU plans only: NVIDIA's dots take 16 rows or more.
The hidden statements see h as [1, BLOCK_S] (per-unit vectors index rs[None, :]); the
epilogue sees acc as [1, BLOCK_N] (per-channel vectors index rn[None, :]).
Data: Fn, Header, HiddenArgs []string, HiddenLoads []{Name, Load}, Hidden []string (from `h`
to `h`: bias, activation), Epilogue []{Name, Load}, EpilogueArgs, ExtraArgs, Body []string
(from `acc` to `y`).
*/ -}}
import triton
import triton.language as tl


# widejit kernel {{.Fn}} (template se.py)
{{- range .Header}}
# {{.}}
{{- end}}
@triton.jit
def {{.Fn}}(
    x_ptr, x_mstride, x_bstride,
    w1_ptr, w1_mstride, w1_ss, {{pyargs .HiddenArgs}}
    w2_ptr, w2_mstride, w2_sn,
    c_ptr, c_mstride, c_bstride,
    {{pyargs .EpilogueArgs}}
    C, R, S, N, {{pyargs .ExtraArgs}}
    BLOCK_C: tl.constexpr, BLOCK_R: tl.constexpr, BLOCK_S: tl.constexpr, BLOCK_N: tl.constexpr,
):
    b = tl.program_id(0)
    model = tl.program_id(2)
    rs = tl.arange(0, BLOCK_S)
    rr0 = tl.arange(0, BLOCK_R)
    ones = tl.full((1, BLOCK_R), 1.0, tl.float32)
    x_base = x_ptr + model * x_mstride + b * x_bstride
    w1_base = w1_ptr + model * w1_mstride
    w2_base = w2_ptr + model * w2_mstride
    hacc = tl.zeros((1, BLOCK_S), dtype=tl.float32)
    for c0 in range(0, C, BLOCK_C):
        rc = c0 + tl.arange(0, BLOCK_C)
        # the channels' sums as a dot with a row of ones, which reads the planes in place
        p = tl.zeros((1, BLOCK_C), dtype=tl.float32)
        for r0 in range(0, R, BLOCK_R):
            rr = r0 + rr0
            xt = tl.load(x_base + rc[:, None] * R + rr[None, :],
                         mask=(rc[:, None] < C) & (rr[None, :] < R), other=0.0)
            p += tl.dot(ones, tl.trans(xt))
        p = p / R
        w1 = tl.load(w1_base + rs[:, None] * w1_ss + rc[None, :],
                     mask=(rs[:, None] < S) & (rc[None, :] < C), other=0.0)
        hacc += tl.dot(p, tl.trans(w1))
    h = hacc
{{- range .HiddenLoads}}
    {{.Name}} = {{.Load}}
{{- end}}
{{- range .Hidden}}
    {{.}}
{{- end}}
    # hidden units past S meet zero columns of W2, so they add nothing
    for n0 in range(0, N, BLOCK_N):
        rn = n0 + tl.arange(0, BLOCK_N)
        cmask = rn[None, :] < N
        w2 = tl.load(w2_base + rn[:, None] * w2_sn + rs[None, :],
                     mask=(rn[:, None] < N) & (rs[None, :] < S), other=0.0)
        acc = tl.dot(h, tl.trans(w2))
{{- range .Epilogue}}
        {{.Name}} = {{.Load}}
{{- end}}
{{- range .Body}}
        {{.}}
{{- end}}
        tl.store(c_ptr + model * c_mstride + b * c_bstride + rn[None, :], y, mask=cmask)
