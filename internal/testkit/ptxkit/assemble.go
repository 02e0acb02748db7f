package ptxkit

import (
	"fmt"
	"sort"
	"testing"

	"github.com/widejit/widejit/jit"
	"github.com/widejit/widejit/jit/ptx"
)

// Kernels is a set of distinct kernels (by compile key), each with a name for messages.
type Kernels struct {
	c     *jit.Compiler
	byKey map[string]kernel
}

type kernel struct {
	name string
	src  jit.Source
	spec jit.Spec
}

// NewKernels returns an empty set that compiles with c.
func NewKernels(c *jit.Compiler) *Kernels {
	return &Kernels{c: c, byKey: map[string]kernel{}}
}

// Add adds a kernel unless an identical one (same compile key) is in the set already.
func (s *Kernels) Add(name string, src jit.Source, spec jit.Spec) error {
	k, err := s.c.Key(src, spec, ptx.Target{Arch: ptx.Archs[0]})
	if err != nil {
		return err
	}
	key := fmt.Sprint(k)
	if _, ok := s.byKey[key]; !ok {
		s.byKey[key] = kernel{name, src, spec}
	}
	return nil
}

// Len is the number of distinct kernels.
func (s *Kernels) Len() int { return len(s.byKey) }

// AssembleAll compiles every kernel for each of ptx.Archs and assembles the results with ptxas:
// one ptxas run per arch for all kernels and, only if that fails, one per kernel so that each
// error names its kernel. Failures are reported with tb.Errorf.
func (s *Kernels) AssembleAll(tb testing.TB, ptxas string) {
	tb.Helper()
	keys := make([]string, 0, len(s.byKey))
	for k := range s.byKey {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		a, b := s.byKey[keys[i]].name, s.byKey[keys[j]].name
		return a < b || a == b && keys[i] < keys[j]
	})
	for _, arch := range ptx.Archs {
		var texts, names []string
		for _, key := range keys {
			k := s.byKey[key]
			a, err := s.c.Compile(k.src, k.spec, ptx.Target{Arch: arch})
			if err != nil {
				tb.Errorf("%s (%s): %v", k.name, arch, err)
				continue
			}
			texts = append(texts, string(a.Payload))
			names = append(names, k.name)
		}
		if _, err := ptx.Assemble(ptxas, arch, ptx.MergeModules(arch, texts)); err == nil {
			continue
		}
		for i, text := range texts {
			if _, err := ptx.Assemble(ptxas, arch, text); err != nil {
				tb.Errorf("%s (%s): %v", names[i], arch, err)
			}
		}
	}
}
