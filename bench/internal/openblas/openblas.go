package openblas

import (
	"strings"

	"golang.org/x/sys/cpu"
)

// CoreFor is the OpenBLAS core type (an OPENBLAS_CORETYPE value) for a CPU with AVX-512
// (F, BW, VL, DQ), AVX-512 BF16, and AVX2 with FMA; "" for none of them.
func CoreFor(avx512, bf16, avx2 bool) string {
	switch {
	case avx512 && bf16:
		return "Cooperlake"
	case avx512:
		return "SkylakeX"
	case avx2:
		return "Haswell"
	}
	return ""
}

// ThisCPU is CoreFor this machine's CPU.
func ThisCPU() string {
	return CoreFor(cpu.X86.HasAVX512F && cpu.X86.HasAVX512BW && cpu.X86.HasAVX512VL && cpu.X86.HasAVX512DQ,
		cpu.X86.HasAVX512BF16, cpu.X86.HasAVX2 && cpu.X86.HasFMA)
}

// Rank orders core types by the vector units their SGEMM kernels use: 2 for AVX-512, 1 for
// AVX2/FMA, 0 for anything older or unknown.
func Rank(core string) int {
	switch strings.ToLower(core) {
	case "skylakex", "cooperlake", "sapphirerapids":
		return 2
	case "haswell", "zen", "skylake", "excavator":
		return 1
	}
	return 0
}

// Override is the core type to force when OpenBLAS detected `detected` on this CPU, and
// whether to: only when detected ranks below what the CPU allows ("" detected: no OpenBLAS).
func Override(detected string) (string, bool) {
	want := ThisCPU()
	if detected == "" || Rank(detected) >= Rank(want) {
		return "", false
	}
	return want, true
}
