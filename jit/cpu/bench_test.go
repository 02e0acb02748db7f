package cpu

import (
	"os"
	"path/filepath"

	"github.com/widejit/widejit/triton/ir"
	"testing"

	"github.com/widejit/widejit/jit"
)

// Benchmarks of whole kernels (bench/kernels compares them against peers).

func BenchmarkElementwiseScaleShift(b *testing.B) {
	const n, block = 1 << 24, 16384
	k := loadKernel(b, filepath.Join(tutorialKernels, "vector_add.py"), "scale_shift_kernel",
		map[string]string{"x_ptr": "*fp32", "out_ptr": "*fp32", "n_elements": "i32", "scale": "fp32", "shift": "fp32"},
		map[string]any{"BLOCK_SIZE": int64(block)})
	x, _ := NewBuffer(ir.F32, n)
	y, _ := NewBuffer(ir.F32, n)
	args := []jit.Arg{{Buf: x}, {Buf: y}, {Scalar: int64(n)}, {Scalar: 2.0}, {Scalar: 1.0}}
	b.SetBytes(8 * n)
	for b.Loop() {
		if err := k.Launch(grid1(n/block), args); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkMatmul1024(b *testing.B) {
	const n, bm = 1024, 256
	k := loadKernel(b, filepath.Join(tutorialKernels, "matmul.py"), "matmul_kernel", matmulSig, map[string]any{
		"BLOCK_SIZE_M": int64(bm), "BLOCK_SIZE_N": int64(bm), "BLOCK_SIZE_K": int64(64), "GROUP_SIZE_M": int64(4), "ACTIVATION": ""})
	a, _ := NewBuffer(ir.F32, n*n)
	bb, _ := NewBuffer(ir.F32, n*n)
	c, _ := NewBuffer(ir.F32, n*n)
	b.SetBytes(2 * n * n * n) // "bytes" here are flops: MB/s reads as MFLOP/s
	for b.Loop() {
		if err := runMatmul(b, k, a, bb, c, n, n, n, bm, bm); err != nil {
			b.Fatal(err)
		}
	}
}

// Masked row loads whose masks and offsets are written with integer literals (iw >= 0,
// ow * 1 - 1): they stay symbolic and copy row by row instead of gathering.
func BenchmarkLiteralMaskConv(b *testing.B) {
	const c, w, blockC, blockP = 64, 1 << 14, 64, 64
	path := filepath.Join(b.TempDir(), "lit.py")
	if err := os.WriteFile(path, []byte(litConvSource), 0o644); err != nil {
		b.Fatal(err)
	}
	k := loadKernel(b, path, "lit_conv", map[string]string{"x_ptr": "*fp32", "out_ptr": "*fp32", "C": "i32", "W": "i32"},
		map[string]any{"BLOCK_C": int64(blockC), "BLOCK_P": int64(blockP)})
	x, _ := NewBuffer(ir.F32, c*w)
	y, _ := NewBuffer(ir.F32, c*w)
	args := []jit.Arg{{Buf: x}, {Buf: y}, {Scalar: int64(c)}, {Scalar: int64(w)}}
	for b.Loop() {
		if err := k.Launch(grid1(w/blockP), args); err != nil {
			b.Fatal(err)
		}
	}
}
