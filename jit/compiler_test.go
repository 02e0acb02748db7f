package jit_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/widejit/widejit/cache"
	"github.com/widejit/widejit/jit"
	"github.com/widejit/widejit/triton/ir"
)

// fakeTarget counts code generations and emits the function's name as its payload.
type fakeTarget struct {
	key   string
	calls int
	fail  error
}

func (t *fakeTarget) Key() string { return t.key }

func (t *fakeTarget) Codegen(f *ir.Func, spec jit.Spec) (*jit.Artifact, error) {
	t.calls++
	if t.fail != nil {
		return nil, t.fail
	}
	return &jit.Artifact{Kind: "fake", Name: f.Name, Target: t.key, Payload: []byte("code of " + f.Name),
		Meta: map[string]string{"num_warps": "4"}}, nil
}

// fakeDevice counts loads; everything else is unused here.
type fakeDevice struct {
	jit.Device
	target *fakeTarget
	loads  int
}

func (d *fakeDevice) Target() jit.Target { return d.target }

func (d *fakeDevice) Load(a *jit.Artifact) (jit.Kernel, error) {
	d.loads++
	return fakeKernel(a.Name), nil
}

type fakeKernel string

func (k fakeKernel) Name() string                             { return string(k) }
func (k fakeKernel) Launch(grid [3]int, args []jit.Arg) error { return nil }

func vectorAdd(t *testing.T) (jit.Source, jit.Spec) {
	t.Helper()
	text, err := os.ReadFile(filepath.Join("..", "triton", "testdata", "kernels", "vector_add.py"))
	if err != nil {
		t.Fatal(err)
	}
	return jit.Source{File: "vector_add.py", Text: string(text), Fn: "add_kernel"},
		jit.Spec{Sig: map[string]string{"x_ptr": "*fp32", "y_ptr": "*fp32", "output_ptr": "*fp32", "n_elements": "i32"},
			Consts: map[string]any{"BLOCK_SIZE": int64(64)}}
}

// Every input that changes the artifact changes the key; map and list order do not.
func TestKeyCoversEveryInput(t *testing.T) {
	src, spec := vectorAdd(t)
	c := jit.NewCompiler(jit.CompilerOptions{Version: "v1", BackendOptions: map[string]string{"fast_math": "off"}})
	target := &fakeTarget{key: "cpu"}
	base, err := c.Key(src, spec, target)
	if err != nil {
		t.Fatal(err)
	}
	same := spec
	same.Sig = map[string]string{"n_elements": "i32", "output_ptr": "*fp32", "y_ptr": "*fp32", "x_ptr": "*fp32"}
	same.Align16 = nil
	if k, _ := c.Key(src, same, target); k != base {
		t.Error("the key depends on map order")
	}
	a1, a2 := spec, spec
	a1.Align16, a2.Align16 = []string{"x_ptr", "y_ptr"}, []string{"y_ptr", "x_ptr"}
	k1, _ := c.Key(src, a1, target)
	k2, _ := c.Key(src, a2, target)
	if k1 != k2 || k1 == base {
		t.Error("align16: the key depends on list order, or ignores the hint")
	}
	variants := map[string]func() (cache.Key, error){
		"text": func() (cache.Key, error) { s := src; s.Text += "\n# edit"; return c.Key(s, spec, target) },
		"fn":   func() (cache.Key, error) { s := src; s.Fn = "other"; return c.Key(s, spec, target) },
		"signature": func() (cache.Key, error) {
			s := spec
			s.Sig = map[string]string{"x_ptr": "*fp16"}
			return c.Key(src, s, target)
		},
		"constexpr": func() (cache.Key, error) {
			s := spec
			s.Consts = map[string]any{"BLOCK_SIZE": int64(128)}
			return c.Key(src, s, target)
		},
		"constexpr type": func() (cache.Key, error) {
			s := spec
			s.Consts = map[string]any{"BLOCK_SIZE": float64(64)}
			return c.Key(src, s, target)
		},
		"num_warps": func() (cache.Key, error) { s := spec; s.NumWarps = 8; return c.Key(src, s, target) },
		"target":    func() (cache.Key, error) { return c.Key(src, spec, &fakeTarget{key: "ptx7.8/sm_90"}) },
		"version": func() (cache.Key, error) {
			return jit.NewCompiler(jit.CompilerOptions{Version: "v2", BackendOptions: map[string]string{"fast_math": "off"}}).Key(src, spec, target)
		},
		"backend option": func() (cache.Key, error) {
			return jit.NewCompiler(jit.CompilerOptions{Version: "v1", BackendOptions: map[string]string{"fast_math": "on"}}).Key(src, spec, target)
		},
	}
	for name, f := range variants {
		k, err := f()
		if err != nil || k == base {
			t.Errorf("%s: key unchanged (%v)", name, err)
		}
	}
}

// Compile generates code once per key: a second compiler on the same store, as a second
// process would, is served the stored artifact, metadata included; Load loads once per
// device.
func TestCompileThroughTheStoreAndLoadOncePerDevice(t *testing.T) {
	src, spec := vectorAdd(t)
	dir := t.TempDir()
	store, err := cache.Open(dir, cache.Options{})
	if err != nil {
		t.Fatal(err)
	}
	target := &fakeTarget{key: "fake"}
	c := jit.NewCompiler(jit.CompilerOptions{Store: store, Version: "test"})
	a, err := c.Compile(src, spec, target)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Compile(src, spec, target); err != nil {
		t.Fatal(err)
	}
	if target.calls != 1 || c.Stats().Hits != 1 || c.Stats().Misses != 1 {
		t.Errorf("codegen ran %d times; stats %+v (want one miss, one hit)", target.calls, c.Stats())
	}
	store.Close()
	store, err = cache.Open(dir, cache.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	c2 := jit.NewCompiler(jit.CompilerOptions{Store: store, Version: "test"})
	b, err := c2.Compile(src, spec, target)
	if err != nil || target.calls != 1 {
		t.Fatalf("a new process compiled again (%d codegens, %v)", target.calls, err)
	}
	if b.Kind != a.Kind || b.Name != "add_kernel" || string(b.Payload) != string(a.Payload) || b.Meta["num_warps"] != "4" || b.Target != "fake" {
		t.Errorf("stored artifact %+v differs from the compiled %+v", b, a)
	}
	d1, d2 := &fakeDevice{target: target}, &fakeDevice{target: target}
	for range 3 {
		if _, err := c2.Load(d1, src, spec); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c2.Load(d2, src, spec); err != nil {
		t.Fatal(err)
	}
	if d1.loads != 1 || d2.loads != 1 {
		t.Errorf("loads per device: %d and %d, want 1 each", d1.loads, d2.loads)
	}
}

// Errors name the kernel: a front-end error with its position, a backend error with the file,
// the function and the target.
func TestCompileErrorsNameTheKernel(t *testing.T) {
	src, spec := vectorAdd(t)
	c := jit.NewCompiler(jit.CompilerOptions{Version: "test"})
	bad := src
	bad.Text = strings.Replace(bad.Text, "tl.arange(0, BLOCK_SIZE)", "tl.arange(0, BLOCK_SIZE", 1)
	if _, err := c.Compile(bad, spec, &fakeTarget{key: "fake"}); err == nil || !strings.Contains(err.Error(), "vector_add.py:") {
		t.Errorf("syntax error: %v", err)
	}
	cause := errors.New("no registers left")
	_, err := c.Compile(src, spec, &fakeTarget{key: "ptx7.8/sm_90", fail: cause})
	if !errors.Is(err, cause) || !strings.Contains(err.Error(), "vector_add.py: kernel add_kernel: ptx7.8/sm_90 backend") {
		t.Errorf("backend error: %v", err)
	}
}
