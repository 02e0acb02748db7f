package cpu

import (
	"encoding/binary"
	"fmt"

	"golang.org/x/sys/cpu"
)

//go:generate go run dot_asm_gen.go

func init() {
	tallRows = vendor() == "AuthenticAMD"
	selectMicroKernel(true)
}

// cpuVendor returns CPUID leaf 0's vendor string registers (in the string's order).
func cpuVendor() (ebx, edx, ecx uint32)

// vendor is the CPU's vendor string: "GenuineIntel", "AuthenticAMD", ...
func vendor() string {
	ebx, edx, ecx := cpuVendor()
	b := binary.LittleEndian.AppendUint32(nil, ebx)
	b = binary.LittleEndian.AppendUint32(b, edx)
	return string(binary.LittleEndian.AppendUint32(b, ecx))
}

// selectMicroKernel picks the widest kernels the CPU supports (allowAVX512 false: AVX2 at
// most; tests use it to cover both), under AVX-512 with 12-row tiles when tallRows is set.
func selectMicroKernel(allowAVX512 bool) {
	switch {
	case allowAVX512 && cpu.X86.HasAVX512F:
		gemmWide = gemmStrip{w: 32, mr: 8, kern: kernelsAVX512_32[:], masked: kernelsAVX512_32masked[:], stream: kernelsAVX512_32stream[:]}
		panelKernels, panelCols = []panelKernel{{8, sgemmAVX512_8x32panels, nil, sgemmAVX512_8x32panelsstream, sgemmAVX512_8x32panelspair}}, 32
		panelWide.cols, panelWide.run = 48, sgemmAVX512_8x48panels
		if tallRows {
			gemmWide.mr = 12
			panelKernels = []panelKernel{{12, sgemmAVX512_12x32panels, nil, sgemmAVX512_12x32panelsstream, sgemmAVX512_12x32panelspair}, {8, sgemmAVX512_8x32panels, nil, sgemmAVX512_8x32panelsstream, sgemmAVX512_8x32panelspair}}
			panelWide.cols, panelWide.run = 0, nil
		}
		panelPadEdge = false
		gemmNarrow = gemmStrip{w: 16, mr: 16, kern: kernelsAVX512_16[:], masked: kernelsAVX512_16masked[:]}
		gemmWideEdge = gemmStrip{w: 48, mr: 8, masked: kernelsAVX512_48masked[:], maskedStream: kernelsAVX512_48maskedstream[:]}
		gemmShort = gemmStrip{w: 64, mr: 4, kern: kernelsAVX512_64[:]}
		gemvKern, gemvLanes = gemvKernelsAVX512[:], 16
		gemmSIMD, microName = true, fmt.Sprintf("AVX-512 dot, %dx32 tiles", gemmWide.mr)
	case cpu.X86.HasAVX2 && cpu.X86.HasFMA:
		gemmWide = gemmStrip{w: 16, mr: 6, kern: kernelsAVX2_16[:], stream: kernelsAVX2_16stream[:]}
		gemmNarrow = gemmStrip{w: 8, mr: 12, kern: kernelsAVX2_8[:]}
		gemmWideEdge = gemmStrip{}
		gemmShort = gemmStrip{w: 24, mr: 4, kern: kernelsAVX2_24[:]}
		panelKernels, panelCols = []panelKernel{{6, sgemmAVX2_6x16panels, sgemmAVX2_6x8panels, sgemmAVX2_6x16panelsstream, sgemmAVX2_6x16panelspair},
			{4, sgemmAVX2_4x16panels, sgemmAVX2_4x8panels, sgemmAVX2_4x16panelsstream, sgemmAVX2_4x16panelspair}}, 16
		panelWide.cols, panelWide.run = 0, nil
		panelPadEdge = true
		gemvKern, gemvLanes = gemvKernelsAVX2[:], 8
		gemmSIMD, microName = true, "AVX2/FMA dot, 6x16 tiles"
	default:
		gemvKern = nil
		gemmSIMD, microName = false, "pure Go dot"
		panelKernels = nil
		panelWide.cols, panelWide.run = 0, nil
		panelPadEdge = false
	}
}
