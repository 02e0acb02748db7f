package graph

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"

	"github.com/widejit/widejit/graph/safetensors"
)

// ModelRange places the graph's N models among those of its files: models [lo, hi) of
// total. A graph that is not a model range (Models) holds [0, N) of N.
func (g *Graph) ModelRange() (lo, hi, total int) {
	if g.total == 0 {
		return 0, g.N, g.N
	}
	return g.first, g.first + g.N, g.total
}

// Models returns the graph restricted to models [lo, hi) of its N: a graph of N = hi - lo
// models whose weights (ParamTensor), generated inputs (GenerateInputs) and inputs read from
// a file holding all the models (ReadInputs) are those models' rows only, equal to the
// same rows of the whole graph's. Shared inputs stay as they are. The result shares g's
// nodes, params and types (read only); a range of a range is a range of the original.
func (g *Graph) Models(lo, hi int) (*Graph, error) {
	if lo < 0 || hi <= lo || hi > g.N {
		return nil, fmt.Errorf("graph %s: models [%d, %d) are not a non-empty range of its %d models", g.File, lo, hi, g.N)
	}
	first, _, total := g.ModelRange()
	c := *g
	c.first, c.total, c.N = first+lo, total, hi-lo
	return &c, nil
}

// ShardRange is the model range of shard i of k over n models: [floor(i*n/k),
// floor((i+1)*n/k)). The k ranges tile [0, n) in order, their sizes differ by at most one,
// and none is empty when k <= n.
func ShardRange(i, k, n int) (lo, hi int) { return i * n / k, (i + 1) * n / k }

// fileInputShape is the shape input in has in an inputs file: [total, ...] per model (every
// model of the original graph, even for a model range), the bare shape when shared.
func (g *Graph) fileInputShape(in *Input) []int {
	if !in.PerModel {
		return append([]int(nil), in.Type.Shape...)
	}
	_, _, total := g.ModelRange()
	return append([]int{total}, in.Type.Shape...)
}

// readInput reads input in from f: this graph's rows of a per-model input, a shared input
// whole.
func (g *Graph) readInput(f *safetensors.File, in *Input) (*safetensors.Tensor, error) {
	if !in.PerModel {
		return f.Read(in.Name)
	}
	lo, hi, _ := g.ModelRange()
	return f.ReadRows(in.Name, lo, hi)
}

// Identity is a SHA-256 (hex) naming what the graph computes: graph.json's bytes and the
// whole content of its weights file (header and data), so two runs with the same identity
// ran the same models with the same weights. It does not depend on the model range, so every
// shard of a graph has the graph's identity. The weights file is streamed, not held.
func (g *Graph) Identity() (string, error) {
	h := sha256.New()
	io.WriteString(h, "widejit.graph-identity/v1\x00")
	h.Write(g.jsonSum[:])
	if g.opts.Weights != nil {
		w := sha256.Sum256(g.opts.Weights)
		h.Write(w[:])
	} else if g.WeightsPath != "" {
		f, err := os.Open(g.WeightsPath)
		if err != nil {
			return "", err
		}
		defer f.Close()
		w := sha256.New()
		if _, err := io.Copy(w, f); err != nil {
			return "", fmt.Errorf("hashing the weights %s: %w", g.WeightsPath, err)
		}
		h.Write(w.Sum(nil))
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
