package lowering

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/widejit/widejit/graph"
)

// docs/graph-format.md's "Op status" table names every op of the vocabulary once, and only
// ops that lower.
func TestGraphFormatListsEveryOp(t *testing.T) {
	b, err := os.ReadFile("../docs/graph-format.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(b), "\n## Op status\n")
	if !ok {
		t.Fatal(`docs/graph-format.md has no "## Op status" section`)
	}
	section, _, _ = strings.Cut(section, "\n## ")
	var listed []string
	for _, line := range strings.Split(section, "\n") {
		if !strings.HasPrefix(line, "| `") {
			continue
		}
		cell := strings.Split(line, "|")[1]
		for _, m := range regexp.MustCompile("`([a-z0-9_]+)`").FindAllStringSubmatch(cell, -1) {
			listed = append(listed, m[1])
		}
	}
	for _, op := range graph.Ops() {
		if n := count(listed, op); n != 1 {
			t.Errorf("op %s is listed %d times in the Op status table, want once", op, n)
		}
	}
	for _, op := range listed {
		if !slices.Contains(graph.Ops(), op) {
			t.Errorf("the Op status table lists %s, which is not an op", op)
		}
		if _, ok := lowerers[op]; !ok {
			t.Errorf("the Op status table lists %s as lowered, but it has no lowering", op)
		}
	}
}

func count(list []string, s string) int {
	n := 0
	for _, x := range list {
		if x == s {
			n++
		}
	}
	return n
}
