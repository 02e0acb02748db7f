package sdk

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestRespondRoundTrip(t *testing.T) {
	registered = func(req Request) Response {
		ids := make([]string, 0, len(req.Candidates))
		for i := len(req.Candidates) - 1; i >= 0; i-- {
			ids = append(ids, req.Candidates[i].ID)
		}
		return Response{Ranking: ids, Note: req.OpChain[0]}
	}
	defer func() { registered = nil }()
	out := respond([]byte(`{"abi":1,"op_chain":["linear"],"n":4,"candidates":[{"id":"a","strategy":"batched"},{"id":"b","strategy":"fused"}]}`))
	var resp Response
	if err := json.Unmarshal(out, &resp); err != nil {
		t.Fatalf("response is not JSON: %v: %s", err, out)
	}
	if strings.Join(resp.Ranking, ",") != "b,a" || resp.Note != "linear" {
		t.Fatalf("got %+v, want ranking b,a and note linear", resp)
	}
}

func TestRespondPanicsWithMessage(t *testing.T) {
	cases := map[string]struct {
		fn      ChooseFunc
		request string
		want    string
	}{
		"unregistered": {nil, `{}`, "no choose function registered"},
		"bad json":     {func(Request) Response { return Response{} }, `{"n":`, "cannot decode the request"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			registered = c.fn
			defer func() { registered = nil }()
			defer func() {
				r := recover()
				if r == nil || !strings.Contains(r.(string), c.want) {
					t.Fatalf("panic %v, want one containing %q", r, c.want)
				}
			}()
			respond([]byte(c.request))
		})
	}
}

func TestRankByStrategy(t *testing.T) {
	cands := []Candidate{
		{ID: "s", Strategy: "sequential"},
		{ID: "b1", Strategy: "batched"},
		{ID: "x", Strategy: "exotic"},
		{ID: "f", Strategy: "fused"},
		{ID: "b2", Strategy: "batched"},
	}
	got := strings.Join(RankByStrategy(cands, "fused", "batched", "fused"), ",")
	if got != "f,b1,b2,s,x" {
		t.Fatalf("got %s, want f,b1,b2,s,x", got)
	}
}
