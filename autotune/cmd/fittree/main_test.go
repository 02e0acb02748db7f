package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCommittedTreeIsFresh regenerates the example plugin's tree from its committed timings
// with the documented command and compares it with the committed file.
func TestCommittedTreeIsFresh(t *testing.T) {
	example := filepath.Join("..", "..", "..", "plugins", "examples", "tree")
	out := filepath.Join(t.TempDir(), "tree_gen.go")
	var stderr bytes.Buffer
	if err := run([]string{"-in", filepath.Join(example, "timings.json"), "-out", out}, &stderr); err != nil {
		t.Fatalf("%v\n%s", err, stderr.String())
	}
	got, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile(filepath.Join(example, "tree_gen.go"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("plugins/examples/tree/tree_gen.go is stale; run go generate ./plugins/examples/tree\ngot:\n%s", got)
	}
}

func TestBadInput(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	out := filepath.Join(dir, "out.go")
	cases := map[string]struct {
		args []string
		want string
	}{
		"no flags":   {nil, "usage: fittree"},
		"missing":    {[]string{"-in", filepath.Join(dir, "nope.json"), "-out", out}, "no such file"},
		"not json":   {[]string{"-in", write("bad.json", "{"), "-out", out}, "bad.json: timings file"},
		"no records": {[]string{"-in", write("empty.json", `{"format": "widejit-timings/1", "records": []}`), "-out", out}, "no samples"},
	}
	for name, c := range cases {
		var stderr bytes.Buffer
		err := run(c.args, &stderr)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want %q", name, err, c.want)
		}
	}
	if _, err := os.Stat(out); err == nil {
		t.Error("a failed run wrote its output")
	}
}
