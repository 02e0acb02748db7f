// Package cpu is widejit's CPU backend and reference executor. Its Target encodes the tile IR
// as the artifact (ir.Encode); its Device decodes an artifact once into an executable program
// and runs a launch's programs in parallel on worker goroutines.
//
// Execution model: every SSA value of the kernel gets a slot holding a typed Go slice (fp16,
// bf16 and fp32 values in []float32, fp64 in []float64, every integer, i1 and pointer in
// []int64, normalized to its dtype's range after each operation). Slots are allocated once
// per worker and reused by every program that worker runs, so the steady state allocates
// nothing. Pointers are encoded as the bound buffer's tag (parameter index + 1) in the high
// 16 bits and the element offset in the low 48 bits, so selecting between pointers of
// different buffers works and every access can be checked against its own buffer.
//
// Every unmasked lane of every load, store and atomic is bounds-checked; a violation stops the
// launch with an error naming the kernel, the source position, the program id, the element
// offset and the buffer length. Masked lanes are never touched. Loads and stores whose pointer
// rows are consecutive are copied row by row; tl.dot runs on a blocked AVX2/FMA micro-kernel
// when the CPU has one (pure Go otherwise).
package cpu
