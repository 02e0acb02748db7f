package cache

import (
	"testing"
)

// baseFields builds the full set of fields a PTX kernel key carries, with one field optionally
// replaced, so each test changes exactly one input.
func kernelKey(t *testing.T, change string) Key {
	t.Helper()
	str := func(name, v string) string {
		if change == name {
			return v + "'"
		}
		return v
	}
	in := func(name string, v int64) int64 {
		if change == name {
			return v + 1
		}
		return v
	}
	sig := []string{"*fp32", "*fp32", "i32"}
	if change == "signature" {
		sig = []string{"*fp32", "*fp16", "i32"}
	}
	cx := []int64{64, 128}
	if change == "constexprs" {
		cx = []int64{64, 256}
	}
	b := NewKey(KindKernel).
		String("kernel_text", str("kernel_text", "@jit def k(x): ...")).
		String("fn", str("fn", "wide_mlp")).
		Strings("signature", sig).
		Ints("constexprs", cx).
		Int("num_warps", in("num_warps", 4)).
		String("backend", str("backend", "ptx")).
		String("target", str("target", "sm_90")).
		String("ptx_isa", str("ptx_isa", "7.8")).
		String("driver_version", str("driver_version", "12040")).
		String("compiler_version", str("compiler_version", "abc123")).
		Int("codegen_format", in("codegen_format", 1)).
		Bool("config.fast_math", change == "config.fast_math")
	k, err := b.Key()
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func TestKeyChangesWithEveryField(t *testing.T) {
	base := kernelKey(t, "")
	if again := kernelKey(t, ""); again != base {
		t.Fatalf("same fields gave different keys: %s vs %s", base, again)
	}
	fields := []string{"kernel_text", "fn", "signature", "constexprs", "num_warps", "backend",
		"target", "ptx_isa", "driver_version", "compiler_version", "codegen_format", "config.fast_math"}
	seen := map[Key]string{base: ""}
	for _, f := range fields {
		k := kernelKey(t, f)
		if prev, dup := seen[k]; dup {
			t.Errorf("changing %q gives the same key as changing %q", f, prev)
		}
		seen[k] = f
	}
}

func TestKeyOrderIndependent(t *testing.T) {
	a, err := NewKey(KindKernel).String("fn", "f").Int("num_warps", 4).Strings("signature", []string{"a", "b"}).Key()
	if err != nil {
		t.Fatal(err)
	}
	b, err := NewKey(KindKernel).Strings("signature", []string{"a", "b"}).Int("num_warps", 4).String("fn", "f").Key()
	if err != nil {
		t.Fatal(err)
	}
	if a != b {
		t.Fatalf("field order changed the key: %s vs %s", a, b)
	}
	m1, _ := NewKey(KindKernel).Map("config.", map[string]string{"x": "1", "y": "2"}).Key()
	m2, _ := NewKey(KindKernel).String("config.y", "2").String("config.x", "1").Key()
	if m1 != m2 {
		t.Fatalf("Map differs from the same String fields")
	}
}

// Field sets that a naive concatenation would confuse must give different keys.
func TestKeyNoCollisions(t *testing.T) {
	build := func(f func(*KeyBuilder)) Key {
		b := NewKey(KindKernel)
		f(b)
		k, err := b.Key()
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	cases := map[string]Key{
		"ab|c":            build(func(b *KeyBuilder) { b.String("ab", "c") }),
		"a|bc":            build(func(b *KeyBuilder) { b.String("a", "bc") }),
		"a=b,c=d":         build(func(b *KeyBuilder) { b.String("a", "b").String("c", "d") }),
		"a=b\\x00c=d":     build(func(b *KeyBuilder) { b.String("a", "b\x00c=d") }),
		"str 1":           build(func(b *KeyBuilder) { b.String("n", "1") }),
		"bytes 1":         build(func(b *KeyBuilder) { b.Bytes("n", []byte("1")) }),
		"int 1":           build(func(b *KeyBuilder) { b.Int("n", 1) }),
		"bool true":       build(func(b *KeyBuilder) { b.Bool("n", true) }),
		"float 1":         build(func(b *KeyBuilder) { b.Float("n", 1) }),
		"strings [1]":     build(func(b *KeyBuilder) { b.Strings("n", []string{"1"}) }),
		"ints [1]":        build(func(b *KeyBuilder) { b.Ints("n", []int64{1}) }),
		"strings [a,b]":   build(func(b *KeyBuilder) { b.Strings("n", []string{"a", "b"}) }),
		"strings [ab]":    build(func(b *KeyBuilder) { b.Strings("n", []string{"ab"}) }),
		"strings [a b]":   build(func(b *KeyBuilder) { b.Strings("n", []string{"a", "", "b"}) }),
		"empty":           build(func(b *KeyBuilder) {}),
		"empty string":    build(func(b *KeyBuilder) { b.String("n", "") }),
		"float -0":        build(func(b *KeyBuilder) { b.Float("n", negZero()) }),
		"float 0":         build(func(b *KeyBuilder) { b.Float("n", 0) }),
		"int 0":           build(func(b *KeyBuilder) { b.Int("n", 0) }),
		"ints [1,2]":      build(func(b *KeyBuilder) { b.Ints("n", []int64{1, 2}) }),
		"ints [2,1]":      build(func(b *KeyBuilder) { b.Ints("n", []int64{2, 1}) }),
		"two ints fields": build(func(b *KeyBuilder) { b.Int("n", 1).Int("n2", 2) }),
	}
	seen := map[Key]string{}
	for name, k := range cases {
		if prev, dup := seen[k]; dup {
			t.Errorf("%q and %q collide", name, prev)
		}
		seen[k] = name
	}
	k1, _ := NewKey(KindKernel).String("n", "1").Key()
	k2, _ := NewKey(KindDecision).String("n", "1").Key()
	if k1.Hash == k2.Hash {
		t.Errorf("kernel and decision keys with the same fields share a hash")
	}
}

func negZero() float64 {
	z := 0.0
	return -z
}

func TestKeyBuilderErrors(t *testing.T) {
	if _, err := NewKey(KindKernel).String("fn", "a").String("fn", "b").Key(); err == nil {
		t.Error("a repeated field name was accepted")
	}
	if _, err := NewKey(KindKernel).String("", "a").Key(); err == nil {
		t.Error("an empty field name was accepted")
	}
	if _, err := NewKey(Kind("K/")).Key(); err == nil {
		t.Error("an invalid kind was accepted")
	}
}

func TestKeyRoundTripsThroughDBKey(t *testing.T) {
	k := kernelKey(t, "")
	back, ok := keyFromDB(k.dbKey())
	if !ok || back != k {
		t.Fatalf("keyFromDB(dbKey) = %v, %v; want %v", back, ok, k)
	}
	if _, ok := keyFromDB([]byte("k/short")); ok {
		t.Error("keyFromDB accepted a short key")
	}
	if got := k.String(); len(got) != 2+64 || got[:2] != "k/" {
		t.Errorf("String() = %q", got)
	}
}
