package graph

import (
	"fmt"
	"slices"
	"sort"
	"strings"
)

// slot describes one positional input of an op.
type slot struct {
	name     string
	optional bool // may be null or left out at the end
	scalarOK bool // may be a number (binary ops)
	list     bool // a list of tensors (cat, stack)
}

// required marks an attribute without a default.
type requiredAttr struct{}

var required = requiredAttr{}

type attrDef struct {
	name string
	def  any // int, float64, bool, string, nil, []int, or required
}

type opSpec struct {
	name  string
	slots []slot
	attrs []attrDef
	infer func(c *ctx)
}

var opSpecs = map[string]*opSpec{}

func defOp(name string, slots []slot, attrs []attrDef, infer func(c *ctx)) {
	opSpecs[name] = &opSpec{name: name, slots: slots, attrs: attrs, infer: infer}
}

// Ops lists the op vocabulary, sorted.
func Ops() []string {
	out := make([]string, 0, len(opSpecs))
	for name := range opSpecs {
		out = append(out, name)
	}
	sort.Strings(out)
	return out
}

// ctx is the state of inferring one node.
type ctx struct {
	l      *loader
	r      *rawNode
	n      *Node
	in     []Operand
	inV    []*jvalue // JSON value of each input, for positions
	failed bool
	roles  map[string]bool // roles the op declared (used or not)
	why    map[string]string
}

func (c *ctx) errf(path string, v *jvalue, format string, args ...any) {
	if v == nil {
		v = c.r.v
	}
	p := c.r.path
	if path != "" {
		p += "." + path
	}
	c.l.errAt(v, p, c.n.Name, format, args...)
	c.failed = true
}

// attrV is the JSON value of attribute name, nil when defaulted.
func (c *ctx) attrV(name string) *jvalue {
	if c.r.attrs == nil {
		return nil
	}
	return c.r.attrs.obj[name]
}

func (c *ctx) attrPos(name string) *jvalue {
	if v := c.attrV(name); v != nil {
		return v
	}
	if c.r.attrs != nil {
		return c.r.attrs
	}
	return c.r.v
}

func (c *ctx) def(name string) any {
	for _, a := range c.r.spec.attrs {
		if a.name == name {
			return a.def
		}
	}
	panic("graph: op " + c.n.Op + " has no attribute " + name)
}

// value returns the attribute's JSON value, or nil and reports when it is required and absent.
// given is false when the default applies.
func (c *ctx) value(name string) (v *jvalue, given bool) {
	v = c.attrV(name)
	if v == nil {
		if c.def(name) == required {
			c.errf("attrs", c.attrPos(name), "missing required attribute %q", name)
		}
		return nil, false
	}
	return v, true
}

func (c *ctx) wrongType(name, want string, v *jvalue) {
	c.errf("attrs."+name, v, "expected %s, got %s", want, describe(v))
}

// Int reads an int attribute >= min.
func (c *ctx) Int(name string, min int) int {
	v, given := c.value(name)
	if !given {
		d, _ := c.def(name).(int)
		c.n.Attrs[name] = d
		return d
	}
	i, ok := intValue(v)
	if !ok {
		c.wrongType(name, "an integer", v)
		c.n.Attrs[name] = min
		return min
	}
	if i < min {
		c.errf("attrs."+name, v, "%s must be >= %d, got %d", name, min, i)
		i = min
	}
	c.n.Attrs[name] = i
	return i
}

// IntOrNull reads an int attribute that may be null (null: ok is false).
func (c *ctx) IntOrNull(name string) (int, bool) {
	v, given := c.value(name)
	if !given {
		d, ok := c.def(name).(int)
		if ok {
			c.n.Attrs[name] = d
		} else {
			c.n.Attrs[name] = nil
		}
		return d, ok
	}
	if v.kind == jNull {
		c.n.Attrs[name] = nil
		return 0, false
	}
	i, ok := intValue(v)
	if !ok {
		c.wrongType(name, "an integer or null", v)
		c.n.Attrs[name] = nil
		return 0, false
	}
	c.n.Attrs[name] = i
	return i, true
}

// Float reads a number attribute.
func (c *ctx) Float(name string) float64 {
	f, _ := c.floatOrNull(name, false)
	return f
}

func (c *ctx) floatOrNull(name string, nullOK bool) (float64, bool) {
	v, given := c.value(name)
	if !given {
		switch d := c.def(name).(type) {
		case float64:
			c.n.Attrs[name] = d
			return d, true
		case int:
			c.n.Attrs[name] = float64(d)
			return float64(d), true
		}
		c.n.Attrs[name] = nil
		return 0, false
	}
	if v.kind == jNull && nullOK {
		c.n.Attrs[name] = nil
		return 0, false
	}
	if v.kind != jNumber {
		want := "a number"
		if nullOK {
			want += " or null"
		}
		c.wrongType(name, want, v)
		c.n.Attrs[name] = 0.0
		return 0, true
	}
	f, err := v.num.Float64()
	if err != nil {
		c.errf("attrs."+name, v, "number %s is out of range", v.num)
	}
	c.n.Attrs[name] = f
	return f, true
}

// Bool reads a boolean attribute.
func (c *ctx) Bool(name string) bool {
	v, given := c.value(name)
	if !given {
		d, _ := c.def(name).(bool)
		c.n.Attrs[name] = d
		return d
	}
	if v.kind != jBool {
		c.wrongType(name, "true or false", v)
	}
	c.n.Attrs[name] = v.b
	return v.b
}

// Enum reads a string attribute that must be one of allowed.
func (c *ctx) Enum(name string, allowed ...string) string {
	v, given := c.value(name)
	if !given {
		d, _ := c.def(name).(string)
		c.n.Attrs[name] = d
		return d
	}
	if v.kind != jString {
		c.wrongType(name, "one of "+quoteAll(allowed), v)
		c.n.Attrs[name] = allowed[0]
		return allowed[0]
	}
	if !contains(allowed, v.str) {
		c.errf("attrs."+name, v, "%s must be one of %s, got %q", name, quoteAll(allowed), v.str)
		c.n.Attrs[name] = allowed[0]
		return allowed[0]
	}
	c.n.Attrs[name] = v.str
	return v.str
}

func quoteAll(s []string) string {
	q := make([]string, len(s))
	for i, e := range s {
		q[i] = fmt.Sprintf("%q", e)
	}
	return strings.Join(q, ", ")
}

// intList reads a JSON list of ints; nullEntries allows null entries (returned as -1).
func (c *ctx) intList(name string, v *jvalue, nullEntries bool) ([]int, bool) {
	out := make([]int, len(v.arr))
	for i, e := range v.arr {
		if e.kind == jNull && nullEntries {
			out[i] = -1
			continue
		}
		x, ok := intValue(e)
		if !ok {
			c.errf(fmt.Sprintf("attrs.%s[%d]", name, i), e, "expected an integer, got %s", describe(e))
			return nil, false
		}
		out[i] = x
	}
	return out, true
}

// Tuple reads an int-or-tuple attribute and expands it to k entries, each >= min. An absent
// attribute with a null default returns nil (the caller chooses, e.g. stride = kernel_size).
func (c *ctx) Tuple(name string, k, min int) []int {
	v, given := c.value(name)
	var vals []int
	switch {
	case !given:
		switch d := c.def(name).(type) {
		case int:
			vals = repeat(d, k)
		case []int:
			vals = d
		default:
			return nil
		}
	case v.kind == jNull && c.def(name) == nil:
		return nil
	case v.kind == jNumber:
		x, ok := intValue(v)
		if !ok {
			c.wrongType(name, "an integer or a list of integers", v)
			return repeat(max(min, 1), k)
		}
		vals = repeat(x, k)
	case v.kind == jArray:
		list, ok := c.intList(name, v, false)
		if !ok {
			return repeat(max(min, 1), k)
		}
		if len(list) != k {
			c.errf("attrs."+name, v, "%s must have %d entries (one per spatial dim), got %d", name, k, len(list))
			return repeat(max(min, 1), k)
		}
		vals = list
	default:
		c.wrongType(name, "an integer or a list of integers", v)
		return repeat(max(min, 1), k)
	}
	for i, x := range vals {
		if x < min {
			c.errf("attrs."+name, c.attrPos(name), "%s must be >= %d, got %v", name, min, vals)
			vals[i] = min
		}
	}
	c.n.Attrs[name] = vals
	return vals
}

func repeat(x, k int) []int {
	out := make([]int, k)
	for i := range out {
		out[i] = x
	}
	return out
}

// IntOrList reads an attribute that is an int or a list of ints; wasInt tells which.
func (c *ctx) IntOrList(name string) (vals []int, wasInt bool, ok bool) {
	v, given := c.value(name)
	if !given {
		switch d := c.def(name).(type) {
		case int:
			return []int{d}, true, true
		case []int:
			return d, false, true
		}
		return nil, false, false
	}
	switch v.kind {
	case jNumber:
		x, isInt := intValue(v)
		if isInt {
			return []int{x}, true, true
		}
	case jArray:
		list, isInts := c.intList(name, v, false)
		return list, false, isInts
	}
	c.wrongType(name, "an integer or a list of integers", v)
	return nil, false, false
}

// Dims reads a dim attribute that is null, an int or a list, resolved against rank and
// sorted; null and [] mean every dim when allEmpty.
func (c *ctx) Dims(name string, rank int) []int {
	v, given := c.value(name)
	var raw []int
	var pos *jvalue = c.attrPos(name)
	switch {
	case !given || v.kind == jNull:
		if d, ok := c.def(name).(int); ok && !given {
			raw = []int{d}
		} else {
			return allDims(rank)
		}
	case v.kind == jNumber:
		x, ok := intValue(v)
		if !ok {
			c.wrongType(name, "null, an integer or a list of integers", v)
			return nil
		}
		raw = []int{x}
	case v.kind == jArray:
		list, ok := c.intList(name, v, false)
		if !ok {
			return nil
		}
		if len(list) == 0 {
			return allDims(rank)
		}
		raw = list
	default:
		c.wrongType(name, "null, an integer or a list of integers", v)
		return nil
	}
	out := make([]int, 0, len(raw))
	for _, d := range raw {
		rd, ok := c.resolveDim(name, pos, d, rank)
		if !ok {
			return nil
		}
		if contains(intsToStrings(out), fmt.Sprint(rd)) {
			c.errf("attrs."+name, pos, "dim %d appears more than once in %v", rd, raw)
			return nil
		}
		out = append(out, rd)
	}
	sort.Ints(out)
	return out
}

func intsToStrings(v []int) []string {
	out := make([]string, len(v))
	for i, x := range v {
		out[i] = fmt.Sprint(x)
	}
	return out
}

func allDims(rank int) []int {
	out := make([]int, rank)
	for i := range out {
		out[i] = i
	}
	return out
}

// resolveDim maps a possibly negative dim into [0, rank) (a rank-0 tensor accepts -1 and 0,
// as in PyTorch).
func (c *ctx) resolveDim(name string, pos *jvalue, d, rank int) (int, bool) {
	r := max(rank, 1)
	if d < -r || d >= r {
		c.errf("attrs."+name, pos, "dim %d is out of range for a rank-%d input (expected %d..%d)", d, rank, -r, r-1)
		return 0, false
	}
	if d < 0 {
		d += r
	}
	return d, true
}

// Dim reads one dim attribute and resolves it against rank.
func (c *ctx) Dim(name string, rank int) int {
	d := c.Int(name, -maxDim)
	rd, ok := c.resolveDim(name, c.attrPos(name), d, rank)
	if !ok {
		return 0
	}
	c.n.Attrs[name] = rd
	return rd
}

// x returns the tensor type of input i (the slot checks already ran).
func (c *ctx) x(i int) Type { return c.in[i].Type }

// has reports whether optional input i is given.
func (c *ctx) has(i int) bool { return i < len(c.in) && c.in[i].Kind != NoneOperand }

func (c *ctx) inErr(i int, format string, args ...any) {
	var v *jvalue
	if i < len(c.inV) {
		v = c.inV[i]
	}
	c.errf(fmt.Sprintf("inputs[%d]", i), v, format, args...)
}

// needFloat requires input i to have a float dtype.
func (c *ctx) needFloat(i int) bool {
	if d := c.x(i).DType; !d.IsFloat() {
		c.inErr(i, "%s needs a float tensor, %q is %s", c.n.Op, c.in[i].Name, d)
		return false
	}
	return true
}

// needRank requires input i to have one of the ranks.
func (c *ctx) needRank(i int, what string, ranks ...int) bool {
	r := c.x(i).Rank()
	for _, want := range ranks {
		if r == want {
			return true
		}
	}
	c.inErr(i, "%s expects %s, %q has shape %v", c.n.Op, what, c.in[i].Name, c.x(i).Shape)
	return false
}

// param binds role: when use is true the node must give it, with the shape (and dtype when
// non-empty); otherwise it must not be given (why says which attribute rules it out).
func (c *ctx) param(role string, use bool, shape []int, dtype DType, why string) {
	c.roles[role] = true
	var given *jvalue
	if c.r.params != nil {
		given = c.r.params.obj[role]
	}
	if !use {
		if given != nil {
			c.errf("params."+role, given, "param role %q is not used when %s", role, why)
		}
		return
	}
	if given == nil {
		c.errf("params", c.r.params, "missing param role %q (expected %s%s)", role, string(dtype), shapeString(shape))
		return
	}
	if given.kind != jString {
		c.errf("params."+role, given, "expected a param name, got %s", describe(given))
		return
	}
	p := c.l.g.params[given.str]
	if p == nil {
		if c.l.badNames[given.str] {
			c.failed = true
			return
		}
		var names []string
		for _, q := range c.l.g.Params {
			names = append(names, q.Name)
		}
		c.errf("params."+role, given, "unknown param %q%s", given.str, suggest(given.str, names))
		return
	}
	if !slices.Equal(p.Type.Shape, shape) {
		c.errf("params."+role, given, "shape mismatch: param %q has shape %v, %s %s needs %v", p.Name, p.Type.Shape, c.n.Op, role, shape)
	}
	if dtype != "" && p.Type.DType != dtype {
		c.errf("params."+role, given, "dtype mismatch: param %q is %s, expected %s (the input's dtype)", p.Name, p.Type.DType, dtype)
	}
	c.n.Params[role] = p
	if _, seen := c.l.g.paramUse[p.Name]; !seen {
		c.l.g.paramUse[p.Name] = paramUse{node: c.n, role: role}
	}
}

func (c *ctx) out(types ...Type) {
	c.n.Outputs = types
	c.n.Tuple = false
}

func (c *ctx) tuple(types ...Type) {
	c.n.Outputs = types
	c.n.Tuple = true
}

// inferNode checks a node's inputs, params and attrs against its op and infers its outputs;
// nil when anything is wrong (already reported).
func (l *loader) inferNode(r *rawNode) *Node {
	n := &Node{Name: r.name, Op: r.op, Index: r.index, Params: map[string]*Param{}, Attrs: Attrs{}}
	c := &ctx{l: l, r: r, n: n, roles: map[string]bool{}}
	spec := r.spec
	// unknown attributes
	if r.attrs != nil {
		known := make([]string, len(spec.attrs))
		for i, a := range spec.attrs {
			known[i] = a.name
		}
		for _, k := range r.attrs.keys {
			if !contains(known, k) {
				list := "none"
				if len(known) > 0 {
					list = strings.Join(known, ", ")
				}
				c.errf("attrs."+k, r.attrs.obj[k], "unknown attribute %q for op %s%s (attributes: %s)", k, r.op, suggest(k, known), list)
			}
		}
	}
	if !c.bindInputs() || c.failed {
		return nil
	}
	n.Inputs = c.in
	spec.infer(c)
	if c.failed {
		return nil
	}
	if r.params != nil {
		for _, role := range r.params.keys {
			if !c.roles[role] {
				known := make([]string, 0, len(c.roles))
				for k := range c.roles {
					known = append(known, k)
				}
				sort.Strings(known)
				list := "none"
				if len(known) > 0 {
					list = strings.Join(known, ", ")
				}
				c.errf("params."+role, r.params.obj[role], "unknown param role %q for op %s%s (roles: %s)", role, r.op, suggest(role, known), list)
			}
		}
	}
	for _, a := range spec.attrs { // every attribute present, even ones an op reads lazily
		if _, ok := n.Attrs[a.name]; !ok && a.def != required {
			n.Attrs[a.name] = a.def
		}
	}
	for i, t := range n.Outputs {
		if !shapeFits(t.Shape) || !allPositive(t.Shape) {
			c.errf("", nil, "output %d would have shape %v (every dim must be >= 1 and the tensor at most %d elements)", i, t.Shape, maxNumel)
		}
	}
	if c.failed {
		return nil
	}
	return n
}

func allPositive(s []int) bool {
	for _, d := range s {
		if d < 1 {
			return false
		}
	}
	return true
}

// bindInputs resolves the node's input entries against its op's slots.
func (c *ctx) bindInputs() bool {
	spec, r := c.r.spec, c.r
	var entries []*jvalue
	if r.inputs != nil {
		entries = r.inputs.arr
	}
	minIn := 0
	for i, s := range spec.slots {
		if !s.optional {
			minIn = i + 1
		}
	}
	if len(entries) < minIn || len(entries) > len(spec.slots) {
		names := make([]string, len(spec.slots))
		for i, s := range spec.slots {
			names[i] = s.name
			if s.optional {
				names[i] += "?"
			}
		}
		want := fmt.Sprintf("%d", minIn)
		if minIn != len(spec.slots) {
			want = fmt.Sprintf("%d to %d", minIn, len(spec.slots))
		}
		pos := r.inputs
		c.errf("inputs", pos, "wrong arity: %s takes %s inputs (%s), got %d", r.op, want, strings.Join(names, ", "), len(entries))
		return false
	}
	c.inV = entries
	for i, e := range entries {
		s := spec.slots[i]
		path := fmt.Sprintf("inputs[%d]", i)
		switch e.kind {
		case jNull:
			if !s.optional {
				c.errf(path, e, "input %s of %s is required, got null", s.name, r.op)
				return false
			}
			c.in = append(c.in, Operand{Kind: NoneOperand})
		case jNumber:
			if !s.scalarOK {
				c.errf(path, e, "input %s of %s must be a tensor, got %s", s.name, r.op, describe(e))
				return false
			}
			f, err := e.num.Float64()
			if err != nil {
				c.errf(path, e, "number %s is out of range", e.num)
				return false
			}
			isInt := !strings.ContainsAny(e.num.String(), ".eE")
			c.in = append(c.in, Operand{Kind: ScalarOperand, Scalar: f, IsInt: isInt})
		case jArray:
			if !s.list {
				c.errf(path, e, "input %s of %s must be a single tensor, got a list", s.name, r.op)
				return false
			}
			if len(e.arr) == 0 {
				c.errf(path, e, "%s needs a non-empty list of tensors", r.op)
				return false
			}
			list := Operand{Kind: ListOperand}
			for j, x := range e.arr {
				op, ok := c.tensorRef(fmt.Sprintf("%s[%d]", path, j), x)
				if !ok {
					return false
				}
				list.List = append(list.List, op)
			}
			c.in = append(c.in, list)
		case jString:
			if s.list {
				c.errf(path, e, "input %s of %s must be a list of tensors, got %s", s.name, r.op, describe(e))
				return false
			}
			op, ok := c.tensorRef(path, e)
			if !ok {
				return false
			}
			c.in = append(c.in, op)
		}
	}
	return true
}

// tensorRef resolves a name to a tensor operand; a tuple-valued node is refused except as
// getitem's input.
func (c *ctx) tensorRef(path string, e *jvalue) (Operand, bool) {
	if e.kind != jString {
		c.errf(path, e, "expected a tensor name, got %s", describe(e))
		return Operand{}, false
	}
	name := e.str
	g := c.l.g
	if n := g.nodes[name]; n != nil {
		if n.Tuple && c.n.Op != "getitem" {
			c.errf(path, e, "%q (%s) produces a tuple; take an element with a getitem node", name, n.Op)
			return Operand{}, false
		}
		return Operand{Kind: TensorOperand, Name: name, Source: FromNode, Type: n.Outputs[0]}, true
	}
	if op, ok := g.Lookup(name); ok {
		if op.Source == FromParam {
			if _, seen := g.paramUse[name]; !seen {
				g.paramUse[name] = paramUse{node: c.n, role: ""}
			}
		}
		return op, true
	}
	c.failed = true // undeclared names were reported while collecting dependencies
	return Operand{}, false
}
