package cpu

import "golang.org/x/sys/cpu"

//go:generate go run dot_asm_gen.go

func init() { selectMicroKernel(true) }

// selectMicroKernel picks the widest kernels the CPU supports (allowAVX512 false: AVX2 at
// most; tests use it to cover both).
func selectMicroKernel(allowAVX512 bool) {
	switch {
	case allowAVX512 && cpu.X86.HasAVX512F:
		gemmWide = gemmStrip{w: 32, mr: 8, kern: kernelsAVX512_32[:], masked: kernelsAVX512_32masked[:]}
		gemmNarrow = gemmStrip{w: 16, mr: 16, kern: kernelsAVX512_16[:], masked: kernelsAVX512_16masked[:]}
		gemmWideEdge = gemmStrip{w: 48, mr: 8, masked: kernelsAVX512_48masked[:]}
		gemmShort = gemmStrip{w: 64, mr: 4, kern: kernelsAVX512_64[:]}
		gemmPanelKernel, panelRows, panelCols = sgemmAVX512_8x32panels, 8, 32
		gemmSIMD, microName = true, "AVX-512 dot"
	case cpu.X86.HasAVX2 && cpu.X86.HasFMA:
		gemmWide = gemmStrip{w: 16, mr: 6, kern: kernelsAVX2_16[:]}
		gemmNarrow = gemmStrip{w: 8, mr: 12, kern: kernelsAVX2_8[:]}
		gemmWideEdge = gemmStrip{}
		gemmShort = gemmStrip{w: 24, mr: 4, kern: kernelsAVX2_24[:]}
		gemmPanelKernel, panelRows, panelCols = sgemmAVX2_6x16panels, 6, 16
		gemmSIMD, microName = true, "AVX2/FMA dot"
	default:
		gemmSIMD, microName = false, "pure Go dot"
		gemmPanelKernel = nil
	}
}
