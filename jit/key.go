package jit

import (
	"fmt"
	"sort"

	"github.com/widejit/widejit/cache"
)

// CodegenFormat changes whenever generated code changes for the same inputs without a change
// of the compiler version (a development build); it is part of every key. 3: device asserts
// are compiled (they were dropped), so a cached kernel with one must be compiled again.
const CodegenFormat = 3

// Key is the cache key of src specialized by spec for t: every input that changes the
// artifact, encoded canonically by cache.KeyBuilder.
func (c *Compiler) Key(src Source, spec Spec, t Target) (cache.Key, error) {
	b := cache.NewKey(cache.KindKernel)
	if spec.NumStages != 0 { // absent when unset, so the keys of earlier kernels stay valid
		b.Int("num_stages", int64(spec.NumStages))
	}
	return b.
		String("kernel_text", src.Text).
		String("fn", src.Fn).
		Strings("signature", sortedPairs(spec.Sig, func(v string) string { return v })).
		Strings("constexprs", sortedPairs(spec.Consts, func(v any) string { return fmt.Sprintf("%T:%v", v, v) })).
		Strings("align16", sortedCopy(spec.Align16)).
		Strings("equal_to_1", sortedCopy(spec.EqualTo1)).
		Int("num_warps", int64(spec.NumWarps)).
		String("target", t.Key()).
		String("compiler_version", c.opts.Version).
		Int("codegen_format", CodegenFormat).
		Map("backend_option.", c.opts.BackendOptions).
		Key()
}

func sortedPairs[V any](m map[string]V, str func(V) string) []string {
	out := make([]string, 0, len(m))
	for k, v := range m {
		out = append(out, k+"="+str(v))
	}
	sort.Strings(out)
	return out
}

func sortedCopy(s []string) []string {
	c := append([]string(nil), s...)
	sort.Strings(c)
	return c
}
