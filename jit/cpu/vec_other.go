//go:build !amd64

package cpu

var (
	haveVecAVX2 = false
	haveVecFMA  = false
	haveAVX512  = false
	erfAVX512   = false
	expAVX512   = false
)

func vecF32(op byte, x, y, z []float32) int { return 0 }

func vecF32Scalar(op byte, x []float32, s float32, z []float32) int { return 0 }

func storeF32(dst, src []float32, bufBytes int) { copy(dst, src) }

func transposeBlocks(dst, src []float32, rows, cols int) (int, int) { return 0, 0 }

func evenLanes(dst, src []float32) int { return 0 }

func vecMulAddF32(x []float32, a, b float32, z []float32) int { return 0 }

func vecMulAddVV(x, y, a, z []float32) int { return 0 }

func vecMulAddRows(x, w, a, z []float32, n int) bool { return false }

func vecColumnRows(op byte, x, col, z []float32, n int) int { return 0 }

func erfF32Vec(x, z []float32) int { return 0 }

func erfF32VecWith(wide bool, x, z []float32) int { return 0 }

func expF32Vec(x, z []float32) int { return 0 }

func allFinite(x []float32, rows, cols, ld int) bool {
	for r := range rows {
		if !allFiniteGo(x[r*ld : r*ld+cols]) {
			return false
		}
	}
	return true
}

func transposeRect(dst []float32, ldd int, src []float32, lds, rows, cols int) (int, int) {
	return 0, 0
}

func sumRowAVX2(x *float32, n int) float64 { panic("unreachable: no AVX2") }

func extremeRowAVX2(x *float32, n int, op int) float32 { panic("unreachable: no AVX2") }

func epilogueRowsAVX2(c *float32, ldc, rows, n int, mul, add *float32, floor float32, flags int, bias, tile *float32, ldt int) {
	panic("unreachable: no AVX2")
}
