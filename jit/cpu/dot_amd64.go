package cpu

import "golang.org/x/sys/cpu"

//go:noescape
func sgemmAVX2_4x16(k int, a *float32, lda int, b *float32, ldb int, c *float32, ldc int)

//go:noescape
func sgemmAVX512_16x16(k int, a *float32, lda int, b *float32, ldb int, c *float32, ldc int)

//go:noescape
func sgemmAVX512_8x16(k int, a *float32, lda int, b *float32, ldb int, c *float32, ldc int)

//go:noescape
func sgemmAVX512_8x32(k int, a *float32, lda int, b *float32, ldb int, c *float32, ldc int)

// The micro-kernel in use: c[microRows, microCols] += a[microRows, k] x b[k, microCols].
var (
	microKernel          func(k int, a *float32, lda int, b *float32, ldb int, c *float32, ldc int)
	microRows, microCols int
	microName            = "pure Go dot"

	// Narrow-tile kernels (16 columns, 16 or 8 rows) for the AVX-512 path, where a 16-wide
	// tile (tl.dot with N=16, common in convolutions) would otherwise run on the 32-wide
	// kernel through zero-padded copies. nil when the micro-kernel is not AVX-512.
	narrowKernel16, narrowKernel8 func(k int, a *float32, lda int, b *float32, ldb int, c *float32, ldc int)
)

func init() { selectMicroKernel(true) }

// selectMicroKernel picks the widest kernel the CPU supports (allowAVX512 false: AVX2 at
// most; tests use it to cover both).
func selectMicroKernel(allowAVX512 bool) {
	switch {
	case allowAVX512 && cpu.X86.HasAVX512F:
		microKernel, microRows, microCols, microName = sgemmAVX512_8x32, 8, 32, "AVX-512 dot"
		narrowKernel16, narrowKernel8 = sgemmAVX512_16x16, sgemmAVX512_8x16
		return
	}
	narrowKernel16, narrowKernel8 = nil, nil
	switch {
	case cpu.X86.HasAVX2 && cpu.X86.HasFMA:
		microKernel, microRows, microCols, microName = sgemmAVX2_4x16, 4, 16, "AVX2/FMA dot"
	default:
		microKernel, microRows, microCols, microName = nil, 1, 1, "pure Go dot"
	}
}

func dotKernelName() string { return microName }
