package ptx

import (
	"encoding/binary"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/widejit/widejit/graph"
	"github.com/widejit/widejit/graph/safetensors"
	"github.com/widejit/widejit/internal/half"
	"github.com/widejit/widejit/internal/testkit"
	"github.com/widejit/widejit/jit"
	"github.com/widejit/widejit/jit/cpu"
	"github.com/widejit/widejit/jit/ptx/ptxemu"
	"github.com/widejit/widejit/lowering"
	"github.com/widejit/widejit/runner"
)

// wgmmaKernel is a hand-written sm_90a kernel for one warpgroup: it copies a shared-memory
// image (chunks 16-byte copies per thread) from global memory into shared memory, sets every
// accumulator register to c, runs one wgmma.mma_async m64nNk16 with descriptors given as
// parameters and scale-d = (scaleD != 0), and stores lane t's accumulator j at out[t*N/2+j].
// between is inserted after the commit, wait is the wait_group's operand (above 0, nothing is
// stored); without fence or wgfence, the fence.proxy.async or the wgmma.fence is left out.
func wgmmaKernel(typ string, n, chunks int, fence, wgfence bool, between string, wait, transB int) string {
	var b strings.Builder
	regs := make([]string, n/2)
	for j := range regs {
		regs[j] = fmt.Sprintf("%%f%d", j+1)
	}
	fmt.Fprintf(&b, `.version 8.0
.target sm_90a
.address_size 64
.extern .shared .align 1024 .b8 wj_smem[];
.visible .entry k(
	.param .u64 k_param_0,
	.param .u64 k_param_1,
	.param .u64 k_param_2,
	.param .u64 k_param_3,
	.param .f32 k_param_4,
	.param .u32 k_param_5
)
.maxntid 128, 1, 1
{
	.reg .pred %%p<2>;
	.reg .b32 %%r<8>;
	.reg .f32 %%f<%d>;
	.reg .b64 %%rd<12>;
	.reg .b16 %%h<2>;
	ld.param.u64 %%rd1, [k_param_0];
	ld.param.u64 %%rd2, [k_param_1];
	ld.param.u64 %%rd3, [k_param_2];
	ld.param.u64 %%rd4, [k_param_3];
	ld.param.f32 %%f0, [k_param_4];
	ld.param.u32 %%r5, [k_param_5];
	setp.ne.u32 %%p1, %%r5, 0;
	mov.u32 %%r1, %%tid.x;
	mov.u32 %%r2, wj_smem;
	mad.lo.u32 %%r3, %%r1, 16, %%r2;
	mul.wide.u32 %%rd5, %%r1, 16;
	add.s64 %%rd5, %%rd1, %%rd5;
`, n/2+8)
	for c := range chunks {
		fmt.Fprintf(&b, "\tld.global.v4.b32 {%%r4, %%r5, %%r6, %%r7}, [%%rd5+%d];\n", 2048*c)
		fmt.Fprintf(&b, "\tst.shared.v4.b32 [%%r3+%d], {%%r4, %%r5, %%r6, %%r7};\n", 2048*c)
	}
	if fence {
		b.WriteString("\tfence.proxy.async.shared::cta;\n")
	}
	b.WriteString("\tbar.sync 0;\n")
	for _, r := range regs {
		fmt.Fprintf(&b, "\tmov.f32 %s, %%f0;\n", r)
	}
	if wgfence {
		b.WriteString("\twgmma.fence.sync.aligned;\n")
	}
	fmt.Fprintf(&b, "\twgmma.mma_async.sync.aligned.m64n%dk16.f32.%s.%s {%s}, %%rd3, %%rd4, %%p1, 1, 1, 0, %d;\n", n, typ, typ, strings.Join(regs, ", "), transB)
	b.WriteString("\twgmma.commit_group.sync.aligned;\n")
	b.WriteString(between)
	fmt.Fprintf(&b, "\twgmma.wait_group.sync.aligned %d;\n", wait)
	if wait > 0 { // the accumulators are still in flight: no stores
		b.WriteString("\tret;\n}\n")
		return b.String()
	}
	fmt.Fprintf(&b, "\tmul.wide.u32 %%rd6, %%r1, %d;\n\tadd.s64 %%rd6, %%rd2, %%rd6;\n", 2*n)
	for j, r := range regs {
		fmt.Fprintf(&b, "\tst.global.f32 [%%rd6+%d], %s;\n", 4*j, r)
	}
	b.WriteString("\tret;\n}\n")
	return b.String()
}

// wgmmaOperand places an operand of rows x 16 elements at byte offset base of a
// shared-memory image, laid out as the PTX ISA's canonical layouts describe it, written
// here row by row. K-major: with an S-byte swizzle, row r's 16-byte chunk c (c = 2*kOff/16
// + k/8) of its S bytes goes to chunk c XOR (r mod 8)*S/128, the rows of an 8-row atom S
// bytes apart, atoms sbo apart; without swizzling, 8x16-byte core matrices of 8 rows, the
// next along K lbo apart, the next 8 rows sbo apart. MN-major (mn, swizzled): K row k holds
// S bytes of rows (M or N), its chunk c going to c XOR (k mod 8)*S/128, 8 K rows S bytes
// apart, the next 8 sbo apart, the next S bytes of rows lbo apart.
type wgmmaOperand struct {
	base, s, lbo, sbo, kOff int
	mn                      bool
}

func (o wgmmaOperand) offset(r, k int) int {
	if o.mn {
		b := 2 * r
		c := b % o.s / 16
		c ^= (k % 8) * o.s / 128
		return o.base + k/8*o.sbo + k%8*o.s + b/o.s*o.lbo + c*16 + b%16
	}
	if o.s == 0 {
		return o.base + r/8*o.sbo + k/8*o.lbo + r%8*16 + k%8*2
	}
	c := (2*o.kOff)/16 + k/8
	c ^= (r % 8) * o.s / 128
	return o.base + r/8*o.sbo + r%8*o.s + c*16 + k%8*2
}

// desc is the operand's matrix descriptor, from the PTX ISA's bit fields: start address,
// leading and stride byte offsets >> 4 at bits 0, 16 and 32, swizzle mode at bits 62-63.
func (o wgmmaOperand) desc(smem int) uint64 {
	mode := map[int]uint64{0: 0, 128: 1, 64: 2, 32: 3}[o.s]
	lbo := o.lbo
	if o.s != 0 && !o.mn {
		lbo = 16 // unused by swizzled K-major layouts
	}
	start := smem + o.base + 2*o.kOff
	return uint64(start>>4) | uint64(lbo>>4)<<16 | uint64(o.sbo>>4)<<32 | mode<<62
}

// runWGMMA runs wgmmaKernel on A (64x16) and B^T (n x 16) of small integers placed by a and
// b, with accumulators starting at c, and returns D as the lanes' fragments say.
func runWGMMA(t *testing.T, typ string, n int, a, b wgmmaOperand, c float32, scaleD bool, src string, A, B func(r, k int) float64) ([][]float64, error) {
	t.Helper()
	bits := half.F32ToF16
	if typ == "bf16" {
		bits = half.F32ToBF16
	}
	image := make([]byte, 2048*((max(a.offset(63, 15), b.offset(n-1, 15))+2+2047)/2048))
	for r := range 64 {
		for k := range 16 {
			binary.LittleEndian.PutUint16(image[a.offset(r, k):], bits(float32(A(r, k))))
		}
	}
	for r := range n {
		for k := range 16 {
			binary.LittleEndian.PutUint16(image[b.offset(r, k):], bits(float32(B(r, k))))
		}
	}
	if src == "" {
		trans := 0
		if b.mn {
			trans = 1
		}
		src = wgmmaKernel(typ, n, len(image)/2048, true, true, "", 0, trans)
	}
	prog, err := ptxemu.Parse(src)
	if err != nil {
		t.Fatal(err)
	}
	mem := &ptxemu.Memory{}
	in, inBytes := mem.Alloc(len(image))
	copy(inBytes, image)
	out, outBytes := mem.Alloc(128 * n / 2 * 4)
	sd := uint64(0)
	if scaleD {
		sd = 1
	}
	// the emulator's shared window starts at 0
	params := []uint64{in, out, a.desc(0), b.desc(0), uint64(math.Float32bits(c)), sd}
	if err := ptxemu.Run(prog, mem, [3]int{1, 1, 1}, params, len(image)); err != nil {
		return nil, err
	}
	d := make([][]float64, 64)
	for i := range d {
		d[i] = make([]float64, n)
	}
	for tid := range 128 {
		q, l := tid/32, tid%32
		for j := range n / 2 {
			row := 16*q + l/4
			if j%4 >= 2 {
				row += 8
			}
			col := j/4*8 + l%4*2 + j%2
			d[row][col] = float64(math.Float32frombits(binary.LittleEndian.Uint32(outBytes[4*(tid*n/2+j):])))
		}
	}
	return d, nil
}

// The emulator's wgmma.mma_async against sums computed here, for each swizzle mode (the
// K slice read at an offset within a swizzled row, as a K loop's second k16 step does),
// without swizzling (core matrices at arbitrary leading and stride byte offsets), f16 and
// bf16, several N, scale-d off (D = A*B) and on (D = A*B + C). The layouts and descriptors
// are built from the PTX ISA's description above, not from the code generator's helpers.
func TestEmulatedWGMMA(t *testing.T) {
	A := func(r, k int) float64 { return float64((r*3+k*5)%7 - 3) }
	B := func(r, k int) float64 { return float64((r*5+k*2)%9-4) / 2 }
	for _, c := range []struct {
		name   string
		typ    string
		n      int
		a, b   wgmmaOperand
		scaleD bool
	}{
		{"f16_sw128_k16", "f16", 64, wgmmaOperand{0, 128, 0, 1024, 16, false}, wgmmaOperand{8192, 128, 0, 1024, 16, false}, true},
		{"bf16_sw64_k16", "bf16", 8, wgmmaOperand{0, 64, 0, 512, 16, false}, wgmmaOperand{4096, 64, 0, 512, 16, false}, false},
		{"f16_sw32", "f16", 16, wgmmaOperand{0, 32, 0, 256, 0, false}, wgmmaOperand{2048, 32, 0, 256, 0, false}, true},
		{"bf16_sw64_sparse_atoms", "bf16", 24, wgmmaOperand{0, 64, 0, 1024, 0, false}, wgmmaOperand{8192, 64, 0, 1536, 0, false}, true},
		{"f16_interleave", "f16", 24, wgmmaOperand{0, 0, 1024, 128, 0, false}, wgmmaOperand{4096, 0, 128, 256, 0, false}, true},
		// B MN-major (imm-trans-b 1): one 128-byte row of N, or 32 columns in 64-byte rows
		// and 128 in four 64-byte atoms along N (lbo apart)
		{"f16_b_mn_sw128", "f16", 64, wgmmaOperand{0, 64, 0, 512, 16, false}, wgmmaOperand{4096, 128, 0, 1024, 0, true}, true},
		{"bf16_b_mn_sw64", "bf16", 32, wgmmaOperand{0, 32, 0, 256, 0, false}, wgmmaOperand{2048, 64, 0, 512, 0, true}, false},
		{"f16_b_mn_sw64_four_atoms", "f16", 128, wgmmaOperand{0, 128, 0, 1024, 48, false}, wgmmaOperand{8192, 64, 512, 2048, 0, true}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			const c0 = 0.25
			d, err := runWGMMA(t, c.typ, c.n, c.a, c.b, c0, c.scaleD, "", A, B)
			if err != nil {
				t.Fatal(err)
			}
			bad := 0
			for i := range 64 {
				for j := range c.n {
					want := 0.0
					if c.scaleD {
						want = c0
					}
					for k := range 16 {
						want += A(i, k) * B(j, k)
					}
					if d[i][j] != want && bad < 5 {
						t.Errorf("D[%d][%d] = %v, want %v", i, j, d[i][j], want)
						bad++
					}
				}
			}
		})
	}
	if ptxas, err := FindCUDA12Tool(".", "ptxas"); err == nil {
		if _, err := Assemble(ptxas, "sm_90a", wgmmaKernel("bf16", 64, 2, true, true, "", 0, 1)); err != nil {
			t.Errorf("the hand-written kernel does not assemble: %v", err)
		}
	} else {
		t.Logf("not assembled: %v", err)
	}
}

// What the emulator refuses, as the PTX ISA's rules for wgmma say: shared memory written
// through the generic proxy without fence.proxy.async, an mma_async without wgmma.fence, an
// accumulator register read while its wgmma is in flight, and a kernel that ends with a
// wgmma not waited for.
func TestEmulatedWGMMAErrors(t *testing.T) {
	one := func(r, k int) float64 { return 1 }
	a, b := wgmmaOperand{0, 64, 0, 512, 0, false}, wgmmaOperand{4096, 64, 0, 512, 0, false}
	for _, c := range []struct {
		name, src, want string
	}{
		{"no proxy fence", wgmmaKernel("f16", 8, 3, false, true, "", 0, 0), "without a fence.proxy.async"},
		{"no wgmma.fence", wgmmaKernel("f16", 8, 3, true, false, "", 0, 0), "without a wgmma.fence"},
		{"read in flight", wgmmaKernel("f16", 8, 3, true, true, "\tadd.f32 %f0, %f1, %f0;\n", 0, 0), "in flight"},
		{"not waited for", wgmmaKernel("f16", 8, 3, true, true, "", 1, 0), "not waited for"},
		// tf32 is K-major only: the ISA gives it no imm-trans arguments, and its K is 8
		{"tf32 with trans", strings.Replace(wgmmaKernel("f16", 8, 3, true, true, "", 0, 0), "m64n8k16.f32.f16.f16", "m64n8k8.f32.tf32.tf32", 1), "takes 4 accumulator registers, a-desc, b-desc, scale-d, imm-scale-a, imm-scale-b"},
		{"tf32 k16", strings.Replace(wgmmaKernel("f16", 8, 3, true, true, "", 0, 0), "m64n8k16.f32.f16.f16", "m64n8k16.f32.tf32.tf32", 1), "k8 for tf32"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := runWGMMA(t, "f16", 8, a, b, 0, true, c.src, one, one)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %v, want one saying %q", err, c.want)
			}
		})
	}
}

// The Linear and matmul kernels lowering plans for batched ensembles (2 models, fp16, sizes
// that leave the 64x64x32 tiles' M, N and K edges masked), compiled for sm_90a, where their K
// loops run on wgmma (the Linear's weight as B^T, K-major; matmul's B as it stands, MN-major),
// assembled with CUDA 12.4's ptxas when present and run on the emulator against the CPU backend.
func TestHopperPlansOnEmulatedPTX(t *testing.T) {
	for _, c := range []struct{ name, graph, trans string }{
		{"linear", linearJSON("float16", 2, 200, 144, 120, true), "1, 1, 0, 0;"},
		{"matmul", matmulJSON("float16", 2, 200, 80, 144), "1, 1, 0, 1;"},
	} {
		t.Run(c.name, func(t *testing.T) {
			g, err := graph.Parse(c.name+".json", []byte(c.graph), graph.Options{})
			if err != nil {
				t.Fatal(err)
			}
			plan, err := lowering.Lower(g, lowering.Options{})
			if err != nil {
				t.Fatal(err)
			}
			comp, l, a := compileFirstSM90a(t, plan)
			if !strings.Contains(string(a.Payload), "wgmma.mma_async") || !strings.Contains(string(a.Payload), c.trans) {
				t.Fatalf("the %s kernel (%s) does not run on wgmma with imm-scale and imm-trans %q", l.Kernel.Source.Fn, l.TunablesID, c.trans)
			}
			if ptxas, err := FindCUDA12Tool(".", "ptxas"); err == nil {
				if _, err := Assemble(ptxas, "sm_90a", string(a.Payload)); err != nil {
					t.Error(err)
				}
			}
			ins, err := g.GenerateInputs(5)
			if err != nil {
				t.Fatal(err)
			}
			checkOnEmulatedSM90a(t, plan, comp, g, ins, false)
		})
	}
}

// compileFirstSM90a compiles plan's first launch for sm_90a with a fresh compiler.
func compileFirstSM90a(t *testing.T, plan *lowering.Plan) (*jit.Compiler, *lowering.Launch, *jit.Artifact) {
	t.Helper()
	comp := jit.NewCompiler(jit.CompilerOptions{})
	l := plan.Launches[0]
	a, err := comp.Compile(l.Kernel.Source, l.Spec(), Target{Arch: "sm_90a"})
	if err != nil {
		t.Fatal(err)
	}
	return comp, l, a
}

// linearJSON is an ensemble of n Linear layers [rows, in] -> [rows, out] of dtype.
func linearJSON(dtype string, n, rows, in, out int, bias bool) string {
	params, binding := fmt.Sprintf(`{"name": "w", "shape": [%d, %d], "dtype": %q}`, out, in, dtype), `"weight": "w"`
	if bias {
		params += fmt.Sprintf(`, {"name": "b", "shape": [%d], "dtype": %q}`, out, dtype)
		binding += `, "bias": "b"`
	}
	return fmt.Sprintf(`{"format": "widejit.graph/v1", "n": %d,
  "inputs": [{"name": "x", "shape": [%d, %d], "dtype": %q, "per_model": true}],
  "params": [%s],
  "nodes": [{"name": "fc", "op": "linear", "inputs": ["x"], "params": {%s}, "attrs": {"in_features": %d, "out_features": %d, "bias": %t}}],
  "outputs": ["fc"], "init": {"seed": 3}}`, n, rows, in, dtype, params, binding, in, out, bias)
}

// matmulJSON is an ensemble of n products of per-model x [m, k] and y [k, cols] of dtype.
func matmulJSON(dtype string, n, m, k, cols int) string {
	return fmt.Sprintf(`{"format": "widejit.graph/v1", "n": %[1]d,
  "inputs": [{"name": "x", "shape": [%[2]d, %[3]d], "dtype": %[4]q, "per_model": true}, {"name": "y", "shape": [%[3]d, %[5]d], "dtype": %[4]q, "per_model": true}],
  "params": [],
  "nodes": [{"name": "mm", "op": "matmul", "inputs": ["x", "y"]}],
  "outputs": ["mm"], "init": {"seed": 3}}`, n, m, k, dtype, cols)
}

// checkOnEmulatedSM90a runs plan on the emulator (sm_90a PTX) and on the CPU backend and
// compares the outputs: at testkit's tolerance, or with tf32, at TF32's (1e-2 of the largest,
// as this package's other TF32 tests: the CPU computes IEEE fp32).
func checkOnEmulatedSM90a(t *testing.T, plan *lowering.Plan, comp *jit.Compiler, g *graph.Graph, ins map[string]*safetensors.Tensor, tf32 bool) {
	t.Helper()
	run := func(dev jit.Device) map[string]*safetensors.Tensor {
		r, err := runner.New(plan, dev, comp, g)
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		outs, err := r.Run(ins)
		if err != nil {
			t.Fatal(err)
		}
		return outs
	}
	got, want := run(ptxemu.NewDevice(Target{Arch: "sm_90a"}, ParamTypes)), run(cpu.NewDevice(2))
	if !tf32 {
		testkit.CheckOutputs(t, got, want)
		return
	}
	for name, w := range want {
		if err := testkit.CompareTensorsRTol(got[name], w, 1e-2); err != nil {
			t.Errorf("output %s: %v", name, err)
		}
	}
}

// twoGroupKernel is wgmmaKernel with n = 16 split into two m64n8k16 wgmmas, each its own
// commit group: the first on B^T rows 0-7 into %f1-%f4, the second on rows 8-15 (the next
// 8-row atom, sbo bytes on) into %f5-%f8. wgmma.wait_group 1 lands only the first, whose
// registers are stored then; the second's are stored after wait_group 0, or, with early,
// before it.
func twoGroupKernel(sbo int, early bool) string {
	k := wgmmaKernel("f16", 16, 3, true, true, "", 0, 0)
	one := "\twgmma.mma_async.sync.aligned.m64n16k16.f32.f16.f16 {%f1, %f2, %f3, %f4, %f5, %f6, %f7, %f8}, %rd3, %rd4, %p1, 1, 1, 0, 0;\n\twgmma.commit_group.sync.aligned;\n\twgmma.wait_group.sync.aligned 0;\n"
	two := fmt.Sprintf(`	wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16 {%%f1, %%f2, %%f3, %%f4}, %%rd3, %%rd4, %%p1, 1, 1, 0, 0;
	wgmma.commit_group.sync.aligned;
	add.s64 %%rd7, %%rd4, %d;
	wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16 {%%f5, %%f6, %%f7, %%f8}, %%rd3, %%rd7, %%p1, 1, 1, 0, 0;
	wgmma.commit_group.sync.aligned;
	wgmma.wait_group.sync.aligned 1;
`, sbo>>4)
	store := "\tmul.wide.u32 %rd6, %r1, 32;\n\tadd.s64 %rd6, %rd2, %rd6;\n"
	first := "\tst.global.f32 [%rd6+0], %f1;\n\tst.global.f32 [%rd6+4], %f2;\n\tst.global.f32 [%rd6+8], %f3;\n\tst.global.f32 [%rd6+12], %f4;\n"
	second := "\tst.global.f32 [%rd6+16], %f5;\n\tst.global.f32 [%rd6+20], %f6;\n\tst.global.f32 [%rd6+24], %f7;\n\tst.global.f32 [%rd6+28], %f8;\n"
	if early {
		two += store + first + second + "\twgmma.wait_group.sync.aligned 0;\n"
	} else {
		two += store + first + "\twgmma.wait_group.sync.aligned 0;\n" + second
	}
	i := strings.Index(k, one)
	j := strings.Index(k, "\tret;")
	if i < 0 || j < 0 {
		panic("wgmmaKernel changed")
	}
	return k[:i] + two + k[j:]
}

// Two commit groups in flight: wgmma.wait_group 1 lands the older one only (its fragments
// are the first 8 columns of D, stored before the younger one's wait), wait_group 0 the
// other; storing the younger one's registers before its wait is refused.
func TestEmulatedWGMMAGroups(t *testing.T) {
	A := func(r, k int) float64 { return float64((r*7+k*3)%5 - 2) }
	B := func(r, k int) float64 { return float64((r*3+k*11)%9 - 4) }
	a, b := wgmmaOperand{0, 64, 0, 512, 0, false}, wgmmaOperand{4096, 32, 0, 256, 0, false}
	d, err := runWGMMA(t, "f16", 16, a, b, 0.5, true, twoGroupKernel(b.sbo, false), A, B)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 64 {
		for j := range 16 {
			want := 0.5
			for k := range 16 {
				want += A(i, k) * B(j, k)
			}
			if d[i][j] != want {
				t.Fatalf("D[%d][%d] = %v, want %v", i, j, d[i][j], want)
			}
		}
	}
	if _, err := runWGMMA(t, "f16", 16, a, b, 0.5, true, twoGroupKernel(b.sbo, true), A, B); err == nil || !strings.Contains(err.Error(), "in flight") {
		t.Errorf("the younger group's registers stored before its wait: error %v, want one saying in flight", err)
	}
	if ptxas, err := FindCUDA12Tool(".", "ptxas"); err == nil {
		if _, err := Assemble(ptxas, "sm_90a", twoGroupKernel(b.sbo, false)); err != nil {
			t.Errorf("the hand-written kernel does not assemble: %v", err)
		}
	}
}

// hopperDevice is a generic cc 9.0 GPU whose kernels are generated for sm_90a (as jit/cuda's
// GenericDevice("sm_90a") describes it): lowering offers it the Hopper tiles.
var hopperDevice = jit.DeviceInfo{Kind: "cuda", Name: "generic sm_90a", ComputeCapability: "9.0",
	Caps: jit.Capabilities{WarpSize: 32, TensorCores: true, DiscreteMemory: true, WarpgroupMMA: true}}

// Lowering's Hopper tiles (128 rows over two warpgroups, 128 or 256 columns or, for a
// row-major B, 64, K slices of 64 (TF32: 32), 3 or 4 stages, rings past 48 KiB), each forced on a Linear and a matmul of odd sizes (edge
// tiles in M and N, K not a multiple of 64), run on wgmma in the emulator and match the CPU
// backend; ptxas 12.4 assembles them without spills.
func TestHopperTilesOnEmulatedPTX(t *testing.T) {
	if testing.Short() {
		t.Skip("emulates 256-thread CTAs")
	}
	for _, c := range []struct {
		name, graph, trans string
		tiles              int // 128x128 in 3 and 4 stages, 128x256 where B is B^T
	}{
		{"linear", linearJSON("float16", 1, 136, 80, 264, true), "1, 1, 0, 0;", 3},
		{"matmul", matmulJSON("bfloat16", 1, 136, 80, 144), "1, 1, 0, 1;", 2},
		// fp32 at high: TF32, K-major (no imm-trans), BLOCK_K 32
		{"linear_tf32", linearJSON("float32", 1, 136, 80, 264, false), ".tf32.tf32 {", 3},
	} {
		g, err := graph.Parse(c.name+".json", []byte(c.graph), graph.Options{})
		if err != nil {
			t.Fatal(err)
		}
		opts := lowering.Options{Device: hopperDevice}
		if strings.HasSuffix(c.name, "_tf32") {
			opts.Float32MatmulPrecision = lowering.PrecisionHigh
		}
		_, points, err := lowering.LowerWithDecisions(g, opts, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		var forced []map[int]string
		for _, p := range points {
			for _, cand := range p.Candidates {
				if cand.Params["BLOCK_M"] == 128 && cand.Params["num_warps"] == 8 && cand.Strategy == lowering.Batched {
					forced = append(forced, map[int]string{p.Index: cand.ID})
				}
			}
		}
		if len(forced) != c.tiles {
			t.Fatalf("%s: %d Hopper candidates (%v), want %d", c.name, len(forced), forced, c.tiles)
		}
		ins, err := g.GenerateInputs(5)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range forced {
			t.Run(c.name+"/"+fmt.Sprint(f), func(t *testing.T) {
				plan, _, err := lowering.LowerWithDecisions(g, opts, nil, f)
				if err != nil {
					t.Fatal(err)
				}
				comp, l, a := compileFirstSM90a(t, plan)
				text := string(a.Payload)
				if !strings.Contains(text, "wgmma.mma_async") || !strings.Contains(text, c.trans) || a.Meta["threads"] != "256" {
					t.Fatalf("the %s kernel (%s, %s threads) does not run on wgmma with two warpgroups and imm-trans %q", l.Kernel.Source.Fn, l.TunablesID, a.Meta["threads"], c.trans)
				}
				if ptxas, err := FindCUDA12Tool(".", "ptxas"); err == nil {
					rep, err := Assemble(ptxas, "sm_90a", text)
					if err != nil {
						t.Fatal(err)
					}
					if rep.SpillStores+rep.SpillLoads != 0 {
						t.Errorf("%s spills: %d bytes stored, %d loaded", l.TunablesID, rep.SpillStores, rep.SpillLoads)
					}
				}
				checkOnEmulatedSM90a(t, plan, comp, g, ins, opts.Float32MatmulPrecision == lowering.PrecisionHigh)
				t.Logf("%s: %s, %s bytes of shared memory", l.TunablesID, plan.Launches[0].Kernel.Source.Fn, a.Meta["shared_bytes"])
			})
		}
	}
}
