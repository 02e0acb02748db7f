package cpu

import (
	"fmt"

	"github.com/widejit/widejit/triton/ir"
)

// class is how a value is stored in its slot.
type class uint8

const (
	clsInt class = iota // every integer dtype, i1 and pointers: []int64
	clsF32              // fp16, bf16, fp32: []float32
	clsF64              // fp64: []float64
)

func classOf(t ir.Type) class {
	switch {
	case t.Ptr:
		return clsInt
	case t.Elem == ir.F64:
		return clsF64
	case t.Elem.IsFloat():
		return clsF32
	}
	return clsInt
}

// maxSlotElems bounds one value (the language allows 2^20 elements per tile).
const maxSlotElems = 1 << 22

// step runs one compiled instruction on a frame.
type step func(fr *frame) error

// program is a kernel compiled for the executor.
type program struct {
	fn            *ir.Func
	slotType      []ir.Type
	slotClass     []class
	params        []int  // slot of each parameter
	constants     []step // tl.zeros, `other` tiles...: run once per frame, which keeps them
	prologue      []step // launch-invariant instructions, run once per worker and launch
	body          []step // the rest, run by every program
	gelus         int    // exact GELU chains run as one step each (gelu.go)
	silus         int    // SiLU and sigmoid chains run as one step each (silu.go)
	rowMulAdds    int    // acc + x*row Adds run as one step each (muladd.go)
	columnMulAdds int    // x*col + shift Adds run as one step each (muladd.go)
	inPlace       int    // steps that may overwrite their operand (inplace.go)
	flushSteps    int    // epilogue steps run in the panels flush (panels_epilogue.go)
	fusedStores   int    // stores that the panels flush may run (panels_store.go)
}

// frame is one worker's state: a slice per slot, the program id, and the launch's bindings.
type frame struct {
	f32  [][]float32
	f64  [][]float64
	ints [][]int64

	pid, grid [3]int64
	launch    *launch

	prog           *program
	lz             lazyState // symbolic integer tiles (lazy.go)
	ext            []extent  // live extents of zero-padded dot operands, by slot (extent.go)
	partial        []bool    // the slot holds only its live extent; the rest is stale
	ld             []int     // the row stride of a strided buffer view (alias.go); 0: dense
	constantsReady bool      // the program's constants are in their slots
	wildOff        string    // the offset of the last pointer made wild (launch.go), for its error

	ownF32       [][]float32 // storage of slots that view buffer memory (alias.go), by slot
	gemmScratch  []float32   // padded panels of narrow tl.dot operands (dot.go)
	chunks       []float32   // the fused GELU's chunk buffers (gelu.go)
	bcastScratch []float32   // one row of a column broadcast (rowbcast.go)
	maskRuns     []maskRun   // the runs of a select's row mask (rowbcast.go)
	dots         pendingDots // queued tl.dot products (panels.go)
	// deferredSelect: by result slot, the select was left to the store that records it
	// (panels_store.go)
	deferredSelect []bool
}

func newFrame(p *program) *frame {
	n := len(p.slotType)
	fr := &frame{f32: make([][]float32, n), f64: make([][]float64, n), ints: make([][]int64, n), prog: p, lz: newLazyState(n),
		ext: make([]extent, n), partial: make([]bool, n), ld: make([]int, n), deferredSelect: make([]bool, n)}
	for i, t := range p.slotType {
		switch p.slotClass[i] {
		case clsInt:
			fr.ints[i] = make([]int64, t.NumElems())
		case clsF32:
			fr.f32[i] = make([]float32, t.NumElems())
		case clsF64:
			fr.f64[i] = make([]float64, t.NumElems())
		}
	}
	return fr
}

// compiler turns IR into steps.
type compiler struct {
	p        *program
	slots    map[*ir.Value]int
	absorbed map[*ir.Value]bool // Splat results and constant tiles read as scalars by all their consumers
	hoisted  map[*ir.Value]bool // values computed once per launch or loop, not per use
	// fnInvariant: values that depend only on parameters and constants, computed in the
	// prologue (once per worker and launch) even when they appear inside a region.
	fnInvariant map[*ir.Value]bool
	mulAdds     map[*ir.Instr]mulAddPair   // Adds that compute their Mul operand too (muladd.go)
	mulSkip     map[*ir.Instr]bool         // those Muls: no step of their own
	dotAdds     map[*ir.Instr]dotAdd       // Adds that run their Dot operand, accumulating (dot.go)
	dotSkip     map[*ir.Instr]bool         // those Dots: no step of their own
	deferDots   map[*ir.Instr]bool         // dot Adds that may queue their products (panels.go)
	flushAfter  map[*ir.Instr]bool         // the Fors that run the queue when they end
	epiSteps    map[*ir.Instr]epilogueStep // steps appended to the queue (panels_epilogue.go)
	deferFlush  map[*ir.Instr]bool         // those Fors that leave the queue to such steps
	settleFirst map[*ir.Instr]bool         // the users of those steps' last value: they run the queue
	fusedStore  map[*ir.Instr]bool         // those users that are stores the queue may record (panels_store.go)
	storesEnd   map[*ir.Instr]bool         // the instructions after which recorded stores run
	// residualViews: the loads of residual tiles that the queue reads in place from their
	// buffer (panels_epilogue.go)
	residualViews map[*ir.Instr]bool
	// storedSelect maps a recordable store of a select of the queue's value to the select,
	// which its store runs (panels_store.go); selectSteps holds each such select's own step
	storedSelect map[*ir.Instr]*ir.Instr
	selectSteps  map[*ir.Instr]*step
	gelus        map[*ir.Instr]geluChain // Muls that compute a whole exact GELU (gelu.go)
	geluSkip     map[*ir.Instr]bool      // the rest of those chains and of silus': no step of their own
	silus        map[*ir.Instr]siluChain // Divs that compute a whole SiLU or sigmoid (silu.go)
	siluNegRoot  map[*ir.Instr]*ir.Instr // a SiLU's negation -> its root Div, which reads x too
	rowBcast     map[*ir.Value]*ir.Value // row broadcasts read in place: result -> source (rowbcast.go)
	scaledExtent map[*ir.Value]bool      // products that record their live extent (extent.go scaledRows)
	uses         map[*ir.Value]int
	defBlock     map[*ir.Value]*ir.Block
	usersAll     map[*ir.Value][]*ir.Instr // allUsers, built on first use
	observedBy   map[*ir.Value][]int       // values seen only through these store masks (observed.go)
	users        map[*ir.Value]*ir.Instr   // the last user of each value (soleUser, extent.go)
}

func compileFunc(f *ir.Func) (p *program, err error) {
	if f == nil || f.Body == nil {
		return nil, fmt.Errorf("cpu: empty function")
	}
	defer func() {
		// The checks below are meant to reject every malformed function with an error; this
		// is the net under them, so a bad artifact can never crash the process.
		if r := recover(); r != nil {
			p, err = nil, fmt.Errorf("kernel %s: cpu backend: malformed IR (%v)", f.Name, r)
		}
	}()
	// The type rules are triton/ir's (rules.go): the executor compiles verified IR only and
	// does not check them again.
	if err := ir.Verify(f); err != nil {
		return nil, fmt.Errorf("kernel %s: %w", f.Name, err)
	}
	c := &compiler{p: &program{fn: f}, slots: map[*ir.Value]int{}, absorbed: absorbSplats(f), hoisted: map[*ir.Value]bool{},
		fnInvariant: map[*ir.Value]bool{}}
	c.uses, c.defBlock = analyzeUses(f)
	c.rowBcast = c.findRowBroadcasts(f)
	c.scaledExtent = map[*ir.Value]bool{}
	c.mulAdds, c.mulSkip = c.findMulAdds(f) // after rowBcast: the row form reads its row in place
	for _, pair := range c.mulAdds {
		if pair.row != nil {
			c.p.rowMulAdds++
		}
	}
	c.dotAdds, c.dotSkip = c.findDotAdds(f) // after rowBcast: a row broadcast is no accumulator
	c.deferDots, c.flushAfter = c.findDeferredDots(f)
	c.gelus, c.geluSkip = c.findGelus(f) // after the others: it leaves their instructions alone
	c.p.gelus = len(c.gelus)
	c.silus, c.siluNegRoot = c.findSilus(f, c.geluSkip) // after the GELUs, before the flush's chains
	c.p.silus = len(c.silus)
	c.epiSteps, c.deferFlush, c.settleFirst = c.findFlushEpilogues(f) // after every fusion: chains avoid them
	c.findColumnMulAdds(f)                                            // after the chains: it leaves their steps alone
	c.p.flushSteps = len(c.epiSteps)
	c.p.fusedStores = len(c.fusedStore)
	for _, v := range f.Params {
		s, err := c.define(v, ir.Pos{File: f.File})
		if err != nil {
			return nil, err
		}
		c.p.params = append(c.p.params, s)
	}
	// Instructions of the function body that depend only on parameters and constants give
	// the same value in every program: they run once per worker and launch (the prologue).
	invariant := c.fnInvariant
	for _, v := range f.Params {
		invariant[v] = true
	}
	for _, in := range f.Body.Instrs {
		steps, err := c.block([]*ir.Instr{in})
		if err != nil {
			return nil, err
		}
		hoist := hoistable(in.Op) && len(in.Regions) == 0
		for _, a := range in.Args {
			hoist = hoist && invariant[a]
		}
		if hoist {
			for _, r := range in.Results {
				invariant[r] = true
				c.hoisted[r] = true
			}
			c.hoist(in, steps)
		} else {
			c.p.body = append(c.p.body, steps...)
		}
	}
	return c.p, nil
}

// hoist puts the steps of a launch-invariant instruction in the prologue, or, for a
// constant, among the steps a frame runs once: no step writes a hoisted value's slot (loop
// and branch results copy them, an in-place dot never takes one), so it stays valid.
func (c *compiler) hoist(in *ir.Instr, steps []step) {
	if in.Op == ir.Const && len(in.Args) == 0 {
		c.p.constants = append(c.p.constants, steps...)
		return
	}
	c.p.prologue = append(c.p.prologue, steps...)
}

func (c *compiler) errf(pos ir.Pos, op ir.Op, format string, args ...any) error {
	return fmt.Errorf("kernel %s: %s: %s: %s", c.p.fn.Name, pos, op, fmt.Sprintf(format, args...))
}

func (c *compiler) newSlot(t ir.Type) int {
	c.p.slotType = append(c.p.slotType, t)
	c.p.slotClass = append(c.p.slotClass, classOf(t))
	return len(c.p.slotType) - 1
}

func (c *compiler) define(v *ir.Value, pos ir.Pos) (int, error) {
	if v == nil {
		return 0, c.errf(pos, ir.OpInvalid, "nil value")
	}
	if _, dup := c.slots[v]; dup {
		return 0, c.errf(pos, ir.OpInvalid, "value %%%d defined twice", v.ID)
	}
	t := v.Type
	n := 1
	for _, d := range t.Shape {
		if d > maxSlotElems {
			return 0, c.errf(pos, ir.OpInvalid, "value %%%d has bad shape %s", v.ID, t)
		}
		n *= d
		if n > maxSlotElems {
			return 0, c.errf(pos, ir.OpInvalid, "value %%%d of type %s exceeds %d elements", v.ID, t, maxSlotElems)
		}
	}
	s := c.newSlot(t)
	c.slots[v] = s
	return s, nil
}

func (c *compiler) use(v *ir.Value, in *ir.Instr) (int, error) {
	s, ok := c.slots[v]
	if !ok {
		id := -1
		if v != nil {
			id = v.ID
		}
		return 0, c.errf(in.Pos, in.Op, "uses value %%%d before its definition", id)
	}
	return s, nil
}

// block compiles straight-line instructions (a region's terminator is handled by its owner).
func (c *compiler) block(instrs []*ir.Instr) ([]step, error) {
	var steps []step
	for _, in := range instrs {
		if in == nil {
			return nil, fmt.Errorf("kernel %s: nil instruction", c.p.fn.Name)
		}
		if in.Op == ir.Yield || in.Op == ir.Condition {
			return nil, c.errf(in.Pos, in.Op, "terminator in the middle of a block")
		}
		s, err := c.instr(in)
		if err != nil {
			return nil, err
		}
		if s != nil {
			steps = append(steps, s)
		}
	}
	return steps, nil
}

// region compiles a region block: its arguments are defined, its body compiled, and the
// slots of its terminator's operands returned.
type compiledRegion struct {
	args    []int
	hoisted []step // loop-invariant instructions: a loop runs them once, before iterating
	steps   []step
	term    []int  // slots of the Yield/Condition operands
	local   []bool // term[i] is recomputed by every run of this block (its slot may be swapped away)
}

// all is the region's full instruction list, for regions that run once (If, Reduce).
func (r *compiledRegion) all() []step {
	return append(append([]step(nil), r.hoisted...), r.steps...)
}

// b is a region of a verified owner, so it ends with the terminator the owner wants.
func (c *compiler) region(b *ir.Block, owner *ir.Instr) (*compiledRegion, error) {
	r := &compiledRegion{}
	definedHere := map[*ir.Value]bool{}
	for _, a := range b.Args {
		s, err := c.define(a, owner.Pos)
		if err != nil {
			return nil, err
		}
		r.args = append(r.args, s)
		definedHere[a] = true
	}
	last := b.Instrs[len(b.Instrs)-1]
	invariant := map[*ir.Value]bool{}
	for _, in := range b.Instrs[:len(b.Instrs)-1] {
		steps, err := c.block([]*ir.Instr{in})
		if err != nil {
			return nil, err
		}
		// An instruction whose operands all come from outside the region (or from hoisted
		// instructions) computes the same value in every iteration.
		hoist := hoistable(in.Op) && len(in.Regions) == 0
		for _, a := range in.Args {
			hoist = hoist && (!definedHere[a] || invariant[a])
		}
		// Invariant of the whole launch (e.g. tl.zeros and `other` tiles in a loop nest): it
		// runs once per worker in the prologue rather than at every entry of the region.
		launchInvariant := hoist
		for _, a := range in.Args {
			launchInvariant = launchInvariant && c.fnInvariant[a]
		}
		for _, res := range in.Results {
			definedHere[res] = true
			invariant[res] = hoist
			c.hoisted[res] = hoist
			if launchInvariant {
				c.fnInvariant[res] = true
			}
		}
		if launchInvariant {
			c.hoist(in, steps)
		} else if hoist {
			r.hoisted = append(r.hoisted, steps...)
		} else {
			r.steps = append(r.steps, steps...)
		}
	}
	seen := map[*ir.Value]bool{}
	for _, v := range last.Args {
		s, err := c.use(v, last)
		if err != nil {
			return nil, err
		}
		r.term = append(r.term, s)
		r.local = append(r.local, definedHere[v] && !invariant[v] && !isArg(b, v) && !seen[v])
		seen[v] = true
	}
	return r, nil
}

func isArg(b *ir.Block, v *ir.Value) bool {
	for _, a := range b.Args {
		if a == v {
			return true
		}
	}
	return false
}

func runSteps(fr *frame, steps []step) error {
	for _, s := range steps {
		if err := s(fr); err != nil {
			return err
		}
	}
	return nil
}

// copySlot copies slot src into dst (same type).
func (fr *frame) copySlot(cls class, dst, src int) {
	if cls == clsF32 {
		fr.settle(src)
	}
	switch cls {
	case clsInt:
		kind := fr.lz.kind[src]
		fr.lz.kind[dst] = kind
		switch kind {
		case lazyNone:
			copy(fr.ints[dst], fr.ints[src])
		case lazyAffine:
			fr.lz.aff[dst] = fr.lz.aff[src]
			if a := &fr.lz.aff[src]; a.vec != vecNone {
				vl := vecLen(a, fr.prog.slotType[src].Shape)
				copy(fr.ints[dst][:vl], fr.ints[src][:vl])
			}
		case lazyMask:
			fr.lz.conds[dst] = append(fr.lz.conds[dst][:0], fr.lz.conds[src]...)
		}
	case clsF32:
		copy(fr.f32[dst], fr.f32[src])
	case clsF64:
		copy(fr.f64[dst], fr.f64[src])
	}
}

// swapSlot exchanges the storage of two slots of one type: moving a value that is dead at
// its source costs nothing.
func (fr *frame) swapSlot(cls class, a, b int) {
	switch cls {
	case clsInt:
		fr.ints[a], fr.ints[b] = fr.ints[b], fr.ints[a]
		l := &fr.lz
		l.kind[a], l.kind[b] = l.kind[b], l.kind[a]
		l.aff[a], l.aff[b] = l.aff[b], l.aff[a]
		l.conds[a], l.conds[b] = l.conds[b], l.conds[a]
	case clsF32:
		fr.f32[a], fr.f32[b] = fr.f32[b], fr.f32[a]
	case clsF64:
		fr.f64[a], fr.f64[b] = fr.f64[b], fr.f64[a]
	}
}

// transfer assigns src[i] to dst[i] for all i at once (a parallel assignment, as a Yield
// to loop arguments is). Sources defined in the region being left are moved by swapping;
// others are copied through tmp first, since a source may be one of the destinations.
func transfer(fr *frame, classes []class, dst, src []int, movable []bool, tmp []int) {
	for i := range dst {
		if !movable[i] {
			fr.copySlot(classes[i], tmp[i], src[i])
		}
	}
	for i := range dst {
		if movable[i] {
			fr.swapSlot(classes[i], dst[i], src[i])
		}
	}
	for i := range dst {
		if !movable[i] {
			fr.swapSlot(classes[i], dst[i], tmp[i])
		}
	}
}

func (c *compiler) classes(slots []int) []class {
	out := make([]class, len(slots))
	for i, s := range slots {
		out[i] = c.p.slotClass[s]
	}
	return out
}

func (c *compiler) hiddenLike(slots []int) []int {
	out := make([]int, len(slots))
	for i, s := range slots {
		out[i] = c.newSlot(c.p.slotType[s])
	}
	return out
}

func (c *compiler) compileFor(in *ir.Instr, args, results []int) (step, error) {
	it := c.p.slotType[args[0]]
	body, err := c.region(in.Regions[0], in)
	if err != nil {
		return nil, err
	}
	inits := args[3:]
	iters := body.args[1:]
	lb, ub, st, iv := args[0], args[1], args[2], body.args[0]
	cls := c.classes(iters)
	tmp := c.hiddenLike(iters)
	allMovable := make([]bool, len(iters))
	for i := range allMovable {
		allMovable[i] = true
	}
	// An initial value the loop consumes (its only use, recomputed whenever the loop runs
	// again) moves into the carried slot instead of being copied: a loop nested in another
	// then costs no copy of its accumulator per entry.
	consumed := make([]bool, len(inits))
	for i, v := range in.Args[3:] {
		consumed[i] = c.consumedBy(v, in)
	}
	// An accumulator seen only through store masks (observed.go) starts filled on their
	// rectangle alone: an edge tile's accumulator costs its live part. (From a constant,
	// tl.zeros, the rectangle is filled with it, not copied: see initConst.)
	initSpans := make([]func(fr *frame), len(inits))
	for i, v := range in.Args[3:] {
		if obs := c.observedBy[in.Results[i]]; obs != nil && cls[i] == clsF32 {
			dst, src := iters[i], inits[i]
			rows, n := tileRows(c.p.slotType[dst])
			span := func(fr *frame, lo, hi int) { copy(fr.f32[dst][lo:hi], fr.f32[src][lo:hi]) }
			if d := v.Def; d != nil && isFloatTileConst(d) && !c.absorbed[v] {
				span = func(fr *frame, lo, hi int) { fillF32(fr.f32[dst][lo:hi], fr.f32[src][0]) }
			}
			initSpans[i] = func(fr *frame) { fr.spans(obs, rows, n, span) }
		}
	}
	// A constant initial value (tl.zeros) is filled in: a copy of the constant tile would read
	// as many bytes again (a convolution's 512 x 64 accumulator, once a program).
	initConst := make([]func(fr *frame), len(inits))
	for i, v := range in.Args[3:] {
		if d := v.Def; d != nil && isFloatTileConst(d) && cls[i] == clsF32 && !c.absorbed[v] {
			dst, src := iters[i], inits[i]
			initConst[i] = func(fr *frame) { fillF32(fr.f32[dst], fr.f32[src][0]) }
		}
	}
	dt := it.Elem
	flush := c.flushAfter[in] // panels.go
	leave := c.deferFlush[in] // panels_epilogue.go: the steps after the loop run the queue
	loop := func(fr *frame) error {
		lo, hi, s := fr.ints[lb][0], fr.ints[ub][0], fr.ints[st][0]
		if s == 0 {
			return fr.errf(in.Pos, "for loop with step 0")
		}
		for i, init := range inits {
			switch {
			case consumed[i]:
				fr.swapSlot(cls[i], iters[i], init)
			case initSpans[i] != nil:
				initSpans[i](fr)
			case initConst[i] != nil:
				initConst[i](fr)
			default:
				fr.copySlot(cls[i], iters[i], init)
			}
		}
		if err := runSteps(fr, body.hoisted); err != nil {
			return err
		}
		for x := lo; (s > 0 && lessInt(dt, x, hi)) || (s < 0 && lessInt(dt, hi, x)); {
			if fr.launch.stop.Load() { // an error elsewhere, or the time limit (LaunchContext)
				return errStopped
			}
			fr.ints[iv][0] = x
			if err := runSteps(fr, body.steps); err != nil {
				return err
			}
			transfer(fr, cls, iters, body.term, body.local, tmp)
			next := normInt(dt, x+s)
			// Stop when the induction variable would wrap around its dtype.
			if (s > 0 && !lessInt(dt, x, next)) || (s < 0 && !lessInt(dt, next, x)) {
				break
			}
			x = next
		}
		// The iteration arguments are dead once the loop ends: move them out.
		transfer(fr, cls, results, iters, allMovable, tmp)
		return nil
	}
	if !flush {
		return loop, nil
	}
	return func(fr *frame) error {
		if leave {
			fr.flushDots() // a queue left by this loop's last run, never read (rarely: no store ran)
		}
		if err := loop(fr); err != nil {
			fr.dropDots()
			return err
		}
		if !leave {
			fr.flushDots()
		}
		return nil
	}, nil
}

func (c *compiler) compileIf(in *ir.Instr, args, results []int) (step, error) {
	then, err := c.region(in.Regions[0], in)
	if err != nil {
		return nil, err
	}
	els, err := c.region(in.Regions[1], in)
	if err != nil {
		return nil, err
	}
	cond := args[0]
	cls := c.classes(results)
	tmp := c.hiddenLike(results)
	thenSteps, elseSteps := then.all(), els.all()
	return func(fr *frame) error {
		r, steps := els, elseSteps
		if fr.ints[cond][0] != 0 {
			r, steps = then, thenSteps
		}
		if err := runSteps(fr, steps); err != nil {
			return err
		}
		transfer(fr, cls, results, r.term, r.local, tmp)
		return nil
	}, nil
}

func (c *compiler) compileWhile(in *ir.Instr, args, results []int) (step, error) {
	cond, err := c.region(in.Regions[0], in)
	if err != nil {
		return nil, err
	}
	body, err := c.region(in.Regions[1], in)
	if err != nil {
		return nil, err
	}
	cls := c.classes(args)
	tmp := c.hiddenLike(args)
	allMovable := make([]bool, len(args))
	for i := range allMovable {
		allMovable[i] = true
	}
	condSlot := cond.term[0]
	return func(fr *frame) error {
		for i, a := range args {
			fr.copySlot(cls[i], cond.args[i], a)
		}
		if err := runSteps(fr, cond.hoisted); err != nil {
			return err
		}
		if err := runSteps(fr, body.hoisted); err != nil {
			return err
		}
		for {
			if fr.launch.stop.Load() {
				return errStopped
			}
			if err := runSteps(fr, cond.steps); err != nil {
				return err
			}
			if fr.ints[condSlot][0] == 0 {
				break
			}
			transfer(fr, cls, body.args, cond.args, allMovable, tmp)
			if err := runSteps(fr, body.steps); err != nil {
				return err
			}
			transfer(fr, cls, cond.args, body.term, body.local, tmp)
		}
		transfer(fr, cls, results, cond.args, allMovable, tmp)
		return nil
	}, nil
}

// instr compiles one instruction, with symbolic integer tiles where it can (lazy.go).
func (c *compiler) instr(in *ir.Instr) (step, error) {
	s, err := c.eagerInstr(in)
	if err != nil || s == nil {
		return s, err
	}
	args := make([]int, len(in.Args))
	for i, a := range in.Args {
		args[i] = c.slots[a]
	}
	results := make([]int, len(in.Results))
	for i, r := range in.Results {
		results[i] = c.slots[r]
	}
	s = c.lazyStep(in, args, results, s)
	if e, ok := c.epiSteps[in]; ok { // panels_epilogue.go
		s = c.epilogueStepOf(in, e, args, results, s)
	} else if c.selectSteps[in] != nil { // panels_store.go
		s = c.deferredSelectStep(in, args, results, s)
	} else if sel := c.storedSelect[in]; sel != nil {
		s = c.selectStoreStep(in, args, sel, s)
	} else if c.fusedStore[in] {
		s = c.fusedStoreStep(in, args, s)
	} else if c.settleFirst[in] {
		s = c.settling(in, args, s)
	}
	if c.storesEnd[in] {
		s = endStores(s)
	}
	if profileLabels.Load() {
		s = lineLabelled(c.p.fn.Name, in.Pos.Line, s)
	}
	return s, nil
}

// eagerInstr compiles one instruction on materialized values.
func (c *compiler) eagerInstr(in *ir.Instr) (step, error) {
	args := make([]int, len(in.Args))
	for i, a := range in.Args {
		s, err := c.use(a, in)
		if err != nil {
			return nil, err
		}
		args[i] = s
	}
	var results []int
	for _, r := range in.Results {
		s, err := c.define(r, in.Pos)
		if err != nil {
			return nil, err
		}
		results = append(results, s)
	}
	switch in.Op {
	case ir.For:
		return c.compileFor(in, args, results)
	case ir.If:
		return c.compileIf(in, args, results)
	case ir.While:
		return c.compileWhile(in, args, results)
	case ir.Barrier:
		return nil, nil
	case ir.Print:
		return c.compilePrint(in, args)
	case ir.Assert:
		return c.compileAssert(in, args)
	case ir.Store:
		return c.compileStore(in, args)
	case ir.Reduce:
		return c.compileReduce(in, args, results)
	}
	// Every other op has one result.
	if in.Op.IsElementwise() {
		return c.inPlace(in, args, results[0], func(args []int) (step, error) { return c.compileElementwise(in, args, results[0]) })
	}
	switch in.Op {
	case ir.Const, ir.ProgramID, ir.NumPrograms, ir.Arange:
		return c.compileLeaf(in, results[0])
	case ir.Splat, ir.Broadcast, ir.ExpandDims, ir.Reshape, ir.Permute:
		if in.Op == ir.Broadcast && c.rowBcast[in.Results[0]] != nil {
			return nil, nil // its consumers read the source row by row
		}
		if in.Op == ir.Splat && c.absorbed[in.Results[0]] {
			return nil, nil
		}
		return c.compileShape(in, args[0], results[0])
	case ir.Cmp:
		return c.compileCmp(in, args, results[0])
	case ir.Select:
		return c.inPlace(in, args, results[0], func(args []int) (step, error) { return c.compileSelect(in, args, results[0]) })
	case ir.Cast:
		return c.compileCast(in, args[0], results[0])
	case ir.PtrAdd:
		return c.compilePtrAdd(in, args, results[0])
	case ir.Load:
		return c.compileLoad(in, args, results[0])
	case ir.AtomicRMW, ir.AtomicCAS:
		return c.compileAtomic(in, args, results[0])
	case ir.Dot:
		if c.dotSkip[in] {
			return nil, nil // run by the Add that consumes it
		}
		return c.compileDot(in, args, results[0])
	}
	return nil, c.errf(in.Pos, in.Op, "not supported by the CPU backend")
}

// hoistable reports ops whose result depends on their operands only and that cannot fail
// (integer division can: it stays in the program, where its error names the program id).
func hoistable(op ir.Op) bool {
	switch op {
	case ir.Const, ir.Arange, ir.NumPrograms, ir.Splat, ir.Broadcast, ir.ExpandDims, ir.Reshape,
		ir.Permute, ir.Cmp, ir.Select, ir.Cast, ir.PtrAdd:
		return true
	case ir.Div, ir.Rem:
		return false
	}
	return op.IsElementwise()
}

// analyzeUses counts the uses of every value and records the block defining it.
func analyzeUses(f *ir.Func) (map[*ir.Value]int, map[*ir.Value]*ir.Block) {
	uses, def := map[*ir.Value]int{}, map[*ir.Value]*ir.Block{}
	var walk func(b *ir.Block)
	walk = func(b *ir.Block) {
		if b == nil {
			return
		}
		for _, a := range b.Args {
			def[a] = b
		}
		for _, in := range b.Instrs {
			if in == nil {
				continue
			}
			for _, a := range in.Args {
				uses[a]++
			}
			for _, r := range in.Results {
				def[r] = b
			}
			for _, r := range in.Regions {
				walk(r)
			}
		}
	}
	walk(f.Body)
	return uses, def
}

// consumedBy reports whether in is the only use of v and v is recomputed (or, as a block
// argument, reassigned) whenever in runs again, so in may take over v's storage.
func (c *compiler) consumedBy(v *ir.Value, in *ir.Instr) bool {
	if c.uses[v] != 1 || c.hoisted[v] || c.fnInvariant[v] || len(in.Results) == 0 {
		return false
	}
	b := c.defBlock[v]
	return b != nil && b == c.defBlock[in.Results[0]]
}

// deadAfter reports whether in is the only use of v and v is recomputed whenever in runs
// again (defined in the same block, not hoisted out of it): in may then take over v's storage.
func (c *compiler) deadAfter(v *ir.Value, in *ir.Instr) bool {
	if len(in.Results) != 1 || c.uses[v] != 1 || c.hoisted[v] {
		return false
	}
	b := c.defBlock[v]
	return b != nil && b == c.defBlock[in.Results[0]]
}
