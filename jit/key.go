package jit

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"sort"
	"strings"
)

// CodegenFormat changes whenever generated code changes for the same inputs without a change
// of the compiler version (e.g. in a development build); it is part of every key.
const CodegenFormat = 1

// Key is the cache key of src specialized by spec for t: a hash of a canonical encoding of
// every input that changes the artifact. (The cache engineer may replace the encoding with
// cache.KeyBuilder; the fields must stay the same.)
func (c *Compiler) Key(src Source, spec Spec, t Target) string {
	fields := map[string]string{
		"kernel_text":      src.Text,
		"fn":               src.Fn,
		"signature":        canonicalMap(spec.Sig),
		"constexprs":       canonicalConsts(spec.Consts),
		"align16":          strings.Join(sortedCopy(spec.Align16), ","),
		"num_warps":        fmt.Sprint(spec.NumWarps),
		"target":           t.Key(),
		"compiler_version": c.opts.Version,
		"codegen_format":   fmt.Sprint(CodegenFormat),
		"config":           canonicalMap(c.opts.Config),
	}
	names := make([]string, 0, len(fields))
	for k := range fields {
		names = append(names, k)
	}
	sort.Strings(names)
	h := sha256.New()
	var n [8]byte
	for _, k := range names {
		for _, s := range []string{k, fields[k]} {
			binary.LittleEndian.PutUint64(n[:], uint64(len(s)))
			h.Write(n[:])
			h.Write([]byte(s))
		}
	}
	return hex.EncodeToString(h.Sum(nil))
}

func sortedCopy(s []string) []string {
	c := append([]string(nil), s...)
	sort.Strings(c)
	return c
}

func canonicalMap(m map[string]string) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, "%q=%q;", k, m[k])
	}
	return b.String()
}

func canonicalConsts(m map[string]any) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, "%q=%T:%v;", k, m[k], m[k])
	}
	return b.String()
}
