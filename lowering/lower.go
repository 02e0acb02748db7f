package lowering

import (
	"fmt"
	"hash/fnv"
	"sort"
	"strings"

	"github.com/widejit/widejit/graph"
	"github.com/widejit/widejit/internal/memlimit"
	"github.com/widejit/widejit/jit"
)

// Options control lowering.
type Options struct {
	// NoFusion keeps every graph node in its own kernel (the unfused form of every pattern).
	NoFusion bool
	// Strategy forces every group's strategy: "" (the Chooser decides), Batched or Sequential.
	Strategy string
	// ModelMajor runs the plan model by model (--mode sequential); it implies Sequential.
	ModelMajor bool
	// Chooser decides fusions and strategies; nil: HeuristicChooser.
	Chooser Chooser
	// Device the plan is for: its capabilities shape the plan; the Chooser sees it too.
	Device jit.DeviceInfo
	// BackendOptions are the options Device's backend was opened with, for the Chooser's
	// decision keys.
	BackendOptions map[string]string
	// Dropout: "" or "eval" (identity), "mc" (Monte Carlo: per-model masks from Seed).
	Dropout string
	Seed    int64
	// Float32MatmulPrecision is the precision of fp32 products in every tl.dot (precision.go):
	// "" or PrecisionHighest (IEEE), PrecisionHigh (TF32) or PrecisionMedium (bf16).
	Float32MatmulPrecision string
	// NoIntSpecialization keeps every integer argument a run-time value in the kernels' specs
	// (no EqualTo1, no divisibility by 16 in Align16), as Triton's do_not_specialize does.
	NoIntSpecialization bool
}

// lowerFunc lowers one node: it reads operand values from l and defines the node's value(s).
type lowerFunc func(l *lowerer, n *graph.Node) error

var lowerers = map[string]lowerFunc{}

// registerOp adds the lowering of op; each family file registers its ops in init.
func registerOp(fn lowerFunc, ops ...string) {
	for _, op := range ops {
		if _, dup := lowerers[op]; dup {
			panic("lowering: op registered twice: " + op)
		}
		lowerers[op] = fn
	}
}

// LoweredOps lists the ops with a lowering, sorted.
func LoweredOps() []string {
	ops := make([]string, 0, len(lowerers))
	for op := range lowerers {
		ops = append(ops, op)
	}
	sort.Strings(ops)
	return ops
}

// maxPlanElems bounds a tensor stacked over the N models, so that the plan's element counts
// and offsets (ints) cannot overflow; the memory limit (runner.Options) refuses far less.
const maxPlanElems = 1 << 50

// checkTensorSizes refuses a graph whose N-stacked tensors are too large to plan.
func checkTensorSizes(g *graph.Graph) error {
	check := func(kind, name string, t graph.Type) error {
		if n := memlimit.Product(g.N, t.Numel()); n > maxPlanElems {
			return fmt.Errorf("graph %s: %s %q is %s for %d models: %d elements or more, beyond the 2^50 a plan can hold",
				g.File, kind, name, t, g.N, n)
		}
		return nil
	}
	for _, in := range g.Inputs {
		if err := check("input", in.Name, in.Type); err != nil {
			return err
		}
	}
	for _, p := range g.Params {
		if err := check("param", p.Name, p.Type); err != nil {
			return err
		}
	}
	for _, n := range g.Nodes {
		for _, t := range n.Outputs {
			if err := check("the output of node", n.Name, t); err != nil {
				return err
			}
		}
	}
	return nil
}

// group is one kernel of the plan under construction.
type group interface {
	base() *groupBase
	// emit renders the kernel and returns the launch (without Index/Strategy).
	emit(l *lowerer) (*Launch, error)
}

// groupBase is what every group kind shares.
type groupBase struct {
	index int
	nodes []string
	ops   []string
	out   View   // what the group writes
	value string // the graph value the group's output currently is
	epi   *epilogue
	// sealed: nothing more fuses into the group (a row tail, rowops.go, follows its epilogue)
	sealed bool
	// fused records the fusion decisions taken into this group, for explain.
	fused []string
	// tuned holds the tunables the Chooser picked for the kernel; nil: the built-in ones.
	tuned Tunables
	// cpu: the plan runs on the CPU executor, whose tiles are sized for caches and a few
	// large dots per program rather than for a GPU's registers and shared memory.
	cpu bool
	// wgmma: the device's dots run on Hopper's warpgroup MMA (Caps.WarpgroupMMA), which
	// larger tiles feed (hopperConfigs).
	wgmma bool
	// precision is the fp32 dots' input_precision (Options.inputPrecision).
	precision string
	// models is the number of models one launch serves (N, or 1 in sequential mode) and
	// cores the device's, for spreading a CPU launch over every core.
	models, cores int
}

func (g *groupBase) base() *groupBase { return g }

type lowerer struct {
	g       *graph.Graph
	opts    Options
	chooser Chooser
	n       int

	values      map[string]View
	owner       map[string]group // value -> the group whose output it is (while fusable)
	uses        map[string]int
	writer      map[*Buffer]int // temp buffer -> index of the last group writing it
	groups      []group
	buffers     []*Buffer
	inputs      []*Buffer
	params      []*Buffer
	indexChecks []IndexCheck
	// zero-padded copies of convolution inputs (conv_pad.py), which a later convolution's
	// epilogue may read its residual from (convGroup.readPaddedLeaves)
	padCopies []padCopy
	// cats laid out as the channel shuffle reading them (lowerConcat): the cat as the
	// shuffle's view [B, G, C/G, H, W] reads it
	shuffledCats map[string]View
	// values a pending group writes in another dim order than theirs (a transposed Linear's
	// out^T read back as out): an element-wise op on one still fuses into that group
	permutedOwner map[string]permutedOwner
	// decisions made while grouping (fusion choices), reported by explain
	notes map[group][]string
	// the graph's own value names (inputs, params, nodes), the node being lowered, and the
	// first internal value found named like one of them (addGroup)
	graphNames map[string]bool
	lowering   *graph.Node
	clash      error
}

// Lower widens g, groups its nodes into kernels, chooses strategies, renders the kernels and
// plans buffers.
func Lower(g *graph.Graph, opts Options) (*Plan, error) {
	if opts.ModelMajor {
		opts.Strategy = Sequential
	}
	switch opts.Strategy {
	case "", Batched, Sequential:
	default:
		return nil, fmt.Errorf("lowering: unknown strategy %q (want batched or sequential)", opts.Strategy)
	}
	switch opts.Dropout {
	case "", "eval", "mc":
	default:
		return nil, fmt.Errorf("lowering: unknown dropout mode %q (want eval or mc)", opts.Dropout)
	}
	if err := CheckFloat32MatmulPrecision(opts.Float32MatmulPrecision); err != nil {
		return nil, fmt.Errorf("lowering: %w", err)
	}
	if err := checkTensorSizes(g); err != nil {
		return nil, err
	}
	l := &lowerer{g: g, opts: opts, n: g.N, chooser: opts.Chooser,
		values: map[string]View{}, owner: map[string]group{}, uses: map[string]int{},
		writer: map[*Buffer]int{}, notes: map[group][]string{}, shuffledCats: map[string]View{},
		permutedOwner: map[string]permutedOwner{}}
	if l.chooser == nil {
		l.chooser = HeuristicChooser{}
	}
	l.graphNames = graphValueNames(g)
	for _, in := range g.Inputs {
		b := l.newBuffer(InputBuffer, in.Name, in.Type.DType, 0)
		ms := 0
		b.Elems = in.Type.Numel()
		if in.PerModel {
			ms = in.Type.Numel()
			b.Elems *= g.N
		}
		l.inputs = append(l.inputs, b)
		l.values[in.Name] = fullView(b, in.Type.Shape, ms)
	}
	for _, p := range g.Params {
		b := l.newBuffer(ParamBuffer, p.Name, p.Type.DType, g.N*p.Type.Numel())
		l.params = append(l.params, b)
		l.values[p.Name] = fullView(b, p.Type.Shape, p.Type.Numel())
	}
	for _, n := range g.Nodes {
		for _, op := range n.Inputs {
			l.countUse(op)
		}
	}
	for _, o := range g.Outputs {
		l.countUse(o)
	}
	for _, n := range g.Nodes {
		fn := lowerers[n.Op]
		if fn == nil {
			return nil, fmt.Errorf("%s: nodes[%d] %q: %s is not lowered yet", g.File, n.Index, n.Name, n.Op)
		}
		l.lowering = n
		if err := fn(l, n); err != nil {
			return nil, fmt.Errorf("%s: nodes[%d] %q (%s): %w", g.File, n.Index, n.Name, n.Op, err)
		}
		if l.clash != nil {
			return nil, fmt.Errorf("%s: nodes[%d] %q (%s): %w", g.File, n.Index, n.Name, n.Op, l.clash)
		}
	}
	l.lowering = nil
	if opts.Device.Caps.HostThreads {
		l.pretransposeWeights()
	}
	plan := &Plan{N: g.N, Graph: g.File, Inputs: l.inputs, Params: l.params, ModelMajor: opts.ModelMajor,
		IndexChecks: l.indexChecks}
	keep := map[*Buffer]bool{}
	for _, o := range g.Outputs {
		v, err := l.value(o)
		if err != nil {
			return nil, err
		}
		if !v.Dense() || v.Buf.Kind != TempBuffer {
			v = l.materialize(v, o.Name, []string{"output " + o.Name})
		}
		if l.clash != nil {
			return nil, fmt.Errorf("%s: output %q: %w", g.File, o.Name, l.clash)
		}
		keep[v.Buf] = true
		plan.Outputs = append(plan.Outputs, Output{Name: o.Name, View: v, Shape: o.Type.Shape})
	}
	var written []*Buffer      // per launch, the buffer its group writes
	var strategies [][2]string // per launch, its strategy and why
	for _, gr := range l.groups {
		// decided before emitting: the emitter renders the chosen tunables
		strategy, reason, err := l.chooseStrategy(gr)
		if err != nil {
			return nil, err
		}
		strategies = append(strategies, [2]string{strategy, reason})
		launch, err := gr.emit(l)
		if err != nil {
			return nil, fmt.Errorf("%s: kernel for %s: %w", g.File, strings.Join(gr.base().nodes, ","), err)
		}
		l.applyStrategy(gr, launch, strategy, reason)
		launch.Index = len(plan.Launches)
		plan.Launches = append(plan.Launches, launch)
		out := gr.base().out.Buf
		if out.Kind != TempBuffer {
			// Inputs and params are read-only: a device may bind an input to the caller's
			// memory (jit.HostBinder).
			return nil, fmt.Errorf("%s: internal error: kernel for %s writes %s buffer %s", g.File, strings.Join(gr.base().nodes, ","), out.Kind, out.Name)
		}
		written = append(written, out)
	}
	if err := l.dropUnreadPoolOutputs(plan, keep, strategies); err != nil {
		return nil, err
	}
	used := map[*Buffer]bool{}
	for _, ln := range plan.Launches {
		for _, b := range ln.buffers() {
			used[b] = true
		}
	}
	for _, o := range plan.Outputs {
		used[o.View.Buf] = true
	}
	for _, b := range l.buffers {
		if b.Kind != TempBuffer || used[b] {
			plan.Buffers = append(plan.Buffers, b)
		}
	}
	for _, b := range plan.Buffers {
		if b.Sparse {
			keep[b] = true // no other temp may leave data in its zeros
		}
	}
	for b := range plan.markPrepare(written, keep) {
		// prepared buffers live for the whole plan: a slot of their own, never freed
		keep[b] = true
	}
	plan.assignSlots(keep)
	for _, ln := range plan.Launches {
		ln.NoIntSpecialization = opts.NoIntSpecialization
	}
	return plan, nil
}

func (l *lowerer) countUse(o graph.Operand) {
	switch o.Kind {
	case graph.TensorOperand:
		l.uses[o.Name]++
	case graph.ListOperand:
		for _, e := range o.List {
			l.countUse(e)
		}
	}
}

func (l *lowerer) newBuffer(kind BufferKind, name string, dt graph.DType, elems int) *Buffer {
	b := &Buffer{ID: len(l.buffers), Kind: kind, Name: name, DType: dt, Elems: elems, Slot: -1}
	l.buffers = append(l.buffers, b)
	return b
}

// newOutput allocates a dense [N, shape] temp buffer for value name.
func (l *lowerer) newOutput(name string, shape []int, dt graph.DType) View {
	b := l.newBuffer(TempBuffer, name, dt, l.n*numel(shape))
	return fullView(b, shape, numel(shape))
}

// optionalParam is the view of node n's parameter role (weight, bias), nil when n has none.
func (l *lowerer) optionalParam(n *graph.Node, role string) *View {
	p := n.Param(role)
	if p == nil {
		return nil
	}
	v := l.values[p.Name]
	return &v
}

// value returns the view of a tensor operand.
func (l *lowerer) value(o graph.Operand) (View, error) {
	if o.Kind != graph.TensorOperand {
		return View{}, fmt.Errorf("expected a tensor operand, got %s", o)
	}
	v, ok := l.values[o.Name]
	if !ok {
		return View{}, fmt.Errorf("value %q is not available (a tuple needs getitem)", o.Name)
	}
	return v, nil
}

// input returns the view of the node's i-th input.
func (l *lowerer) input(n *graph.Node, i int) (View, error) {
	if i >= len(n.Inputs) {
		return View{}, fmt.Errorf("missing input %d", i)
	}
	return l.value(n.Inputs[i])
}

// define sets the node's (single) value.
func (l *lowerer) define(name string, v View) { l.values[name] = v }

// addGroup appends a group, records its output's writer and makes its value fusable. A value
// the lowering names itself (node.attn, x#copy, ...) that the graph also declares would shadow
// the graph's value, or be shadowed by it: recorded in l.clash, which fails the lowering.
func (l *lowerer) addGroup(g group, value string) {
	if l.graphNames[value] && (l.lowering == nil || value != l.lowering.Name) && l.clash == nil {
		l.clash = fmt.Errorf("the graph names a value %q, which widejit needs for one of its own: rename it in the graph", value)
	}
	b := g.base()
	b.index = len(l.groups)
	b.value = value
	l.groups = append(l.groups, g)
	l.writer[b.out.Buf] = b.index
	l.values[value] = b.out
	l.owner[value] = g
}

// graphValueNames is the set of value names g declares: its inputs, params and nodes.
func graphValueNames(g *graph.Graph) map[string]bool {
	names := map[string]bool{}
	for _, in := range g.Inputs {
		names[in.Name] = true
	}
	for _, p := range g.Params {
		names[p.Name] = true
	}
	for _, n := range g.Nodes {
		names[n.Name] = true
	}
	return names
}

// fusable returns the pending group whose output is value, if value may be fused into it:
// used exactly once and not a graph output.
func (l *lowerer) fusable(value string) group {
	if g := l.soleProducer(value); g != nil && !g.base().sealed {
		return g
	}
	return nil
}

// soleProducer is fusable without the seal: the pending group whose output is value, used
// exactly once and not a graph output (a sealed group may still take another row tail).
func (l *lowerer) soleProducer(value string) group {
	if l.opts.NoFusion || l.uses[value] != 1 {
		return nil
	}
	g := l.owner[value]
	if g == nil || g.base().value != value {
		return nil
	}
	for _, o := range l.g.Outputs {
		if o.Name == value {
			return nil
		}
	}
	return g
}

// permutedOwner is a value that group g writes as its own output permuted: the value is
// g's output (whose current value is from) permuted by dims.
type permutedOwner struct {
	g    group
	from string
	dims []int
}

// permutedProducer is soleProducer for a value recorded in permutedOwner: the pending group
// writing it and the permute from the group's output to it, while both are used only there.
func (l *lowerer) permutedProducer(value string) (group, []int) {
	p, ok := l.permutedOwner[value]
	if !ok || l.opts.NoFusion || l.uses[value] != 1 || p.g.base().sealed || p.g.base().value != p.from {
		return nil, nil
	}
	for _, o := range l.g.Outputs {
		if o.Name == value {
			return nil, nil
		}
	}
	return p.g, p.dims
}

// passOwner makes value to, an identity of value from (eval dropout, identity, contiguous,
// a tuple element), the fusion point of the group producing from, so that element-wise ops
// on to can still fuse into that group's epilogue. Only when from has no other use: the
// fused ops change the group's output.
func (l *lowerer) passOwner(from, to string) {
	g := l.owner[from]
	if g == nil || g.base().value != from || l.uses[from] > 1 {
		return
	}
	delete(l.owner, from)
	g.base().value = to
	l.owner[to] = g
}

// readyBefore reports whether v's data is written before group index runs.
func (l *lowerer) readyBefore(v View, index int) bool {
	if v.Buf.Kind != TempBuffer {
		return true
	}
	w, ok := l.writer[v.Buf]
	return ok && w < index
}

// materialize copies v into a new dense buffer (a strided copy kernel) and returns it.
func (l *lowerer) materialize(v View, name string, nodes []string) View {
	out := l.newOutput(name, v.Shape, v.DType)
	g := newElementwise(out, nodes, []string{"copy"})
	k := g.epi.addLeafUnchecked(v)
	g.epi.root = leafExpr(k)
	l.addGroup(g, name+"#copy")
	return out
}

// contiguous returns v itself when its rows are contiguous, else a dense copy.
func (l *lowerer) contiguous(v View, n *graph.Node) View {
	if v.Contiguous() {
		return v
	}
	return l.materialize(v, n.Name+".in", []string{n.Name + " (input made contiguous)"})
}

// seedFor derives the dropout seed of a node from the run's seed and the node's name, so
// every dropout layer and every run seed give independent masks.
func (l *lowerer) seedFor(node string) int64 {
	h := fnv.New64a()
	fmt.Fprintf(h, "%d/%s", l.opts.Seed, node)
	return int64(h.Sum64() & 0x7fffffff)
}

// kernelName builds a readable, unique kernel function name.
func kernelName(index int, ops []string) string {
	var parts []string
	for i, op := range ops {
		if i > 0 && op == ops[i-1] {
			continue
		}
		parts = append(parts, op)
		if len(parts) == 4 {
			parts = append(parts, "etc")
			break
		}
	}
	return fmt.Sprintf("k%d_%s", index, strings.Join(parts, "_"))
}

func nextPow2(x int) int {
	p := 1
	for p < x {
		p <<= 1
	}
	return p
}

func clamp(x, lo, hi int) int {
	if x < lo {
		return lo
	}
	if x > hi {
		return hi
	}
	return x
}

func cdiv(a, b int) int { return (a + b - 1) / b }
