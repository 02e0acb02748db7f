package graph

import (
	"crypto/sha256"
	"fmt"
	"io"
	"math"
	"sort"
	"strings"

	"github.com/widejit/widejit/graph/safetensors"
)

// Format is the value of the top-level "format" key.
const Format = "widejit.graph/v1"

// Limits that keep shape arithmetic far from overflow; anything beyond is a bad file.
const (
	maxDim   = 1 << 31 // any single dim or int attribute magnitude
	maxNumel = 1 << 40 // elements of one tensor, per model
)

// Options adjust loading.
type Options struct {
	// N, when > 0, replaces the file's n. Only init graphs accept a different n (a weights
	// file fixes N).
	N int
	// MaxGraphBytes bounds the graph file (0: DefaultMaxGraphBytes, negative: no bound).
	MaxGraphBytes int64
	// MemoryLimit bounds what the Graph allocates at once: initialised weights, generated
	// inputs, one tensor read from the weights or inputs file (0: memlimit.Default(), 80% of
	// physical memory; negative: no bound).
	MemoryLimit int64
	// AllowOutsidePaths lets the graph name files outside its own directory (absolute paths,
	// "..", symbolic links that lead out); by default they are refused.
	AllowOutsidePaths bool
	// Weights, when not nil, is the content of the weights file the graph names, held in
	// memory: it is read instead of the file (whose path then only names it in messages).
	Weights []byte
}

// DefaultMaxGraphBytes bounds a graph file: real graphs are kilobytes, the weights live apart.
const DefaultMaxGraphBytes = 64 << 20

// Load reads, validates and infers the graph at path (weights checked too).
func Load(path string) (*Graph, error) { return LoadWithOptions(path, Options{}) }

// LoadWithOptions is Load with options. The graph must be a regular file within
// MaxGraphBytes (a FIFO or /dev/zero is refused at once, not read forever).
func LoadWithOptions(path string, opts Options) (*Graph, error) {
	data, err := readBounded(path, opts.MaxGraphBytes, DefaultMaxGraphBytes)
	if err != nil {
		return nil, err
	}
	return Parse(path, data, opts)
}

// readBounded reads a regular file of at most limit bytes (0: def, negative: no bound).
func readBounded(path string, limit, def int64) ([]byte, error) {
	if limit == 0 {
		limit = def
	}
	f, st, err := safetensors.OpenRegular(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if limit > 0 && st.Size() > limit {
		return nil, fmt.Errorf("%s is %d bytes, more than the limit of %d for a graph file", path, st.Size(), limit)
	}
	r := io.Reader(f)
	if limit > 0 {
		r = io.LimitReader(f, limit+1) // the file may grow after the stat
	}
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	if limit > 0 && int64(len(data)) > limit {
		return nil, fmt.Errorf("%s grew past the limit of %d bytes for a graph file while being read", path, limit)
	}
	return data, nil
}

// Parse validates a graph given as bytes; file names it in errors and anchors the relative
// weights path.
func Parse(file string, data []byte, opts Options) (*Graph, error) {
	return parse(file, data, opts, nil)
}

// parse is Parse; rb, when not nil, re-specialises the graph for another batch size
// (batch.go): it rewrites the inputs' batch dims and the reshapes that bake the batch in.
func parse(file string, data []byte, opts Options, rb *rebatcher) (*Graph, error) {
	l := &loader{file: file, data: data, rb: rb, g: &Graph{File: file, source: data, opts: opts, memLimit: opts.MemoryLimit, batch: &batchMemo{},
		inputs: map[string]*Input{}, params: map[string]*Param{}, nodes: map[string]*Node{}, paramUse: map[string]paramUse{}}}
	root, err := parseJSON(data)
	if err != nil {
		se := err.(*syntaxError)
		line, col := lineCol(data, se.off)
		return nil, &Error{[]Problem{{File: file, Line: line, Col: col, Msg: "malformed JSON: " + se.msg}}}
	}
	if rb != nil {
		rb.prepare(root)
	}
	l.load(root, opts)
	if rb != nil {
		l.g.source = rb.rewritten(data)
	}
	l.g.jsonSum = sha256.Sum256(data)
	sort.SliceStable(l.problems, func(i, j int) bool { // file order; position-less ones last
		a, b := l.problems[i], l.problems[j]
		if (a.Line == 0) != (b.Line == 0) {
			return b.Line == 0
		}
		return a.Line < b.Line || a.Line == b.Line && a.Col < b.Col
	})
	if len(l.problems) > 0 {
		return nil, &Error{l.problems}
	}
	return l.g, nil
}

type loader struct {
	file     string
	data     []byte
	g        *Graph
	problems []Problem
	names    map[string]string  // every declared name -> its JSON path
	badNames map[string]bool    // declared, but its declaration has a problem
	declV    map[string]*jvalue // where each name is declared
	weightsV *jvalue            // the "weights" value
	allNames []string
	raws     []*rawNode
	byName   map[string]*rawNode
	rb       *rebatcher // re-specialising for another batch size (batch.go), or nil
}

type rawNode struct {
	index  int
	path   string
	v      *jvalue
	name   string
	op     string
	spec   *opSpec
	inputs *jvalue
	params *jvalue
	attrs  *jvalue
	deps   []string
	bad    bool // could not be inferred (its own problem, or one upstream)
}

func (l *loader) errAt(v *jvalue, path, node, format string, args ...any) {
	p := Problem{File: l.file, Path: path, Node: node, Msg: fmt.Sprintf(format, args...)}
	if v != nil {
		p.Line, p.Col = lineCol(l.data, v.off)
	}
	l.problems = append(l.problems, p)
}

// object checks that v is an object with only the allowed keys; required keys must be there.
func (l *loader) object(v *jvalue, path, node string, required []string, optional ...string) bool {
	if v.kind != jObject {
		l.errAt(v, path, node, "expected an object, got %s", describe(v))
		return false
	}
	known := append(append([]string(nil), required...), optional...)
	ok := true
	for _, k := range v.keys {
		if !contains(known, k) {
			l.errAt(v.obj[k], join(path, k), node, "unknown key %q%s (expected %s)", k, suggest(k, known), strings.Join(known, ", "))
			ok = false
		}
	}
	for _, k := range required {
		if v.obj[k] == nil {
			l.errAt(v, path, node, "missing required key %q", k)
			ok = false
		}
	}
	return ok
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func contains(list []string, s string) bool {
	for _, e := range list {
		if e == s {
			return true
		}
	}
	return false
}

func (l *loader) str(v *jvalue, path, node string) (string, bool) {
	if v.kind != jString {
		l.errAt(v, path, node, "expected a string, got %s", describe(v))
		return "", false
	}
	return v.str, true
}

// intValue reads an integer within ±maxDim.
func intValue(v *jvalue) (int, bool) {
	if v.kind != jNumber {
		return 0, false
	}
	i, err := v.num.Int64()
	if err != nil || i > maxDim || i < -maxDim {
		return 0, false
	}
	return int(i), true
}

func (l *loader) load(root *jvalue, opts Options) {
	if !l.object(root, "", "", []string{"format", "n", "inputs", "params", "nodes", "outputs"}, "weights", "init", "dynamic_batch") {
		if root.kind != jObject {
			return
		}
	}
	g := l.g
	if f := root.obj["format"]; f != nil {
		if s, ok := l.str(f, "format", ""); ok && s != Format {
			l.errAt(f, "format", "", "unsupported format %q (expected %q)", s, Format)
		}
	}
	if v := root.obj["n"]; v != nil {
		n, ok := intValue(v)
		if !ok || n < 1 {
			l.errAt(v, "n", "", "n must be an integer >= 1, got %s", describe(v))
		}
		g.N = n
	}
	l.loadDynamicBatch(root.obj["dynamic_batch"])
	l.names = map[string]string{}
	l.badNames = map[string]bool{}
	l.declV = map[string]*jvalue{}
	l.loadInputs(root.obj["inputs"])
	l.loadParams(root.obj["params"])
	l.loadNodes(root.obj["nodes"])
	l.loadSource(root, opts)
	l.resolve()
	l.loadOutputs(root.obj["outputs"])
	if len(l.problems) == 0 && l.rb == nil { // a re-specialised graph shares checked weights
		l.checkWeights()
	}
}

func (l *loader) declare(name string, v *jvalue, path string) bool {
	if name == "" {
		l.errAt(v, path, "", "name must not be empty")
		return false
	}
	if prev, dup := l.names[name]; dup {
		l.errAt(v, path, "", "duplicate name %q (already declared at %s)", name, prev)
		return false
	}
	l.names[name] = path
	l.declV[name] = v
	l.allNames = append(l.allNames, name)
	return true
}

// typeOf reads {shape, dtype} of an input or param declaration.
func (l *loader) typeOf(v *jvalue, path string) (Type, bool) {
	var t Type
	ok := true
	if s := v.obj["shape"]; s != nil {
		if s.kind != jArray {
			l.errAt(s, path+".shape", "", "shape must be a list of ints, got %s", describe(s))
			ok = false
		} else {
			t.Shape = []int{}
			for i, e := range s.arr {
				d, isInt := intValue(e)
				if !isInt || d < 1 {
					l.errAt(e, fmt.Sprintf("%s.shape[%d]", path, i), "", "dims must be integers >= 1, got %s", describe(e))
					ok = false
				}
				t.Shape = append(t.Shape, d)
			}
			if ok && !shapeFits(t.Shape) {
				l.errAt(s, path+".shape", "", "shape %v is too large (more than %d elements)", t.Shape, maxNumel)
				ok = false
			}
		}
	}
	if d := v.obj["dtype"]; d != nil {
		s, isStr := l.str(d, path+".dtype", "")
		t.DType = DType(s)
		if isStr && !t.DType.Valid() {
			l.errAt(d, path+".dtype", "", "unsupported dtype %q%s (supported: %s)", s, suggest(s, dtypeNames()), strings.Join(dtypeNames(), ", "))
			ok = false
		}
		ok = ok && isStr
	}
	return t, ok
}

func dtypeNames() []string {
	out := make([]string, len(DTypes))
	for i, d := range DTypes {
		out[i] = string(d)
	}
	return out
}

func shapeFits(s []int) bool {
	n := 1
	for _, d := range s {
		if d < 0 || d > maxDim {
			return false
		}
		n *= d
		if n > maxNumel {
			return false
		}
	}
	return true
}

func (l *loader) list(v *jvalue, path string) []*jvalue {
	if v == nil {
		return nil
	}
	if v.kind != jArray {
		l.errAt(v, path, "", "expected a list, got %s", describe(v))
		return nil
	}
	return v.arr
}

func (l *loader) loadInputs(v *jvalue) {
	for i, e := range l.list(v, "inputs") {
		path := fmt.Sprintf("inputs[%d]", i)
		objOK := l.object(e, path, "", []string{"name", "shape", "dtype"}, "per_model", "batch_dim", "dynamic_dims")
		if e.kind != jObject || e.obj["name"] == nil {
			continue
		}
		name, ok := l.str(e.obj["name"], path+".name", "")
		t, tok := l.typeOf(e, path)
		perModel := true
		if pm := e.obj["per_model"]; pm != nil {
			if pm.kind != jBool {
				l.errAt(pm, path+".per_model", "", "expected true or false, got %s", describe(pm))
			}
			perModel = pm.b
		}
		if !ok || !l.declare(name, e.obj["name"], path+".name") {
			continue
		}
		if !tok || !objOK {
			l.badNames[name] = true
		} else {
			in := &Input{Name: name, Type: t, PerModel: perModel, batchDim: l.batchDim(e.obj["batch_dim"], path, t)}
			in.dynamicDims = l.dynamicDims(e.obj["dynamic_dims"], path, t, in.batchDim)
			l.g.Inputs = append(l.g.Inputs, in)
			l.g.inputs[name] = in
		}
	}
}

func (l *loader) loadParams(v *jvalue) {
	for i, e := range l.list(v, "params") {
		path := fmt.Sprintf("params[%d]", i)
		objOK := l.object(e, path, "", []string{"name", "shape", "dtype"})
		if e.kind != jObject || e.obj["name"] == nil {
			continue
		}
		name, ok := l.str(e.obj["name"], path+".name", "")
		t, tok := l.typeOf(e, path)
		if !ok || !l.declare(name, e.obj["name"], path+".name") {
			continue
		}
		if !tok || !objOK {
			l.badNames[name] = true
		} else {
			p := &Param{Name: name, Type: t}
			l.g.Params = append(l.g.Params, p)
			l.g.params[name] = p
		}
	}
}

func (l *loader) loadNodes(v *jvalue) {
	l.byName = map[string]*rawNode{}
	for i, e := range l.list(v, "nodes") {
		path := fmt.Sprintf("nodes[%d]", i)
		objOK := l.object(e, path, "", []string{"name", "op"}, "inputs", "params", "attrs")
		if e.kind != jObject || e.obj["name"] == nil {
			continue
		}
		name, ok := l.str(e.obj["name"], path+".name", "")
		if !ok || !l.declare(name, e.obj["name"], path+".name") {
			continue
		}
		r := &rawNode{index: i, path: path, v: e, name: name, inputs: e.obj["inputs"], params: e.obj["params"], attrs: e.obj["attrs"], bad: !objOK}
		l.raws = append(l.raws, r)
		l.byName[name] = r
		if e.obj["op"] == nil {
			r.bad = true
			continue
		}
		op, ok := l.str(e.obj["op"], path+".op", name)
		if !ok {
			r.bad = true
			continue
		}
		r.op = op
		r.spec = opSpecs[op]
		if r.spec == nil {
			l.errAt(e.obj["op"], path+".op", name, "unknown op %q%s; see docs/graph-format.md for the vocabulary", op, suggest(op, Ops()))
			r.bad = true
		}
		if r.inputs != nil && r.inputs.kind != jArray {
			l.errAt(r.inputs, path+".inputs", name, "inputs must be a list, got %s", describe(r.inputs))
			r.bad, r.inputs = true, nil
		}
		for _, key := range []string{"params", "attrs"} {
			if o := e.obj[key]; o != nil && o.kind != jObject && o.kind != jNull {
				l.errAt(o, path+"."+key, name, "%s must be an object, got %s", key, describe(o))
				r.bad = true
			}
		}
		if r.params != nil && r.params.kind != jObject {
			r.params = nil
		}
		if r.attrs != nil && r.attrs.kind != jObject {
			r.attrs = nil
		}
	}
}

func (l *loader) loadSource(root *jvalue, opts Options) {
	w, in := root.obj["weights"], root.obj["init"]
	switch {
	case w != nil && in != nil:
		l.errAt(in, "init", "", `give either "weights" or "init", not both`)
	case w == nil && in == nil:
		l.errAt(root, "", "", `missing "weights" (a safetensors file) or "init" ({"seed": S})`)
	case w != nil:
		l.weightsV = w
		if s, ok := l.str(w, "weights", ""); ok {
			if s == "" {
				l.errAt(w, "weights", "", "weights path is empty")
				return
			}
			p, err := filePath(l.file, s, opts.AllowOutsidePaths)
			if err != nil {
				l.errAt(w, "weights", "", "weights %v", err)
				return
			}
			l.g.WeightsPath = p
		}
		if opts.N > 0 && opts.N != l.g.N {
			l.errAt(root.obj["n"], "n", "", "n cannot be overridden to %d: the weights file holds %d models (only init graphs take another n)", opts.N, l.g.N)
		}
	default:
		if !l.object(in, "init", "", []string{"seed"}) {
			return
		}
		sv := in.obj["seed"]
		seed, err := sv.num.Int64()
		if sv.kind != jNumber || err != nil {
			l.errAt(sv, "init.seed", "", "seed must be an integer, got %s", describe(sv))
			return
		}
		l.g.Init = &Init{Seed: seed}
		if opts.N > 0 {
			l.g.N = opts.N
		}
	}
}

// resolve collects each node's dependencies, orders the nodes and infers their types.
func (l *loader) resolve() {
	for _, r := range l.raws {
		if r.inputs == nil {
			continue
		}
		for i, e := range r.inputs.arr {
			l.collectDeps(r, e, fmt.Sprintf("%s.inputs[%d]", r.path, i), true)
		}
	}
	order := l.topoOrder()
	for _, r := range order {
		if r.bad {
			continue
		}
		for _, d := range r.deps {
			if l.byName[d].bad {
				r.bad = true // the problem upstream is already reported
			}
		}
		if r.bad {
			continue
		}
		if l.rb != nil && !l.rb.before(l, r) {
			r.bad = true
			continue
		}
		n := l.inferNode(r)
		if n == nil {
			r.bad = true
			continue
		}
		l.g.Nodes = append(l.g.Nodes, n)
		l.g.nodes[n.Name] = n
		if l.rb != nil {
			l.rb.after(l, r, n)
		}
	}
}

func (l *loader) collectDeps(r *rawNode, e *jvalue, path string, top bool) {
	switch e.kind {
	case jString:
		if _, ok := l.names[e.str]; !ok {
			l.errAt(e, path, r.name, "unknown input %q%s", e.str, suggest(e.str, l.allNames))
			r.bad = true
			return
		}
		if l.badNames[e.str] {
			r.bad = true
		}
		if _, isNode := l.byName[e.str]; isNode && !contains(r.deps, e.str) {
			r.deps = append(r.deps, e.str)
		}
	case jArray:
		if !top {
			l.errAt(e, path, r.name, "lists of inputs cannot nest")
			r.bad = true
			return
		}
		for i, x := range e.arr {
			l.collectDeps(r, x, fmt.Sprintf("%s[%d]", path, i), false)
		}
	case jNumber, jNull:
	default:
		l.errAt(e, path, r.name, "an input must be a name, a number, null or a list of names, got %s", describe(e))
		r.bad = true
	}
}

// topoOrder orders nodes so each follows its dependencies, keeping file order where free; nodes
// on a cycle are reported and left out.
func (l *loader) topoOrder() []*rawNode {
	indeg := map[string]int{}
	users := map[string][]*rawNode{}
	for _, r := range l.raws {
		indeg[r.name] = len(r.deps)
		for _, d := range r.deps {
			users[d] = append(users[d], r)
		}
	}
	var ready, order []*rawNode
	for _, r := range l.raws {
		if indeg[r.name] == 0 {
			ready = append(ready, r)
		}
	}
	for len(ready) > 0 {
		sort.Slice(ready, func(i, j int) bool { return ready[i].index < ready[j].index })
		r := ready[0]
		ready = ready[1:]
		order = append(order, r)
		for _, u := range users[r.name] {
			if indeg[u.name]--; indeg[u.name] == 0 {
				ready = append(ready, u)
			}
		}
	}
	if len(order) == len(l.raws) {
		return order
	}
	// Report each cycle once, from its first node in file order.
	onCycle := map[string]bool{}
	for _, r := range l.raws {
		if indeg[r.name] == 0 || onCycle[r.name] {
			continue
		}
		cycle := l.findCycle(r, indeg)
		if cycle == nil {
			continue // downstream of a cycle, not on one
		}
		for _, name := range cycle {
			onCycle[name] = true
		}
		first := l.byName[cycle[0]]
		l.errAt(first.v, first.path, first.name, "cycle: %s", strings.Join(append(cycle, cycle[0]), " -> "))
	}
	for _, r := range l.raws {
		if indeg[r.name] > 0 {
			r.bad = true
		}
	}
	return order
}

// findCycle walks unresolved dependencies from r until a node repeats; it returns the cycle
// in data-flow order starting at the repeated node, or nil when r only hangs off a cycle.
func (l *loader) findCycle(r *rawNode, indeg map[string]int) []string {
	var path []string
	seen := map[string]int{}
	cur := r
	for {
		if at, ok := seen[cur.name]; ok {
			cyc := path[at:]
			// path follows dependencies backwards; reverse to read as data flow.
			out := make([]string, len(cyc))
			for i := range cyc {
				out[i] = cyc[len(cyc)-1-i]
			}
			if cur != r && !contains(out, r.name) {
				return nil
			}
			// rotate so the node earliest in the file comes first
			best := 0
			for i, name := range out {
				if l.byName[name].index < l.byName[out[best]].index {
					best = i
				}
			}
			return append(out[best:], out[:best]...)
		}
		seen[cur.name] = len(path)
		path = append(path, cur.name)
		var next *rawNode
		for _, d := range cur.deps {
			if indeg[d] > 0 {
				next = l.byName[d]
				break
			}
		}
		if next == nil {
			return nil
		}
		cur = next
	}
}

func (l *loader) loadOutputs(v *jvalue) {
	list := l.list(v, "outputs")
	if v != nil && v.kind == jArray && len(list) == 0 {
		l.errAt(v, "outputs", "", "a graph needs at least one output")
	}
	seen := map[string]bool{}
	for i, e := range list {
		path := fmt.Sprintf("outputs[%d]", i)
		name, ok := l.str(e, path, "")
		if !ok {
			continue
		}
		if seen[name] {
			l.errAt(e, path, "", "output %q listed twice", name)
			continue
		}
		seen[name] = true
		if r := l.byName[name]; r != nil {
			if r.bad {
				continue
			}
			n := l.g.nodes[name]
			if n.Tuple {
				l.errAt(e, path, "", "%q produces a tuple; add getitem nodes and list them as outputs", name)
				continue
			}
			l.g.Outputs = append(l.g.Outputs, Operand{Kind: TensorOperand, Name: name, Source: FromNode, Type: n.Output()})
			continue
		}
		if in := l.g.inputs[name]; in != nil {
			l.g.Outputs = append(l.g.Outputs, Operand{Kind: TensorOperand, Name: name, Source: FromInput, Type: in.Type})
			continue
		}
		if _, declared := l.names[name]; declared {
			l.errAt(e, path, "", "output %q is a param; outputs name nodes or inputs", name)
			continue
		}
		l.errAt(e, path, "", "unknown output %q%s", name, suggest(name, l.allNames))
	}
}

// suggest returns `; did you mean "x"?` for the closest candidate, or "".
func suggest(s string, candidates []string) string {
	best, bestD := "", math.MaxInt
	for _, c := range candidates {
		d := editDistance(strings.ToLower(s), strings.ToLower(c))
		if d < bestD {
			best, bestD = c, d
		}
	}
	limit := len(s)/3 + 1
	if limit > 4 {
		limit = 4
	}
	if best == "" || bestD > limit {
		return ""
	}
	return fmt.Sprintf("; did you mean %q?", best)
}

func editDistance(a, b string) int {
	if len(a) > 64 || len(b) > 64 {
		if a == b {
			return 0
		}
		return math.MaxInt / 2
	}
	prevPrev := make([]int, len(b)+1)
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				cur[j] = min(cur[j], prevPrev[j-2]+1) // transposition
			}
		}
		prevPrev, prev, cur = prev, cur, prevPrev
	}
	return prev[len(b)]
}
