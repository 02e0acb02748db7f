package lowering

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// expr is an element-wise expression evaluated per output element of a group: the group's
// own value (exprIn: a matmul accumulator, a normalised row), tensor operands (exprLeaf, loaded
// through the group's addressing), constants, and operations.
type expr struct {
	op   string // exprIn, exprLeaf, exprConst, or an element-wise function (see ewFormats)
	args []*expr
	leaf int
	val  float64
	// attrs of the op: alpha, slope, beta, threshold, p...
	f1, f2 float64
	seed   int64 // dropout: the per-node seed
	// coords: the output dims whose coordinates the op reads (tril/triu: row and column)
	coords []int
}

const (
	exprIn    = "in"
	exprLeaf  = "leaf"
	exprConst = "const"
)

func inExpr() *expr                         { return &expr{op: exprIn} }
func constExpr(v float64) *expr             { return &expr{op: exprConst, val: v} }
func leafExpr(k int) *expr                  { return &expr{op: exprLeaf, leaf: k} }
func opExpr(op string, args ...*expr) *expr { return &expr{op: op, args: args} }

// substitute replaces exprIn in e by with (sharing, not copying: e is used once).
func (e *expr) substitute(with *expr) *expr {
	if e == nil {
		return with
	}
	if e.op == exprIn {
		return with
	}
	for i, a := range e.args {
		e.args[i] = a.substitute(with)
	}
	return e
}

// walk visits every node of e.
func (e *expr) walk(f func(*expr)) {
	if e == nil {
		return
	}
	f(e)
	for _, a := range e.args {
		a.walk(f)
	}
}

// usesRandom reports whether e draws random numbers (Monte Carlo dropout).
func (e *expr) usesRandom() bool {
	r := false
	e.walk(func(x *expr) {
		if x.op == "dropout" {
			r = true
		}
	})
	return r
}

// usesCoords reports whether e reads element coordinates (tril/triu), which only an
// element-wise kernel of its own provides.
func (e *expr) usesCoords() bool {
	r := false
	e.walk(func(x *expr) {
		if len(x.coords) > 0 {
			r = true
		}
	})
	return r
}

// pyFloat writes v as a Python float literal.
func pyFloat(v float64) string {
	switch {
	case math.IsInf(v, 1):
		return `float("inf")`
	case math.IsInf(v, -1):
		return `float("-inf")`
	case math.IsNaN(v):
		return `float("nan")`
	}
	s := strconv.FormatFloat(v, 'g', -1, 64)
	if !strings.ContainsAny(s, ".eEn") {
		s += ".0"
	}
	return s
}

// exprRenderer turns expressions into Python statements.
type exprRenderer struct {
	lines  []string
	tmp    int
	inVar  string             // what exprIn reads
	leaf   func(k int) string // the loaded name of leaf k
	linIdx string             // the wide linear index of the element (for dropout)
	seeds  []int64            // per dropout node, in order of appearance
	prefix string             // temporaries' prefix
	coord  func(d int) string // the index variable of output dim d; nil: none available
	byCode map[string]string  // the temporary holding each statement's code (computed once)
}

func (r *exprRenderer) fresh() string {
	r.tmp++
	return fmt.Sprintf("%s%d", r.prefix, r.tmp)
}

// render emits statements computing e and returns the name (or literal) holding it.
func (r *exprRenderer) render(e *expr) (string, error) {
	switch e.op {
	case exprIn:
		return r.inVar, nil
	case exprLeaf:
		return r.leaf(e.leaf), nil
	case exprConst:
		return pyFloat(e.val), nil
	}
	args := make([]string, len(e.args))
	for i, a := range e.args {
		s, err := r.render(a)
		if err != nil {
			return "", err
		}
		args[i] = s
	}
	code, err := r.code(e, args)
	if err != nil {
		return "", err
	}
	return r.named(code), nil
}

// code is the Python expression of one element-wise op on already-named arguments.
func (r *exprRenderer) code(e *expr, a []string) (string, error) {
	x := ""
	if len(a) > 0 {
		x = a[0]
	}
	switch e.op {
	case "add":
		return a[0] + " + " + a[1], nil
	case "sub":
		return a[0] + " - " + a[1], nil
	case "mul":
		return a[0] + " * " + a[1], nil
	case "div":
		return a[0] + " / " + a[1], nil
	case "div_trunc":
		q := r.named(a[0] + " / " + a[1])
		return fmt.Sprintf("tl.where(%s < 0.0, -tl.floor(-%s), tl.floor(%s))", q, q, q), nil
	case "div_floor":
		return "tl.floor(" + a[0] + " / " + a[1] + ")", nil
	case "neg":
		return "-" + x, nil
	case "pow":
		return r.pow(e, a)
	case "relu":
		// torch.relu propagates NaN; plain tl.maximum is maxnum
		return fmt.Sprintf("tl.maximum(%s, 0.0, propagate_nan=tl.PropagateNan.ALL)", x), nil
	case "sigmoid":
		return fmt.Sprintf("1.0 / (1.0 + tl.exp(-%s))", x), nil
	case "silu":
		return fmt.Sprintf("%s / (1.0 + tl.exp(-%s))", x, x), nil
	case "tanh":
		return r.tanh(x), nil
	case "gelu":
		return fmt.Sprintf("0.5 * %s * (1.0 + tl.erf(%s * 0.7071067811865476))", x, x), nil
	case "gelu_tanh":
		inner := r.named(fmt.Sprintf("0.7978845608028654 * (%s + 0.044715 * %s * %s * %s)", x, x, x, x))
		return fmt.Sprintf("0.5 * %s * (1.0 + %s)", x, r.tanh(inner)), nil
	case "leaky_relu":
		return fmt.Sprintf("tl.where(%s >= 0.0, %s, %s * %s)", x, x, x, pyFloat(e.f1)), nil
	case "prelu":
		return fmt.Sprintf("tl.where(%s >= 0.0, %s, %s * %s)", x, x, x, a[1]), nil
	case "elu":
		return fmt.Sprintf("tl.where(%s > 0.0, %s, %s * (tl.exp(%s) - 1.0))", x, x, pyFloat(e.f1), x), nil
	case "softplus":
		bx := r.named(fmt.Sprintf("%s * %s", x, pyFloat(e.f1)))
		// PyTorch reverts to the identity where beta*x > threshold; the inner where (not
		// tl.minimum, which is minnum) only keeps exp from overflowing and lets NaN through
		return fmt.Sprintf("tl.where(%s > %s, %s, tl.log(1.0 + tl.exp(tl.where(%s > %s, %s, %s))) / %s)",
			bx, pyFloat(e.f2), x, bx, pyFloat(e.f2), pyFloat(e.f2), bx, pyFloat(e.f1)), nil
	case "hardswish":
		return fmt.Sprintf("%s * tl.minimum(tl.maximum(%s + 3.0, 0.0), 6.0) / 6.0", x, x), nil
	case "hardsigmoid":
		return fmt.Sprintf("tl.minimum(tl.maximum(%s + 3.0, 0.0, propagate_nan=tl.PropagateNan.ALL), 6.0, propagate_nan=tl.PropagateNan.ALL) / 6.0", x), nil
	case "clamp": // f1, f2: the bounds, infinite where there is none; NaN stays NaN, as in torch.clamp
		y := x
		if !math.IsInf(e.f1, -1) {
			y = fmt.Sprintf("tl.maximum(%s, %s, propagate_nan=tl.PropagateNan.ALL)", y, pyFloat(e.f1))
		}
		if !math.IsInf(e.f2, 1) {
			y = fmt.Sprintf("tl.minimum(%s, %s, propagate_nan=tl.PropagateNan.ALL)", y, pyFloat(e.f2))
		}
		return y, nil
	case "to":
		return x, nil
	case "rsqrt":
		return fmt.Sprintf("1.0 / tl.sqrt(%s)", x), nil
	case "sqrt", "exp", "log", "sin", "cos":
		return fmt.Sprintf("tl.%s(%s)", e.op, x), nil
	case "eq", "ne", "lt", "le", "gt", "ge":
		cmp := map[string]string{"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}[e.op]
		return fmt.Sprintf("tl.where(%s %s %s, 1.0, 0.0)", a[0], cmp, a[1]), nil
	case "logical_not":
		return fmt.Sprintf("tl.where(%s == 0.0, 1.0, 0.0)", x), nil
	case "logical_and":
		return fmt.Sprintf("tl.where(%s != 0.0, tl.where(%s != 0.0, 1.0, 0.0), 0.0)", a[0], a[1]), nil
	case "logical_or":
		return fmt.Sprintf("tl.where(%s != 0.0, 1.0, tl.where(%s != 0.0, 1.0, 0.0))", a[0], a[1]), nil
	case "masked_fill": // bool operands are 0.0/1.0
		return fmt.Sprintf("tl.where(%s != 0.0, %s, %s)", a[1], pyFloat(e.f1), x), nil
	case "where":
		return fmt.Sprintf("tl.where(%s != 0.0, %s, %s)", a[0], a[1], a[2]), nil
	case "tril", "triu":
		if r.coord == nil {
			return "", fmt.Errorf("%s needs the element's coordinates, which this kernel does not have", e.op)
		}
		keep := "<="
		if e.op == "triu" {
			keep = ">="
		}
		return fmt.Sprintf("tl.where(%s - %s %s %d, %s, 0.0)", r.coord(e.coords[1]), r.coord(e.coords[0]), keep, int(e.f1), x), nil
	case "rsqrt_eps": // 1/sqrt(x + eps), exact
		return fmt.Sprintf("1.0 / tl.sqrt(%s + %s)", x, pyFloat(e.f1)), nil
	case "dropout":
		k := len(r.seeds)
		r.seeds = append(r.seeds, e.seed)
		if r.linIdx == "" {
			return "", fmt.Errorf("dropout cannot be fused here")
		}
		keep := pyFloat(1 / (1 - e.f1))
		return fmt.Sprintf("tl.where(tl.rand(seed%d, %s) >= %s, %s * %s, 0.0)", k, r.linIdx, pyFloat(e.f1), x, keep), nil
	}
	return "", fmt.Errorf("element-wise op %q has no kernel code", e.op)
}

// named is a temporary holding code: the one that already does, else a new statement. Codes
// are pure (a dropout's names its own seed), so an expression met twice, as an eval
// BatchNorm's 1/sqrt(var + eps) in both its scale and shift, is computed once.
func (r *exprRenderer) named(code string) string {
	if n, ok := r.byCode[code]; ok {
		return n
	}
	n := r.fresh()
	r.lines = append(r.lines, n+" = "+code)
	if r.byCode == nil {
		r.byCode = map[string]string{}
	}
	r.byCode[code] = n
	return n
}

// tanh through exp of a non-positive argument, so it never overflows and keeps its sign.
func (r *exprRenderer) tanh(x string) string {
	t := r.named(fmt.Sprintf("tl.exp(-2.0 * tl.abs(%s))", x))
	m := r.named(fmt.Sprintf("(1.0 - %s) / (1.0 + %s)", t, t))
	return fmt.Sprintf("tl.where(%s >= 0.0, %s, -%s)", x, m, m)
}

// pow: small integer constant exponents are multiplications (exact, like PyTorch's fast
// paths); otherwise exp2(b*log2|a|) with the sign of a negative base for odd integer b.
func (r *exprRenderer) pow(e *expr, a []string) (string, error) {
	if c := e.args[1]; c.op == exprConst {
		b := c.val
		switch b {
		case 0:
			return fmt.Sprintf("%s * 0.0 + 1.0", a[0]), nil
		case 0.5:
			return fmt.Sprintf("tl.sqrt(%s)", a[0]), nil
		case -1:
			return fmt.Sprintf("1.0 / %s", a[0]), nil
		case 1:
			return a[0], nil
		}
		if b == math.Trunc(b) && math.Abs(b) <= 8 {
			terms := make([]string, int(math.Abs(b)))
			for i := range terms {
				terms[i] = a[0]
			}
			prod := strings.Join(terms, " * ")
			if b < 0 {
				return "1.0 / (" + prod + ")", nil
			}
			return prod, nil
		}
	}
	base, ex := a[0], a[1]
	if c := e.args[0]; c.op == exprConst && c.val > 0 {
		return fmt.Sprintf("tl.exp2(%s * %s)", ex, pyFloat(math.Log2(c.val))), nil
	}
	mag := r.named(fmt.Sprintf("tl.exp2(%s * tl.log2(tl.abs(%s)))", ex, base))
	isInt := r.named(fmt.Sprintf("%s == tl.floor(%s)", ex, ex))
	odd := r.named(fmt.Sprintf("tl.abs(%s - 2.0 * tl.floor(%s * 0.5)) == 1.0", ex, ex))
	neg := r.named(fmt.Sprintf("tl.where(%s, tl.where(%s, -%s, %s), float(\"nan\"))", isInt, odd, mag, mag))
	return fmt.Sprintf("tl.where(%s == 0.0, %s * 0.0 + 1.0, tl.where(%s < 0.0, %s, %s))", ex, mag, base, neg, mag), nil
}
