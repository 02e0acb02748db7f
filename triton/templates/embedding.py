{{- /*
Embedding lookup: program (token block, model) gathers BLOCK_T rows of model `model`'s table
(its own weights, indexed by its own, or the shared, indices) in BLOCK_D column slices. An
index outside the model's V rows fails the run, as PyTorch's IndexError does: rows V and
beyond are the next model's table, which no bounds check on the wide buffer would catch.
Data: Fn, Header.
*/ -}}
import triton
import triton.language as tl


# widejit kernel {{.Fn}} (template embedding.py)
{{- range .Header}}
# {{.}}
{{- end}}
@triton.jit
def {{.Fn}}(
    idx_ptr, idx_mstride,
    w_ptr, w_mstride,
    out_ptr, out_mstride,
    T, V, D,
    BLOCK_T: tl.constexpr, BLOCK_D: tl.constexpr,
):
    pid = tl.program_id(0)
    model = tl.program_id(1)
    rt = pid * BLOCK_T + tl.arange(0, BLOCK_T)
    tmask = rt < T
    ids = tl.load(idx_ptr + model * idx_mstride + rt, mask=tmask, other=0)
    # 0 <= ids < V in one unsigned compare (a negative id wraps past V); masked lanes hold 0
    tl.device_assert(ids.to(tl.uint64) < V, "embedding index out of range")
    rd0 = tl.arange(0, BLOCK_D)
    for d0 in range(0, D, BLOCK_D):
        rd = d0 + rd0
        msk = tmask[:, None] & (rd[None, :] < D)
        v = tl.load(w_ptr + model * w_mstride + ids[:, None] * D + rd[None, :], mask=msk, other=0.0)
        tl.store(out_ptr + model * out_mstride + rt[:, None] * D + rd[None, :], v, mask=msk)
