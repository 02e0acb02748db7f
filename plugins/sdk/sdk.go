package sdk

import (
	"encoding/json"
	"fmt"

	"github.com/widejit/widejit/plugins/abi"
)

// The schema types, re-exported so a plugin needs one import.
type (
	Request   = abi.Request
	Response  = abi.Response
	Candidate = abi.Candidate
	Device    = abi.Device
)

// ChooseFunc ranks the candidates of a request, best first.
type ChooseFunc func(Request) Response

var registered ChooseFunc

// Register sets the plugin's choose function; call it once, from init.
func Register(f ChooseFunc) {
	if registered != nil {
		panic("widejit sdk: Register called twice")
	}
	registered = f
}

// respond decodes one JSON request, calls the registered function and encodes its response.
// Failures panic with a message: in the guest a panic ends the module and the host reports
// the message as the reason it fell back.
func respond(request []byte) []byte {
	if registered == nil {
		panic("widejit sdk: no choose function registered; call sdk.Register from an init function")
	}
	var req Request
	if err := json.Unmarshal(request, &req); err != nil {
		panic(fmt.Sprintf("widejit sdk: cannot decode the request: %v", err))
	}
	resp := registered(req)
	out, err := json.Marshal(resp)
	if err != nil {
		panic(fmt.Sprintf("widejit sdk: cannot encode the response: %v", err))
	}
	return out
}

// RankByStrategy ranks candidates by the position of their strategy in preferred; candidates
// of strategies not listed come last. Ties keep the candidates' order.
func RankByStrategy(candidates []Candidate, preferred ...string) []string {
	rank := make(map[string]int, len(preferred))
	for i, s := range preferred {
		if _, dup := rank[s]; !dup {
			rank[s] = i
		}
	}
	pos := func(c Candidate) int {
		if r, ok := rank[c.Strategy]; ok {
			return r
		}
		return len(preferred)
	}
	ids := make([]string, 0, len(candidates))
	for r := 0; r <= len(preferred); r++ {
		for _, c := range candidates {
			if pos(c) == r {
				ids = append(ids, c.ID)
			}
		}
	}
	return ids
}
