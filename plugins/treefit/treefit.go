package treefit

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/widejit/widejit/plugins/abi"
)

// FeatureNames name the entries of Features, in order.
var FeatureNames = []string{"n", "batch", "width", "out", "weights", "dtype_bytes", "ops", "gpu"}

// Features describes a request as numbers: N, the batch (rows of the first input), its width
// (last dimension), the output width (first dimension of the second input, else the width),
// the elements of all inputs but the first (the weights per model), the bytes per element of
// the first input, the number of ops, and 1 on a GPU.
func Features(req abi.Request) []float64 {
	var batch, width, out, weights int
	if len(req.Shapes) > 0 && len(req.Shapes[0]) > 0 {
		first := req.Shapes[0]
		batch, width = first[0], first[len(first)-1]
	}
	out = width
	if len(req.Shapes) > 1 && len(req.Shapes[1]) > 0 {
		out = req.Shapes[1][0]
	}
	for _, shape := range req.Shapes[min(1, len(req.Shapes)):] {
		size := 1
		for _, d := range shape {
			size *= d
		}
		weights += size
	}
	dtypeBytes := 4
	if len(req.DTypes) > 0 {
		dtypeBytes = DTypeBytes(req.DTypes[0])
	}
	gpu := 0.0
	if req.Device.Capabilities.WarpSize > 0 {
		gpu = 1
	}
	return []float64{float64(req.N), float64(batch), float64(width), float64(out), float64(weights), float64(dtypeBytes), float64(len(req.OpChain)), gpu}
}

// DTypeBytes is the size of one element of dtype (4 when unknown).
func DTypeBytes(dtype string) int {
	switch dtype {
	case "float64", "int64":
		return 8
	case "float16", "bfloat16", "int16":
		return 2
	case "int8", "uint8", "bool", "float8e4m3", "float8e5m2":
		return 1
	}
	return 4
}

// Sample is one training example: features and the winning strategy.
type Sample struct {
	X     []float64
	Label string
}

// Options bound the tree.
type Options struct {
	MaxDepth int // default 4
	MinLeaf  int // samples per leaf at least; default 2
}

// Node is a tree node: a leaf when Left is nil.
type Node struct {
	Feature   int     // split: x[Feature] <= Threshold goes Left
	Threshold float64 //
	Left      *Node
	Right     *Node
	Counts    map[string]int // the training labels that reached this node
}

// Fit grows a CART tree (Gini impurity, binary splits at midpoints between observed values).
// It is deterministic: ties go to the lowest feature index and the lowest threshold.
func Fit(samples []Sample, opts Options) (*Node, error) {
	if len(samples) == 0 {
		return nil, fmt.Errorf("treefit: no samples")
	}
	for i, s := range samples {
		if len(s.X) != len(FeatureNames) {
			return nil, fmt.Errorf("treefit: sample %d has %d features, want %d", i, len(s.X), len(FeatureNames))
		}
		if s.Label == "" {
			return nil, fmt.Errorf("treefit: sample %d has no label", i)
		}
	}
	if opts.MaxDepth <= 0 {
		opts.MaxDepth = 4
	}
	if opts.MinLeaf <= 0 {
		opts.MinLeaf = 2
	}
	return grow(samples, 0, opts), nil
}

func counts(samples []Sample) map[string]int {
	c := map[string]int{}
	for _, s := range samples {
		c[s.Label]++
	}
	return c
}

func gini(c map[string]int, n int) float64 {
	if n == 0 {
		return 0
	}
	g := 1.0
	for _, k := range c {
		p := float64(k) / float64(n)
		g -= p * p
	}
	return g
}

func grow(samples []Sample, depth int, opts Options) *Node {
	node := &Node{Counts: counts(samples)}
	if depth >= opts.MaxDepth || len(node.Counts) == 1 || len(samples) < 2*opts.MinLeaf {
		return node
	}
	parent := gini(node.Counts, len(samples))
	bestGain, bestFeature, bestThreshold := 1e-12, -1, 0.0
	for f := range FeatureNames {
		values := make([]float64, 0, len(samples))
		for _, s := range samples {
			values = append(values, s.X[f])
		}
		sort.Float64s(values)
		for i := 1; i < len(values); i++ {
			if values[i] == values[i-1] {
				continue
			}
			threshold := (values[i] + values[i-1]) / 2
			left, right := map[string]int{}, map[string]int{}
			nl := 0
			for _, s := range samples {
				if s.X[f] <= threshold {
					left[s.Label]++
					nl++
				} else {
					right[s.Label]++
				}
			}
			nr := len(samples) - nl
			if nl < opts.MinLeaf || nr < opts.MinLeaf {
				continue
			}
			n := float64(len(samples))
			gain := parent - float64(nl)/n*gini(left, nl) - float64(nr)/n*gini(right, nr)
			if gain > bestGain {
				bestGain, bestFeature, bestThreshold = gain, f, threshold
			}
		}
	}
	if bestFeature < 0 {
		return node
	}
	var left, right []Sample
	for _, s := range samples {
		if s.X[bestFeature] <= bestThreshold {
			left = append(left, s)
		} else {
			right = append(right, s)
		}
	}
	node.Feature, node.Threshold = bestFeature, bestThreshold
	node.Left = grow(left, depth+1, opts)
	node.Right = grow(right, depth+1, opts)
	return node
}

// Labels orders the node's labels by count, most frequent first (ties by name).
func (n *Node) Labels() []string {
	labels := make([]string, 0, len(n.Counts))
	for l := range n.Counts {
		labels = append(labels, l)
	}
	sort.Slice(labels, func(i, j int) bool {
		if n.Counts[labels[i]] != n.Counts[labels[j]] {
			return n.Counts[labels[i]] > n.Counts[labels[j]]
		}
		return labels[i] < labels[j]
	})
	return labels
}

// Predict returns the strategies of the leaf x reaches, most frequent first.
func (n *Node) Predict(x []float64) []string {
	for n.Left != nil {
		if x[n.Feature] <= n.Threshold {
			n = n.Left
		} else {
			n = n.Right
		}
	}
	return n.Labels()
}

// GoSource renders the tree as a gofmt-formatted Go file of package pkg declaring
//
//	const treeFeatures = "n,batch,..." // the FeatureNames the tree was fitted with
//	func predictStrategies(x []float64) []string
//
// which returns what Predict returns. header is written as the file's leading comment.
func GoSource(tree *Node, pkg, header string) []byte {
	var b strings.Builder
	for _, line := range strings.Split(strings.TrimRight(header, "\n"), "\n") {
		b.WriteString(strings.TrimRight("// "+line, " ") + "\n")
	}
	b.WriteString("\npackage " + pkg + "\n\n")
	b.WriteString("// treeFeatures names the features predictStrategies reads, in order (treefit.FeatureNames).\n")
	fmt.Fprintf(&b, "const treeFeatures = %q\n\n", strings.Join(FeatureNames, ","))
	b.WriteString("// predictStrategies returns the strategies that won most often among the recorded problems\n")
	b.WriteString("// that fall in the same leaf as x, most frequent first.\n")
	b.WriteString("func predictStrategies(x []float64) []string {\n")
	writeNode(&b, tree, 1)
	b.WriteString("}\n")
	return []byte(b.String())
}

func writeNode(b *strings.Builder, n *Node, depth int) {
	indent := strings.Repeat("\t", depth)
	if n.Left == nil {
		quoted := make([]string, 0, len(n.Counts))
		votes := make([]string, 0, len(n.Counts))
		for _, l := range n.Labels() {
			quoted = append(quoted, strconv.Quote(l))
			votes = append(votes, fmt.Sprintf("%s %d", l, n.Counts[l]))
		}
		fmt.Fprintf(b, "%sreturn []string{%s} // %s\n", indent, strings.Join(quoted, ", "), strings.Join(votes, ", "))
		return
	}
	fmt.Fprintf(b, "%sif x[%d] <= %s { // %s\n", indent, n.Feature, strconv.FormatFloat(n.Threshold, 'g', -1, 64), FeatureNames[n.Feature])
	writeNode(b, n.Left, depth+1)
	fmt.Fprintf(b, "%s}\n", indent)
	writeNode(b, n.Right, depth)
}
