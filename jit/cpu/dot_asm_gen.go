//go:build ignore

// dot_asm_gen.go writes dot_kernels_amd64.s and dot_kernels_amd64.go: the register-blocked
// fp32 gemm micro-kernels c[R, W] += a[R, k] x b[k, W] (row-major, leading dimensions in
// elements, k >= 1) for every row count R of each kernel family, so that no edge of a gemm
// falls back to scalar code. Run with go generate (see dot_amd64.go).
package main

import (
	"fmt"
	"os"
	"strings"
)

// A family is one register tile shape: vecs vectors of lanes floats per row (W = vecs*lanes
// columns), R = 1..maxR rows, each row's accumulators in registers for the whole k loop.
type family struct {
	isa         string // "AVX512" (Z registers) or "AVX2" (Y registers, FMA3)
	vecs, lanes int
	maxR        int
	regs        int
	masked      bool // the last vector of each row loads and stores through the mask K1
	panels      bool // maxR rows only, summing a list of operand panels (gemmPanel) into c
	stream      bool // every 16 k steps, prefetch each row of a streamAhead bytes ahead
	pair        bool // panels, 2 vectors: the second vector of b and c off elements past the first (an argument)
}

// streamAhead is how far ahead along its row (bytes) a stream kernel prefetches a: 8 blocks
// of 16 k steps, several hundred cycles of FMAs, more than a miss to the L3 or memory takes.
// Past a row's end the prefetches reach its continuation, the next k block of a row-major
// weight (what a tiled GEMM's next dot reads).
const streamAhead = 512

var families = []family{
	{"AVX512", 2, 16, 12, 32, false, false, false, false}, // 8x32 main tile (12x32 measured too)
	{"AVX512", 2, 16, 12, 32, false, false, true, false},  // the same, a streamed from memory
	{"AVX512", 1, 16, 16, 32, false, false, false, false}, // 16-wide strips
	{"AVX512", 2, 16, 12, 32, true, false, false, false},  // right edges of 17-31 columns
	{"AVX512", 1, 16, 16, 32, true, false, false, false},  // right edges of 1-15 columns
	{"AVX512", 3, 16, 8, 32, true, false, false, false},   // the last 32-wide strip and a right edge of 1-15 columns
	{"AVX512", 3, 16, 8, 32, true, false, true, false},    // the same, a streamed from memory: 48-wide strips over a far weight
	{"AVX512", 4, 16, 4, 32, false, false, false, false},  // few rows: 64 wide, 4-16 accumulators
	{"AVX2", 3, 8, 4, 16, false, false, false, false},     // few rows: 24 wide, 3-12 accumulators
	{"AVX2", 2, 8, 6, 16, false, false, false, false},     // 6x16 main tile: 12 accumulators, 2 B vectors, 2 broadcasts
	{"AVX2", 2, 8, 6, 16, false, false, true, false},      // the same, a streamed from memory
	{"AVX2", 1, 8, 12, 16, false, false, false, false},    // 8-wide strips and narrow edges
	{"AVX512", 2, 16, 8, 32, false, true, false, false},   // 8x32 over panels: a convolution's taps
	{"AVX512", 3, 16, 8, 32, false, true, false, false},   // 8x48 over panels: 24 accumulators, 3 B vectors a broadcast
	{"AVX512", 2, 16, 12, 32, false, true, false, false},  // 12x32 over panels (AMD Zen)
	{"AVX512", 2, 16, 8, 32, false, true, true, false},    // 8x32 and 12x32 over panels, a streamed from memory (row blocks outside)
	{"AVX512", 2, 16, 12, 32, false, true, true, false},
	{"AVX2", 2, 8, 6, 16, false, true, false, false}, // 6x16 over panels
	{"AVX2", 2, 8, 4, 16, false, true, false, false}, // 4x16 over panels: the rows 6-row blocks leave (64 = 10 x 6 + 4)
	{"AVX2", 2, 8, 6, 16, false, true, true, false},  // 6x16 and 4x16 over panels, a streamed from memory
	{"AVX2", 2, 8, 4, 16, false, true, true, false},
	{"AVX2", 1, 8, 6, 16, false, true, false, false}, // 6x8 and 4x8 over panels: right edges of 1-8 columns, zero-padded
	{"AVX2", 1, 8, 4, 16, false, true, false, false},
	{"AVX512", 2, 16, 12, 32, false, true, false, true}, // 12x32 and 8x32 over panels, the second vector off past the first: two rows of a 16-wide map
	{"AVX512", 2, 16, 8, 32, false, true, false, true},
	{"AVX2", 2, 8, 6, 16, false, true, false, true}, // 6x16 and 4x16 the same: two rows of an 8-wide map
	{"AVX2", 2, 8, 4, 16, false, true, false, true},
}

func (f family) name(r int) string {
	if f.pair {
		return fmt.Sprintf("sgemm%s_%dx%dpanelspair", f.isa, r, f.vecs*f.lanes)
	}
	if f.panels && f.stream {
		return fmt.Sprintf("sgemm%s_%dx%dpanelsstream", f.isa, r, f.vecs*f.lanes)
	}
	if f.panels {
		return fmt.Sprintf("sgemm%s_%dx%dpanels", f.isa, r, f.vecs*f.lanes)
	}
	if f.masked && f.stream {
		return fmt.Sprintf("sgemm%s_%dx%dmaskedstream", f.isa, r, f.vecs*f.lanes)
	}
	if f.masked {
		return fmt.Sprintf("sgemm%s_%dx%dmasked", f.isa, r, f.vecs*f.lanes)
	}
	if f.stream {
		return fmt.Sprintf("sgemm%s_%dx%dstream", f.isa, r, f.vecs*f.lanes)
	}
	return fmt.Sprintf("sgemm%s_%dx%d", f.isa, r, f.vecs*f.lanes)
}

func (f family) args() (string, string) {
	if f.pair {
		return "p *gemmPanel, np int, row int, col int, c *float32, ldc int, off int", "$0-56"
	}
	if f.panels {
		return "p *gemmPanel, np int, row int, col int, c *float32, ldc int", "$0-48"
	}
	if f.masked {
		return "k int, a *float32, lda int, b *float32, ldb int, c *float32, ldc int, mask int", "$0-64"
	}
	return "k int, a *float32, lda int, b *float32, ldb int, c *float32, ldc int", "$0-56"
}

func (f family) reg(i int) string {
	if f.isa == "AVX512" {
		return fmt.Sprintf("Z%d", i)
	}
	return fmt.Sprintf("Y%d", i)
}

var rowIdx = []string{"", "(R8*1)", "(R8*2)", "(R9*1)"}     // a rows within a group of 4
var cRowIdx = []string{"", "(R11*1)", "(R11*2)", "(R12*1)"} // c rows within a group of 4
var aBase = []string{"SI", "DX", "R13", "R14"}              // a row groups 0-3, 4-7, 8-11, 12-15
var panelABase = []string{"SI", "DX", "R14"}                // the same for panels (R13 walks them)

func main() {
	var s, g strings.Builder
	s.WriteString("// Code generated by dot_asm_gen.go; DO NOT EDIT.\n\n#include \"textflag.h\"\n")
	g.WriteString("// Code generated by dot_asm_gen.go; DO NOT EDIT.\n\npackage cpu\n")
	for _, f := range families {
		if f.panels {
			kernel(&s, f, f.maxR)
			args, _ := f.args()
			what := ""
			if f.stream {
				what = ", prefetching a along its rows"
			}
			if f.pair {
				what = fmt.Sprintf(", its second %d columns off past its first", f.lanes)
			}
			fmt.Fprintf(&g, "\n// %s sums np panels into the %dx%d block of c at (row, col)%s.\n//\n//go:noescape\nfunc %s(%s)\n",
				f.name(f.maxR), f.maxR, f.vecs*f.lanes, what, f.name(f.maxR), args)
			continue
		}
		for r := 1; r <= f.maxR; r++ {
			kernel(&s, f, r)
			args, _ := f.args()
			fmt.Fprintf(&g, "\n//go:noescape\nfunc %s(%s)\n", f.name(r), args)
		}
		typ, what := "gemmKernel", ""
		if f.masked {
			typ, what = "gemmMaskedKernel", " (the last 16 columns through a mask)"
		}
		if f.stream {
			what = " (a prefetched along its rows)"
		}
		if f.masked && f.stream {
			what = " (the last 16 columns through a mask, a prefetched along its rows)"
		}
		fmt.Fprintf(&g, "\n// %s[r] is the %d-column kernel for r rows%s.\nvar %s = [...]%s{nil", tableName(f), f.vecs*f.lanes, what, tableName(f), typ)
		for r := 1; r <= f.maxR; r++ {
			fmt.Fprintf(&g, ", %s", f.name(r))
		}
		g.WriteString("}\n")
	}
	must(os.WriteFile("dot_kernels_amd64.s", []byte(s.String()), 0o644))
	must(os.WriteFile("dot_kernels_amd64.go", []byte(g.String()), 0o644))
}

func tableName(f family) string {
	if f.masked && f.stream {
		return fmt.Sprintf("kernels%s_%dmaskedstream", f.isa, f.vecs*f.lanes)
	}
	if f.masked {
		return fmt.Sprintf("kernels%s_%dmasked", f.isa, f.vecs*f.lanes)
	}
	if f.stream {
		return fmt.Sprintf("kernels%s_%dstream", f.isa, f.vecs*f.lanes)
	}
	return fmt.Sprintf("kernels%s_%d", f.isa, f.vecs*f.lanes)
}

func must(err error) {
	if err != nil {
		panic(err)
	}
}

func kernel(s *strings.Builder, f family, r int) {
	p := func(format string, args ...any) { fmt.Fprintf(s, "\t"+format+"\n", args...) }
	vb := f.lanes * 4 // bytes per vector
	acc := func(row, v int) string { return f.reg(row*f.vecs + v) }
	bReg := func(v int) string { return f.reg(r*f.vecs + v) }
	nb := f.regs - r*f.vecs - f.vecs // broadcast registers, used in rotation
	if nb > 8 {
		nb = 8
	}
	bc := func(i int) string { return f.reg(r*f.vecs + f.vecs + i%nb) }
	args, frame := f.args()
	fmt.Fprintf(s, "\n// func %s(%s)\n", f.name(r), args)
	fmt.Fprintf(s, "TEXT ·%s(SB), NOSPLIT, %s\n", f.name(r), frame)
	groups := (r + 3) / 4
	base := aBase
	if f.panels {
		base = panelABase
	}
	// operands: k in CX, a in SI (rows 4 apart in DX, R13, R14), lda in R8 (3*lda in R9),
	// b in BX, ldb in R10, all in bytes
	aRows := func() {
		p("SHLQ $2, R8")
		p("SHLQ $2, R10")
		p("LEAQ (R8)(R8*2), R9")
		for gi := 1; gi < groups; gi++ {
			p("LEAQ (%s)(R8*4), %s", base[gi-1], base[gi])
		}
	}
	if f.panels {
		// panel pointer in R13, the end of the panels in AX between the loads and stores of c
		// (a panels kernel has at most 12 rows: a in SI, DX and R14)
		p("MOVQ c+32(FP), DI")
		p("MOVQ ldc+40(FP), R11")
	} else {
		p("MOVQ k+0(FP), CX")
		p("MOVQ a+8(FP), SI")
		p("MOVQ lda+16(FP), R8")
		p("MOVQ b+24(FP), BX")
		p("MOVQ ldb+32(FP), R10")
		p("MOVQ c+40(FP), DI")
		p("MOVQ ldc+48(FP), R11")
		aRows()
	}
	p("SHLQ $2, R11")
	p("LEAQ (R11)(R11*2), R12")
	if f.masked {
		p("MOVQ mask+56(FP), AX")
		p("KMOVW AX, K1")
	}
	masked := func(v int) bool { return f.masked && v == f.vecs-1 }
	// c rows, 4 at a time through AX.
	cmem := func(row, v int) string {
		off := ""
		if v > 0 && !f.pair {
			off = fmt.Sprint(v * vb)
		}
		return fmt.Sprintf("%s(AX)%s", off, cRowIdx[row%4])
	}
	walkC := func(op func(row, v int)) {
		if f.pair { // a vector at a time: the second off elements past the first (CX free)
			for v := range f.vecs {
				if v == 0 {
					p("MOVQ DI, AX")
				} else {
					p("MOVQ off+48(FP), CX")
					p("LEAQ (DI)(CX*4), AX")
				}
				for row := 0; row < r; row++ {
					if row > 0 && row%4 == 0 {
						p("LEAQ (AX)(R11*4), AX")
					}
					op(row, v)
				}
			}
			return
		}
		p("MOVQ DI, AX")
		for row := 0; row < r; row++ {
			if row > 0 && row%4 == 0 {
				p("LEAQ (AX)(R11*4), AX")
			}
			for v := range f.vecs {
				op(row, v)
			}
		}
	}
	walkC(func(row, v int) {
		if masked(v) {
			p("VMOVUPS.Z %s, K1, %s", cmem(row, v), acc(row, v))
		} else {
			p("VMOVUPS %s, %s", cmem(row, v), acc(row, v))
		}
	})
	amem := func(row, off int) string {
		o := ""
		if off > 0 {
			o = fmt.Sprint(off)
		}
		return fmt.Sprintf("%s(%s)%s", o, base[row/4], rowIdx[row%4])
	}
	nbc := 0
	// body is one k step; u = 1 reads the step after the current one.
	body := func(u int) {
		for v := range f.vecs {
			off := ""
			if v > 0 {
				off = fmt.Sprint(v * vb)
			}
			src := off + "(BX)"
			if f.pair && v > 0 { // the second vector's own pointer
				src = "(R11)"
			}
			if u == 1 {
				src += "(R10*1)"
			}
			if masked(v) {
				p("VMOVUPS.Z %s, K1, %s", src, bReg(v))
			} else {
				p("VMOVUPS %s, %s", src, bReg(v))
			}
		}
		for row := 0; row < r; row++ {
			b := bc(nbc)
			nbc++
			p("VBROADCASTSS %s, %s", amem(row, 4*u), b)
			for v := range f.vecs {
				p("VFMADD231PS %s, %s, %s", bReg(v), b, acc(row, v))
			}
		}
	}
	advance := func(steps int) {
		for gi := range groups {
			p("ADDQ $%d, %s", 4*steps, base[gi])
		}
		if steps == 2 {
			p("LEAQ (BX)(R10*2), BX")
		} else {
			p("ADDQ R10, BX")
		}
		if f.pair && steps == 2 {
			p("LEAQ (R11)(R10*2), R11")
		} else if f.pair {
			p("ADDQ R10, R11")
		}
	}
	if f.panels {
		// each panel {a, lda, b, ldb, k} (gemmPanel): a from row `row`, b from column `col`
		p("MOVQ p+0(FP), R13")
		p("MOVQ np+8(FP), AX")
		p("IMULQ $40, AX")
		p("ADDQ R13, AX")
		fmt.Fprintf(s, "panel:\n")
		p("MOVQ 8(R13), R8")
		p("MOVQ row+16(FP), SI")
		p("IMULQ R8, SI")
		p("SHLQ $2, SI")
		p("ADDQ 0(R13), SI")
		p("MOVQ col+24(FP), BX")
		p("SHLQ $2, BX")
		p("ADDQ 16(R13), BX")
		p("MOVQ 24(R13), R10")
		p("MOVQ 32(R13), CX")
		aRows()
		if f.pair { // b's second vector through R11 (ldc is not needed until the store)
			p("MOVQ off+48(FP), R11")
			p("LEAQ (BX)(R11*4), R11")
		}
	}
	if f.stream {
		// 16 k steps per iteration (64 bytes of each row of a: one cache line), each row's
		// line streamAhead bytes on prefetched first; the steps left run below.
		p("SUBQ $16, CX")
		p("JLT rest")
		fmt.Fprintf(s, "stream:\n")
		for row := 0; row < r; row++ {
			p("PREFETCHT0 %s", amem(row, streamAhead))
		}
		for range 8 {
			body(0)
			body(1)
			advance(2)
		}
		p("SUBQ $16, CX")
		p("JGE stream")
		fmt.Fprintf(s, "rest:\n")
		p("ADDQ $16, CX")
	}
	// Two k steps per iteration, then the odd one.
	p("SUBQ $2, CX")
	p("JLT tail")
	fmt.Fprintf(s, "loop:\n")
	body(0)
	body(1)
	advance(2)
	p("SUBQ $2, CX")
	p("JGE loop")
	fmt.Fprintf(s, "tail:\n")
	p("CMPQ CX, $-1")
	p("JNE done")
	body(0)
	fmt.Fprintf(s, "done:\n")
	if f.panels {
		p("ADDQ $40, R13")
		p("CMPQ R13, AX")
		p("JLT panel")
	}
	if f.pair { // ldc again
		p("MOVQ ldc+40(FP), R11")
		p("SHLQ $2, R11")
	}
	walkC(func(row, v int) {
		if masked(v) {
			p("VMOVUPS %s, K1, %s", acc(row, v), cmem(row, v))
		} else {
			p("VMOVUPS %s, %s", acc(row, v), cmem(row, v))
		}
	})
	p("VZEROUPPER")
	p("RET")
}
