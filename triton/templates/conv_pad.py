{{- /*
Zero padding for conv_flat.py: x[plane, H, W] (plane = sample x channel, per model) copied into
the interior of o[plane, Hp, Wp], at element pad_off of each padded plane. The border is never
written: it keeps the zeros the buffer was allocated with (jit.Device.Alloc), so only H rows
of W move. Program (planes, -, model) copies PLANES_PER_PROGRAM planes, BLOCK_H x BLOCK_W tiles
at a time.
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
    x_ptr, x_mstride, o_ptr, o_mstride, H, W, Hp, Wp, pad_off, PLANES, PLANES_PER_PROGRAM,
    BLOCK_H: tl.constexpr, BLOCK_W: tl.constexpr,
):
    pid = tl.program_id(0)
    model = tl.program_id(2)
    rh = tl.arange(0, BLOCK_H)
    rw = tl.arange(0, BLOCK_W)
    p0 = pid * PLANES_PER_PROGRAM
    for plane in range(p0, min(p0 + PLANES_PER_PROGRAM, PLANES)):
        x_base = x_ptr + model * x_mstride + plane * H * W
        o_base = o_ptr + model * o_mstride + plane * Hp * Wp + pad_off
        for i0 in range(0, H, BLOCK_H):
            i = i0 + rh
            for j0 in range(0, W, BLOCK_W):
                j = j0 + rw
                inside = (i[:, None] < H) & (j[None, :] < W)
                v = tl.load(x_base + i[:, None] * W + j[None, :], mask=inside, other=0.0)
                tl.store(o_base + i[:, None] * Wp + j[None, :], v, mask=inside)
