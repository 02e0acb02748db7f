package cpu

//go:noescape
func fmaLoopAVX512(n int)

//go:noescape
func fmaLoopAVX2(n int)

// fmaLoop runs n iterations of independent multiply-adds on the instruction set of the dot
// micro-kernels in use and returns the flops done (0 where tl.dot runs in pure Go).
func fmaLoop(n int) float64 {
	switch {
	case !gemmSIMD:
		return 0
	case gemmWide.w == 32: // AVX-512: 16 FMAs of 16 lanes
		fmaLoopAVX512(n)
		return float64(n) * 16 * 16 * 2
	default: // AVX2: 12 FMAs of 8 lanes
		fmaLoopAVX2(n)
		return float64(n) * 12 * 8 * 2
	}
}
