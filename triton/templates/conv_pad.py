{{- /*
Zero padding for conv_flat.py: x[plane, H, W] (plane = sample x channel, per model) copied into
the interior of o[plane, Hp, Wp], at element pad_off of each padded plane. The border is never
written: it keeps the zeros the buffer was allocated with (jit.Device.Alloc), so only H rows
of W move. Program (planes, -, model) copies BLOCK_PL planes.
Data: Fn, Header.
*/ -}}
import triton
import triton.language as tl


# widejit kernel {{.Fn}} (template conv_pad.py)
{{- range .Header}}
# {{.}}
{{- end}}
@triton.jit
def {{.Fn}}(
    x_ptr, x_mstride, o_ptr, o_mstride, H, W, Hp, Wp, pad_off, PLANES,
    BLOCK_PL: tl.constexpr, BLOCK_W: tl.constexpr,
):
    # one image row i of BLOCK_PL planes at a time: both tiles [plane, column] are affine
    # (planes H*W apart in x, Hp*Wp apart in o), so each moves as rows after one bounds check
    pid = tl.program_id(0)
    model = tl.program_id(2)
    pl = pid * BLOCK_PL + tl.arange(0, BLOCK_PL)
    rw = tl.arange(0, BLOCK_W)
    x_base = x_ptr + model * x_mstride
    o_base = o_ptr + model * o_mstride + pad_off
    for i in range(0, H):
        for j0 in range(0, W, BLOCK_W):
            j = j0 + rw
            inside = (pl[:, None] < PLANES) & (j[None, :] < W)
            v = tl.load(x_base + pl[:, None] * (H * W) + i * W + j[None, :], mask=inside, other=0.0)
            tl.store(o_base + pl[:, None] * (Hp * Wp) + i * Wp + j[None, :], v, mask=inside)
