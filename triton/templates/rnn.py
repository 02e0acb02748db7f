{{- /*
One direction of one recurrent layer (nn.RNN, nn.GRU, nn.LSTM) for every model, the whole time
loop in the kernel: program (batch_block, model) walks the T steps of BLOCK_B sequences. The
input projection x @ W_ih^T + b_ih of every step is precomputed by one matmul launch (xp, G*H
columns per row, gates in PyTorch's order: i,f,g,o for LSTM, r,z,n for GRU); each step adds
h_prev @ W_hh^T + b_hh, BLOCK_J hidden units at a time over BLOCK_K slices of h_prev, and
applies the cell:
  rnn_tanh / rnn_relu: h = act(xp + h W^T + b)
  gru:  r = sigmoid(xp_r + hh_r), z = sigmoid(xp_z + hh_z), n = tanh(xp_n + r * hh_n)
        (b_hn inside hh_n, as PyTorch), h = (1 - z) * n + z * h_prev
  lstm: c = sigmoid(f) * c_prev + sigmoid(i) * tanh(g), h = sigmoid(o) * tanh(c)
The hidden state lives in memory: h_t is written to the layer output (row t, this direction's
columns) and read back as h_prev by the next step; the step-0 state (h0, or zeros) is staged in
this (layer, direction)'s rows of h_n, and the cell state in those of c_n, which end up holding
the final states. A barrier closes each step (a GPU program's threads exchange h through
memory). W_hh is read through strides (w_sk, w_sj) as W^T [H, G*H]; Stationary (one BLOCK_J x
BLOCK_K slice covers the layer) loads its gate tiles once, before the time loop, instead of at
every step. The dots' precision is INPUT_PRECISION (--float32-matmul-precision): IEEE fp32 at
the default, as PyTorch's fp32 recurrence (TF32 errors compound over the steps).
Data: Fn, Header, Cell ("rnn_tanh", "rnn_relu", "gru", "lstm"), HasBias, HasH0, Reverse,
Stationary.
*/ -}}
{{- define "wtiles"}}
{{- if .Stationary}}
    wmask = (rk[:, None] < H) & jmask
    wt = w_m + rk[:, None] * w_sk + rj[None, :] * w_sj
{{- else}}
                wmask = (rk[:, None] < H) & jmask
                wt = w_m + rk[:, None] * w_sk + rj[None, :] * w_sj
{{- end}}
{{- end}}
{{- $lstm := eq .Cell "lstm"}}
{{- $gru := eq .Cell "gru"}}
{{- $multi := or $lstm $gru}}
import triton
import triton.language as tl


@triton.jit
def _tanh(x):
    # exp of a non-positive argument only: no overflow for large |x|
    e = tl.exp(-2.0 * tl.abs(x))
    m = (1.0 - e) / (1.0 + e)
    return tl.where(x >= 0.0, m, -m)


# widejit kernel {{.Fn}} (template rnn.py)
{{- range .Header}}
# {{.}}
{{- end}}
@triton.jit
def {{.Fn}}(
    xp_ptr, xp_mstride, xp_st, xp_sb,
    w_ptr, w_mstride, w_sk, w_sj,
{{- if .HasBias}}
    b_ptr, b_mstride,
{{- end}}
{{- if .HasH0}}
    h0_ptr, h0_mstride,{{if $lstm}} c0_ptr, c0_mstride,{{end}}
{{- end}}
    out_ptr, out_mstride, out_st, out_sb,
    hn_ptr, hn_mstride,{{if $lstm}} cn_ptr, cn_mstride,{{end}}
    T, B, H,
    BLOCK_B: tl.constexpr, BLOCK_J: tl.constexpr, BLOCK_K: tl.constexpr,
    INPUT_PRECISION: tl.constexpr,
):
    model = tl.program_id(1)
    rb = tl.program_id(0) * BLOCK_B + tl.arange(0, BLOCK_B)
    bmask = rb[:, None] < B
    xp_m = xp_ptr + model * xp_mstride
    w_m = w_ptr + model * w_mstride
    out_m = out_ptr + model * out_mstride
    hn_m = hn_ptr + model * hn_mstride
{{- if $lstm}}
    cn_m = cn_ptr + model * cn_mstride
{{- end}}
    # the step-0 state into h_n (c_n): its rows are this layer's and direction's [B, H]
    for j0 in range(0, H, BLOCK_J):
        rj = j0 + tl.arange(0, BLOCK_J)
        m = bmask & (rj[None, :] < H)
{{- if .HasH0}}
        h = tl.load(h0_ptr + model * h0_mstride + rb[:, None] * H + rj[None, :], mask=m, other=0.0)
{{- else}}
        h = tl.zeros((BLOCK_B, BLOCK_J), dtype=tl.float32)
{{- end}}
        tl.store(hn_m + rb[:, None] * H + rj[None, :], h, mask=m)
{{- if $lstm}}
{{- if .HasH0}}
        c = tl.load(c0_ptr + model * c0_mstride + rb[:, None] * H + rj[None, :], mask=m, other=0.0)
{{- end}}
        tl.store(cn_m + rb[:, None] * H + rj[None, :], {{if .HasH0}}c{{else}}h{{end}}, mask=m)
{{- end}}
{{- if .Stationary}}
    # one slice holds the whole layer: W_hh^T's gate tiles stay in the program for all T steps
    rj = tl.arange(0, BLOCK_J)
    rk = tl.arange(0, BLOCK_K)
    jmask = rj[None, :] < H
{{- template "wtiles" .}}
    w0 = tl.load(wt, mask=wmask, other=0.0)
{{- if $multi}}
    w1 = tl.load(wt + H * w_sj, mask=wmask, other=0.0)
    w2 = tl.load(wt + 2 * H * w_sj, mask=wmask, other=0.0)
{{- end}}
{{- if $lstm}}
    w3 = tl.load(wt + 3 * H * w_sj, mask=wmask, other=0.0)
{{- end}}
{{- end}}
    tl.debug_barrier()
    hp = hn_m
    hp_sb = H
    for s in range(0, T):
{{- if .Reverse}}
        t = T - 1 - s
{{- else}}
        t = s
{{- end}}
        x_t = xp_m + t * xp_st + rb[:, None] * xp_sb
        o_t = out_m + t * out_st
        for j0 in range(0, H, BLOCK_J):
            rj = j0 + tl.arange(0, BLOCK_J)
            jmask = rj[None, :] < H
            m = bmask & jmask
            a0 = tl.zeros((BLOCK_B, BLOCK_J), dtype=tl.float32)
{{- if $multi}}
            a1 = tl.zeros((BLOCK_B, BLOCK_J), dtype=tl.float32)
            a2 = tl.zeros((BLOCK_B, BLOCK_J), dtype=tl.float32)
{{- end}}
{{- if $lstm}}
            a3 = tl.zeros((BLOCK_B, BLOCK_J), dtype=tl.float32)
{{- end}}
            for k0 in range(0, H, BLOCK_K):
                rk = k0 + tl.arange(0, BLOCK_K)
                hk = tl.load(hp + rb[:, None] * hp_sb + rk[None, :], mask=bmask & (rk[None, :] < H), other=0.0)
{{- if .Stationary}}
                a0 += tl.dot(hk, w0, input_precision=INPUT_PRECISION)
{{- if $multi}}
                a1 += tl.dot(hk, w1, input_precision=INPUT_PRECISION)
                a2 += tl.dot(hk, w2, input_precision=INPUT_PRECISION)
{{- end}}
{{- if $lstm}}
                a3 += tl.dot(hk, w3, input_precision=INPUT_PRECISION)
{{- end}}
{{- else}}
{{- template "wtiles" .}}
                a0 += tl.dot(hk, tl.load(wt, mask=wmask, other=0.0), input_precision=INPUT_PRECISION)
{{- if $multi}}
                a1 += tl.dot(hk, tl.load(wt + H * w_sj, mask=wmask, other=0.0), input_precision=INPUT_PRECISION)
                a2 += tl.dot(hk, tl.load(wt + 2 * H * w_sj, mask=wmask, other=0.0), input_precision=INPUT_PRECISION)
{{- end}}
{{- if $lstm}}
                a3 += tl.dot(hk, tl.load(wt + 3 * H * w_sj, mask=wmask, other=0.0), input_precision=INPUT_PRECISION)
{{- end}}
{{- end}}
{{- if .HasBias}}
            bj = b_ptr + model * b_mstride + rj[None, :]
            a0 += tl.load(bj, mask=jmask, other=0.0)
{{- if $multi}}
            a1 += tl.load(bj + H, mask=jmask, other=0.0)
            a2 += tl.load(bj + 2 * H, mask=jmask, other=0.0)
{{- end}}
{{- if $lstm}}
            a3 += tl.load(bj + 3 * H, mask=jmask, other=0.0)
{{- end}}
{{- end}}
            xj = x_t + rj[None, :]
            a0 += tl.load(xj, mask=m, other=0.0)
{{- if eq .Cell "rnn_tanh"}}
            h = _tanh(a0)
{{- else if eq .Cell "rnn_relu"}}
            h = tl.maximum(a0, 0.0, propagate_nan=tl.PropagateNan.ALL)  # torch's relu keeps NaN
{{- else if $gru}}
            r = tl.sigmoid(a0)
            z = tl.sigmoid(a1 + tl.load(xj + H, mask=m, other=0.0))
            n = _tanh(tl.load(xj + 2 * H, mask=m, other=0.0) + r * a2)
            h_prev = tl.load(hp + rb[:, None] * hp_sb + rj[None, :], mask=m, other=0.0)
            h = (1.0 - z) * n + z * h_prev
{{- else}}
            ig = tl.sigmoid(a0)
            fg = tl.sigmoid(a1 + tl.load(xj + H, mask=m, other=0.0))
            gg = _tanh(a2 + tl.load(xj + 2 * H, mask=m, other=0.0))
            og = tl.sigmoid(a3 + tl.load(xj + 3 * H, mask=m, other=0.0))
            cj = cn_m + rb[:, None] * H + rj[None, :]
            c = fg * tl.load(cj, mask=m, other=0.0) + ig * gg
            tl.store(cj, c, mask=m)
            h = og * _tanh(c)
{{- end}}
            tl.store(o_t + rb[:, None] * out_sb + rj[None, :], h, mask=m)
        tl.debug_barrier()
        hp = o_t
        hp_sb = out_sb
    # h_n: the last step's h
    for j0 in range(0, H, BLOCK_J):
        rj = j0 + tl.arange(0, BLOCK_J)
        m = bmask & (rj[None, :] < H)
        h = tl.load(hp + rb[:, None] * hp_sb + rj[None, :], mask=m, other=0.0)
        tl.store(hn_m + rb[:, None] * H + rj[None, :], h, mask=m)
