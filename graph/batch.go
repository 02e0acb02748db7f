package graph

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/widejit/widejit/graph/safetensors"
)

// batch.go: the batch dimension is dynamic. A graph exported at batch size B0 runs at any
// batch size B: WithBatch re-infers it with the inputs' batch dims set to B and every
// view/reshape target that bakes B0 in rewritten, or refuses naming the input or node.
//
// The batch dim of an input is its "batch_dim" when the file gives one (null: none), else
// what its consumers say (dim 1 for the time-major x and the states of rnn/gru/lstm and the
// query/key/value of multihead_attention without batch_first, none for their unbatched
// forms), else dim 0. Every input that carries the batch must have the same size there (B0).
//
// While re-inferring, every tensor's batch-carrying dims are found by comparing its shape at
// B with its shape at B0 (only a dim that holds the batch changes). Where such a dim merges
// the batch with other dims (a [B*T, C] view), the factor outside the batch is tracked too, so
// a view back to [B, T, C] knows which target entry holds the batch.

// batchFacts is what a graph knows about its batch dimension.
type batchFacts struct {
	dims map[string]int // input -> its batch dim (inputs that carry the batch)
	b0   int            // the batch size of the file; 0 when the batch is not dynamic
	err  error          // why the batch is not dynamic
}

// batchMemo computes a graph's batch facts once.
type batchMemo struct {
	once  sync.Once
	facts batchFacts
}

func (g *Graph) facts() *batchFacts {
	g.batch.once.Do(func() { g.batch.facts = g.computeBatch() })
	return &g.batch.facts
}

// Batch is the graph's batch size: the size of the batch dim its inputs share (as exported),
// or 0 when the batch is fixed (see BatchError).
func (g *Graph) Batch() int { return g.facts().b0 }

// BatchError says why the graph's batch size is fixed; nil when it is dynamic.
func (g *Graph) BatchError() error { return g.facts().err }

// BatchDim is the per-model dim of input name that holds the batch; ok is false when the
// input has none (or the batch is fixed).
func (g *Graph) BatchDim(name string) (dim int, ok bool) {
	dim, ok = g.facts().dims[name]
	return dim, ok
}

func (g *Graph) computeBatch() batchFacts {
	f := batchFacts{dims: map[string]int{}}
	if g.fixedBatch {
		f.err = fmt.Errorf(`the graph sets "dynamic_batch": false`)
		return f
	}
	var first *Input
	for _, in := range g.Inputs {
		d, err := g.inputBatchDim(in)
		if err != nil {
			f.err = err
			return f
		}
		if d < 0 {
			continue
		}
		if slices.Contains(in.dynamicDims, d) {
			f.err = fmt.Errorf(`input %q: dim %d is both its batch dim and in its "dynamic_dims"; give it a "batch_dim" (or null)`, in.Name, d)
			f.dims = map[string]int{}
			return f
		}
		f.dims[in.Name] = d
		size := in.Type.Shape[d]
		if first == nil {
			first, f.b0 = in, size
			continue
		}
		if size != f.b0 {
			fd := f.dims[first.Name]
			f.err = fmt.Errorf(`inputs %q (dim %d is %d) and %q (dim %d is %d) disagree on the batch size; give the inputs without a batch "batch_dim": null (or their batch dim)`,
				first.Name, fd, f.b0, in.Name, d, size)
			f.b0 = 0
			f.dims = map[string]int{}
			return f
		}
	}
	if first == nil {
		f.err = fmt.Errorf("no input has a batch dim")
	}
	return f
}

// inputBatchDim is in's batch dim, -1 for none.
func (g *Graph) inputBatchDim(in *Input) (int, error) {
	switch {
	case in.batchDim < 0:
		return -1, nil
	case in.batchDim > 0:
		return in.batchDim - 1, nil
	case in.Type.Rank() == 0:
		return -1, nil
	}
	hints := map[int][]string{}
	g.batchHints(in.Name, in.Type.Rank(), hints, map[string]bool{})
	if len(hints) == 0 {
		return 0, nil
	}
	if len(hints) > 1 {
		var parts []string
		for _, d := range sortedKeys(hints) {
			parts = append(parts, fmt.Sprintf("dim %d for %s", d, strings.Join(hints[d], ", ")))
		}
		return 0, fmt.Errorf(`input %q: its readers disagree on the batch dim (%s); give it a "batch_dim"`, in.Name, strings.Join(parts, "; "))
	}
	for d, who := range hints {
		if d == batchMerged {
			return 0, fmt.Errorf(`input %q is %s's 3-D attn_mask, [batch*num_heads, L, S]; its batch cannot be rewritten (give it "batch_dim": null to keep it fixed, and a dynamic batch is then refused where it is read)`, in.Name, who[0])
		}
		return d, nil
	}
	return 0, nil
}

const batchMerged = -2 // a hint: the batch is merged with another dim

// batchPassThrough: ops whose output keeps the layout of their (first) tensor input's leading
// dims, followed when looking for the op that tells an input's batch dim.
var batchPassThrough = map[string]bool{
	"linear": true, "layer_norm": true, "rms_norm": true, "dropout": true, "identity": true, "contiguous": true,
	"relu": true, "gelu": true, "silu": true, "sigmoid": true, "tanh": true, "leaky_relu": true, "elu": true,
	"softplus": true, "hardswish": true, "add": true, "sub": true, "mul": true, "div": true, "neg": true,
	"embedding": true, "hardsigmoid": true, "relu6": true, "hardtanh": true, "clamp": true, "sin": true, "cos": true, "to": true, "pad": true,
}

// batchHints collects, for the value name of the given rank, the batch dim each reader
// implies (-1: none), following pass-through ops.
func (g *Graph) batchHints(name string, rank int, hints map[int][]string, seen map[string]bool) {
	if seen[name] {
		return
	}
	seen[name] = true
	for _, n := range g.Nodes {
		for i, op := range n.Inputs {
			if op.Kind != TensorOperand || op.Name != name || op.Source == FromParam {
				continue
			}
			if d, ok := readerBatchDim(n, i, rank); ok {
				who := fmt.Sprintf("%s (%s)", n.Name, n.Op)
				hints[d] = append(hints[d], who)
				continue
			}
			if batchPassThrough[n.Op] && !n.Tuple && n.Output().Rank() >= rank {
				g.batchHints(n.Name, n.Output().Rank(), hints, seen)
			}
		}
	}
}

// readerBatchDim is the batch dim that node n implies for its input i of the given rank.
func readerBatchDim(n *Node, i, rank int) (int, bool) {
	switch n.Op {
	case "rnn", "gru", "lstm":
		switch {
		case i == 0 && rank == 3 && n.Attrs.Bool("batch_first"):
			return 0, true
		case rank == 3:
			return 1, true // time-major x, or the states [layers*D, B, H]
		case rank == 2:
			return -1, true // unbatched
		}
	case "multihead_attention":
		switch {
		case i <= 2 && rank == 3 && n.Attrs.Bool("batch_first"):
			return 0, true
		case i <= 2 && rank == 3:
			return 1, true
		case i <= 2 && rank == 2:
			return -1, true
		case i == 3 && rank == 2: // key_padding_mask [B, S]
			return 0, true
		case i == 3 && rank == 1:
			return -1, true
		case i == 4 && rank == 2: // attn_mask [L, S]
			return -1, true
		case i == 4 && rank == 3:
			return batchMerged, true
		}
	}
	return 0, false
}

func sortedKeys(m map[int][]string) []int {
	keys := make([]int, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Ints(keys)
	return keys
}

// batchDim reads an input's "batch_dim": an int within the rank (negative counts from the
// end) or null.
func (l *loader) batchDim(v *jvalue, path string, t Type) int {
	if v == nil {
		return 0
	}
	if v.kind == jNull {
		return -1
	}
	d, ok := intValue(v)
	r := t.Rank()
	if ok && d < 0 {
		d += r
	}
	if !ok || d < 0 || d >= r {
		l.errAt(v, path+".batch_dim", "", "batch_dim must be null or a dim of the input's shape %v (0 to %d, or negative from the end), got %s", t.Shape, r-1, describe(v))
		return 0
	}
	return d + 1
}

func (l *loader) loadDynamicBatch(v *jvalue) {
	if v == nil {
		return
	}
	if v.kind != jBool {
		l.errAt(v, "dynamic_batch", "", "expected true or false, got %s", describe(v))
		return
	}
	l.g.fixedBatch = !v.b
}

// InputBatch is the batch size that tensors (the inputs of a run, [N, ...] per model) carry:
// every input with a batch dim must agree. It returns 0 when the graph's batch is fixed, and
// an error naming the inputs and dims when they disagree, or when a batch is 0.
func (g *Graph) InputBatch(tensors map[string]*safetensors.Tensor) (int, error) {
	f := g.facts()
	if f.err != nil {
		return 0, nil
	}
	b, from, fromDim := 0, "", 0
	for _, in := range g.Inputs {
		d, ok := f.dims[in.Name]
		t := tensors[in.Name]
		if !ok || t == nil {
			continue
		}
		want := g.InputTensorShape(in)
		if len(t.Shape) != len(want) {
			return 0, fmt.Errorf("input %q has shape %v, expected %v (%s): %d dims, not %d", in.Name, t.Shape, want, inputHow(in), len(t.Shape), len(want))
		}
		td := d
		if in.PerModel {
			td++
		}
		size := t.Shape[td]
		if size < 1 {
			return 0, fmt.Errorf("input %q has shape %v: its batch dim (dim %d of the tensor) is %d; a batch size must be >= 1", in.Name, t.Shape, td, size)
		}
		if from == "" {
			b, from, fromDim = size, in.Name, td
			continue
		}
		if size != b {
			return 0, fmt.Errorf("inputs %q and %q disagree on the batch size: %q has %d in dim %d, %q has %d in dim %d",
				from, in.Name, from, b, fromDim, in.Name, size, td)
		}
	}
	if from == "" {
		return f.b0, nil
	}
	return b, nil
}

// offsetOf is where an input's per-model dims start in its tensor: 1 past the model dim.
func offsetOf(in *Input) int {
	if in.PerModel {
		return 1
	}
	return 0
}

func inputHow(in *Input) string {
	if in.PerModel {
		return "per model: [n, ...]"
	}
	return "shared by all models"
}

// CheckInputs checks that tensors hold every input with its dtype and shape, naming the input
// and the dim that does not fit.
func (g *Graph) CheckInputs(tensors map[string]*safetensors.Tensor) error {
	var problems []string
	for _, in := range g.Inputs {
		t := tensors[in.Name]
		if t == nil {
			problems = append(problems, fmt.Sprintf("input %q is missing", in.Name))
			continue
		}
		if msg := g.inputShapeProblem(in, t.Shape); msg != "" {
			problems = append(problems, msg)
		}
		if t.DType != in.Type.DType.Safetensors() {
			problems = append(problems, fmt.Sprintf("input %q is %s, expected %s (%s)", in.Name, t.DType, in.Type.DType.Safetensors(), in.Type.DType))
		}
	}
	if len(problems) > 0 {
		return fmt.Errorf("%s", strings.Join(problems, "; "))
	}
	return nil
}

// inputShapeProblem says how shape differs from in's tensor shape, or "".
func (g *Graph) inputShapeProblem(in *Input, shape []int) string {
	want := g.InputTensorShape(in)
	if slices.Equal(shape, want) {
		return ""
	}
	msg := fmt.Sprintf("input %q has shape %v, expected %v (%s)", in.Name, shape, want, inputHow(in))
	if len(shape) != len(want) {
		return msg
	}
	for d := range want {
		if shape[d] == want[d] {
			continue
		}
		bd, ok := g.BatchDim(in.Name)
		if in.PerModel {
			bd++
		}
		switch {
		case in.PerModel && d == 0:
			msg += fmt.Sprintf(": dim 0 is the model count n=%d", g.N)
		case ok && d == bd:
			msg += fmt.Sprintf(": dim %d is the batch", d)
		case in.PerModel && slices.Contains(in.dynamicDims, d-1) || !in.PerModel && slices.Contains(in.dynamicDims, d):
			msg += fmt.Sprintf(": dim %d is dynamic", d)
		case ok || len(in.dynamicDims) > 0:
			msg += fmt.Sprintf(": dim %d is %d, and only %s may change", d, shape[d], g.dimsNote(in, offsetOf(in)))
		default:
			msg += fmt.Sprintf(": dim %d is %d", d, shape[d])
			if err := g.BatchError(); err != nil {
				msg += fmt.Sprintf(" (the batch size is fixed: %v)", err)
			}
		}
		break
	}
	return msg
}

// ForInputs is the graph re-specialised for the batch size and the dynamic dims' sizes that
// tensors carry (g itself when they are g's), with the tensors checked against it.
func (g *Graph) ForInputs(tensors map[string]*safetensors.Tensor) (*Graph, error) {
	gb, err := g.forShapes(tensors)
	if err != nil {
		return nil, err
	}
	if err := gb.CheckInputs(tensors); err != nil {
		return nil, err
	}
	return gb, nil
}

// ReadInputsAnyBatch reads the graph's inputs from a safetensors file at whatever batch size
// they carry, and returns them with the graph re-specialised for it.
func (g *Graph) ReadInputsAnyBatch(path string) (*Graph, map[string]*safetensors.Tensor, error) {
	f, err := safetensors.Open(path)
	if err != nil {
		return nil, nil, err
	}
	probe := map[string]*safetensors.Tensor{}
	for _, in := range g.Inputs {
		if info, ok := f.Info(in.Name); ok {
			probe[in.Name] = &safetensors.Tensor{Name: in.Name, DType: info.DType, Shape: info.Shape}
		}
	}
	f.Close()
	gb, err := g.forShapes(probe)
	if err != nil {
		return nil, nil, fmt.Errorf("inputs %s: %w", path, err)
	}
	in, err := gb.ReadInputs(path)
	return gb, in, err
}

// forShapes is the graph re-specialised for the batch size and dynamic sizes that tensors
// (or their shapes alone) carry; g itself when they are g's.
func (g *Graph) forShapes(tensors map[string]*safetensors.Tensor) (*Graph, error) {
	b, err := g.InputBatch(tensors)
	if err != nil {
		return nil, err
	}
	sizes, err := g.InputSizes(tensors)
	if err != nil {
		return nil, err
	}
	if len(sizes) > 0 {
		return g.WithSizes(b, sizes)
	}
	if b != 0 && b != g.Batch() {
		return g.WithBatch(b)
	}
	return g, nil
}

// WithBatch is the graph re-specialised for batch size b: every input's batch dim set to b,
// every view/reshape target that holds the batch rewritten, every shape inferred again. b
// equal to the graph's batch gives the graph itself. Refused, naming the input or node and the
// dim: a fixed batch, b < 1, a parameter whose shape follows the batch, a reshape that splits
// the batch or whose batch entry is ambiguous, an op whose output rank changes with the batch.
func (g *Graph) WithBatch(b int) (*Graph, error) {
	base := g
	if g.base != nil {
		base = g.base
	}
	f := base.facts()
	if f.err != nil {
		return nil, fmt.Errorf("graph %s cannot run at batch size %d: its batch size is fixed: %v", base.File, b, f.err)
	}
	if b == f.b0 {
		return base, nil
	}
	if b < 1 || b > maxDim {
		return nil, fmt.Errorf("graph %s: batch size %d is out of range (1 to %d)", base.File, b, maxDim)
	}
	if base.source == nil {
		return nil, fmt.Errorf("graph %s: no source to re-specialise for batch size %d", base.File, b)
	}
	ng, err := base.rebatch(b)
	if err != nil {
		return nil, err
	}
	return base.sameRange(ng)
}

// rebatch is g (the graph as exported) at batch size b, over all the file's models.
func (g *Graph) rebatch(b int) (*Graph, error) {
	f := g.facts()
	dims := map[string][]int{}
	for name, d := range f.dims {
		dims[name] = []int{d}
	}
	rb := newRebatcher(g, f.b0, b, dims, "batch")
	rb.isBatch = true
	ng, err := rb.parse()
	if err != nil {
		return nil, fmt.Errorf("graph %s at batch size %d (exported at %d): %w", g.File, b, f.b0, err)
	}
	ng.base = g
	return ng, nil
}

// sameRange is ng, a re-specialisation of g, cut to g's model range when g is one (Models): a
// model range keeps its range at every size.
func (g *Graph) sameRange(ng *Graph) (*Graph, error) {
	if g.total != 0 {
		return ng.Models(g.first, g.first+g.N)
	}
	return ng, nil
}

// batchAxis is a dim that holds the batch: its size is outer * batch * inner; outer < 0 when
// unknown.
type batchAxis struct{ dim, outer int }

// rebatcher re-specialises a graph for batch size b while the loader infers it.
type rebatcher struct {
	orig    *Graph
	b0, b   int
	dims    map[string][]int       // input -> its dims that hold the size b0
	sym     string                 // what the size is, for messages: "batch", "dynamic dim 1 of input \"idx\""
	isBatch bool                   // the batch (expand's batch_dims follow it)
	edits   map[*jvalue]int        // the number tokens rewritten -> their length in the file
	layouts map[string][]batchAxis // value (name, or node#k for tuple elements) -> batch dims
	views   map[string]batchAxis   // view/reshape node -> where its output holds the batch
}

// prepare sets every batch-carrying input's batch dim to b in the parsed file.
func (rb *rebatcher) prepare(root *jvalue) {
	inputs := root.obj["inputs"]
	if root.kind != jObject || inputs == nil || inputs.kind != jArray {
		return
	}
	for _, e := range inputs.arr {
		if e.kind != jObject || e.obj["name"] == nil || e.obj["shape"] == nil {
			continue
		}
		dims, ok := rb.dims[e.obj["name"].str]
		if !ok || e.obj["shape"].kind != jArray {
			continue
		}
		var axes []batchAxis
		for _, d := range dims {
			if d < len(e.obj["shape"].arr) {
				rb.set(e.obj["shape"].arr[d], rb.b)
				axes = append(axes, batchAxis{d, 1})
			}
		}
		rb.layouts[e.obj["name"].str] = axes
	}
}

func newRebatcher(orig *Graph, b0, b int, dims map[string][]int, sym string) *rebatcher {
	return &rebatcher{orig: orig, b0: b0, b: b, dims: dims, sym: sym, edits: map[*jvalue]int{},
		layouts: map[string][]batchAxis{}, views: map[string]batchAxis{}}
}

// set rewrites the number v to i, remembering the token's length in the file.
func (rb *rebatcher) set(v *jvalue, i int) {
	if _, ok := rb.edits[v]; !ok {
		rb.edits[v] = len(v.num)
	}
	v.num = json.Number(strconv.Itoa(i))
}

// parse is rb.orig re-specialised: its source parsed with rb's rewrites.
func (rb *rebatcher) parse() (*Graph, error) {
	return parse(rb.orig.File, rb.orig.source, rb.orig.opts, rb)
}

// rewritten is data with rb's rewrites spliced in: a re-specialised graph's own source, so it
// can be re-specialised again (for another dynamic dim) with every line where it was.
func (rb *rebatcher) rewritten(data []byte) []byte {
	vs := make([]*jvalue, 0, len(rb.edits))
	for v := range rb.edits {
		vs = append(vs, v)
	}
	sort.Slice(vs, func(i, j int) bool { return vs[i].off < vs[j].off })
	out := make([]byte, 0, len(data)+16*len(vs))
	at := 0
	for _, v := range vs {
		out = append(append(out, data[at:v.off]...), v.num...)
		at = v.off + rb.edits[v]
	}
	return append(out, data[at:]...)
}

// operands lists a node's tensor operands, lists flattened.
func operands(n *Node) []Operand {
	var out []Operand
	for _, o := range n.Inputs {
		switch o.Kind {
		case TensorOperand:
			out = append(out, o)
		case ListOperand:
			out = append(out, operands(&Node{Inputs: o.List})...)
		}
	}
	return out
}

func (rb *rebatcher) layoutOf(n *Node, o Operand) []batchAxis {
	if n.Op == "getitem" && o.Source == FromNode {
		return rb.layouts[fmt.Sprintf("%s#%d", o.Name, n.Attrs.Int("index"))]
	}
	return rb.layouts[o.Name]
}

var batchBroadcastOps = map[string]bool{
	"add": true, "sub": true, "mul": true, "div": true, "pow": true, "where": true, "masked_fill": true,
	"eq": true, "ne": true, "lt": true, "le": true, "gt": true, "ge": true, "logical_and": true, "logical_or": true,
	"cat": true, "stack": true,
}

// before runs ahead of inferring r: it refuses a parameter that follows the batch and
// rewrites a view/reshape target; false when it refused.
func (rb *rebatcher) before(l *loader, r *rawNode) bool {
	orig := rb.orig.nodes[r.name]
	if orig == nil {
		return true
	}
	fail := func(format string, args ...any) bool {
		l.errAt(r.v, r.path, r.name, format, args...)
		return false
	}
	if batchBroadcastOps[orig.Op] {
		ops := operands(orig)
		for _, p := range ops {
			if p.Source != FromParam {
				continue
			}
			for _, x := range ops {
				for _, ax := range rb.layoutOf(orig, x) {
					pd := ax.dim - (x.Type.Rank() - p.Type.Rank())
					if orig.Op == "cat" && ax.dim == orig.Attrs.Int("dim") {
						continue // concatenated along the batch
					}
					if pd >= 0 && p.Type.Shape[pd] == x.Type.Shape[ax.dim] && p.Type.Shape[pd] != 1 {
						return fail("param %q has shape %v: its dim %d (%d) lines up with dim %d of %q, which holds the %s; a parameter's shape cannot follow the %s",
							p.Name, p.Type.Shape, pd, p.Type.Shape[pd], ax.dim, x.Name, rb.sym, rb.sym)
					}
				}
			}
		}
	}
	for i, o := range orig.Inputs { // a param where a reader expects the batch (a folded mask)
		if o.Kind != TensorOperand || o.Source != FromParam {
			continue
		}
		if d, ok := readerBatchDim(orig, i, o.Type.Rank()); ok && d != -1 {
			what := fmt.Sprintf("dim %d (%d) holds the batch", d, o.Type.Shape[max(d, 0)])
			if d == batchMerged {
				what = "dim 0 holds batch*num_heads"
			}
			return fail("param %q (%v) is read as input %d of %s, whose %s; a parameter's shape cannot follow the batch", o.Name, o.Type.Shape, i, orig.Op, what)
		}
	}
	if orig.Op == "view" || orig.Op == "reshape" {
		return rb.rewriteView(r, orig, fail)
	}
	if orig.Op == "linear" {
		x := orig.Inputs[0]
		for _, ax := range rb.layoutOf(orig, x) {
			if ax.dim == x.Type.Rank()-1 {
				return fail("its input %q %v holds the %s in its last dim, the one its weight (in_features %d) fixes; a Linear cannot follow the %s",
					x.Name, x.Type.Shape, rb.sym, x.Type.Shape[ax.dim], rb.sym)
			}
		}
	}
	if orig.Op == "slice" && r.attrs != nil {
		rb.rewriteSliceEnd(r.attrs)
	}
	if orig.Op == "expand" {
		return rb.rewriteExpand(r, orig, fail)
	}
	return true
}

// rewriteSliceEnd sets the end of a slice whose "end_follows" names a dim that rb changes.
func (rb *rebatcher) rewriteSliceEnd(attrs *jvalue) {
	f, end := attrs.obj["end_follows"], attrs.obj["end"]
	if f == nil || f.kind != jArray || len(f.arr) != 2 || end == nil || end.kind != jNumber {
		return // the loader says what is wrong
	}
	d, ok := intValue(f.arr[1])
	if ok && slices.Contains(rb.dims[f.arr[0].str], d) {
		rb.set(end, rb.b)
	}
}

// rewriteExpand scales the expand sizes that follow the batch: the entries of batch_dims, and
// those over a batch dim of the input (which keep the input's size).
func (rb *rebatcher) rewriteExpand(r *rawNode, orig *Node, fail func(string, ...any) bool) bool {
	if r.attrs == nil || r.attrs.obj["sizes"] == nil || r.attrs.obj["sizes"].kind != jArray {
		return true
	}
	entries := r.attrs.obj["sizes"].arr
	lead := len(entries) - orig.Inputs[0].Type.Rank()
	for _, ax := range rb.layoutOf(orig, orig.Inputs[0]) {
		if q := ax.dim + lead; q >= 0 && q < len(entries) {
			rb.set(entries[q], -1)
		}
	}
	for _, q := range orig.Attrs.Ints("batch_dims") {
		if q >= len(entries) || !rb.isBatch {
			continue
		}
		v, ok := intValue(entries[q])
		switch {
		case ok && v == -1:
		case !ok || v%rb.b0 != 0:
			return fail("expand size %s of batch dim %d is not a multiple of the batch size %d it was exported at", describe(entries[q]), q, rb.b0)
		default:
			rb.set(entries[q], v/rb.b0*rb.b)
		}
	}
	return true
}

// rewriteView finds the target dim of a view/reshape that holds its input's batch and scales
// it from b0 to b (a -1 entry needs nothing).
func (rb *rebatcher) rewriteView(r *rawNode, orig *Node, fail func(string, ...any) bool) bool {
	x := orig.Inputs[0]
	axes := rb.layoutOf(orig, x)
	if len(axes) == 0 {
		return true
	}
	if len(axes) > 1 {
		return fail("its input %q holds the %s in several dims (%v); the %s target %v cannot follow it", x.Name, rb.sym, axisDims(axes), orig.Op, orig.Attrs.Ints("shape"))
	}
	ax, in0, out0 := axes[0], x.Type.Shape, orig.Attrs.Ints("shape")
	if ax.outer < 0 {
		return fail("cannot tell where the %s lies within dim %d (size %d) of its input %q, so the %s target %v cannot be rewritten", rb.sym, ax.dim, in0[ax.dim], x.Name, orig.Op, out0)
	}
	a := numel(in0[:ax.dim]) * ax.outer // elements' outer extent before the batch
	inner := in0[ax.dim] / (ax.outer * rb.b0)
	var cands []int
	c := 1
	for q, d := range out0 {
		if a%c == 0 && (c*d)%(a*rb.b0) == 0 {
			cands = append(cands, q)
		}
		c *= d
	}
	if len(cands) > 1 { // only with b0 == 1: keep the batch grouped as it was
		var keep []int
		for _, q := range cands {
			cq := numel(out0[:q])
			if a/cq == ax.outer && out0[q]*cq/(a*rb.b0) == inner {
				keep = append(keep, q)
			}
		}
		cands = keep
	}
	switch {
	case len(cands) == 0:
		return fail("the %s target %v splits the %s (dim %d of its input %q, %v) across dims; only a target that keeps the %s within one dim can follow it", orig.Op, out0, rb.sym, ax.dim, x.Name, in0, rb.sym)
	case len(cands) > 1:
		return fail("the %s target %v could hold the %s (dim %d of its input %q, %v) in dims %v; export with a size > 1 there to make it unambiguous", orig.Op, out0, rb.sym, ax.dim, x.Name, in0, cands)
	}
	q := cands[0]
	rb.views[orig.Name] = batchAxis{q, a / numel(out0[:q])}
	if r.attrs == nil || r.attrs.obj["shape"] == nil || r.attrs.obj["shape"].kind != jArray || q >= len(r.attrs.obj["shape"].arr) {
		return true
	}
	entry := r.attrs.obj["shape"].arr[q]
	if v, ok := intValue(entry); ok && v == -1 {
		return true
	}
	rb.set(entry, out0[q]/rb.b0*rb.b)
	return true
}

func axisDims(axes []batchAxis) []int {
	out := make([]int, len(axes))
	for i, a := range axes {
		out[i] = a.dim
	}
	return out
}

// after records where n's outputs hold the batch, comparing them with the graph at b0.
func (rb *rebatcher) after(l *loader, r *rawNode, n *Node) {
	orig := rb.orig.nodes[n.Name]
	if orig == nil || len(orig.Outputs) != len(n.Outputs) {
		return
	}
	for k, t := range n.Outputs {
		t0 := orig.Outputs[k]
		key := n.Name
		if n.Tuple {
			key = fmt.Sprintf("%s#%d", n.Name, k)
		}
		if t.Rank() != t0.Rank() {
			l.errAt(r.v, r.path, n.Name, "output %d has shape %v, but %v at %s %d: its rank changes with the %s (a squeeze of a size of 1?), so the graph cannot follow the %s",
				k, t.Shape, t0.Shape, rb.sym, rb.b0, rb.sym, rb.sym)
			continue
		}
		var axes []batchAxis
		for d := range t.Shape {
			if t.Shape[d] == t0.Shape[d] {
				continue
			}
			axes = append(axes, batchAxis{d, rb.outerOf(orig, d, t0.Shape[d], t.Shape[d])})
		}
		if len(axes) > 0 {
			rb.layouts[key] = axes
		}
	}
}

// outerOf is the factor outside the batch in dim d of orig's output (size s0 at b0, s at b),
// -1 when unknown.
func (rb *rebatcher) outerOf(orig *Node, d, s0, s int) int {
	if s0%rb.b0 != 0 || s != s0/rb.b0*rb.b {
		return -1 // not a multiple of the batch (a cat along it, say)
	}
	if v, ok := rb.views[orig.Name]; ok {
		if v.dim == d {
			return v.outer
		}
		return -1
	}
	if orig.Op == "flatten" {
		x := orig.Inputs[0]
		start := orig.Attrs.Int("start_dim")
		if start < 0 {
			start += x.Type.Rank()
		}
		for _, ax := range rb.layoutOf(orig, x) {
			end := start + x.Type.Rank() - orig.Output().Rank()
			if d == start && ax.dim >= start && ax.dim <= end && ax.outer >= 0 {
				return numel(x.Type.Shape[start:ax.dim]) * ax.outer
			}
		}
	}
	if s0 == rb.b0 {
		return 1
	}
	outer := -1
	for _, x := range operands(orig) {
		for _, ax := range rb.layoutOf(orig, x) {
			if x.Type.Shape[ax.dim] != s0 || ax.outer < 0 {
				continue
			}
			if outer >= 0 && outer != ax.outer {
				return -1
			}
			outer = ax.outer
		}
	}
	return outer
}
