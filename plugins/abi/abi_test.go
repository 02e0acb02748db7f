package abi

import (
	"strings"
	"testing"
)

func TestCheckRanking(t *testing.T) {
	cands := []Candidate{{ID: "a"}, {ID: "b"}, {ID: "c"}}
	cases := []struct {
		ranking []string
		want    string // "" for valid
	}{
		{[]string{"c", "a", "b"}, ""},
		{[]string{"b"}, ""},
		{nil, "empty ranking"},
		{[]string{"a", "x"}, `ranking[1]: unknown candidate id "x"`},
		{[]string{"b", "a", "b"}, `ranking[2]: duplicate candidate id "b" (also at ranking[0])`},
	}
	for _, c := range cases {
		err := CheckRanking(c.ranking, cands)
		if c.want == "" && err != nil {
			t.Errorf("%v: unexpected error %v", c.ranking, err)
		}
		if c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%v: error %v, want %q", c.ranking, err, c.want)
		}
	}
}

func TestComplete(t *testing.T) {
	got := strings.Join(Complete([]string{"c", "a"}, []string{"a", "b", "c", "d"}), ",")
	if got != "c,a,b,d" {
		t.Fatalf("got %s, want c,a,b,d", got)
	}
}
