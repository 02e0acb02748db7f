package cpu

// packStripsAVX copies rows rows of strips*w floats (src rows lds apart) into strips [rows,
// w] panels stride apart, prefetching ahead rows further down src (pack_amd64.s).
//
//go:noescape
func packStripsAVX(dst *float32, stride int, src *float32, lds, rows, strips, w, ahead int)

// packStripsAsm: packStripsAVX exists (gemmF32 runs it only on its SIMD paths, AVX2 at least).
const packStripsAsm = true
