package syntax

import (
	"os"
	"testing"
)

func addSeedFiles(f *testing.F) {
	for _, path := range kernelFiles(f) {
		src, err := os.ReadFile(path)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(src)
	}
}

// FuzzScan checks that the scanner never panics and always yields a well-formed stream:
// valid, non-decreasing positions, balanced Indent/Dedent, and a final EOF.
func FuzzScan(f *testing.F) {
	addSeedFiles(f)
	f.Fuzz(func(t *testing.T, src []byte) {
		toks, err := Scan("f.py", src)
		if err != nil {
			if _, ok := err.(ErrorList); !ok {
				t.Fatalf("error of type %T", err)
			}
		}
		if len(toks) == 0 || toks[len(toks)-1].Kind != TokEOF {
			t.Fatalf("stream does not end in EOF")
		}
		depth := 0
		prev := Pos{Line: 1, Col: 1}
		for _, tk := range toks {
			if tk.Pos.Line < 1 || tk.Pos.Col < 1 || tk.End.Before(tk.Pos) || tk.Pos.Before(prev) {
				t.Fatalf("bad position %v-%v after %v for %v %q", tk.Pos, tk.End, prev, tk.Kind, tk.Text)
			}
			prev = tk.Pos
			switch tk.Kind {
			case TokIndent:
				depth++
			case TokDedent:
				depth--
				if depth < 0 {
					t.Fatalf("dedent below zero at %v", tk.Pos)
				}
			}
		}
		if depth != 0 {
			t.Fatalf("unbalanced indentation: %d", depth)
		}
	})
}

// FuzzParse checks that the parser never panics, that every error has a position in the
// file, and that a successful parse survives a Format round trip unchanged.
func FuzzParse(f *testing.F) {
	addSeedFiles(f)
	f.Fuzz(func(t *testing.T, src []byte) {
		file, err := ParseFile("f.py", src)
		if err != nil {
			el, ok := err.(ErrorList)
			if !ok || len(el) == 0 {
				t.Fatalf("error of type %T: %v", err, err)
			}
			for _, e := range el {
				if e.Pos.File != "f.py" || e.Pos.Line < 1 || e.Pos.Col < 1 || e.Msg == "" {
					t.Fatalf("malformed error %q", e.Error())
				}
			}
			return
		}
		text := Format(file)
		again, err := ParseFile("g.py", []byte(text))
		if err != nil {
			t.Fatalf("formatted output does not parse: %v\n--- source\n%s\n--- formatted\n%s", err, src, text)
		}
		want := spanRE.ReplaceAllString(dumpTree(file), "")
		got := spanRE.ReplaceAllString(dumpTree(again), "")
		if got != want {
			t.Fatalf("round trip changed the tree:\n%s\n--- source\n%s\n--- formatted\n%s", firstDiff(got, want), src, text)
		}
	})
}
