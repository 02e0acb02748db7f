package lowering

import (
	"fmt"
	"strings"
)

// Explain describes which graph nodes went into which kernel, with which strategy and why.
func Explain(p *Plan) string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "%s: N=%d, %d nodes' worth of work in %d launches (%d kernels)\n", p.Graph, p.N, countNodes(p), len(p.Launches), len(p.Kernels()))
	for _, l := range p.Launches {
		fmt.Fprintf(&sb, "kernel %s (%s), %s, grid %v\n", l.Kernel.Source.Fn, l.Kernel.Template, l.Strategy, l.Grid)
		if l.Prepare {
			sb.WriteString("  prepare: reads parameters only, so it runs once when the runner is built, not on every run\n")
		}
		for i, n := range l.Nodes {
			op := ""
			if i < len(l.Ops) {
				op = l.Ops[i]
			}
			fmt.Fprintf(&sb, "  node %s (%s)\n", n, op)
		}
		fmt.Fprintf(&sb, "  candidates: %s\n", strings.Join(l.Candidates, ", "))
		if l.TunablesID != "" {
			fmt.Fprintf(&sb, "  tunables: %s (%s)\n", l.TunablesID, l.Tunables)
		}
		fmt.Fprintf(&sb, "  why: %s\n", l.Reason)
	}
	if p.ModelMajor {
		sb.WriteString("mode sequential: the plan runs model by model, every launch for one model\n")
	}
	return sb.String()
}

func countNodes(p *Plan) int {
	seen := map[string]bool{}
	for _, l := range p.Launches {
		for _, n := range l.Nodes {
			seen[n] = true
		}
	}
	return len(seen)
}
