package cpu

import (
	"strings"
	"testing"

	"github.com/widejit/widejit/jit"
)

// TestWildOffsetsAreOutOfBounds: offsets past the 48-bit pointer encoding used to wrap
// (x + offs + 2**48 read x[offs] with no error; 2**47 + 7 was reported as negative). Every
// such access is now an out-of-bounds error naming the kernel, the load's line:col and the
// true offset, on the symbolic (lazy) and the element-by-element paths alike; masked lanes
// may still hold such pointers.
func TestWildOffsetsAreOutOfBounds(t *testing.T) {
	const file = "testdata/wild.py"
	sig := map[string]string{"x_ptr": "*fp32", "out_ptr": "*fp32", "shift": "i64"}
	cases := []struct {
		name, fn string
		shift    int64
		consts   map[string]any
		line     string
		offset   string // a prefix of the offset the message must name
	}{
		{"2^48", "far_kernel", 1 << 48, nil, ":10:", "element offset 2814749767106"},
		{"2^47+7", "far_kernel", 1<<47 + 7, nil, ":10:", "element offset 1407374883553"},
		{"-2^48", "far_kernel", -1 << 48, nil, ":10:", "element offset -2814749767106"},
		{"2^62", "far_kernel", 1 << 62, nil, ":10:", "element offset 46116860184273879"},
		{"max int64", "far_kernel", 1<<63 - 1, nil, ":10:", "beyond int64"},
		{"constexpr 2^48", "far_const_kernel", 0, map[string]any{"SHIFT": int64(1) << 48}, ":17:", "element offset 2814749767106"},
		{"row stride 2^44", "strided_kernel", 1 << 44, nil, ":24:", "element offset "},
	}
	for _, lazy := range []bool{true, false} {
		for _, c := range cases {
			t.Run(c.name+map[bool]string{true: "/lazy", false: "/eager"}[lazy], func(t *testing.T) {
				disableLazy = !lazy
				defer func() { disableLazy = false }()
				consts := map[string]any{"BLOCK": int64(16)}
				for k, v := range c.consts {
					consts[k] = v
				}
				s := sig
				if c.fn == "far_const_kernel" {
					s = map[string]string{"x_ptr": "*fp32", "out_ptr": "*fp32"}
				} else if c.fn == "strided_kernel" {
					s = map[string]string{"x_ptr": "*fp32", "out_ptr": "*fp32", "stride": "i64"}
				}
				k := loadKernel(t, file, c.fn, s, consts)
				x := f32Buf(t, make([]float32, 1<<10))
				out := f32Buf(t, make([]float32, 1<<10))
				args := []jit.Arg{buf(x), buf(out)}
				if c.fn != "far_const_kernel" {
					args = append(args, scalar(c.shift))
				}
				err := k.Launch(grid1(1), args)
				if err == nil {
					t.Fatal("no error: the offset wrapped onto a valid element")
				}
				msg := err.Error()
				for _, want := range []string{"kernel " + c.fn, file + c.line, "load out of bounds", c.offset, "x_ptr"} {
					if !strings.Contains(msg, want) {
						t.Errorf("error %q lacks %q", msg, want)
					}
				}
				if c.shift > 0 && strings.Contains(msg, "offset -") {
					t.Errorf("a positive offset reported as negative: %q", msg)
				}
			})
		}
	}
	// Masked lanes may point anywhere.
	k := loadKernel(t, file, "masked_far_kernel", sig, map[string]any{"BLOCK": int64(16)})
	x := f32Buf(t, make([]float32, 16))
	out := f32Buf(t, make([]float32, 16))
	if err := k.Launch(grid1(1), []jit.Arg{buf(x), buf(out), scalar(int64(1) << 48)}); err != nil {
		t.Fatalf("masked wild lanes: %v", err)
	}
}
