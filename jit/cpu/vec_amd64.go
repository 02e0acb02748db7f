package cpu

import (
	"math"
	"sync"
	"unsafe"

	"golang.org/x/sys/cpu"
)

//go:noescape
func addVVAVX2(x, y, z *float32, n int)

//go:noescape
func subVVAVX2(x, y, z *float32, n int)

//go:noescape
func mulVVAVX2(x, y, z *float32, n int)

//go:noescape
func divVVAVX2(x, y, z *float32, n int)

//go:noescape
func maxVVAVX2(x, y, z *float32, n int)

//go:noescape
func sumRowAVX2(x *float32, n int) float64

//go:noescape
func extremeRowAVX2(x *float32, n int, op int) float32

//go:noescape
func minVVAVX2(x, y, z *float32, n int)

//go:noescape
func addVSAVX2(x, z *float32, n int, s float32)

//go:noescape
func mulVSAVX2(x, z *float32, n int, s float32)

//go:noescape
func subSVAVX2(x, z *float32, n int, s float32)

//go:noescape
func divSVAVX2(x, z *float32, n int, s float32)

//go:noescape
func divVSAVX2(x, z *float32, n int, s float32)

//go:noescape
func maxPropVVAVX2(x, y, z *float32, n int)

//go:noescape
func minPropVVAVX2(x, y, z *float32, n int)

//go:noescape
func maxPropVSAVX2(x, z *float32, n int, s float32)

//go:noescape
func minPropVSAVX2(x, z *float32, n int, s float32)

//go:noescape
func epilogueRowsAVX2(c *float32, ldc, rows, n int, mul, add *float32, floor float32, flags int, bias, tile *float32, ldt int)

var haveVecAVX2 = cpu.X86.HasAVX2

// vecF32 computes z = x op y (op: '+', '-', '*', '/', 'M' maxNum32, 'm' minNum32, 'N' maxProp, 'n' minProp) for len(z) lanes with AVX2 where it can;
// it returns how many leading lanes it did (a multiple of 32), the caller does the rest.
func vecF32(op byte, x, y, z []float32) int {
	n := len(z) &^ 31
	if !haveVecAVX2 || n == 0 {
		return 0
	}
	_, _ = x[n-1], y[n-1]
	switch op {
	case '+':
		addVVAVX2(&x[0], &y[0], &z[0], n)
	case '-':
		subVVAVX2(&x[0], &y[0], &z[0], n)
	case '*':
		mulVVAVX2(&x[0], &y[0], &z[0], n)
	case '/':
		divVVAVX2(&x[0], &y[0], &z[0], n)
	case 'M':
		maxVVAVX2(&x[0], &y[0], &z[0], n)
	case 'm':
		minVVAVX2(&x[0], &y[0], &z[0], n)
	case 'N':
		maxPropVVAVX2(&x[0], &y[0], &z[0], n)
	case 'n':
		minPropVVAVX2(&x[0], &y[0], &z[0], n)
	default:
		return 0
	}
	return n
}

// vecF32Scalar computes z = x op s ('+', '*', '/'), z = s - x for op 'r', z = s / x for op 'q',
// maxProp(x, s) ('N') and minProp(x, s) ('n') for a scalar s that is not NaN, or x's bits
// xored with s's ('^').
func vecF32Scalar(op byte, x []float32, s float32, z []float32) int {
	n := len(z) &^ 31
	if !haveVecAVX2 || n == 0 {
		return 0
	}
	_ = x[n-1]
	switch op {
	case '+':
		addVSAVX2(&x[0], &z[0], n, s)
	case '*':
		mulVSAVX2(&x[0], &z[0], n, s)
	case 'r':
		subSVAVX2(&x[0], &z[0], n, s)
	case 'q':
		divSVAVX2(&x[0], &z[0], n, s)
	case '/':
		divVSAVX2(&x[0], &z[0], n, s)
	case 'N':
		maxPropVSAVX2(&x[0], &z[0], n, s)
	case 'n':
		minPropVSAVX2(&x[0], &z[0], n, s)
	case '^':
		xorVSAVX2(&x[0], &z[0], n, s)
	default:
		return 0
	}
	return n
}

//go:noescape
func addColsAVX2(x, col, z *float32, rows, n int)

//go:noescape
func mulColsAVX2(x, col, z *float32, rows, n int)

// vecColumnRows computes z = x op col[r] (op '+' or '*') for the whole rows of n lanes in z,
// row r against col[r], when n is a multiple of 8 short enough that the per-row 32-lane
// loops would leave a scalar tail or cost a call per few lanes (n < 128); it returns how
// many rows it did (0: none, the caller loops).
func vecColumnRows(op byte, x, col, z []float32, n int) int {
	rows := 0
	if n > 0 {
		rows = len(z) / n
	}
	if !haveVecAVX2 || n%8 != 0 || n >= 128 || rows == 0 {
		return 0
	}
	_, _ = x[rows*n-1], col[rows-1]
	switch op {
	case '+':
		addColsAVX2(&x[0], &col[0], &z[0], rows, n)
	case '*':
		mulColsAVX2(&x[0], &col[0], &z[0], rows, n)
	default:
		return 0
	}
	return rows
}

//go:noescape
func xorVSAVX2(x, z *float32, n int, s float32)

//go:noescape
func copyNTAVX(dst, src *float32, n int)

//go:noescape
func copyNTAVX512(dst, src *float32, n int)

var haveAVX512 = cpu.X86.HasAVX512F

// storeF32 copies src into dst, a row of a buffer of bufBytes bytes, with non-temporal
// stores when the row is long and the buffer much larger than the caches.
func storeF32(dst, src []float32, bufBytes int) {
	n := len(dst)
	if !haveVecAVX2 || n < streamMinRow || bufBytes < streamMinBufferBytes {
		copy(dst, src)
		return
	}
	src = src[:n]
	if uintptr(unsafe.Pointer(&dst[0]))%4 != 0 {
		copy(dst, src)
		return
	}
	// Align the destination to a cache line, stream whole blocks, copy the tail.
	head := int((64 - uintptr(unsafe.Pointer(&dst[0]))%64) % 64 / 4)
	copy(dst[:head], src[:head])
	body := (n - head) &^ 63
	if body > 0 {
		if haveAVX512 {
			copyNTAVX512(&dst[head], &src[head], body)
		} else {
			copyNTAVX(&dst[head], &src[head], body)
		}
	}
	copy(dst[head+body:], src[head+body:])
}

//go:noescape
func evenLanesAVX2(dst, src *float32, n int)

// evenLanes sets dst[j] = src[2j] for the leading lanes it can with AVX2 (a multiple of 8,
// within both slices: src holds every lane it reads) and returns how many; the caller does
// the rest.
func evenLanes(dst, src []float32) int {
	n := min(len(dst), len(src)/2) &^ 7
	if !haveVecAVX2 || n == 0 {
		return 0
	}
	evenLanesAVX2(&dst[0], &src[0], n)
	return n
}

//go:noescape
func transposeStripAVX2(dst, src *float32, blocks, srcStride, dstStride int)

// transposeBlocks transposes the leading [rows&^7, cols&^7] corner of src [rows, cols] into
// dst [cols, rows] with AVX2 8x8 blocks; it returns the corner's size (0, 0 without AVX2).
func transposeBlocks(dst, src []float32, rows, cols int) (int, int) {
	r8, c8 := rows&^7, cols&^7
	if !haveVecAVX2 || r8 == 0 || c8 == 0 {
		return 0, 0
	}
	// Bounds that the assembly relies on, checked once here.
	_ = src[(r8-1)*cols+c8-1]
	_ = dst[(c8-1)*rows+r8-1]
	for i := 0; i < r8; i += 8 {
		transposeStripAVX2(&dst[i], &src[i*cols], c8/8, cols*4, rows*4)
	}
	return r8, c8
}

//go:noescape
func mulAddVSSAVX2(x, z *float32, n int, a, b float32)

// vecMulAddF32 computes z = x*a + b (two roundings) for the leading lanes it can; it returns
// how many it did.
func vecMulAddF32(x []float32, a, b float32, z []float32) int {
	n := len(z) &^ 31
	if !haveVecAVX2 || n == 0 {
		return 0
	}
	_ = x[n-1]
	mulAddVSSAVX2(&x[0], &z[0], n, a, b)
	return n
}

//go:noescape
func mulAddVVAVX2(x, y, a, z *float32, n int)

// vecMulAddVV computes z = a + x*y (two roundings) for the leading lanes it can, a multiple of
// 8 (the rows of a depthwise tap are as short as 16); it returns how many it did.
func vecMulAddVV(x, y, a, z []float32) int {
	n := len(z) &^ 7
	if !haveVecAVX2 || n == 0 {
		return 0
	}
	_, _, _ = x[n-1], y[n-1], a[n-1]
	mulAddVVAVX2(&x[0], &y[0], &a[0], &z[0], n)
	return n
}

//go:noescape
func mulAddRowsAVX2(x, w, a, z *float32, rows, n int)

// vecMulAddRows computes z = a + x*w for whole rows of n lanes, w one row read for every row,
// when it can (n a multiple of 8); it reports whether it did.
func vecMulAddRows(x, w, a, z []float32, n int) bool {
	if !haveVecAVX2 || n == 0 || n%8 != 0 || len(z)%n != 0 || len(z) == 0 {
		return false
	}
	_, _, _ = x[len(z)-1], w[n-1], a[len(z)-1]
	mulAddRowsAVX2(&x[0], &w[0], &a[0], &z[0], len(z)/n, n)
	return true
}

//go:noescape
func erfF32AVX2(x, z *float32, n int, flags *uint8, table *float64) int

//go:noescape
func erfF32AVX512(x, z *float32, n int, flags *uint8, table *float64) int

// erfAVX512 picks erfF32AVX512 (8 lanes at a time, erfWide) over erfF32AVX2 (4 lanes, the
// erf32 grid); tests turn it off to exercise the AVX2 loop.
var erfAVX512 = haveAVX512

// erfF32Vec computes z = erf32(x) for the leading lanes it can (a multiple of 4) with
// AVX-512 or AVX2 (both with FMA); it returns how many it did.
func erfF32Vec(x, z []float32) int { return erfF32VecWith(erfAVX512, x, z) }

// erfF32VecWith is erfF32Vec with the AVX-512 loop on or off.
func erfF32VecWith(wide bool, x, z []float32) int {
	if !haveVecFMA {
		return 0
	}
	return flaggedLoops(x, z, wide,
		func(x, z *float32, n int, flags *uint8) int { return erfF32AVX512(x, z, n, flags, &erfWideTab[0][0]) },
		func(x, z *float32, n int, flags *uint8) int { return erfF32AVX2(x, z, n, flags, &erfTaylor[0][0]) },
		math.Erf)
}

// A flaggedKernel computes z = f(x) for n lanes and sets bit l of flags[g] for each lane
// w*g+l (w its width) that the caller must recompute exactly; it returns the OR of the
// flags.
type flaggedKernel func(x, z *float32, n int, flags *uint8) int

// flaggedLoops runs an 8-lane kernel (when wide) then a 4-lane one over the leading lanes of
// z (a multiple of 4), in chunks of one flag buffer, recomputing flagged lanes with exact;
// it returns how many lanes it did.
// flagBufs holds flaggedLoops' flag buffers: one on the stack escaped through the kernel
// func values, an allocation per call (erf over a fused GELU's chunks made most of a
// transformer run's allocations).
var flagBufs = sync.Pool{New: func() any { return new([256]uint8) }}

func flaggedLoops(x, z []float32, wide bool, k8, k4 flaggedKernel, exact func(float64) float64) int {
	n := len(z) &^ 3
	if n == 0 {
		return 0
	}
	x = x[:n]
	fp := flagBufs.Get().(*[256]uint8)
	defer flagBufs.Put(fp)
	flags := fp[:]
	off := 0
	run := func(k flaggedKernel, w, end int) {
		for ; off < end; off += w * len(flags) {
			m := min(w*len(flags), end-off)
			if k(&x[off], &z[off], m, &flags[0]) == 0 {
				continue
			}
			for g, f := range flags[:m/w] {
				for l := 0; f != 0; l, f = l+1, f>>1 {
					if f&1 != 0 {
						i := off + w*g + l
						z[i] = float32(exact(float64(x[i])))
					}
				}
			}
		}
		off = end
	}
	if wide {
		run(k8, 8, n&^7) // a last group of 4 goes to the 4-lane loop
	}
	run(k4, 4, n)
	return n
}

//go:noescape
func expF32AVX2(x, z *float32, n int, flags *uint8, table *[4]float64) int

//go:noescape
func expF32AVX512(x, z *float32, n int, flags *uint8, table *[4]float64) int

// haveVecFMA gates the exp loop (FMA is separate from AVX2 in CPUID).
var haveVecFMA = cpu.X86.HasAVX2 && cpu.X86.HasFMA

// expF32Vec computes z = exp32(x) for the leading lanes it can (a multiple of 4) with AVX2 and
// FMA; it returns how many it did.
func expF32Vec(x, z []float32) int { return expF32VecWith(expAVX512, x, z) }

// expAVX512 picks expF32AVX512 (8 lanes at a time) for all but a last group of 4 lanes; the
// values are the same as expF32AVX2's (tests switch it to compare).
var expAVX512 = haveAVX512 && haveVecFMA

func expF32VecWith(wide bool, x, z []float32) int {
	if !haveVecFMA {
		return 0
	}
	return flaggedLoops(x, z, wide,
		func(x, z *float32, n int, flags *uint8) int { return expF32AVX512(x, z, n, flags, &expVecConst[0]) },
		func(x, z *float32, n int, flags *uint8) int { return expF32AVX2(x, z, n, flags, &expVecConst[0]) },
		math.Exp)
}

//go:noescape
func nonFiniteAVX2(x *float32, n int) bool

// allFinite reports whether the rows x cols block of x (leading dimension ld) holds no
// infinity or NaN.
func allFinite(x []float32, rows, cols, ld int) bool {
	if rows == 0 || cols == 0 {
		return true
	}
	_ = x[(rows-1)*ld+cols-1]
	for r := range rows {
		row := x[r*ld : r*ld+cols]
		n := 0
		if haveVecAVX2 {
			n = cols &^ 7
			if n > 0 && nonFiniteAVX2(&row[0], n) {
				return false
			}
		}
		if !allFiniteGo(row[n:]) {
			return false
		}
	}
	return true
}

// transposeRect transposes the leading 8x8 blocks of the rows x cols block of src (leading
// dimension lds) into dst (leading dimension ldd); it returns the rows and columns it did.
func transposeRect(dst []float32, ldd int, src []float32, lds, rows, cols int) (int, int) {
	r8, c8 := rows&^7, cols&^7
	if !haveVecAVX2 || r8 == 0 || c8 == 0 {
		return 0, 0
	}
	_ = src[(r8-1)*lds+c8-1]
	_ = dst[(c8-1)*ldd+r8-1]
	for i := 0; i < r8; i += 8 {
		transposeStripAVX2(&dst[i], &src[i*lds], c8/8, lds*4, ldd*4)
	}
	return r8, c8
}
