{{- /*
A whole Linear-act-Linear block in one kernel: each program owns BLOCK_M rows of one model and
walks the hidden layer in BLOCK_H slices; every slice h = act(x @ W1[slice]^T + b1[slice]) is
consumed at once by the second matmul, so the hidden activation never goes to memory. The
block is computed transposed, h^T = W1[slice] @ x^T and y^T += W2[:, slice] @ h^T: the weights
are then read as they lie in memory (rows along K) and only the small x and y tiles are
transposed. BLOCK_N covers the whole output width. Grid: (row blocks, 1, models).
The hidden statements see h as [BLOCK_H, BLOCK_M] (per-hidden-unit vectors index rh[:, None]).
With Rows (the CPU) the weights come transposed once at load, W1^T [K, H] and W2^T [H, N]
(rows w1_sk, w2_sk apart), and the block is computed as written, h = x @ W1^T[:, slice] and
y += h @ W2^T[slice]: every operand tile is rows read in place and nothing is transposed per
tile; the hidden statements then see h as [BLOCK_M, BLOCK_H] (vectors index rh[None, :]).
Data: Fn, Header, HeadLoads/Head (the first Linear's row head, lowering/rowops.go, normalising x as it loads), HiddenArgs []string, HiddenLoads []{Name, Load} (addressed by rh), Hidden
[]string (statements from `h` to `h`, e.g. bias and activation), Epilogue []{Name, Load},
EpilogueArgs, ExtraArgs, Body []string (from `acc` to `y`), Rows.
*/ -}}
import triton
import triton.language as tl


# widejit kernel {{.Fn}} (template mlp.py)
{{- range .Header}}
# {{.}}
{{- end}}
@triton.jit
def {{.Fn}}(
    x_ptr, x_mstride, x_sm,
    w1_ptr, w1_mstride, {{if .Rows}}w1_sk, {{end}}{{pyargs .HiddenArgs}}
    w2_ptr, w2_mstride, {{if .Rows}}w2_sk, {{end}}
    c_ptr, c_mstride, c_sm,
    {{pyargs .EpilogueArgs}}
    M, K, H, N, {{pyargs .ExtraArgs}}
    BLOCK_M: tl.constexpr, BLOCK_K: tl.constexpr, BLOCK_H: tl.constexpr, BLOCK_N: tl.constexpr,
    INPUT_PRECISION: tl.constexpr,
):
    pid = tl.program_id(0)
    batch = tl.program_id(1)
    model = tl.program_id(2)
    rm = pid * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    rh0 = tl.arange(0, BLOCK_H)
    x_base = x_ptr + model * x_mstride
    w1_base = w1_ptr + model * w1_mstride
    w2_base = w2_ptr + model * w2_mstride
{{- if .Rows}}
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
{{- else}}
    acct = tl.zeros((BLOCK_N, BLOCK_M), dtype=tl.float32)
{{- end}}
{{- if .Head}}
    # the row head: x's rows, whole in one K tile, loaded and normalised once for every
    # hidden slice
    ks = rk
{{- range .HeadLoads}}
    {{.Name}} = {{.Load}}
{{- end}}
    {{if .Rows}}x{{else}}xt{{end}} = tl.load(x_base + rm[:, None] * x_sm + ks[None, :], mask=(rm[:, None] < M) & (ks[None, :] < K), other=0.0)
{{- range .Head}}
    {{.}}
{{- end}}
{{- end}}
    for hs in range(0, H, BLOCK_H):
        rh = hs + rh0
{{- if .Rows}}
        hacc = tl.zeros((BLOCK_M, BLOCK_H), dtype=tl.float32)
        for k0 in range(0, K, BLOCK_K):
            ks = k0 + rk
{{- if not .Head}}
            x = tl.load(x_base + rm[:, None] * x_sm + ks[None, :],
                        mask=(rm[:, None] < M) & (ks[None, :] < K), other=0.0)
{{- end}}
            w1 = tl.load(w1_base + ks[:, None] * w1_sk + rh[None, :],
                         mask=(ks[:, None] < K) & (rh[None, :] < H), other=0.0)
            hacc += tl.dot(x, w1, input_precision=INPUT_PRECISION)
{{- else}}
        hacc = tl.zeros((BLOCK_H, BLOCK_M), dtype=tl.float32)
        for k0 in range(0, K, BLOCK_K):
            ks = k0 + rk
{{- if not .Head}}
            xt = tl.load(x_base + rm[:, None] * x_sm + ks[None, :],
                         mask=(rm[:, None] < M) & (ks[None, :] < K), other=0.0)
{{- end}}
            w1 = tl.load(w1_base + rh[:, None] * K + ks[None, :],
                         mask=(rh[:, None] < H) & (ks[None, :] < K), other=0.0)
            hacc += tl.dot(w1, tl.trans(xt), input_precision=INPUT_PRECISION)
{{- end}}
        h = hacc
{{- range .HiddenLoads}}
        {{.Name}} = {{.Load}}
{{- end}}
{{- range .Hidden}}
        {{.}}
{{- end}}
{{- if .Rows}}
        # hidden units past H meet zero rows of W2^T, so they add nothing
        w2 = tl.load(w2_base + rh[:, None] * w2_sk + rn[None, :],
                     mask=(rh[:, None] < H) & (rn[None, :] < N), other=0.0)
        acc += tl.dot(h, w2, input_precision=INPUT_PRECISION)
{{- else}}
        # hidden units past H meet zero columns of W2, so they add nothing
        w2 = tl.load(w2_base + rn[:, None] * H + rh[None, :],
                     mask=(rn[:, None] < N) & (rh[None, :] < H), other=0.0)
        acct += tl.dot(w2, h, input_precision=INPUT_PRECISION)
    acc = tl.trans(acct)
{{- end}}
    cmask = (rm[:, None] < M) & (rn[None, :] < N)
{{- range .Epilogue}}
    {{.Name}} = {{.Load}}
{{- end}}
{{- range .Body}}
    {{.}}
{{- end}}
    tl.store(c_ptr + model * c_mstride + rm[:, None] * c_sm + rn[None, :], y, mask=cmask)
