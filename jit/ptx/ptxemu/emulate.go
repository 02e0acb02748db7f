package ptxemu

import (
	"fmt"
	"math"
	"math/bits"
	"slices"
	"strconv"
	"strings"

	"github.com/widejit/widejit/internal/half"
)

type emuOperand struct {
	kind  int   // 0 reg, 1 imm, 2 addr, 3 special, 4 label, 5 param, 6 symbol, 7 vector of regs
	regs  []int // kind 7
	reg   int
	imm   uint64
	isF   bool // imm given as 0f/0d float bits
	off   int64
	name  string
	param int
}

type emuInstr struct {
	guard    int // register index, -1 none
	guardNeg bool
	op       []string // opcode split on '.'
	args     []emuOperand
	text     string
}

// Program is a parsed PTX entry point.
type Program struct {
	name    string
	threads int
	params  []string
	nregs   int
	code    []emuInstr
	labels  map[string]int
}

// Parse reads the PTX of one entry point.
func Parse(text string) (*Program, error) {
	p := &Program{labels: map[string]int{}}
	regs := map[string]int{}
	regIndex := func(name string) int {
		if i, ok := regs[name]; ok {
			return i
		}
		regs[name] = len(regs)
		return regs[name]
	}
	lines := strings.Split(text, "\n")
	inBody := false
	var pendingLabels []string
	for _, raw := range lines {
		line := strings.TrimSpace(raw)
		if i := strings.Index(line, "//"); i >= 0 {
			line = strings.TrimSpace(line[:i])
		}
		if line == "" {
			continue
		}
		switch {
		case strings.HasPrefix(line, ".visible .entry "):
			p.name = strings.TrimSuffix(strings.TrimPrefix(line, ".visible .entry "), "(")
			continue
		case strings.HasPrefix(line, ".param "):
			f := strings.Fields(strings.TrimSuffix(line, ","))
			p.params = append(p.params, f[len(f)-1])
			continue
		case strings.HasPrefix(line, ".maxntid "):
			n, err := strconv.Atoi(strings.TrimSuffix(strings.Fields(line)[1], ","))
			if err != nil {
				return nil, err
			}
			p.threads = n
			continue
		case line == "{":
			inBody = true
			continue
		case line == "}":
			inBody = false
			continue
		}
		if !inBody || strings.HasPrefix(line, ".reg") {
			continue
		}
		if strings.HasSuffix(line, ":") {
			pendingLabels = append(pendingLabels, strings.TrimSuffix(line, ":"))
			continue
		}
		line = strings.TrimSuffix(line, ";")
		in := emuInstr{guard: -1, text: line}
		if strings.HasPrefix(line, "@") {
			sp := strings.IndexByte(line, ' ')
			g := line[1:sp]
			if strings.HasPrefix(g, "!") {
				in.guardNeg = true
				g = g[1:]
			}
			in.guard = regIndex(g)
			line = strings.TrimSpace(line[sp+1:])
		}
		opcode, rest, _ := strings.Cut(line, " ")
		in.op = strings.Split(opcode, ".")
		for _, a := range splitArgs(rest) {
			o, err := parseOperand(a, regIndex, p.params)
			if err != nil {
				return nil, fmt.Errorf("%q: %v", line, err)
			}
			in.args = append(in.args, o)
		}
		for _, l := range pendingLabels {
			p.labels[l] = len(p.code)
		}
		pendingLabels = nil
		p.code = append(p.code, in)
	}
	for _, l := range pendingLabels {
		p.labels[l] = len(p.code)
	}
	p.nregs = len(regs)
	return p, nil
}

func splitArgs(s string) []string {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil
	}
	var parts []string
	depth, start := 0, 0
	for i, c := range s {
		switch c {
		case '{':
			depth++
		case '}':
			depth--
		case ',':
			if depth == 0 {
				parts = append(parts, strings.TrimSpace(s[start:i]))
				start = i + 1
			}
		}
	}
	return append(parts, strings.TrimSpace(s[start:]))
}

func parseOperand(a string, regIndex func(string) int, params []string) (emuOperand, error) {
	switch {
	case strings.HasPrefix(a, "{"):
		o := emuOperand{kind: 7}
		for _, r := range splitArgs(strings.TrimSuffix(strings.TrimPrefix(a, "{"), "}")) {
			if !strings.HasPrefix(r, "%") {
				return o, fmt.Errorf("vector element %q is not a register", r)
			}
			o.regs = append(o.regs, regIndex(r))
		}
		return o, nil
	case strings.HasPrefix(a, "["):
		inner := strings.TrimSuffix(strings.TrimPrefix(a, "["), "]")
		for i, p := range params {
			if p == inner {
				return emuOperand{kind: 5, param: i}, nil
			}
		}
		base, off, hasOff := strings.Cut(inner, "+")
		o := emuOperand{kind: 2, reg: regIndex(base)}
		if hasOff {
			v, err := strconv.ParseInt(off, 10, 64)
			if err != nil {
				return o, err
			}
			o.off = v
		}
		return o, nil
	case strings.HasPrefix(a, "%tid") || strings.HasPrefix(a, "%ctaid") || strings.HasPrefix(a, "%nctaid"):
		return emuOperand{kind: 3, name: a}, nil
	case strings.HasPrefix(a, "%"):
		return emuOperand{kind: 0, reg: regIndex(a)}, nil
	case strings.HasPrefix(a, "$"):
		return emuOperand{kind: 4, name: a}, nil
	case a == "wj_smem":
		return emuOperand{kind: 6, name: a}, nil
	case strings.HasPrefix(a, "0f") || strings.HasPrefix(a, "0d"):
		v, err := strconv.ParseUint(a[2:], 16, 64)
		return emuOperand{kind: 1, imm: v, isF: true}, err
	case strings.HasPrefix(a, "0x"):
		v, err := strconv.ParseUint(a[2:], 16, 64)
		return emuOperand{kind: 1, imm: v}, err
	}
	v, err := strconv.ParseInt(a, 10, 64)
	return emuOperand{kind: 1, imm: uint64(v)}, err
}

// Memory is global memory: buffers at fixed addresses. The zero value is empty.
type Memory struct {
	bufs  [][]byte
	bases []uint64
}

// Alloc adds a zeroed buffer of n bytes: its address in the kernels' global memory and its
// bytes, which the host reads and writes directly.
func (m *Memory) Alloc(n int) (uint64, []byte) {
	base := uint64(0x10000)
	if k := len(m.bases); k > 0 {
		base = (m.bases[k-1] + uint64(len(m.bufs[k-1])) + 0x10000) &^ 0xff
	}
	buf := make([]byte, n)
	m.bufs = append(m.bufs, buf)
	m.bases = append(m.bases, base)
	return base, buf
}

func (m *Memory) slice(addr uint64, size int) ([]byte, error) {
	for i, b := range m.bases {
		if addr >= b && addr+uint64(size) <= b+uint64(len(m.bufs[i])) {
			return m.bufs[i][addr-b : addr-b+uint64(size)], nil
		}
	}
	return nil, fmt.Errorf("global access of %d bytes at %#x outside every buffer", size, addr)
}

type emuThread struct {
	regs    []uint64
	pc      int
	done    bool
	waiting bool
	shfl    *emuInstr // the shuffle this thread waits at (nil: a barrier)
	tid     int
	// cp.async copies issued but not yet landed: those since the last commit_group, and the
	// committed groups, oldest first
	pending []asyncCopy
	groups  [][]asyncCopy
	generic bool         // shared memory written through the generic proxy since fence.proxy.async
	wgBusy  map[int]bool // registers of wgmma accumulators in flight (wgmma.go)
}

// asyncCopy is one cp.async in flight: n bytes of src land at dst, zero-filled to size.
type asyncCopy struct {
	dst, src, size, n uint64
}

type emuRun struct {
	p      *Program
	mem    *Memory
	params []uint64
	shared []byte
	ctaid  [3]int
	grid   [3]int
	steps  int
	wgs    []wgState // per warpgroup (wgmma.go)
	banks  *Banks    // where RunBanks measures conflicts (nil: not measured)
}

// Run runs p over grid with params (raw 64-bit values: pointers are Memory addresses) and
// sharedBytes of dynamic shared memory, one CTA after another.
func Run(p *Program, mem *Memory, grid [3]int, params []uint64, sharedBytes int) error {
	return run(p, mem, grid, params, sharedBytes, nil)
}

func run(p *Program, mem *Memory, grid [3]int, params []uint64, sharedBytes int, banks *Banks) error {
	for z := range grid[2] {
		for y := range grid[1] {
			for x := range grid[0] {
				r := &emuRun{p: p, mem: mem, params: params, shared: make([]byte, sharedBytes), ctaid: [3]int{x, y, z}, grid: grid, banks: banks}
				if err := r.cta(); err != nil {
					return fmt.Errorf("program (%d, %d, %d): %w", x, y, z, err)
				}
				banks.countWrites()
			}
		}
	}
	return nil
}

func (r *emuRun) cta() error {
	ts := make([]*emuThread, r.p.threads)
	for i := range ts {
		ts[i] = &emuThread{regs: make([]uint64, r.p.nregs), tid: i}
	}
	for {
		running := 0
		// Highest thread first, so a thread reading what a lower thread writes before the
		// next barrier sees stale data: a missing bar.sync shows up as wrong results.
		for i := len(ts) - 1; i >= 0; i-- {
			t := ts[i]
			if t.done {
				continue
			}
			t.waiting = false
			if err := r.thread(t); err != nil {
				return fmt.Errorf("thread %d: %w", t.tid, err)
			}
			if t.waiting {
				running++
			}
		}
		if running == 0 {
			return r.wgDrained()
		}
		if running != len(ts) {
			return fmt.Errorf("bar.sync or shfl.sync reached by %d of %d threads (divergent)", running, len(ts))
		}
		if in := ts[0].shfl; in != nil && in.op[0] == "wgmma" {
			for _, t := range ts {
				if t.shfl != in {
					return fmt.Errorf("threads wait at different wgmma instructions")
				}
				t.shfl = nil
			}
			if err := r.wgmma(in, ts); err != nil {
				return fmt.Errorf("%s: %w", in.text, err)
			}
		} else if in := ts[0].shfl; in != nil && (in.op[0] == "mma" || in.op[0] == "ldmatrix") {
			for _, t := range ts {
				if t.shfl != in {
					return fmt.Errorf("threads wait at different %s instructions", in.op[0])
				}
				t.shfl = nil
			}
			for w := 0; w+32 <= len(ts); w += 32 {
				var err error
				if in.op[0] == "mma" {
					err = mmaSync(in, ts[w:w+32])
				} else {
					err = r.ldmatrix(in, ts[w:w+32])
				}
				if err != nil {
					return fmt.Errorf("%s: %w", in.text, err)
				}
			}
		} else if in := ts[0].shfl; in != nil {
			// shfl.sync.bfly d, a, mask, clamp, members: every lane reads lane^mask's a.
			vals := make([]uint64, len(ts))
			for i, t := range ts {
				if t.shfl != in {
					return fmt.Errorf("threads wait at different shuffles or at a barrier")
				}
				vals[i] = r.val(t, in.args[1])
			}
			mask := int(r.val(ts[0], in.args[2]))
			for i, t := range ts {
				src := i&^31 | (i & 31) ^ mask
				t.regs[in.args[0].reg] = vals[src] & 0xffffffff
				t.shfl = nil
			}
		} else {
			for _, t := range ts {
				if t.shfl != nil {
					return fmt.Errorf("threads wait at a barrier and at a shuffle")
				}
			}
		}
	}
}

func (r *emuRun) thread(t *emuThread) error {
	for t.pc < len(r.p.code) {
		in := &r.p.code[t.pc]
		t.pc++
		r.steps++
		if r.steps > 2e8 {
			return fmt.Errorf("step limit exceeded")
		}
		if in.guard >= 0 && (t.regs[in.guard] != 0) == in.guardNeg {
			continue
		}
		switch in.op[0] {
		case "ret":
			t.done = true
			return t.drained()
		case "bar":
			t.waiting = true
			return nil
		case "shfl", "mma", "ldmatrix", "wgmma":
			t.waiting = true
			t.shfl = in
			return nil
		case "fence":
			if err := fenceProxy(t, in); err != nil {
				return fmt.Errorf("%s: %w", in.text, err)
			}
			continue
		case "bra":
			pc, ok := r.p.labels[in.args[0].name]
			if !ok {
				return fmt.Errorf("unknown label %s", in.args[0].name)
			}
			t.pc = pc
			continue
		}
		if len(t.wgBusy) > 0 {
			if err := wgCheck(t, in); err != nil {
				return fmt.Errorf("%s: %w", in.text, err)
			}
		}
		if err := r.exec(t, in); err != nil {
			return fmt.Errorf("%s: %w", in.text, err)
		}
	}
	t.done = true
	return t.drained()
}

// drained refuses a thread that ends with cp.async copies it never waited for: on the
// hardware they may land after the kernel's last read of shared memory, or never.
func (t *emuThread) drained() error {
	n := len(t.pending)
	for _, g := range t.groups {
		n += len(g)
	}
	if n > 0 {
		return fmt.Errorf("thread %d ends with %d cp.async copies not waited for (cp.async.wait_group / wait_all)", t.tid, n)
	}
	return nil
}

func (r *emuRun) val(t *emuThread, o emuOperand) uint64 {
	switch o.kind {
	case 0:
		return t.regs[o.reg]
	case 1:
		return o.imm
	case 3:
		axis := int(o.name[len(o.name)-1] - 'x')
		switch {
		case strings.HasPrefix(o.name, "%tid"):
			if axis == 0 {
				return uint64(t.tid)
			}
			return 0
		case strings.HasPrefix(o.name, "%ctaid"):
			return uint64(r.ctaid[axis])
		default:
			return uint64(r.grid[axis])
		}
	case 6:
		return 0
	}
	panic("operand kind")
}

// typed views of raw bits
func f32of(x uint64) float64   { return float64(math.Float32frombits(uint32(x))) }
func f32bits(f float64) uint64 { return uint64(math.Float32bits(float32(f))) }
func f64of(x uint64) float64   { return math.Float64frombits(x) }

func sext(x uint64, bitsN int) int64 { return int64(x<<(64-bitsN)) >> (64 - bitsN) }

// typeInfo: bits, float?, signed?
func typeInfo(ty string) (int, bool, bool) {
	switch ty {
	case "pred":
		return 1, false, false
	case "s8":
		return 8, false, true
	case "u8", "b8":
		return 8, false, false
	case "s16":
		return 16, false, true
	case "u16", "b16":
		return 16, false, false
	case "f16", "bf16":
		return 16, true, false
	case "s32":
		return 32, false, true
	case "u32", "b32":
		return 32, false, false
	case "f32":
		return 32, true, false
	case "s64":
		return 64, false, true
	case "u64", "b64":
		return 64, false, false
	case "f64":
		return 64, true, false
	}
	return 0, false, false
}

func mask(bitsN int) uint64 {
	if bitsN >= 64 {
		return ^uint64(0)
	}
	return 1<<bitsN - 1
}

// fval reads a float operand of type ty as float64.
func fval(x uint64, ty string) float64 {
	switch ty {
	case "f32":
		return f32of(x)
	case "f64":
		return f64of(x)
	case "f16":
		return float64(half.F16ToF32(uint16(x)))
	case "bf16":
		return float64(math.Float32frombits(uint32(uint16(x)) << 16))
	}
	panic("fval " + ty)
}

func fbits(f float64, ty string) uint64 {
	switch ty {
	case "f32":
		return f32bits(f)
	case "f64":
		return math.Float64bits(f)
	case "f16":
		return uint64(half.F32ToF16(float32(f)))
	case "bf16":
		b := math.Float32bits(float32(f))
		if b&0x7fffffff > 0x7f800000 {
			return uint64(uint16(b>>16) | 0x40)
		}
		b += 0x7fff + (b>>16)&1
		return uint64(b >> 16)
	}
	panic("fbits " + ty)
}

func ival(x uint64, ty string) int64 {
	n, _, signed := typeInfo(ty)
	if signed {
		return sext(x, n)
	}
	return int64(x & mask(n))
}

func (r *emuRun) exec(t *emuThread, in *emuInstr) error {
	op := in.op
	a := in.args
	ty := op[len(op)-1]
	set := func(v uint64) { t.regs[a[0].reg] = v }
	src := func(i int) uint64 { return r.val(t, a[i]) }
	nb, isF, signed := typeInfo(ty)
	switch op[0] {
	case "mov":
		if a[0].kind == 7 {
			// Unpack: the first register gets the low part.
			v, w := src(1), nb/len(a[0].regs)
			for i, reg := range a[0].regs {
				t.regs[reg] = (v >> (w * i)) & mask(w)
			}
			return nil
		}
		if a[1].kind == 7 {
			// Pack: the first register is the low part.
			var v uint64
			w := nb / len(a[1].regs)
			for i, reg := range a[1].regs {
				v |= (t.regs[reg] & mask(w)) << (w * i)
			}
			set(v)
			return nil
		}
		set(src(1))
	case "add", "sub", "mul", "div", "rem", "min", "max", "mad", "fma", "copysign":
		if op[0] == "mul" && op[1] == "wide" || op[0] == "mad" && op[1] == "wide" {
			x, y := ival(src(1), ty), ival(src(2), ty)
			if ty == "u32" {
				x, y = int64(uint32(x)), int64(uint32(y))
			}
			v := uint64(x * y)
			if op[0] == "mad" {
				v += src(3)
			}
			set(v)
			return nil
		}
		if isF {
			x, y := fval(src(1), ty), fval(src(2), ty)
			var v float64
			switch op[0] {
			case "add":
				v = x + y
			case "sub":
				v = x - y
			case "mul":
				v = x * y
			case "div":
				v = x / y
			case "min":
				v = minNum(x, y)
			case "max":
				v = -minNum(-x, -y)
			case "fma", "mad":
				v = math.FMA(x, y, fval(src(3), ty))
			case "copysign":
				v = math.Copysign(y, x)
			default:
				return fmt.Errorf("unsupported")
			}
			if ty == "f32" {
				v = float64(float32(v))
			}
			set(fbits(v, ty))
			return nil
		}
		if op[1] == "hi" {
			x, y := src(1)&mask(nb), src(2)&mask(nb)
			if nb == 32 {
				if signed {
					set(uint64(uint32(uint64(sext(x, 32)*sext(y, 32)) >> 32)))
				} else {
					set(uint64(uint32((x * y) >> 32)))
				}
			} else if signed {
				hi, _ := bits.Mul64(x, y)
				if int64(x) < 0 {
					hi -= y
				}
				if int64(y) < 0 {
					hi -= x
				}
				set(hi)
			} else {
				hi, _ := bits.Mul64(x, y)
				set(hi)
			}
			return nil
		}
		x, y := ival(src(1), ty), ival(src(2), ty)
		var v int64
		switch op[0] {
		case "add":
			v = x + y
		case "sub":
			v = x - y
		case "mul", "mad":
			v = x * y
			if op[0] == "mad" {
				v += ival(src(3), ty)
			}
		case "div", "rem":
			if y == 0 {
				v = -1
				break
			}
			if signed {
				if op[0] == "div" {
					v = x / y
				} else {
					v = x % y
				}
			} else {
				ux, uy := uint64(x), uint64(y)
				if op[0] == "div" {
					v = int64(ux / uy)
				} else {
					v = int64(ux % uy)
				}
			}
		case "min":
			if (signed && x < y) || (!signed && uint64(x) < uint64(y)) {
				v = x
			} else {
				v = y
			}
		case "max":
			if (signed && x > y) || (!signed && uint64(x) > uint64(y)) {
				v = x
			} else {
				v = y
			}
		default:
			return fmt.Errorf("unsupported")
		}
		set(uint64(v) & mask(nb))
	case "and", "or", "xor":
		x, y := src(1), src(2)
		var v uint64
		switch op[0] {
		case "and":
			v = x & y
		case "or":
			v = x | y
		default:
			v = x ^ y
		}
		set(v & mask(nb))
	case "not":
		set(^src(1) & mask(nb))
	case "shl", "shr":
		x, c := src(1)&mask(nb), src(2)&0xffffffff
		if op[0] == "shl" {
			if c >= uint64(nb) {
				set(0)
			} else {
				set((x << c) & mask(nb))
			}
		} else if signed {
			if c >= uint64(nb) {
				c = uint64(nb - 1)
			}
			set(uint64(sext(x, nb)>>c) & mask(nb))
		} else {
			if c >= uint64(nb) {
				set(0)
			} else {
				set(x >> c)
			}
		}
	case "neg", "abs":
		if isF {
			x := fval(src(1), ty)
			if op[0] == "neg" {
				x = -x
			} else {
				x = math.Abs(x)
			}
			set(fbits(x, ty))
		} else {
			x := ival(src(1), ty)
			if op[0] == "neg" || x < 0 {
				x = -x
			}
			set(uint64(x) & mask(nb))
		}
	case "ex2", "lg2", "sin", "cos", "rsqrt", "sqrt", "rcp":
		x := fval(src(1), ty)
		var v float64
		switch op[0] {
		case "ex2":
			v = math.Exp2(x)
		case "lg2":
			v = math.Log2(x)
		case "sin":
			v = math.Sin(x)
		case "cos":
			v = math.Cos(x)
		case "rsqrt":
			v = 1 / math.Sqrt(x)
		case "sqrt":
			v = math.Sqrt(x)
		case "rcp":
			v = 1 / x
		}
		set(fbits(v, ty))
	case "setp":
		cmp, sty := op[1], op[2]
		x, y := src(1), src(2)
		var res bool
		if _, f, _ := typeInfo(sty); f {
			fx, fy := fval(x, sty), fval(y, sty)
			nan := math.IsNaN(fx) || math.IsNaN(fy)
			switch cmp {
			case "eq":
				res = fx == fy
			case "ne":
				res = !nan && fx != fy
			case "neu":
				res = nan || fx != fy
			case "lt":
				res = fx < fy
			case "le":
				res = fx <= fy
			case "gt":
				res = fx > fy
			case "ge":
				res = fx >= fy
			case "nan":
				res = nan
			case "num":
				res = !nan
			default:
				return fmt.Errorf("unsupported comparison")
			}
		} else {
			_, _, sg := typeInfo(sty)
			ix, iy := ival(x, sty), ival(y, sty)
			less := ix < iy
			if !sg {
				less = uint64(ix) < uint64(iy)
			}
			switch cmp {
			case "eq":
				res = ix == iy
			case "ne":
				res = ix != iy
			case "lt":
				res = less
			case "le":
				res = less || ix == iy
			case "gt":
				res = !less && ix != iy
			case "ge":
				res = !less
			default:
				return fmt.Errorf("unsupported comparison")
			}
		}
		set(b2u(res))
	case "selp":
		if src(3) != 0 {
			set(src(1))
		} else {
			set(src(2))
		}
	case "cvt":
		return r.cvt(t, in)
	case "cp":
		return r.cpAsync(t, in)
	case "ld":
		space := spaceOf(op)
		size := max(nb/8, 1)
		if space == "param" {
			set(r.params[a[1].param] & mask(max(nb, 8)))
			return nil
		}
		addr := t.regs[a[1].reg] + uint64(a[1].off)
		dsts := []int{a[0].reg}
		if a[0].kind == 7 {
			dsts = a[0].regs
		}
		if err := checkVector(op, addr, size, len(dsts)); err != nil {
			return err
		}
		for i, d := range dsts {
			raw, err := r.mem2(space, addr+uint64(i*size), size)
			if err != nil {
				return err
			}
			var v uint64
			for i := size - 1; i >= 0; i-- {
				v = v<<8 | uint64(raw[i])
			}
			if signed {
				v = uint64(sext(v, nb)) & 0xffffffff
				if nb == 64 {
					v = uint64(sext(v, 64))
				}
			}
			t.regs[d] = v
		}
	case "st":
		space := spaceOf(op)
		size := max(nb/8, 1)
		addr := t.regs[a[0].reg] + uint64(a[0].off)
		vals := []uint64{}
		if a[1].kind == 7 {
			for _, s := range a[1].regs {
				vals = append(vals, t.regs[s])
			}
		} else {
			vals = append(vals, r.val(t, a[1]))
		}
		if err := checkVector(op, addr, size, len(vals)); err != nil {
			return err
		}
		if space == "shared" {
			t.generic = true
			r.banks.write(t, in, addr, size*len(vals))
		}
		for k, v := range vals {
			raw, err := r.mem2(space, addr+uint64(k*size), size)
			if err != nil {
				return err
			}
			for i := range size {
				raw[i] = byte(v >> (8 * i))
			}
		}
	case "atom":
		kind := op[len(op)-2]
		if kind == "noftz" {
			kind = op[len(op)-3]
		}
		size := nb / 8
		addr := t.regs[a[1].reg]
		raw, err := r.mem2("global", addr, size)
		if err != nil {
			return err
		}
		var old uint64
		for i := size - 1; i >= 0; i-- {
			old = old<<8 | uint64(raw[i])
		}
		b := src(2)
		var nv uint64
		switch kind {
		case "add":
			if isF {
				nv = fbits(fval(old, ty)+fval(b, ty), ty)
			} else {
				nv = old + b
			}
		case "max", "min":
			x, y := ival(old, ty), ival(b, ty)
			less := x < y
			if !signed {
				less = uint64(x) < uint64(y)
			}
			if (kind == "max") == less {
				nv = b
			} else {
				nv = old
			}
		case "and":
			nv = old & b
		case "or":
			nv = old | b
		case "xor":
			nv = old ^ b
		case "exch":
			nv = b
		case "cas":
			nv = old
			if old&mask(nb) == b&mask(nb) {
				nv = src(3)
			}
		default:
			return fmt.Errorf("unsupported atomic")
		}
		for i := range size {
			raw[i] = byte(nv >> (8 * i))
		}
		set(old & mask(nb))
	default:
		return fmt.Errorf("unsupported instruction")
	}
	return nil
}

func (r *emuRun) mem2(space string, addr uint64, size int) ([]byte, error) {
	if space == "shared" {
		if addr+uint64(size) > uint64(len(r.shared)) {
			return nil, fmt.Errorf("shared access of %d bytes at %d outside %d bytes", size, addr, len(r.shared))
		}
		return r.shared[addr : addr+uint64(size)], nil
	}
	return r.mem.slice(addr, size)
}

func (r *emuRun) cvt(t *emuThread, in *emuInstr) error {
	op := in.op
	dty, sty := op[len(op)-2], op[len(op)-1]
	mode := ""
	if len(op) == 4 {
		mode = op[1]
	}
	x := r.val(t, in.args[1])
	if dty == "tf32" {
		t.regs[in.args[0].reg] = tf32Round(x)
		return nil
	}
	dn, dF, dS := typeInfo(dty)
	_, sF, _ := typeInfo(sty)
	var out uint64
	switch {
	case sF && dF:
		f := fval(x, sty)
		switch mode {
		case "rzi":
			f = math.Trunc(f)
		case "rmi":
			f = math.Floor(f)
		case "rpi":
			f = math.Ceil(f)
		}
		out = fbits(f, dty)
	case sF:
		f := math.Trunc(fval(x, sty))
		var v int64
		switch {
		case math.IsNaN(f):
			v = 0
		case dS:
			lo, hi := -math.Ldexp(1, dn-1), math.Ldexp(1, dn-1)-1
			v = int64(math.Max(lo, math.Min(hi, f)))
		default:
			v = int64(uint64(math.Max(0, math.Min(math.Ldexp(1, dn)-1, f))))
		}
		out = uint64(v) & mask(dn)
	case dF:
		v := ival(x, sty)
		_, _, ss := typeInfo(sty)
		f := float64(v)
		if !ss {
			f = float64(uint64(v))
		}
		out = fbits(f, dty)
	default:
		v := ival(x, sty)
		out = uint64(v) & mask(dn)
		if dS && dn < 32 {
			out = uint64(sext(out, dn)) & 0xffffffff
		}
	}
	t.regs[in.args[0].reg] = out
	return nil
}

func b2u(b bool) uint64 {
	if b {
		return 1
	}
	return 0
}

func minNum(x, y float64) float64 {
	switch {
	case math.IsNaN(x):
		return y
	case math.IsNaN(y):
		return x
	}
	return math.Min(x, y)
}

func spaceOf(op []string) string {
	for _, o := range op {
		if o == "global" || o == "shared" || o == "param" {
			return o
		}
	}
	return "global"
}

// checkVector checks that an ld/st names as many registers as its .v2/.v4 says and that a
// vector access is aligned to its whole size, as the hardware requires.
func checkVector(op []string, addr uint64, size, regs int) error {
	want := 1
	for _, o := range op {
		switch o {
		case "v2":
			want = 2
		case "v4":
			want = 4
		}
	}
	if regs != want {
		return fmt.Errorf("%d registers for a %d-element access", regs, want)
	}
	if want > 1 && addr%uint64(want*size) != 0 {
		return fmt.Errorf("misaligned %d-byte vector access at %#x", want*size, addr)
	}
	return nil
}

// tf32Round is cvt.rna.tf32.f32: round an fp32 to 10 mantissa bits, ties away from zero,
// leaving the low 13 bits zero (NaN and infinity pass through).
func tf32Round(x uint64) uint64 {
	u := uint32(x)
	if u&0x7f800000 == 0x7f800000 {
		return uint64(u)
	}
	return uint64((u + 0x1000) &^ 0x1fff)
}

// cpAsync runs cp.async.{ca,cg}.shared.global [dst], [src], cp-size[, src-size] and the
// group instructions, as the PTX ISA orders them: a copy lands (src-size bytes of the source
// read then, the rest of cp-size zero-filled) only when a wait requires it:
// cp.async.commit_group closes the copies issued since the last one into a group,
// cp.async.wait_group N lands every group but the N most recent, and cp.async.wait_all lands
// everything. Until then shared memory holds what it held, so a kernel that reads a staging
// area before waiting for it reads stale data here as it may on a GPU. Both addresses must
// be aligned to cp-size.
func (r *emuRun) cpAsync(t *emuThread, in *emuInstr) error {
	op, a := in.op, in.args
	if len(op) < 2 || op[1] != "async" {
		return fmt.Errorf("unsupported cp form")
	}
	if len(op) == 3 {
		switch op[2] {
		case "commit_group":
			t.groups = append(t.groups, t.pending)
			t.pending = nil
			return nil
		case "wait_all":
			t.groups = append(t.groups, t.pending)
			t.pending = nil
			return r.land(t, 0)
		case "wait_group":
			if len(a) != 1 {
				return fmt.Errorf("cp.async.wait_group takes one operand")
			}
			return r.land(t, int(r.val(t, a[0])))
		}
	}
	if len(op) != 5 || (op[2] != "ca" && op[2] != "cg") || op[3] != "shared" || op[4] != "global" || len(a) < 3 {
		return fmt.Errorf("unsupported cp.async form")
	}
	c := asyncCopy{dst: t.regs[a[0].reg] + uint64(a[0].off), src: t.regs[a[1].reg] + uint64(a[1].off), size: r.val(t, a[2])}
	c.n = c.size
	if len(a) == 4 {
		c.n = r.val(t, a[3])
	}
	if (c.size != 4 && c.size != 8 && c.size != 16) || c.n > c.size || c.dst%c.size != 0 || c.src%c.size != 0 {
		return fmt.Errorf("cp.async of %d bytes (%d from the source) at %#x <- %#x: bad size or alignment", c.size, c.n, c.dst, c.src)
	}
	if _, err := r.mem2("shared", c.dst, int(c.size)); err != nil {
		return err
	}
	r.banks.write(t, in, c.dst, int(c.size))
	t.pending = append(t.pending, c)
	return nil
}

// land completes every committed group of t but the keep most recent.
func (r *emuRun) land(t *emuThread, keep int) error {
	for len(t.groups) > keep {
		for _, c := range t.groups[0] {
			to, err := r.mem2("shared", c.dst, int(c.size))
			if err != nil {
				return err
			}
			clear(to)
			t.generic = true
			if c.n > 0 {
				from, err := r.mem.slice(c.src, int(c.n))
				if err != nil {
					return fmt.Errorf("cp.async landing at %#x <- %#x: %w", c.dst, c.src, err)
				}
				copy(to, from)
			}
		}
		t.groups = t.groups[1:]
	}
	return nil
}

// ldmatrix runs ldmatrix.sync.aligned.m8n8.{x1,x2,x4}[.trans].shared.b16 for one warp, as the
// PTX ISA describes it: lanes 8i..8i+7 give the addresses of rows 0..7 of matrix i (16
// contiguous bytes each, 16-byte aligned); destination register i of lane l receives
// elements (l/4, 2*(l%4)) and (l/4, 2*(l%4)+1) of matrix i (the first in the low half), or
// with .trans elements (2*(l%4), l/4) and (2*(l%4)+1, l/4).
func (r *emuRun) ldmatrix(in *emuInstr, lanes []*emuThread) error {
	op := in.op
	trans := slices.Contains(op, "trans")
	count := map[string]int{"x1": 1, "x2": 2, "x4": 4}[op[4]]
	if len(op) < 7 || op[1] != "sync" || op[2] != "aligned" || op[3] != "m8n8" || count == 0 || op[len(op)-2] != "shared" || op[len(op)-1] != "b16" {
		return fmt.Errorf("unsupported ldmatrix form")
	}
	d, a := in.args[0], in.args[1]
	if d.kind != 7 || len(d.regs) != count {
		return fmt.Errorf("%d destination registers for .x%d", len(d.regs), count)
	}
	var m [4][8][8]uint64
	for i := range count {
		if r.banks != nil {
			var phase []uint64
			for row := range 8 {
				phase = append(phase, lanes[8*i+row].regs[a.reg]+uint64(a.off))
			}
			r.banks.Ldmatrix[ConflictDegree(phase, 16)]++
		}
		for row := range 8 {
			addr := lanes[8*i+row].regs[a.reg] + uint64(a.off)
			if addr%16 != 0 {
				return fmt.Errorf("row address %#x of matrix %d is not 16-byte aligned", addr, i)
			}
			raw, err := r.mem2("shared", addr, 16)
			if err != nil {
				return err
			}
			for c := range 8 {
				m[i][row][c] = uint64(raw[2*c]) | uint64(raw[2*c+1])<<8
			}
		}
	}
	for l, t := range lanes {
		for i := range count {
			r0, c0, r1, c1 := l/4, 2*(l%4), l/4, 2*(l%4)+1
			if trans {
				r0, c0, r1, c1 = c0, r0, c1, r1
			}
			t.regs[d.regs[i]] = m[i][r0][c0] | m[i][r1][c1]<<16
		}
	}
	return nil
}

// mmaSync runs mma.sync.aligned.{m16n8k16,m16n8k8}.row.col.f32.{f16,bf16,tf32}.*.f32 for one
// warp, reading and writing the fragments exactly as the PTX ISA's "Matrix Fragments for
// mma.m16n8k16 / mma.m16n8k8" sections lay them out (groupID = lane>>2,
// threadID_in_group = lane%4). Products are exact and summed in float64, rounded once to
// fp32 (the hardware's internal order and rounding differ within the test tolerances).
func mmaSync(in *emuInstr, lanes []*emuThread) error {
	op := in.op
	if len(op) != 10 || op[4] != "row" || op[5] != "col" || op[6] != "f32" || op[9] != "f32" || op[7] != op[8] {
		return fmt.Errorf("unsupported mma form")
	}
	typ := op[7]
	var k int
	switch {
	case op[3] == "m16n8k16" && (typ == "f16" || typ == "bf16"):
		k = 16
	case op[3] == "m16n8k8" && typ == "tf32":
		k = 8
	default:
		return fmt.Errorf("unsupported mma shape/type")
	}
	d, a, b, c := in.args[0], in.args[1], in.args[2], in.args[3]
	if len(d.regs) != 4 || len(a.regs) != 4 || len(b.regs) != 2 || len(c.regs) != 4 {
		return fmt.Errorf("wrong fragment register counts")
	}
	var A [16][16]float64
	var B [16][8]float64
	var C [16][8]float64
	for lane, t := range lanes {
		g, tig := lane>>2, lane%4
		if k == 16 {
			for i := range 8 { // a0..a7: two 16-bit elements per register
				h := t.regs[a.regs[i/2]] >> (16 * (i % 2)) & 0xffff
				row := g
				if !(i < 2 || (i >= 4 && i < 6)) {
					row = g + 8
				}
				col := tig*2 + i&1
				if i >= 4 {
					col += 8
				}
				A[row][col] = fval(h, typ)
			}
			for i := range 4 { // b0..b3
				h := t.regs[b.regs[i/2]] >> (16 * (i % 2)) & 0xffff
				row := tig*2 + i&1
				if i >= 2 {
					row += 8
				}
				B[row][g] = fval(h, typ)
			}
		} else {
			// the tensor cores read an fp32 register's upper 19 bits: truncation to TF32
			tf := func(reg int) float64 { return f32of(t.regs[reg] &^ 0x1fff) }
			A[g][tig], A[g+8][tig] = tf(a.regs[0]), tf(a.regs[1])
			A[g][tig+4], A[g+8][tig+4] = tf(a.regs[2]), tf(a.regs[3])
			B[tig][g], B[tig+4][g] = tf(b.regs[0]), tf(b.regs[1])
		}
		for i := range 4 {
			C[g+8*(i/2)][tig*2+i&1] = f32of(t.regs[c.regs[i]])
		}
	}
	for lane, t := range lanes {
		g, tig := lane>>2, lane%4
		for i := range 4 {
			row, col := g+8*(i/2), tig*2+i&1
			sum := C[row][col]
			for kk := range k {
				sum += A[row][kk] * B[kk][col]
			}
			t.regs[d.regs[i]] = f32bits(sum)
		}
	}
	return nil
}
