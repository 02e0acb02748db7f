package graph

import (
	"errors"
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"slices"
	"strings"

	"github.com/widejit/widejit/graph/safetensors"
	"github.com/widejit/widejit/internal/memlimit"
)

// checkWeights compares the weights file with the declared params.
func (l *loader) checkWeights() {
	g := l.g
	if g.WeightsPath == "" {
		return
	}
	f, err := g.openWeights()
	if err != nil {
		l.errAt(l.weightsV, "weights", "", "%v", err)
		return
	}
	defer f.Close()
	for _, p := range g.Params {
		path := strings.TrimSuffix(l.names[p.Name], ".name")
		at := l.declV[p.Name]
		info, ok := f.Info(p.Name)
		if !ok {
			l.errAt(at, path, "", "param %q is missing from the weights file %s", p.Name, g.WeightsPath)
			continue
		}
		want := append([]int{g.N}, p.Type.Shape...)
		switch {
		case len(info.Shape) == 0 || info.Shape[0] != g.N:
			l.errAt(at, path, "", "param %q in %s has shape %v: its leading dim must be n=%d (stacked [n, %s])", p.Name, g.WeightsPath, info.Shape, g.N, trimBrackets(p.Type.Shape))
		case !slices.Equal(info.Shape, want):
			l.errAt(at, path, "", "param %q in %s has shape %v, expected %v (n=%d models of %v)", p.Name, g.WeightsPath, info.Shape, want, g.N, p.Type.Shape)
		}
		if info.DType != p.Type.DType.Safetensors() {
			l.errAt(at, path, "", "param %q in %s is %s, declared %s (%s)", p.Name, g.WeightsPath, info.DType, p.Type.DType, p.Type.DType.Safetensors())
		}
	}
	for _, name := range f.Names() {
		if g.params[name] == nil {
			l.errAt(l.weightsV, "weights", "", "the weights file %s holds tensor %q that no param declares%s", g.WeightsPath, name, suggest(name, paramNames(g)))
		}
	}
}

func paramNames(g *Graph) []string {
	out := make([]string, len(g.Params))
	for i, p := range g.Params {
		out[i] = p.Name
	}
	return out
}

// ParamTensor returns param name's data stacked [N, ...]: read from the weights file, or
// initialised deterministically for init graphs.
func (g *Graph) ParamTensor(name string) (*safetensors.Tensor, error) {
	p := g.params[name]
	if p == nil {
		return nil, fmt.Errorf("graph %s: no param %q", g.File, name)
	}
	if g.Init != nil {
		return g.initParam(p)
	}
	f, err := g.openWeights()
	if err != nil {
		return nil, err
	}
	defer f.Close()
	lo, hi, total := g.ModelRange()
	if info, ok := f.Info(name); ok && (len(info.Shape) == 0 || info.Shape[0] != total) {
		return nil, fmt.Errorf("weights %s: tensor %q changed since the graph was loaded (%s%v, expected %d models)", g.WeightsPath, name, info.DType, info.Shape, total)
	}
	t, err := f.ReadRows(name, lo, hi) // only this graph's models (all N unless a model range)
	if err != nil {
		return nil, err
	}
	if want := append([]int{g.N}, p.Type.Shape...); !slices.Equal(t.Shape, want) || t.DType != p.Type.DType.Safetensors() {
		return nil, fmt.Errorf("weights %s: tensor %q changed since the graph was loaded (%s%v, expected %s%v)", g.WeightsPath, name, t.DType, t.Shape, p.Type.DType.Safetensors(), want)
	}
	return t, nil
}

// ParamFloat32s returns param name's data stacked [N, ...] converted to float32.
func (g *Graph) ParamFloat32s(name string) ([]float32, error) {
	t, err := g.ParamTensor(name)
	if err != nil {
		return nil, err
	}
	return t.Float32s()
}

// rngFor gives an independent, reproducible stream per (seed, name).
func rngFor(seed int64, name string) *rand.Rand {
	h := fnv.New64a()
	h.Write([]byte(name))
	return rand.New(rand.NewPCG(uint64(seed), h.Sum64()))
}

// normal draws N(0, 1) with the Box-Muller transform (our own, so values never depend on the
// standard library's choice of algorithm).
func normal(r *rand.Rand) float64 {
	u1 := 1 - r.Float64() // (0, 1]
	u2 := r.Float64()
	return math.Sqrt(-2*math.Log(u1)) * math.Cos(2*math.Pi*u2)
}

// initRule is how one param is initialised, following PyTorch's reset_parameters.
type initRule struct {
	kind  string  // "uniform", "normal", "const"
	a     float64 // uniform bound / normal std / constant
	zeroR int     // embedding padding row to zero, -1 if none
}

func prodTail(s []int) int {
	if len(s) < 2 {
		return max(numel(s), 1)
	}
	return numel(s[1:])
}

func (g *Graph) initRuleFor(p *Param) initRule {
	none := initRule{kind: "normal", a: 1, zeroR: -1}
	use, ok := g.paramUse[p.Name]
	if !ok || use.role == "" {
		return none // used directly in forward, or unused: N(0, 1)
	}
	n, role := use.node, use.role
	uniform := func(b float64) initRule { return initRule{kind: "uniform", a: b, zeroR: -1} }
	konst := func(v float64) initRule { return initRule{kind: "const", a: v, zeroR: -1} }
	kaiming := func(weightRole string) initRule { // kaiming_uniform(a=sqrt(5)) and its bias
		w := n.Params[weightRole]
		if w == nil {
			return none
		}
		return uniform(1 / math.Sqrt(float64(prodTail(w.Type.Shape))))
	}
	switch n.Op {
	case "linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d":
		return kaiming("weight")
	case "mlp_embedder", "ada_layer_norm_zero":
		return kaiming(strings.TrimSuffix(strings.TrimSuffix(role, ".weight"), ".bias") + ".weight")
	case "embedding":
		r := initRule{kind: "normal", a: 1, zeroR: -1}
		if !n.Attrs.IsNull("padding_idx") {
			r.zeroR = n.Attrs.Int("padding_idx")
		}
		return r
	case "prelu":
		return konst(0.25)
	case "rnn", "gru", "lstm":
		return uniform(1 / math.Sqrt(float64(n.Attrs.Int("hidden_size"))))
	case "multihead_attention":
		s := p.Type.Shape
		switch role {
		case "in_proj_weight", "q_proj_weight", "k_proj_weight", "v_proj_weight":
			return uniform(math.Sqrt(6 / float64(s[0]+s[1]))) // xavier_uniform
		case "out_proj.weight":
			return uniform(1 / math.Sqrt(float64(s[1])))
		case "bias_k", "bias_v":
			return initRule{kind: "normal", a: math.Sqrt(1 / float64(s[2])), zeroR: -1} // xavier_normal
		}
		return konst(0) // in_proj_bias, out_proj.bias
	}
	// normalisation layers
	switch role {
	case "weight", "running_var":
		return konst(1)
	}
	return konst(0)
}

// openWeights opens the weights: the file, or its content in memory (Options.Weights).
func (g *Graph) openWeights() (*safetensors.File, error) {
	if g.opts.Weights != nil {
		return safetensors.OpenMemory(g.WeightsPath, g.opts.Weights, g.readOpts())
	}
	return safetensors.OpenWithOptions(g.WeightsPath, g.readOpts())
}

// readOpts bounds the tensors the graph reads by its memory limit.
func (g *Graph) readOpts() safetensors.Options {
	return safetensors.Options{MaxTensorBytes: g.memLimit}
}

// checkAlloc refuses to make count elements of dtype d (through a float64 or int64 scratch
// copy of 8 bytes each) when that passes the memory limit: --n 100000000 on an init graph
// used to end in "fatal error: runtime: out of memory".
func (g *Graph) checkAlloc(what string, d DType, count int64) error {
	var t memlimit.Tally
	t.Add(count, 8)
	t.Add(count, int64(d.Size()))
	if err := memlimit.Check(fmt.Sprintf("graph %s: %s (%d elements of %s, %d bytes each, plus an 8-byte-per-element scratch copy)", g.File, what, count, d, d.Size()), t.Bytes(), g.memLimit); err != nil {
		return err
	}
	if count > math.MaxInt {
		return fmt.Errorf("graph %s: %s has %d elements, more than this platform can index", g.File, what, count)
	}
	return nil
}

func (g *Graph) initParam(p *Param) (*safetensors.Tensor, error) {
	rule := g.initRuleFor(p)
	per := p.Type.Numel()
	if err := g.checkAlloc(fmt.Sprintf("initialising param %q for %d models", p.Name, g.N), p.Type.DType, memlimit.Product(g.N, per)); err != nil {
		return nil, err
	}
	vals := make([]float64, g.N*per)
	r := rngFor(g.Init.Seed, p.Name)
	row := 1
	if len(p.Type.Shape) > 1 {
		row = prodTail(p.Type.Shape)
	}
	skip := g.first * per // a model range draws (and drops) the stream of the models before it
	for i := range skip + len(vals) {
		var v float64
		switch rule.kind {
		case "uniform":
			v = (2*r.Float64() - 1) * rule.a
		case "normal":
			v = normal(r) * rule.a
		default:
			v = rule.a
		}
		if rule.zeroR >= 0 && (i%per)/row == rule.zeroR {
			v = 0
		}
		if i >= skip {
			vals[i-skip] = v
		}
	}
	shape := append([]int{g.N}, p.Type.Shape...)
	if p.Type.DType.IsFloat() {
		return safetensors.FromFloat64s(p.Name, p.Type.DType.Safetensors(), shape, vals)
	}
	ints := make([]int64, len(vals)) // integer params (rare) start at zero
	return safetensors.FromInt64s(p.Name, p.Type.DType.Safetensors(), shape, ints)
}

// ReadInputs loads the graph's inputs from a safetensors file: every input must be there with
// its dtype and shape ([N, ...] per model, the bare shape when shared), and nothing else.
func (g *Graph) ReadInputs(path string) (map[string]*safetensors.Tensor, error) {
	f, err := safetensors.OpenWithOptions(path, g.readOpts())
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var problems []string
	out := map[string]*safetensors.Tensor{}
	for _, in := range g.Inputs {
		info, ok := f.Info(in.Name)
		want := g.fileInputShape(in)
		switch {
		case !ok:
			problems = append(problems, fmt.Sprintf("input %q is missing", in.Name))
			continue
		case !slices.Equal(info.Shape, want):
			how := "per model: [n, ...]"
			if !in.PerModel {
				how = "shared by all models"
			}
			problems = append(problems, fmt.Sprintf("input %q has shape %v, expected %v (%s)", in.Name, info.Shape, want, how))
			continue
		case info.DType != in.Type.DType.Safetensors():
			problems = append(problems, fmt.Sprintf("input %q is %s, expected %s (%s)", in.Name, info.DType, in.Type.DType.Safetensors(), in.Type.DType))
			continue
		}
	}
	for _, name := range f.Names() {
		if g.inputs[name] == nil {
			problems = append(problems, fmt.Sprintf("tensor %q is not a graph input%s", name, suggest(name, inputNames(g))))
		}
	}
	if len(problems) > 0 {
		return nil, fmt.Errorf("inputs %s:\n  %s", path, strings.Join(problems, "\n  "))
	}
	if err := g.checkInputsMemory("reading the inputs from "+path, false); err != nil {
		return nil, err
	}
	for _, in := range g.Inputs {
		t, err := g.readInput(f, in)
		if err != nil {
			return nil, err
		}
		out[in.Name] = t
	}
	return out, nil
}

func inputNames(g *Graph) []string {
	out := make([]string, len(g.Inputs))
	for i, in := range g.Inputs {
		out[i] = in.Name
	}
	return out
}

// checkInputsMemory refuses to hold every input at once (what: generating or reading them)
// when that passes the memory limit, with each input's share; generating (scratch) also
// holds the largest input's values at 8 bytes each (float64 or int64) before converting.
func (g *Graph) checkInputsMemory(what string, scratch bool) error {
	var t memlimit.Tally
	var parts []string
	var largest int64
	for _, in := range g.Inputs {
		shape := g.InputTensorShape(in)
		elems, size := memlimit.Product(shape...), in.Type.DType.Size()
		t.Add(elems, int64(size))
		largest = max(largest, elems)
		parts = append(parts, fmt.Sprintf("%q %v: %d elements of %s, %d bytes each", in.Name, shape, elems, in.Type.DType, size))
	}
	desc := fmt.Sprintf("graph %s: %s (%s)", g.File, what, strings.Join(parts, "; "))
	if scratch {
		t.Add(largest, 8)
		desc += fmt.Sprintf(" with a scratch copy of the largest at 8 bytes per element")
	}
	if err := memlimit.Check(desc, t.Bytes(), g.memLimit); err != nil {
		return err
	}
	if largest > math.MaxInt {
		return fmt.Errorf("%s: an input has %d elements, more than this platform can index", desc, largest)
	}
	return nil
}

// IntInputBound is the exclusive upper bound GenerateInputs uses for an integer input: the
// smallest num_embeddings of the embeddings that read it directly, else 2.
func (g *Graph) IntInputBound(name string) int {
	bound := 0
	for _, n := range g.Nodes {
		if n.Op == "embedding" && n.Inputs[0].Source == FromInput && n.Inputs[0].Name == name {
			if b := n.Attrs.Int("num_embeddings"); bound == 0 || b < bound {
				bound = b
			}
		}
	}
	if bound == 0 {
		bound = 2
	}
	return bound
}

// GenerateInputs makes every input deterministically from seed: floats ~ N(0, 1); integers
// uniform in [0, IntInputBound); bools uniform in {false, true}. Each input has its own
// stream (seed, name), filled model by model, so model i's data does not depend on N.
func (g *Graph) GenerateInputs(seed int64) (map[string]*safetensors.Tensor, error) {
	if err := g.checkInputsMemory("generating the inputs", true); err != nil {
		return nil, err
	}
	out := map[string]*safetensors.Tensor{}
	for _, in := range g.Inputs {
		shape := g.InputTensorShape(in)
		r := rngFor(seed, in.Name)
		count := int(memlimit.Product(shape...)) // within the limit and an int: checked above
		skip := 0
		// a model range draws (and drops) the stream of the models before it
		if in.PerModel {
			skip = g.first * in.Type.Numel()
		}
		var t *safetensors.Tensor
		var err error
		if in.Type.DType.IsFloat() {
			vals := make([]float64, count)
			for range skip {
				normal(r)
			}
			for i := range vals {
				vals[i] = normal(r)
			}
			t, err = safetensors.FromFloat64s(in.Name, in.Type.DType.Safetensors(), shape, vals)
		} else {
			bound := g.IntInputBound(in.Name)
			if in.Type.DType == Bool {
				bound = 2
			}
			vals := make([]int64, count)
			for range skip {
				r.IntN(bound)
			}
			for i := range vals {
				vals[i] = int64(r.IntN(bound))
			}
			t, err = safetensors.FromInt64s(in.Name, in.Type.DType.Safetensors(), shape, vals)
		}
		if err != nil {
			return nil, errors.New("generating input " + in.Name + ": " + err.Error())
		}
		out[in.Name] = t
	}
	return out, nil
}
