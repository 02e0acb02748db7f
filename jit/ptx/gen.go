package ptx

import (
	"fmt"
	"math"
	"math/bits"
	"slices"
	"strings"

	"github.com/widejit/widejit/jit"
	"github.com/widejit/widejit/triton/ir"
)

// regClass is a PTX virtual register class.
type regClass int

const (
	rcPred regClass = iota // i1
	rcB16                  // fp16, bf16 (bit patterns)
	rcB32                  // i8..i32, u8..u32, normalized (sign- or zero-extended) to 32 bits
	rcF32
	rcB64 // i64, u64, pointers
	rcF64
	numClasses
)

var classPrefix = [numClasses]string{"%p", "%h", "%r", "%f", "%rd", "%fd"}
var classDecl = [numClasses]string{".pred", ".b16", ".b32", ".f32", ".b64", ".f64"}

func classOf(t ir.Type) regClass {
	if t.Ptr {
		return rcB64
	}
	switch t.Elem {
	case ir.I1:
		return rcPred
	case ir.F16, ir.BF16:
		return rcB16
	case ir.F32:
		return rcF32
	case ir.F64:
		return rcF64
	case ir.I64, ir.U64:
		return rcB64
	}
	return rcB32
}

// words is the number of 32-bit registers a value of class c takes.
func (c regClass) words() int {
	if c == rcB64 || c == rcF64 {
		return 2
	}
	return 1
}

// codegenError carries a position to the caller through panics inside the generator, so
// deep helpers need not thread errors; run converts it back into an error.
type codegenError struct{ err error }

type gen struct {
	f       *ir.Func
	arch    string
	threads int
	align16 map[string]bool
	ones    map[string]bool // jit.Spec.EqualTo1: integer parameters compiled as the constant 1

	body     strings.Builder
	prologue strings.Builder
	nregs    [numClasses]int
	labels   int

	vals map[*ir.Value][]string // registers per slot

	tid       string
	bases     map[int]string // layout key -> base element index register
	owners    map[int]string // element count -> "this thread owns its element" predicate
	smemBase  string
	smemBytes int

	maxTileRegs int

	contig *contiguity // facts for vectorizing global accesses
	vec    int         // the kernel's run length V (see runLen)

	fmaDots         bool // Target.FMADots
	rowMajorStaging bool // Target.rowMajorStaging

	// accumulators held as mma fragments across loops (mmaloop.go)
	fragFor map[*ir.Instr][]*fragAcc
	fragDot map[*ir.Instr]*fragAcc
	fragAdd map[*ir.Instr]*fragAcc
	frags   map[*ir.Value][]string

	uses map[*ir.Value]int       // operand uses of every value (mmaloop.go)
	user map[*ir.Value]*ir.Instr // a user of every used value (the only one when uses is 1)
	lazy map[*ir.Value]*ir.Instr // permutes staged by the dot that reads them (remat.go)
	// loads a dot stages straight from global memory with cp.async (async.go), and whether
	// copies are in flight
	async        map[*ir.Value]*ir.Instr
	asyncPending bool
	asyncGuard   string // a predicate every cp.async also needs (pipeline.go), or ""

	stages    int  // num_stages: the depth of a K loop's cp.async pipeline (pipeline.go)
	pipelined bool // some loop is pipelined

	swizzle      int  // while staging wgmma operands: the swizzle's bytes per row (wgmma.go)
	swizzled1024 bool // some tile is swizzled: wj_smem is 1024-byte aligned

	asserts    []jit.DeviceAssert // in the order of their numbers (assert.go)
	assertFlag string             // the flag buffer's address, when the kernel has asserts
}

func newGen(f *ir.Func, arch string, threads int, spec jit.Spec) *gen {
	g := &gen{f: f, arch: arch, threads: threads, align16: map[string]bool{}, ones: map[string]bool{},
		vals: map[*ir.Value][]string{}, vec: 1, bases: map[int]string{}, owners: map[int]string{}}
	for _, a := range spec.Align16 {
		g.align16[a] = true
	}
	for _, a := range spec.EqualTo1 {
		g.ones[a] = true
	}
	g.stages = defaultStages
	if s, ok := spec.Consts["num_stages"].(int64); ok {
		g.stages = int(s)
	}
	if spec.NumStages != 0 {
		g.stages = spec.NumStages
	}
	return g
}

func (g *gen) failf(pos ir.Pos, format string, args ...any) {
	panic(codegenError{fmt.Errorf("%s: %s", pos, fmt.Sprintf(format, args...))})
}

func (g *gen) newReg(c regClass) string {
	g.nregs[c]++
	return fmt.Sprintf("%s%d", classPrefix[c], g.nregs[c])
}

func (g *gen) emit(format string, args ...any) {
	g.body.WriteByte('\t')
	fmt.Fprintf(&g.body, format, args...)
	g.body.WriteString(";\n")
}

func (g *gen) emitPro(format string, args ...any) {
	g.prologue.WriteByte('\t')
	fmt.Fprintf(&g.prologue, format, args...)
	g.prologue.WriteString(";\n")
}

func (g *gen) label() string {
	g.labels++
	return fmt.Sprintf("$L%d", g.labels)
}

func (g *gen) placeLabel(l string) { fmt.Fprintf(&g.body, "%s:\n", l) }

// slots is how many elements of an n-element tile each thread holds.
func (g *gen) slots(n int) int {
	if n >= g.threads {
		return n / g.threads
	}
	return 1
}

// runLen is the length V of each thread's contiguous run in an n-element tile (n >= T). It is
// 1 unless the contiguity analysis proved that some global access of the kernel can use
// ld/st.global.v2/.v4 (then 2 or 4, capped by n/T), chosen once per kernel so every tile of
// n elements has one layout. With 1, slot r of consecutive threads holds consecutive
// elements: scalar accesses of a warp coalesce and shared memory is free of bank conflicts.
func (g *gen) runLen(n int) int {
	return max(1, min(g.vec, n/g.threads))
}

// elemIndex returns the register holding the base element index of this thread in an
// n-element tile and the constant to add for slot r (see the package doc for the layout).
func (g *gen) elemIndex(n, r int) (string, int) {
	if n < g.threads {
		return g.base(n), 0
	}
	v := g.runLen(n)
	return g.base(-v), (r/v)*g.threads*v + r%v
}

// base computes, once in the prologue, tid*V (key -V) or tid & (n-1) (key n < threads).
func (g *gen) base(key int) string {
	if r, ok := g.bases[key]; ok {
		return r
	}
	r := g.newReg(rcB32)
	if key < 0 {
		g.emitPro("shl.b32 %s, %s, %d", r, g.tid, bits.TrailingZeros(uint(-key)))
	} else {
		g.emitPro("and.b32 %s, %s, %d", r, g.tid, key-1)
	}
	g.bases[key] = r
	return r
}

// owner is the predicate "this thread is the first holder of its element" for an n-element
// tile with n < threads (elements are replicated); atomics run only there.
func (g *gen) owner(n int) string {
	if p, ok := g.owners[n]; ok {
		return p
	}
	p := g.newReg(rcPred)
	g.emitPro("setp.lt.u32 %s, %s, %d", p, g.tid, n)
	g.owners[n] = p
	return p
}

func (g *gen) smem() string {
	if g.smemBase == "" {
		g.smemBase = g.newReg(rcB32)
		g.emitPro("mov.u32 %s, wj_smem", g.smemBase)
	}
	return g.smemBase
}

func (g *gen) get(v *ir.Value) []string {
	r, ok := g.vals[v]
	if !ok {
		pos := ir.Pos{File: g.f.File}
		if v.Def != nil {
			pos = v.Def.Pos
		}
		g.failf(pos, "ptx: internal error: value %%%d used before definition", v.ID)
	}
	return r
}

func (g *gen) set(v *ir.Value, regs []string) {
	if len(regs) != g.slots(v.Type.NumElems()) {
		g.failf(ir.Pos{File: g.f.File}, "ptx: internal error: value %%%d has %d slots, want %d", v.ID, len(regs), g.slots(v.Type.NumElems()))
	}
	g.vals[v] = regs
	if w := len(regs) * classOf(v.Type).words(); w > g.maxTileRegs {
		g.maxTileRegs = w
	}
}

// fresh makes one new register per slot for a value of type t.
func (g *gen) fresh(t ir.Type) []string {
	n := g.slots(t.NumElems())
	out := make([]string, n)
	c := classOf(t)
	for i := range out {
		out[i] = g.newReg(c)
	}
	return out
}

func (g *gen) run() (text string, err error) {
	defer func() {
		if r := recover(); r != nil {
			ce, ok := r.(codegenError)
			if !ok {
				panic(r)
			}
			err = ce.err
		}
	}()
	g.tid = g.newReg(rcB32)
	g.emitPro("mov.u32 %s, %%tid.x", g.tid)
	g.contig = analyzeContiguity(g.f, g.align16, g.ones)
	g.vec = g.chooseRunLen(g.f.Body)
	g.findFragAccs(g.f)
	var params strings.Builder
	for i, p := range g.f.Params {
		name := fmt.Sprintf("%s_param_%d", g.f.Name, i)
		if i > 0 {
			params.WriteString(",\n")
		}
		c := classOf(p.Type)
		var pt string
		switch c {
		case rcPred, rcB32:
			pt = ".u32"
		case rcB16:
			pt = ".b16"
		case rcF32:
			pt = ".f32"
		case rcF64:
			pt = ".f64"
		default:
			pt = ".u64"
		}
		fmt.Fprintf(&params, "\t.param %s %s", pt, name)
		if c == rcPred {
			tmp := g.newReg(rcB32)
			r := g.newReg(rcPred)
			g.emitPro("ld.param.u32 %s, [%s]", tmp, name)
			g.emitPro("setp.ne.u32 %s, %s, 0", r, tmp)
			g.set(p, []string{r})
			continue
		}
		r := g.newReg(c)
		if g.ones[p.Name] && !p.Type.Ptr && p.Type.Elem.IsInt() {
			// specialized: ptxas folds the unit stride out of the address arithmetic
			g.emitPro("mov%s %s, 1", pt, r)
			g.set(p, []string{r})
			continue
		}
		g.emitPro("ld.param%s %s, [%s]", pt, r, name)
		if c == rcB32 {
			g.normalizeInto(p.Type.Elem, r, &g.prologue)
		}
		g.set(p, []string{r})
	}
	if hasAsserts(g.f.Body) {
		if len(g.f.Params) > 0 {
			params.WriteString(",\n")
		}
		params.WriteString(g.assertParam(g.f.Name + "_param_assert"))
	}
	g.block(g.f.Body)

	var out strings.Builder
	fmt.Fprintf(&out, "//\n// Generated by widejit from %s (kernel %s", g.f.File, g.f.Name)
	if cs := g.f.ConstString(); cs != "" {
		fmt.Fprintf(&out, "; %s", cs)
	}
	fmt.Fprintf(&out, ")\n//\n.version %s\n.target %s\n.address_size 64\n\n", ISAFor(g.arch), g.arch)
	if g.smemBytes > 0 {
		align := 16
		if g.swizzled1024 {
			align = 1024 // swizzle patterns are anchored at address bits (wgmma.go)
		}
		fmt.Fprintf(&out, ".extern .shared .align %d .b8 wj_smem[];\n\n", align)
	}
	fmt.Fprintf(&out, ".visible .entry %s(\n%s\n)\n.maxntid %d, 1, 1\n", g.f.Name, params.String(), g.threads)
	if g.pipelined {
		// A register budget for the pipelined K loop: without one, ptxas 12.4 gives it 72
		// registers on sm_90a and spills (128 still spills the TF32 GEMM there). A CTA of 256
		// threads or more runs alone on its SM whatever the budget past 128, so it may take
		// all 255: the 128x256 Hopper tile's 128 accumulator registers per thread need them.
		budget := 168
		if g.threads >= 256 {
			budget = 255
		}
		fmt.Fprintf(&out, ".maxnreg %d\n", budget)
	}
	out.WriteString("{\n")
	for c := regClass(0); c < numClasses; c++ {
		if g.nregs[c] > 0 {
			fmt.Fprintf(&out, "\t.reg %s %s<%d>;\n", classDecl[c], classPrefix[c], g.nregs[c]+1)
		}
	}
	out.WriteByte('\n')
	out.WriteString(g.prologue.String())
	out.WriteString(g.body.String())
	out.WriteString("\tret;\n}\n")
	return out.String(), nil
}

// block emits the instructions of b and returns the operands of its terminator, if any.
func (g *gen) block(b *ir.Block) []*ir.Value {
	for _, in := range b.Instrs {
		switch in.Op {
		case ir.Yield, ir.Condition:
			return in.Args
		}
		g.instr(in)
	}
	return nil
}

// maxSlots bounds the elements of one tile a thread holds: beyond it the unrolled code and
// its registers grow out of all proportion (ptxas would spill nearly everything).
const maxSlots = 1024

func (g *gen) instr(in *ir.Instr) {
	for _, v := range in.Results {
		if n := v.Type.NumElems(); g.slots(n) > maxSlots {
			g.failf(in.Pos, "ptx: a %s tile is %d elements per thread with %d threads (at most %d); use smaller blocks or more warps", v.Type, g.slots(n), g.threads, maxSlots)
		}
	}
	if fa := g.fragAdd[in]; fa != nil {
		g.frags[in.Result()] = g.frags[fa.iter] // the dot accumulated in place
		return
	}
	switch op := in.Op; {
	case op == ir.Const:
		g.constant(in)
	case op == ir.ProgramID || op == ir.NumPrograms: // axis 0..2 (ir.GridQueryResult)
		r := g.newReg(rcB32)
		sreg := "%ctaid"
		if op == ir.NumPrograms {
			sreg = "%nctaid"
		}
		g.emit("mov.u32 %s, %s.%c", r, sreg, "xyz"[in.Int])
		g.set(in.Result(), []string{r})
	case op == ir.Arange:
		g.arange(in)
	case op == ir.Splat:
		s := g.get(in.Args[0])[0]
		g.set(in.Result(), repeat(s, g.slots(in.Result().Type.NumElems())))
	case op == ir.Reshape || op == ir.ExpandDims:
		// Row-major order is kept and the layout depends only on the element count.
		g.set(in.Result(), g.get(in.Args[0]))
	case op == ir.Broadcast:
		g.broadcast(in)
	case op == ir.Permute:
		if !g.lazyPermute(in) {
			g.permute(in)
		}
	case op.IsElementwise() || op == ir.Cmp || op == ir.Select || op == ir.Cast:
		g.elementwise(in)
	case op == ir.PtrAdd:
		g.ptrAdd(in)
	case op == ir.Load:
		if !g.asyncLoad(in) {
			g.load(in)
		}
	case op == ir.Store:
		g.store(in)
	case op == ir.AtomicRMW || op == ir.AtomicCAS:
		g.atomic(in)
	case op == ir.Dot:
		g.dot(in)
	case op == ir.Reduce:
		g.reduce(in)
	case op == ir.Barrier:
		g.emit("bar.sync 0")
	case op == ir.Print:
		g.failf(in.Pos, "ptx: tl.device_print is not supported by the PTX backend; run the kernel with --device cpu to print")
	case op == ir.Assert:
		g.deviceAssert(in)
	case op == ir.For:
		g.forLoop(in)
	case op == ir.If:
		g.ifElse(in)
	case op == ir.While:
		g.whileLoop(in)
	default:
		g.failf(in.Pos, "ptx: op %s is not supported by the PTX backend", op)
	}
}

func repeat(s string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = s
	}
	return out
}

// constant materializes a Const in one register; a tile shares it in every slot.
func (g *gen) constant(in *ir.Instr) {
	t := in.Result().Type
	c := classOf(t)
	r := g.newReg(c)
	switch c {
	case rcPred:
		tmp := g.newReg(rcB32)
		g.emit("mov.u32 %s, %d", tmp, b2i(in.Int != 0))
		g.emit("setp.ne.u32 %s, %s, 0", r, tmp)
	case rcB32:
		g.emit("mov.b32 %s, %s", r, imm32(in.Int, t.Elem))
	case rcB64:
		g.emit("mov.b64 %s, 0x%016X", r, uint64(in.Int))
	case rcF32:
		g.emit("mov.f32 %s, %s", r, f32imm(in.Float))
	case rcF64:
		g.emit("mov.f64 %s, 0d%016X", r, math.Float64bits(in.Float))
	case rcB16:
		f := g.newReg(rcF32)
		g.emit("mov.f32 %s, %s", f, f32imm(in.Float))
		g.emit("cvt.rn.%s.f32 %s, %s", halfName(t.Elem), r, f)
	}
	g.set(in.Result(), repeat(r, g.slots(t.NumElems())))
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

func f32imm(x float64) string { return fmt.Sprintf("0f%08X", math.Float32bits(float32(x))) }

// imm32 is the normalized 32-bit pattern of an integer constant of dtype d.
func imm32(v int64, d ir.DType) string {
	switch d {
	case ir.I8:
		v = int64(int8(v))
	case ir.U8:
		v = int64(uint8(v))
	case ir.I16:
		v = int64(int16(v))
	case ir.U16:
		v = int64(uint16(v))
	}
	return fmt.Sprintf("0x%08X", uint32(v))
}

func halfName(d ir.DType) string {
	if d == ir.BF16 {
		return "bf16"
	}
	return "f16"
}

// normalizeInto re-extends a 32-bit register holding a sub-32-bit integer of dtype d.
func (g *gen) normalizeInto(d ir.DType, r string, w *strings.Builder) {
	var line string
	switch d {
	case ir.I8:
		line = fmt.Sprintf("cvt.s32.s8 %s, %s", r, r)
	case ir.U8:
		line = fmt.Sprintf("and.b32 %s, %s, 255", r, r)
	case ir.I16:
		line = fmt.Sprintf("cvt.s32.s16 %s, %s", r, r)
	case ir.U16:
		line = fmt.Sprintf("and.b32 %s, %s, 65535", r, r)
	default:
		return
	}
	fmt.Fprintf(w, "\t%s;\n", line)
}

func (g *gen) normalize(d ir.DType, r string) { g.normalizeInto(d, r, &g.body) }

func (g *gen) arange(in *ir.Instr) {
	t := in.Result().Type
	n := t.NumElems()
	out := make([]string, g.slots(n))
	for r := range out {
		base, off := g.elemIndex(n, r)
		d := g.newReg(rcB32)
		g.emit("add.s32 %s, %s, %d", d, base, off+in.Ints[0])
		out[r] = d
	}
	g.set(in.Result(), out)
}

// movInto copies src registers into dst registers of class c.
func (g *gen) mov(c regClass, dst, src string) {
	if dst == src {
		return
	}
	g.emit("mov%s %s, %s", movSuffix(c), dst, src)
}

func movSuffix(c regClass) string {
	switch c {
	case rcPred:
		return ".pred"
	case rcB16:
		return ".b16"
	case rcB32:
		return ".b32"
	case rcF32:
		return ".f32"
	case rcB64:
		return ".b64"
	}
	return ".f64"
}

// copyValues moves srcs into dsts as a parallel copy (a yield may swap loop-carried values).
func (g *gen) copyValues(dsts [][]string, srcs []*ir.Value) {
	tmps := make([][]string, len(srcs))
	for i, v := range srcs {
		c := classOf(v.Type)
		regs, ok := g.frags[v]
		if !ok {
			regs = g.get(v)
		}
		if slices.Equal(regs, dsts[i]) {
			// in place (an accumulator's fragments): no copy, which a wgmma still in
			// flight on them would forbid (wgmma.go)
			continue
		}
		tmps[i] = make([]string, len(regs))
		for r, s := range regs {
			t := g.newReg(c)
			g.mov(c, t, s)
			tmps[i][r] = t
		}
	}
	for i, v := range srcs {
		c := classOf(v.Type)
		for r := range tmps[i] {
			g.mov(c, dsts[i][r], tmps[i][r])
		}
	}
}

func (g *gen) freshFor(vals []*ir.Value) [][]string {
	out := make([][]string, len(vals))
	for i, v := range vals {
		out[i] = g.fresh(v.Type)
	}
	return out
}

func (g *gen) ifElse(in *ir.Instr) {
	cond := g.get(in.Args[0])[0]
	res := g.freshFor(in.Results)
	elseL, endL := g.label(), g.label()
	g.emit("@!%s bra %s", cond, elseL)
	g.copyValues(res, g.block(in.Regions[0]))
	g.emit("bra.uni %s", endL)
	g.placeLabel(elseL)
	if len(in.Regions) > 1 {
		g.copyValues(res, g.block(in.Regions[1]))
	}
	g.placeLabel(endL)
	for i, v := range in.Results {
		g.set(v, res[i])
	}
}

func (g *gen) forLoop(in *ir.Instr) {
	lb, ub, step := in.Args[0], in.Args[1], in.Args[2]
	inits := in.Args[3:]
	body := in.Regions[0]
	it := classOf(lb.Type)
	ity := intType(lb.Type.Elem)
	iv := g.newReg(it)
	g.mov(it, iv, g.get(lb)[0])
	accs := g.fragFor[in] // nil, or per init: nil or an accumulator held as fragments
	frag := func(i int) *fragAcc {
		if accs == nil {
			return nil
		}
		return accs[i]
	}
	// the pipeline is chosen first: on wgmma (wgmma.go) the accumulator has its own fragments
	var pipe *pipeline
	if accs != nil {
		if pipe = g.pipelineFor(in, accs); pipe != nil {
			pipe.fa.wg = g.wgmmaFor(pipe)
		}
	}
	iters := make([][]string, len(inits))
	for i, v := range inits {
		src, c := []string(nil), classOf(v.Type)
		if fa := frag(i); fa != nil {
			src = g.toFrags(v, fa)
		} else {
			src = g.get(v)
		}
		iters[i] = make([]string, len(src))
		for r, s := range src {
			iters[i][r] = g.newReg(c)
			g.mov(c, iters[i][r], s)
		}
	}
	if pipe != nil {
		g.pipeStart(pipe, iv, iters)
		pipe.fa.pipe, g.pipelined = pipe, true
	}
	g.vals[body.Args[0]] = []string{iv}
	for i, a := range body.Args[1:] {
		if frag(i) != nil {
			g.frags[a] = iters[i]
		} else {
			g.set(a, iters[i])
		}
	}
	top, end := g.label(), g.label()
	g.placeLabel(top)
	u, s := g.get(ub)[0], g.get(step)[0]
	// a pipelined loop is unrolled over its ring, so that every step's buffers are at
	// offsets known here (pipeline.go)
	copies := 1
	if pipe != nil {
		copies = pipe.stages
	}
	for range copies {
		done := g.newReg(rcPred)
		if step.Def != nil && step.Def.Op == ir.Const {
			cmp := "ge"
			if step.Def.Int < 0 {
				cmp = "le"
			}
			g.emit("setp.%s.%s %s, %s, %s", cmp, ity, done, iv, u)
		} else {
			pos, ge, le := g.newReg(rcPred), g.newReg(rcPred), g.newReg(rcPred)
			g.emit("setp.gt.%s %s, %s, 0", ity, pos, s)
			g.emit("setp.ge.%s %s, %s, %s", ity, ge, iv, u)
			g.emit("setp.le.%s %s, %s, %s", ity, le, iv, u)
			g.emit("and.pred %s, %s, %s", ge, ge, pos)
			g.emit("not.pred %s, %s", pos, pos)
			g.emit("and.pred %s, %s, %s", le, le, pos)
			g.emit("or.pred %s, %s, %s", done, ge, le)
		}
		g.emit("@%s bra %s", done, end)
		g.copyValues(iters, g.block(body))
		g.emit("add.%s %s, %s, %s", ity, iv, iv, s)
	}
	g.emit("bra.uni %s", top)
	g.placeLabel(end)
	if pipe != nil {
		g.pipeEnd(pipe)
	}
	for i, v := range in.Results {
		if fa := frag(i); fa != nil {
			g.set(v, g.fromFrags(iters[i], fa, v.Type))
		} else {
			g.set(v, iters[i])
		}
	}
}

func (g *gen) whileLoop(in *ir.Instr) {
	condB, body := in.Regions[0], in.Regions[1]
	iters := g.freshFor(in.Args)
	for i, v := range in.Args {
		c := classOf(v.Type)
		for r, s := range g.get(v) {
			g.mov(c, iters[i][r], s)
		}
	}
	for i, a := range condB.Args {
		g.set(a, iters[i])
	}
	for i, a := range body.Args {
		g.set(a, iters[i])
	}
	top, end := g.label(), g.label()
	g.placeLabel(top)
	term := g.block(condB) // condition(cond), one i1 scalar
	g.emit("@!%s bra %s", g.get(term[0])[0], end)
	g.copyValues(iters, g.block(body))
	g.emit("bra.uni %s", top)
	g.placeLabel(end)
	for i, v := range in.Results {
		g.set(v, iters[i])
	}
}

// intType is the PTX type suffix for integer arithmetic and comparison on d.
func intType(d ir.DType) string {
	switch d {
	case ir.I64:
		return "s64"
	case ir.U64:
		return "u64"
	case ir.U8, ir.U16, ir.U32:
		return "u32"
	}
	return "s32"
}
