package graph

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestGraphFilesStayInItsDirectory: the weights a graph names are resolved against its
// directory; an absolute path, "..", or a symbolic link out of the directory is refused at
// "weights" (line:col) unless AllowOutsidePaths, and a link that stays inside is followed.
func TestGraphFilesStayInItsDirectory(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "model")
	if err := os.MkdirAll(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeWeights(t, root, nil)
	weights := filepath.Join(root, "outside.safetensors")
	if err := os.Rename(filepath.Join(root, "weights.safetensors"), weights); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(weights)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "sub", "inside.safetensors"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	for name, target := range map[string]string{"out.safetensors": weights, "in.safetensors": filepath.Join(dir, "sub", "inside.safetensors"),
		"sub/up.safetensors": filepath.Join("..", "..", "outside.safetensors")} {
		if err := os.Symlink(target, filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	load := func(named string, allow bool) error {
		src := graphJSON(mlpInputs, mlpParams, mlpNodes, `["fc2"]`, `"weights": "`+named+`"`)
		_, err := Parse(filepath.Join(dir, "graph.json"), []byte(src), Options{AllowOutsidePaths: allow})
		return err
	}
	for named, why := range map[string]string{
		weights:                         "is an absolute path",
		"../outside.safetensors":        "leaves the graph's directory",
		"sub/../../outside.safetensors": "leaves the graph's directory",
		"out.safetensors":               "leads out of the graph's directory through a symbolic link",
		"sub/up.safetensors":            "leads out of the graph's directory through a symbolic link",
	} {
		ps := problems(t, load(named, false))
		if len(ps) != 1 || ps[0].Path != "weights" || ps[0].Line == 0 || !strings.Contains(ps[0].Msg, why) ||
			!strings.Contains(ps[0].Msg, "--allow-outside-paths") {
			t.Errorf("weights %q: want one problem at weights saying %q, got %v", named, why, ps)
		}
		if err := load(named, true); err != nil {
			t.Errorf("weights %q with AllowOutsidePaths: %v", named, err)
		}
	}
	for _, named := range []string{"sub/inside.safetensors", "./sub/../sub/inside.safetensors", "in.safetensors"} {
		if err := load(named, false); err != nil {
			t.Errorf("weights %q inside the directory: %v", named, err)
		}
	}
}

// TestNonSafetensorsFileContentIsNotPrinted: a text file given as weights used to be
// reported as "header length 3475222254926655346", its first 8 bytes as a number; the error
// says what it is and prints nothing of it.
func TestNonSafetensorsFileContentIsNotPrinted(t *testing.T) {
	dir := t.TempDir()
	secret := "root:x:0:0:root:/root:/bin/bash\nuser:x:1000:1000::/home/user:/bin/bash\n"
	if err := os.WriteFile(filepath.Join(dir, "passwd"), []byte(secret), 0o644); err != nil {
		t.Fatal(err)
	}
	short := filepath.Join(dir, "short")
	if err := os.WriteFile(short, []byte{200, 0, 0, 0, 0, 0, 0, 0, '{', '}'}, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, named := range []string{"passwd", "short"} {
		src := graphJSON(mlpInputs, mlpParams, mlpNodes, `["fc2"]`, `"weights": "`+named+`"`)
		_, err := Parse(filepath.Join(dir, "graph.json"), []byte(src), Options{})
		ps := problems(t, err)
		if len(ps) != 1 || !strings.Contains(ps[0].Msg, "not a safetensors file") {
			t.Fatalf("%s: want 'not a safetensors file', got %v", named, err)
		}
		for _, leak := range []string{"3475222254926655346", "200", "root"} {
			if strings.Contains(ps[0].Msg, leak) {
				t.Errorf("%s: the error prints %q of the file: %v", named, leak, ps[0].Msg)
			}
		}
	}
}
