{{- /*
Zero padding for conv_flat.py: x[plane, H, W] (plane = sample x channel, per model) copied into
the interior of o[plane, Hp, Wp] = [H + 2*pad_h, W + 2*pad_w], the border written as zeros.
Program (plane, -, model) fills one padded plane, BLOCK_H x BLOCK_W tiles at a time; the
source rows are contiguous and the padding is four interval conditions.
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
    x_ptr, x_mstride, o_ptr, o_mstride, H, W, Hp, Wp, pad_h, pad_w,
    BLOCK_H: tl.constexpr, BLOCK_W: tl.constexpr,
):
    plane = tl.program_id(0)
    model = tl.program_id(2)
    x_base = x_ptr + model * x_mstride + plane * H * W
    o_base = o_ptr + model * o_mstride + plane * Hp * Wp
    rh = tl.arange(0, BLOCK_H)
    rw = tl.arange(0, BLOCK_W)
    for i0 in range(0, Hp, BLOCK_H):
        ip = i0 + rh
        for j0 in range(0, Wp, BLOCK_W):
            jp = j0 + rw
            inside = (ip[:, None] >= pad_h) & (ip[:, None] < H + pad_h) & (jp[None, :] >= pad_w) & (jp[None, :] < W + pad_w)
            v = tl.load(x_base + (ip[:, None] - pad_h) * W + (jp[None, :] - pad_w), mask=inside, other=0.0)
            tl.store(o_base + ip[:, None] * Wp + jp[None, :], v, mask=(ip[:, None] < Hp) & (jp[None, :] < Wp))
