package ptxemu

import (
	"fmt"
	"regexp"
	"strconv"
)

// Hopper's warpgroup MMA, as the PTX ISA (8.0, "Asynchronous Warpgroup Level Matrix
// Multiply-Accumulate Instructions") describes it, for the forms the code generator emits:
//
//	wgmma.fence.sync.aligned
//	wgmma.mma_async.sync.aligned.m64nNk16.f32.{f16,bf16}.{f16,bf16} {d...}, a-desc, b-desc, scale-d, imm-scale-a, imm-scale-b, 0, imm-trans-b
//	wgmma.mma_async.sync.aligned.m64nNk8.f32.tf32.tf32 {d...}, a-desc, b-desc, scale-d, imm-scale-a, imm-scale-b
//	wgmma.commit_group.sync.aligned
//	wgmma.wait_group.sync.aligned N
//	fence.proxy.async[.shared::cta]
//
// Every wgmma instruction is executed by the 128 threads of a warpgroup together. An
// mma_async only records the operation: it runs, reading shared memory and its accumulator
// registers then, when a wait_group lands its commit group, so a kernel that overwrites an
// operand buffer or reads the accumulators before waiting sees wrong data here, and reading
// or writing an accumulator register while its wgmma is in flight is an error. A warpgroup
// must execute wgmma.fence before its first mma_async after each wait_group (stricter than
// the ISA, which asks it before the first one and after other accesses to the accumulator
// registers), and every thread of the CTA must have executed fence.proxy.async after its
// last generic-proxy write to shared memory (st.shared, a landed cp.async) before an
// mma_async reads shared memory through the async proxy.
//
// A is K-major (imm-trans-a 0), B K-major or, with imm-trans-b 1 and a swizzle, MN-major;
// both are read through matrix descriptors: start address, leading and stride byte offsets
// (each >> 4, bits 0-13, 16-29, 32-45), base offset (bits 49-51, only 0 supported) and
// swizzle mode (bits 62-63: 0 none, 1 128-byte, 2 64-byte, 3 32-byte). The D fragment of lane l of warp q of the warpgroup, element j, is row
// 16q + l/4 + 8*(j/2 mod 2), column 8*(j/4) + 2*(l mod 4) + j mod 2. Products are exact and
// summed in float64, rounded once to fp32.

// wgState is one warpgroup's wgmma state.
type wgState struct {
	fenced  bool
	pending []wgOp   // issued since the last commit_group
	groups  [][]wgOp // committed, oldest first
}

// wgOp is one issued wgmma.mma_async.
type wgOp struct {
	in           *emuInstr
	n            int
	typ          string
	descA, descB uint64
	transB       bool
	scaleD       bool
	scaleA       float64
	scaleB       float64
	lanes        []*emuThread
}

var wgShapeRe = regexp.MustCompile(`^m64n(\d+)k(16|8)$`)

// wgmma runs one warpgroup-collective wgmma instruction for every warpgroup of the CTA.
func (r *emuRun) wgmma(in *emuInstr, ts []*emuThread) error {
	if len(ts)%128 != 0 {
		return fmt.Errorf("%d threads are not whole warpgroups of 128", len(ts))
	}
	op := in.op
	if len(op) < 4 || op[2] != "sync" || op[3] != "aligned" || (op[1] != "mma_async" && len(op) != 4) {
		return fmt.Errorf("unsupported wgmma form")
	}
	if r.wgs == nil {
		r.wgs = make([]wgState, len(ts)/128)
	}
	for g := range r.wgs {
		st, lanes := &r.wgs[g], ts[128*g:128*g+128]
		switch op[1] {
		case "fence":
			st.fenced = true
		case "commit_group":
			st.groups = append(st.groups, st.pending)
			st.pending = nil
		case "wait_group":
			if len(in.args) != 1 {
				return fmt.Errorf("wgmma.wait_group takes one operand")
			}
			keep := int(r.val(lanes[0], in.args[0]))
			for len(st.groups) > keep {
				for _, o := range st.groups[0] {
					if err := r.wgRun(o); err != nil {
						return err
					}
				}
				st.groups = st.groups[1:]
			}
			st.fenced = false
			busy := map[int]bool{}
			for _, grp := range append(st.groups, st.pending) {
				for _, o := range grp {
					for _, reg := range o.in.args[0].regs {
						busy[reg] = true
					}
				}
			}
			for _, t := range lanes {
				t.wgBusy = busy
			}
		case "mma_async":
			o, err := r.wgIssue(in, lanes, ts)
			if err != nil {
				return err
			}
			if !st.fenced {
				return fmt.Errorf("wgmma.mma_async without a wgmma.fence since the last wgmma.wait_group")
			}
			st.pending = append(st.pending, o)
			busy := map[int]bool{}
			for reg := range lanes[0].wgBusy {
				busy[reg] = true
			}
			for _, reg := range in.args[0].regs {
				busy[reg] = true
			}
			for _, t := range lanes {
				t.wgBusy = busy
			}
		default:
			return fmt.Errorf("unsupported wgmma form")
		}
	}
	return nil
}

// wgIssue checks one warpgroup's mma_async and records it.
func (r *emuRun) wgIssue(in *emuInstr, lanes, cta []*emuThread) (wgOp, error) {
	op, a := in.op, in.args
	if len(op) != 8 || op[5] != "f32" || op[6] != op[7] || (op[6] != "f16" && op[6] != "bf16" && op[6] != "tf32") {
		return wgOp{}, fmt.Errorf("unsupported wgmma.mma_async form (f32 accumulators of f16, bf16 or tf32 products only)")
	}
	m := wgShapeRe.FindStringSubmatch(op[4])
	if m == nil || (m[2] == "8") != (op[6] == "tf32") {
		return wgOp{}, fmt.Errorf("unsupported wgmma shape %s for %s (k16 for f16 and bf16, k8 for tf32)", op[4], op[6])
	}
	n, _ := strconv.Atoi(m[1])
	if n < 8 || n > 256 || n%8 != 0 {
		return wgOp{}, fmt.Errorf("wgmma shape %s: N must be a multiple of 8 from 8 to 256", op[4])
	}
	if op[6] == "tf32" {
		// K-major operands only: the ISA gives tf32 no imm-trans arguments
		if len(a) != 6 || a[0].kind != 7 || len(a[0].regs) != n/2 {
			return wgOp{}, fmt.Errorf("wgmma m64n%dk8 .tf32 takes %d accumulator registers, a-desc, b-desc, scale-d, imm-scale-a, imm-scale-b", n, n/2)
		}
	} else {
		if len(a) != 8 || a[0].kind != 7 || len(a[0].regs) != n/2 {
			return wgOp{}, fmt.Errorf("wgmma m64n%dk16 takes %d accumulator registers, a-desc, b-desc, scale-d, imm-scale-a, imm-scale-b, imm-trans-a, imm-trans-b", n, n/2)
		}
		if a[6].kind != 1 || a[7].kind != 1 || a[6].imm != 0 || a[7].imm > 1 {
			return wgOp{}, fmt.Errorf("imm-trans-a must be 0 (an MN-major A is not supported), imm-trans-b 0 or 1")
		}
	}
	scale := func(o emuOperand) (float64, error) {
		switch {
		case o.kind == 1 && o.imm == 1:
			return 1, nil
		case o.kind == 1 && int64(o.imm) == -1:
			return -1, nil
		}
		return 0, fmt.Errorf("imm-scale must be 1 or -1")
	}
	o := wgOp{in: in, n: n, typ: op[6], lanes: lanes, transB: op[6] != "tf32" && a[7].imm == 1}
	var err error
	if o.scaleA, err = scale(a[4]); err != nil {
		return o, err
	}
	if o.scaleB, err = scale(a[5]); err != nil {
		return o, err
	}
	for i, t := range lanes {
		da, db, sd := r.val(t, a[1]), r.val(t, a[2]), r.val(t, a[3]) != 0
		if i == 0 {
			o.descA, o.descB, o.scaleD = da, db, sd
		} else if da != o.descA || db != o.descB || sd != o.scaleD {
			return o, fmt.Errorf("the descriptors or scale-d differ between the threads of a warpgroup")
		}
	}
	for _, t := range cta {
		if t.generic {
			return o, fmt.Errorf("thread %d wrote shared memory through the generic proxy (st.shared or cp.async) without a fence.proxy.async before this wgmma", t.tid)
		}
	}
	return o, nil
}

// descAddr is the shared-memory address of element (row, k) of an operand of size-byte
// elements: rows are M (A) or N (B), k < 16. K-major: without swizzling the matrix is made
// of core matrices of 8 rows of 16 bytes, 128 contiguous bytes each, the next along K at the
// leading byte offset and the next 8 rows at the stride byte offset; with an S-byte swizzle
// each row holds S contiguous bytes of K, 8 rows make an atom, atoms follow at the stride
// byte offset. MN-major (swizzled only): each of the 16 K rows holds S contiguous bytes of
// M or N, 8 K rows make an atom, the next 8 K rows follow at the stride byte offset, the next
// S bytes of M or N at the leading byte offset. The swizzle XORs the 16-byte unit at address
// bits 4.. with address bits 7.. (log2(S/16) bits).
func descAddr(desc uint64, row, k, size int, mnMajor bool) (uint64, error) {
	start := (desc & 0x3fff) << 4
	lbo := (desc >> 16 & 0x3fff) << 4
	sbo := (desc >> 32 & 0x3fff) << 4
	if desc>>49&7 != 0 {
		return 0, fmt.Errorf("matrix descriptor %#x: a base offset is not supported", desc)
	}
	mode := desc >> 62
	width := map[uint64]uint64{1: 128, 2: 64, 3: 32}[mode]
	var addr uint64
	switch {
	case mode == 0 && mnMajor:
		return 0, fmt.Errorf("matrix descriptor %#x: an MN-major operand without swizzling is not supported", desc)
	case mode == 0:
		kb, r8, rr := uint64(k*size), uint64(row/8), uint64(row%8)
		return start + r8*sbo + kb/16*lbo + rr*16 + kb%16, nil
	case mnMajor:
		mb := uint64(row * size)
		addr = start + uint64(k/8)*sbo + uint64(k%8)*width + mb/width*lbo + mb%width
	default:
		addr = start + uint64(row/8)*sbo + uint64(row%8)*width + uint64(k*size)
	}
	mask := width/16 - 1
	return addr ^ (addr>>7&mask)<<4, nil
}

// wgRun executes a landed mma_async: D = scale-a*A * scale-b*B (+ D if scale-d).
func (r *emuRun) wgRun(o wgOp) error {
	size, kDim := 2, 16
	if o.typ == "tf32" {
		size, kDim = 4, 8
	}
	load := func(desc uint64, row, k int, mnMajor bool) (float64, error) {
		addr, err := descAddr(desc, row, k, size, mnMajor)
		if err != nil {
			return 0, err
		}
		raw, err := r.mem2("shared", addr, size)
		if err != nil {
			return 0, fmt.Errorf("%s: %w", o.in.text, err)
		}
		if size == 4 {
			// the tensor cores read an fp32 value's upper 19 bits: truncation to TF32
			return f32of((uint64(raw[0]) | uint64(raw[1])<<8 | uint64(raw[2])<<16 | uint64(raw[3])<<24) &^ 0x1fff), nil
		}
		return fval(uint64(raw[0])|uint64(raw[1])<<8, o.typ), nil
	}
	var A [64][16]float64
	B := make([][16]float64, o.n) // B^T: [n][k]
	for k := range kDim {
		for i := range 64 {
			v, err := load(o.descA, i, k, false)
			if err != nil {
				return err
			}
			A[i][k] = o.scaleA * v
		}
		for j := range o.n {
			v, err := load(o.descB, j, k, o.transB)
			if err != nil {
				return err
			}
			B[j][k] = o.scaleB * v
		}
	}
	d := o.in.args[0].regs
	for l, t := range o.lanes {
		q, lane := l/32, l%32
		for j, reg := range d {
			row := 16*q + lane/4 + 8*(j/2%2)
			col := 8*(j/4) + 2*(lane%4) + j%2
			sum := 0.0
			if o.scaleD {
				sum = f32of(t.regs[reg])
			}
			for k := range kDim {
				sum += A[row][k] * B[col][k]
			}
			t.regs[reg] = f32bits(sum)
		}
	}
	return nil
}

// fenceProxy runs fence.proxy.async: this thread's generic-proxy writes to shared memory
// become visible to the async proxy.
func fenceProxy(t *emuThread, in *emuInstr) error {
	op := in.op
	if len(op) < 3 || op[1] != "proxy" || op[2] != "async" || len(op) > 4 || len(op) == 4 && op[3] != "shared::cta" {
		return fmt.Errorf("unsupported fence form")
	}
	t.generic = false
	return nil
}

// wgCheck refuses an instruction that touches a register a wgmma in flight accumulates into.
func wgCheck(t *emuThread, in *emuInstr) error {
	for _, a := range in.args {
		regs := a.regs
		if a.kind == 0 || a.kind == 2 {
			regs = []int{a.reg}
		}
		for _, reg := range regs {
			if t.wgBusy[reg] {
				return fmt.Errorf("register of a wgmma accumulator in flight accessed before wgmma.wait_group")
			}
		}
	}
	return nil
}

// wgDrained refuses a CTA that ends with wgmma operations not waited for.
func (r *emuRun) wgDrained() error {
	for g, st := range r.wgs {
		n := len(st.pending)
		for _, grp := range st.groups {
			n += len(grp)
		}
		if n > 0 {
			return fmt.Errorf("warpgroup %d ends with %d wgmma.mma_async not waited for (wgmma.wait_group)", g, n)
		}
	}
	return nil
}
