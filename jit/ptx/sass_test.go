package ptx

import (
	"math"
	"strings"
	"testing"

	"github.com/widejit/widejit/jit"
	"github.com/widejit/widejit/lowering"
)

// A hand-written stretch of cuobjdump -sass output: a loop of 8 instructions (one NOP, not
// counted) from 0x0020 back to it, two HMMA.16816 among them.
const sassSample = `
	code for sm_80
		Function : k
	.headerflags	@"EF_CUDA_SM80"
        /*0000*/                   IMAD.MOV.U32 R1, RZ, RZ, c[0x0][0x28] ;            /* 0x00000a00ff017624 */
        /*0010*/                   S2R R4, SR_CTAID.X ;                               /* 0x0000000000047919 */
        /*0020*/                   LDGSTS.E.BYPASS.128 [R2], [R4.64] ;                /* 0x0000000000007b1d */
        /*0030*/                   BAR.SYNC.DEFER_BLOCKING 0x0 ;                      /* 0x0000000000007b1d */
        /*0040*/                   LDSM.16.M88.4 R8, [R2] ;                           /* 0x0000000000007b1d */
        /*0050*/                   HMMA.16816.F32 R12, R8, R10, R12 ;                 /* 0x0000000000007b1d */
        /*0060*/                   HMMA.16816.F32 R16, R8, R11, R16 ;                 /* 0x0000000000007b1d */
        /*0070*/                   NOP ;                                              /* 0x0000000000007b1d */
        /*0080*/                   ISETP.GE.AND P0, PT, R5, 0x10, PT ;                /* 0x0000000000007b1d */
        /*0090*/              @!P0 BRA 0x20 ;                                         /* 0x0000000000007b1d */
        /*00a0*/                   STG.E.128 [R6.64], R12 ;                           /* 0x0000000000007b1d */
        /*00b0*/                   EXIT ;                                             /* 0x0000000000007b1d */
        /*00c0*/                   BRA 0xc0;                                          /* 0x0000000000007b1d */
`

func TestAnalyzeSASS(t *testing.T) {
	fns := ParseSASS(sassSample)
	if len(fns) != 1 || fns[0].Name != "k" || len(fns[0].Instrs) != 13 {
		t.Fatalf("parsed %+v", fns)
	}
	if in := fns[0].Instrs[9]; in.Guard != "@!P0" || in.Opcode != "BRA" || in.Addr != 0x90 {
		t.Fatalf("branch parsed as %+v", in)
	}
	rep := Analyze(fns[0])
	if len(rep.Loops) != 1 || rep.Main != 0 {
		t.Fatalf("loops %+v, main %d: want the one loop 0x20..0x90 (the final self-branch is no loop)", rep.Loops, rep.Main)
	}
	l := rep.Loops[0]
	want := SASSCounts{Instrs: 7, Tensor: 2, TensorFLOPs: 2 * 4096, Barriers: 1, LDSM: 1, LDGSTS: 1, FLOPsPerIns: 8192.0 / 7}
	if l.Start != 0x20 || l.End != 0x90 || l.SASSCounts != want {
		t.Fatalf("loop %+v\nwant %+v", l, want)
	}
	if got := IssueCeiling(l.SASSCounts); math.Abs(got-1) > 1e-12 {
		t.Errorf("ceiling %v, want 1 (8192 FLOPs over 7 instructions exceeds 1024 per instruction)", got)
	}
	if rep.Whole.Instrs != 12 || rep.Whole.STG != 1 || rep.Whole.Vector128 != 1 {
		t.Errorf("whole kernel %+v: want 12 instructions, one 16-byte STG", rep.Whole)
	}
	if c := countSASS([]SASSInstr{{Guard: "@!PT", Opcode: "LDS"}, {Guard: "@P0", Opcode: "LDS"}}); c.Instrs != 2 || c.LDS != 1 {
		t.Errorf("%+v: want both issued, and only the @P0 one a shared load (@!PT never executes)", c)
	}
	tf := SASSCounts{Instrs: 8, Tensor: 1, TF32: 1, TensorFLOPs: 2048, FLOPsPerIns: 256}
	if got := IssueCeiling(tf); got != 0.5 {
		t.Errorf("TF32 ceiling %v, want 256/512", got)
	}
	if fl, tf32, ok := tensorFLOPs("HGMMA.64x128x16.F32.BF16"); !ok || tf32 || fl != 2*64*128*16/4 {
		t.Errorf("HGMMA.64x128x16: %d FLOPs per warp, want a quarter of the warpgroup's", fl)
	}
}

// cuobjdump's sm_90a wgmma loop (its opcodes have a lower-case x): an HGMMA.64x64x16 is one
// warpgroup's 2*64*64*16 = 131072 FLOPs, issued once by each of its 4 warps (on the SM's 4
// schedulers), so each warp's instruction stream carries 32768 of them per HGMMA: 2 HGMMAs
// among 40 instructions are 1638.4 FLOPs per instruction, a ceiling of 100%; among 100, 655.36
// (64%).
const sassHopper = `
		Function : h
        /*0000*/                   MOV R1, c[0x0][0x28] ;                              /* 0x00000a0000017a02 */
        /*0010*/                   WARPGROUP.ARRIVE ;                                  /* 0x00000000000079c5 */
        /*0020*/                   HGMMA.64x64x16.F32 R24, gdesc[UR20], R24 ;          /* 0x00e00000141879f0 */
        /*0030*/                   HGMMA.64x64x16.F32.BF16 R24, gdesc[UR24], R24, gsb0 ; /* 0x00e00000141879f0 */
        /*0040*/                   WARPGROUP.DEPBAR.LE gsb0, 0x0 ;                     /* 0x00008000000079c5 */
        /*0050*/              @!P0 BRA 0x10 ;                                          /* 0x0000000000007b1d */
        /*0060*/                   EXIT ;                                              /* 0x000000000000794d */
`

func TestAnalyzeHopperSASS(t *testing.T) {
	fns := ParseSASS(sassHopper)
	if len(fns) != 1 || len(fns[0].Instrs) != 7 {
		t.Fatalf("parsed %+v", fns)
	}
	if in := fns[0].Instrs[2]; in.Opcode != "HGMMA.64x64x16.F32" || in.Operands != "R24, gdesc[UR20], R24" {
		t.Fatalf("HGMMA parsed as %+v", in)
	}
	rep := Analyze(fns[0])
	if rep.Main != 0 {
		t.Fatalf("loops %+v", rep.Loops)
	}
	l := rep.Loops[0].SASSCounts
	if l.Instrs != 5 || l.Tensor != 2 || l.TF32 != 0 || l.TensorFLOPs != 2*(2*64*64*16)/4 {
		t.Fatalf("loop %+v: want 5 instructions, 2 HGMMA of 32768 FLOPs per warp", l)
	}
	for _, c := range []struct {
		instrs int
		want   float64
	}{{40, 1}, {100, 655.36 / 1024}} {
		l.Instrs, l.FLOPsPerIns = c.instrs, float64(l.TensorFLOPs)/float64(c.instrs)
		if got := IssueCeiling(l); math.Abs(got-c.want) > 1e-12 {
			t.Errorf("2 HGMMA.64x64x16 in %d instructions: ceiling %v, want %v", c.instrs, got, c.want)
		}
	}
}

// The K loop of the 4096^3 fp16 Linear that lowering plans, read from its sm_80 SASS (CUDA
// 12.4's ptxas and cuobjdump): tensor-core HMMAs fed by ldmatrix from operands that cp.async
// copied into shared memory, num_stages (3) steps ahead of the MMAs, the accumulator kept in
// registers (no shared-memory traffic for it per step), index/mask/pointer broadcasts
// rematerialized, so at most one barrier per 8 MMAs, no spills, and an issue-bound ceiling
// of at least 60% of the tensor cores' peak, the issue's target (it was 8% when every dot
// staged its accumulator through shared memory, loaded fragments with scalar loads and
// broadcast through shared memory with 21 barriers per step).
func TestGEMMMainLoopSASS(t *testing.T) {
	checkGEMMMainLoop(t, "float16", "", "sm_80", 0.60)
}

// The same for the fp32 Linear at --float32-matmul-precision high, on sm_80 and on sm_90a's
// mma.sync path: TF32 HMMAs in the same pipeline, the operands handed to mma.sync as they
// stand (no conversion instructions), at least 50% of TF32 peak by issue (it was 19%, with
// cvt.rna per element, not pipelined, and spilling on sm_80).
func TestTF32GEMMMainLoopSASS(t *testing.T) {
	for _, arch := range []string{"sm_80", "sm_90a"} {
		t.Run(arch, func(t *testing.T) { checkGEMMMainLoop(t, "float32", lowering.PrecisionHigh, arch, 0.50) })
	}
}

// checkGEMMMainLoop assembles the 4096^3 Linear of dtype at precision for sass (sm_90a: the
// sm_90 PTX, the mma.sync path a cc 9.0 device loads) and checks its K loop: a cp.async
// pipeline feeding tensor cores (all TF32 at high) through ldmatrix, no other shared-memory
// access (no index, mask or pointer tile round-trips it), at most one barrier per 8 MMAs, no
// spills, and an issue-bound ceiling of at least minCeiling.
func checkGEMMMainLoop(t *testing.T, dtype, precision, sass string, minCeiling float64) {
	k, asm := gemmMainLoopSASS(t, dtype, precision, strings.TrimSuffix(sass, "a"), sass, "cp.async.wait_group 1")
	t.Logf("K loop: %d instructions, %d HMMA (%d TF32), %d LDSM, %d LDGSTS, %d barriers, %d STS; ceiling %.1f%%; %d registers",
		k.Instrs, k.Tensor, k.TF32, k.LDSM, k.LDGSTS, k.Barriers, k.STS, 100*IssueCeiling(k), asm.Registers)
	if k.Tensor < 16 || k.LDSM == 0 || k.LDGSTS == 0 {
		t.Errorf("K loop: %d HMMA, %d LDSM, %d LDGSTS; want tensor cores fed by ldmatrix and cp.async", k.Tensor, k.LDSM, k.LDGSTS)
	}
	if wantTF32 := precision == lowering.PrecisionHigh; wantTF32 != (k.TF32 == k.Tensor) {
		t.Errorf("%d of %d HMMA are TF32, want all at high and none otherwise", k.TF32, k.Tensor)
	}
	if c := IssueCeiling(k); c < minCeiling {
		t.Errorf("issue-bound ceiling %.1f%%, want at least %.0f%%", 100*c, 100*minCeiling)
	}
	if 8*k.Barriers > k.Tensor {
		t.Errorf("%d barriers for %d MMAs, want at most one per 8", k.Barriers, k.Tensor)
	}
	if k.LDS+k.STS != 0 {
		t.Errorf("%d LDS and %d STS in the K loop: want shared memory touched only by cp.async and ldmatrix", k.LDS, k.STS)
	}
	if asm.SpillStores+asm.SpillLoads != 0 {
		t.Errorf("%d bytes of spills", asm.SpillStores+asm.SpillLoads)
	}
}

// gemmMainLoopSASS compiles the 4096^3 Linear that lowering plans in dtype at precision for
// arch, checks that its PTX contains want, assembles it with CUDA 12.4's ptxas for sass and
// returns its main loop's
// SASS counts and ptxas's report (the test skips without the tools).
func gemmMainLoopSASS(t *testing.T, dtype, precision, arch, sass, want string) (SASSCounts, *AsmReport) {
	t.Helper()
	ptxas, err := FindCUDA12Tool(".", "ptxas")
	if err != nil {
		t.Skip(err.Error())
	}
	cuobjdump, err := FindCUDA12Tool(".", "cuobjdump")
	if err != nil {
		t.Skip(err.Error())
	}
	g := linearGraph(t, dtype, 4096, 4096, 4096, 1)
	plan, err := lowering.Lower(g, lowering.Options{Float32MatmulPrecision: precision})
	if err != nil {
		t.Fatal(err)
	}
	l := plan.Launches[0]
	a, err := jit.NewCompiler(jit.CompilerOptions{}).Compile(l.Kernel.Source, l.Spec(), Target{Arch: arch})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(a.Payload), want) {
		t.Errorf("the %s PTX has no %s", arch, want)
	}
	cubin, asm, err := AssembleCubin(ptxas, sass, string(a.Payload))
	if err != nil {
		t.Fatal(err)
	}
	text, err := Disassemble(cuobjdump, cubin)
	if err != nil {
		t.Fatal(err)
	}
	fns := ParseSASS(text)
	if len(fns) != 1 {
		t.Fatalf("%d functions in the SASS", len(fns))
	}
	rep := Analyze(fns[0])
	if rep.Main < 0 {
		t.Fatal("no loop in the GEMM")
	}
	return rep.Loops[rep.Main].SASSCounts, asm
}

// The same GEMM's K loop on Hopper (sm_90a, wgmma.go), fp16 and bf16: HGMMA (wgmma) fed by
// matrix descriptors straight from the swizzled cp.async ring (no ldmatrix, no HMMA), an
// issue-bound ceiling of at least 60% (each warp's HGMMA.64x64x16 counted as a quarter of its
// warpgroup's 2*64*64*16 FLOPs: TestAnalyzeHopperSASS), at most one barrier per step, no spills.
func TestHopperGEMMMainLoopSASS(t *testing.T) {
	for _, dtype := range []string{"float16", "bfloat16"} {
		t.Run(dtype, func(t *testing.T) {
			k, asm := gemmMainLoopSASS(t, dtype, "", "sm_90a", "sm_90a", "wgmma.mma_async.sync.aligned.m64n64k16")
			t.Logf("K loop: %d instructions, %d HGMMA, %d LDGSTS, %d barriers; ceiling %.1f%%; %d registers",
				k.Instrs, k.Tensor, k.LDGSTS, k.Barriers, 100*IssueCeiling(k), asm.Registers)
			if k.Tensor == 0 || k.LDSM != 0 || k.LDGSTS == 0 {
				t.Errorf("K loop: %d tensor instructions, %d LDSM, %d LDGSTS; want HGMMA from cp.async-filled shared memory, no ldmatrix", k.Tensor, k.LDSM, k.LDGSTS)
			}
			if k.TensorFLOPs != k.Tensor*2*64*64*16/4 {
				t.Errorf("%d tensor instructions carry %d FLOPs: not all HGMMA.64x64x16", k.Tensor, k.TensorFLOPs)
			}
			if c := IssueCeiling(k); c < 0.60 {
				t.Errorf("issue-bound ceiling %.1f%%, want at least 60%%", 100*c)
			}
			if 2*k.Barriers > k.Tensor {
				t.Errorf("%d barriers for %d HGMMA, want at most one per K step of two", k.Barriers, k.Tensor)
			}
			if asm.SpillStores+asm.SpillLoads != 0 {
				t.Errorf("%d bytes of spills", asm.SpillStores+asm.SpillLoads)
			}
		})
	}
}
