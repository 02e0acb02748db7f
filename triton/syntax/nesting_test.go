package syntax

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestNestingLimits: hostile nesting (the 200k parentheses of issue 14 overflowed the Go
// stack) is a located syntax error, found quickly; nesting up to the limits still parses.
func TestNestingLimits(t *testing.T) {
	deepBlocks := func(n int) string {
		var b strings.Builder
		b.WriteString("@triton.jit\ndef k(x):\n")
		for i := range n {
			fmt.Fprintf(&b, "%sif x:\n", strings.Repeat(" ", i+1))
		}
		fmt.Fprintf(&b, "%spass\n", strings.Repeat(" ", n+1))
		return b.String()
	}
	tests := []struct {
		name, src, want string // want: the start of the first error
	}{
		{"200k parentheses", body("y = " + strings.Repeat("(", 200000) + "x" + strings.Repeat(")", 200000)),
			fmt.Sprintf("n.py:3:%d: expressions nested deeper than %d levels", 9+MaxNesting-1, MaxNesting)},
		{"unclosed parentheses", body("y = " + strings.Repeat("(", 200000)), "n.py:3:"},
		{"brackets", body("y = " + strings.Repeat("[", 5000) + strings.Repeat("]", 5000)), "n.py:3:"},
		{"calls", body("y = " + strings.Repeat("f(", 5000) + "x" + strings.Repeat(")", 5000)), "n.py:3:"},
		{"unary minus", body("y = " + strings.Repeat("-", 20000) + "x"), "n.py:3:"},
		{"not", body("y = " + strings.Repeat("not ", 20000) + "x"), "n.py:3:"},
		{"power", body("y = x" + strings.Repeat(" ** x", 20000)), "n.py:3:"},
		{"binary chain", body("y = x" + strings.Repeat(" + x", 20000)), "n.py:3:"},
		{"attribute chain", body("y = x" + strings.Repeat(".a", 20000)), "n.py:3:"},
		{"call chain", body("y = f" + strings.Repeat("()", 20000)), "n.py:3:"},
		{"blocks", deepBlocks(1000), fmt.Sprintf("n.py:%d:", 2+MaxNesting)},
	}
	for _, c := range tests {
		t.Run(c.name, func(t *testing.T) {
			done := make(chan error, 1)
			go func() {
				_, err := ParseFile("n.py", []byte(c.src))
				done <- err
			}()
			var err error
			select {
			case err = <-done:
			case <-time.After(time.Minute):
				t.Fatal("parse did not finish within a minute")
			}
			el, ok := err.(ErrorList)
			if !ok || len(el) == 0 {
				t.Fatalf("got %v (%T), want a syntax error", err, err)
			}
			if !strings.HasPrefix(el[0].Error(), c.want) {
				t.Fatalf("first error %q, want it to start with %q", el[0].Error(), c.want)
			}
			if c.want == "n.py:3:" || strings.Contains(c.name, "blocks") {
				msg := el.Error()
				if !strings.Contains(msg, "nested deeper than") && !strings.Contains(msg, fmt.Sprintf("more than %d", MaxChain)) {
					t.Fatalf("errors %q do not name the nesting limit", msg)
				}
			}
		})
	}
	// At the limits, kernels still parse.
	ok := []string{
		body("y = " + strings.Repeat("(", MaxNesting-2) + "x" + strings.Repeat(")", MaxNesting-2)),
		body("y = x" + strings.Repeat(" + x", MaxChain-1)),
		deepBlocks(MaxNesting - 2),
	}
	for i, src := range ok {
		if _, err := ParseFile("n.py", []byte(src)); err != nil {
			t.Errorf("case %d: %v", i, firstLineOf(err.Error()))
		}
	}
}

func firstLineOf(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}
