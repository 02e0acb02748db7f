{{- /*
Tiled matmul C[b] = A[b] @ B[b] for every model and matmul batch b: grid axis 0 walks the
BLOCK_M x BLOCK_N output tiles, axis 1 the batch, axis 2 the model. Operands are addressed by
strides, so a Linear's weight [out, in] is read as B = W^T without a copy. The fused epilogue
(bias, activation, residual, scaling, dropout) runs on the fp32 accumulator tile before the
single store. INPUT_PRECISION is the fp32 dots' precision as --float32-matmul-precision chose
it (ieee at the default, so GPU results stay within 1e-4 of PyTorch's; tf32; bf16).
Data: Fn, Header, Epilogue []{Name, Load string} (loads addressed by rm/rn), EpilogueArgs
[]string (pointer, model/batch/row/col strides of each epilogue operand), ExtraArgs []string,
Body []string (statements from `acc` to `y`), BRowsAlongK (B is read as rows of B^T),
HeadLoads, Head (a row head, lowering/rowops.go: a norm of a's rows, whole in one K tile),
SplitBatch (the operands' and the output's batch dims in an outer and an inner stride:
batch_in, a_bstride_in, b_bstride_in, c_bstride_in).
*/ -}}
import triton
import triton.language as tl


# widejit kernel {{.Fn}} (template matmul.py)
{{- range .Header}}
# {{.}}
{{- end}}
@triton.jit
def {{.Fn}}(
    a_ptr, a_mstride, a_bstride, a_sm, a_sk,
    b_ptr, b_mstride, b_bstride, b_sk, b_sn,
    c_ptr, c_mstride, c_bstride, c_sm, c_sn,
    {{pyargs .EpilogueArgs}}
    M, N, K, tiles_n, {{if .SplitBatch}}batch_in, a_bstride_in, b_bstride_in, c_bstride_in, {{end}}{{pyargs .ExtraArgs}}
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
    INPUT_PRECISION: tl.constexpr,
):
    pid = tl.program_id(0)
    batch = tl.program_id(1)
    model = tl.program_id(2)
    pid_m = pid // tiles_n
    pid_n = pid % tiles_n
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
{{- if .SplitBatch}}
    # the operands' batch dims take two strides (heads transposed out of a row): outer, inner
    a_base = a_ptr + model * a_mstride + (batch // batch_in) * a_bstride + (batch % batch_in) * a_bstride_in
    b_base = b_ptr + model * b_mstride + (batch // batch_in) * b_bstride + (batch % batch_in) * b_bstride_in
{{- else}}
    a_base = a_ptr + model * a_mstride + batch * a_bstride
    b_base = b_ptr + model * b_mstride + batch * b_bstride
{{- end}}
    # the output mask comes before the loop: the CPU backend then knows, while it multiplies,
    # which of acc's elements are ever stored (jit/cpu observed.go)
    cmask = (rm[:, None] < M) & (rn[None, :] < N)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
{{- range .HeadLoads}}
    {{.Name}} = {{.Load}}
{{- end}}
    for k0 in range(0, K, BLOCK_K):
        ks = k0 + rk
        a = tl.load(a_base + rm[:, None] * a_sm + ks[None, :] * a_sk,
                    mask=(rm[:, None] < M) & (ks[None, :] < K), other=0.0)
{{- range .Head}}
        {{.}}
{{- end}}
{{- if .BRowsAlongK}}
        # B^T's rows (a Linear's weight rows) are contiguous along K: load them as rows and
        # transpose in registers (the CPU, on a few rows of a, reads them in place instead)
        bt = tl.load(b_base + rn[:, None] * b_sn + ks[None, :] * b_sk,
                     mask=(rn[:, None] < N) & (ks[None, :] < K), other=0.0)
        acc += tl.dot(a, tl.trans(bt), input_precision=INPUT_PRECISION)
{{- else}}
        b = tl.load(b_base + ks[:, None] * b_sk + rn[None, :] * b_sn,
                    mask=(ks[:, None] < K) & (rn[None, :] < N), other=0.0)
        acc += tl.dot(a, b, input_precision=INPUT_PRECISION)
{{- end}}
{{- range .Epilogue}}
    {{.Name}} = {{.Load}}
{{- end}}
{{- range .Body}}
    {{.}}
{{- end}}
{{- if .SplitBatch}}
    c_offs = model * c_mstride + (batch // batch_in) * c_bstride + (batch % batch_in) * c_bstride_in + rm[:, None] * c_sm + rn[None, :] * c_sn
{{- else}}
    c_offs = model * c_mstride + batch * c_bstride + rm[:, None] * c_sm + rn[None, :] * c_sn
{{- end}}
    tl.store(c_ptr + c_offs, y, mask=cmask)
