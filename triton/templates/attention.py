{{- /*
Scaled dot-product attention for every model, sample and head, flash style: program
(l_block, sample * HEADS + head, model) holds BLOCK_L query rows of one head and walks the keys
in BLOCK_S slices with an online softmax (running row max m_i and sum l_i, fp32), so the
L x S score matrix never reaches memory. Queries, keys, values and the output are addressed
by (sample, position) strides with the head's DH columns at h * DH, which covers both
batch_first layouts and the column slices of a fused QKV projection without copies.
Masks: Causal (key after query), AttnMask / KeyPadding "bool" (True: not allowed) or "float"
(added to the scores), attn_mask per (sample*head) when am_sbh != 0. A row whose keys are all
masked gives NaN, as in PyTorch.
Weights: a second pass writes the normalised probabilities of each head to w_ptr
[B, HEADS, L, S] (need_weights; the mean over heads is a separate reduction).
Dropout (Monte Carlo mode): each probability is kept with 1 - p_drop and scaled by
1 / (1 - p_drop), as PyTorch's training mode does before multiplying by V; the random stream is
indexed by the probability's wide linear index (model + model_base), so batched and
sequential launches draw the same mask. The row sum l_i uses the undropped values.
Data: Fn, Header, Causal, Weights, Dropout bool, AttnMask, KeyPadding string ("", "bool",
"float"), NoMask bool (BLOCK_S divides S, not causal, no bool mask: no score is dropped, float
masks are still added), Half string (tl.float16 / tl.bfloat16 data, "" for float32).
*/ -}}
{{- define "scores"}}
        rs = s0 + rs0
        # keys as rows (contiguous along the head's columns), transposed for the dot
        kk = tl.load(k_base + rs[:, None] * k_sl + rd[None, :],
                     mask=(rs[:, None] < S) & (rd[None, :] < DH), other=0.0)
        s = tl.dot(q, tl.trans(kk), input_precision=INPUT_PRECISION)
{{- if .NoMask}}
        # BLOCK_S divides S and no score is dropped: no validity mask (a float mask is added)
{{- else}}
        valid = (rs[None, :] < S) & (rl[:, None] >= 0)
{{- if .Causal}}
        valid = valid & (rs[None, :] <= rl[:, None])
{{- end}}
{{- end}}
{{- if .AttnMask}}
        amv = tl.load(am_base + rl[:, None] * am_sl + rs[None, :] * am_ss,
                      mask=(rl[:, None] < L) & (rs[None, :] < S), other=0)
{{- if eq .AttnMask "bool"}}
        valid = valid & (amv.to(tl.int32) == 0)
{{- else}}
        s = s + amv.to(tl.float32)
{{- end}}
{{- end}}
{{- if .KeyPadding}}
        kpv = tl.load(kpm_base + rs * kpm_ss, mask=rs < S, other=0)
{{- if eq .KeyPadding "bool"}}
        valid = valid & (kpv.to(tl.int32) == 0)[None, :]
{{- else}}
        s = s + kpv.to(tl.float32)[None, :]
{{- end}}
{{- end}}
{{- if not .NoMask}}
        s = tl.where(valid, s, float("-inf"))
{{- end}}
{{- end}}
{{- define "drop"}}
{{- if .Dropout}}
        keep = tl.rand(seed, ((model + model_base) * BH + bh) * L * S + rl[:, None] * S + rs[None, :]) >= p_drop
        p = tl.where(keep, p * keep_scale, 0.0)
{{- end}}
{{- end}}
import triton
import triton.language as tl


# widejit kernel {{.Fn}} (template attention.py)
{{- range .Header}}
# {{.}}
{{- end}}
@triton.jit
def {{.Fn}}(
    q_ptr, q_mstride, q_sb, q_sl,
    k_ptr, k_mstride, k_sb, k_sl,
    v_ptr, v_mstride, v_sb, v_sl,
    o_ptr, o_mstride, o_sb, o_sl,
{{- if .AttnMask}}
    am_ptr, am_mstride, am_sbh, am_sl, am_ss,
{{- end}}
{{- if .KeyPadding}}
    kpm_ptr, kpm_mstride, kpm_sb, kpm_ss,
{{- end}}
{{- if .Weights}}
    w_ptr, w_mstride,
{{- end}}
    L, S, HEADS, DH, scale,{{if .Dropout}} BH, seed, p_drop, keep_scale, model_base,{{end}}
    BLOCK_L: tl.constexpr, BLOCK_S: tl.constexpr, BLOCK_D: tl.constexpr,
    INPUT_PRECISION: tl.constexpr,
):
    pid_l = tl.program_id(0)
    bh = tl.program_id(1)
    model = tl.program_id(2)
    b = bh // HEADS
    h = bh % HEADS
    rl = pid_l * BLOCK_L + tl.arange(0, BLOCK_L)
    rd = tl.arange(0, BLOCK_D)
    rs0 = tl.arange(0, BLOCK_S)
    q_base = q_ptr + model * q_mstride + b * q_sb + h * DH
    k_base = k_ptr + model * k_mstride + b * k_sb + h * DH
    v_base = v_ptr + model * v_mstride + b * v_sb + h * DH
{{- if .AttnMask}}
    am_base = am_ptr + model * am_mstride + bh * am_sbh
{{- end}}
{{- if .KeyPadding}}
    kpm_base = kpm_ptr + model * kpm_mstride + b * kpm_sb
{{- end}}
    qmask = (rl[:, None] < L) & (rd[None, :] < DH)
    q = tl.load(q_base + rl[:, None] * q_sl + rd[None, :], mask=qmask, other=0.0).to(tl.float32) * scale
{{- if .Half}}
    # fp16/bf16 data: q is scaled and rounded to the data's dtype (PyTorch's q / sqrt(d)); both
    # dots take operands of that dtype and accumulate in fp32, the scores stay fp32
    q = q.to({{.Half}})
{{- end}}
    m_i = tl.full((BLOCK_L,), -1.0e30, tl.float32)
    l_i = tl.zeros((BLOCK_L,), dtype=tl.float32)
    acc = tl.zeros((BLOCK_L, BLOCK_D), dtype=tl.float32)
    for s0 in range(0, S, BLOCK_S):
{{- template "scores" .}}
        m_new = tl.maximum(m_i, tl.max(s, axis=1))
        alpha = tl.exp(m_i - m_new)
        p = tl.exp(s - m_new[:, None])
        l_i = l_i * alpha + tl.sum(p, axis=1)
{{- template "drop" .}}
        vv = tl.load(v_base + rs[:, None] * v_sl + rd[None, :],
                     mask=(rs[:, None] < S) & (rd[None, :] < DH), other=0.0)
{{- if .Half}}
        # the probabilities rounded to the data's dtype for the second dot, as PyTorch does
        acc = acc * alpha[:, None] + tl.dot(p.to({{.Half}}), vv, input_precision=INPUT_PRECISION)
{{- else}}
        acc = acc * alpha[:, None] + tl.dot(p, vv, input_precision=INPUT_PRECISION)
{{- end}}
        m_i = m_new
    out = acc / l_i[:, None]
    tl.store(o_ptr + model * o_mstride + b * o_sb + h * DH + rl[:, None] * o_sl + rd[None, :], out, mask=qmask)
{{- if .Weights}}
    w_base = w_ptr + model * w_mstride + bh * L * S
    for s0 in range(0, S, BLOCK_S):
{{- template "scores" .}}
        p = tl.exp(s - m_i[:, None]) / l_i[:, None]
{{- template "drop" .}}
        tl.store(w_base + rl[:, None] * S + rs[None, :], p, mask=(rl[:, None] < L) & (rs[None, :] < S))
{{- end}}
