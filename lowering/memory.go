package lowering

import (
	"fmt"

	"github.com/widejit/widejit/internal/memlimit"
)

// MemoryNeed is what a plan allocates, in bytes.
type MemoryNeed struct {
	Inputs, Params, Temporaries int64 // device buffers
	Outputs                     int64 // host copies of the outputs (Run)
	LargestParam                int64 // one parameter's host copy while uploading
}

// Device is the device buffers' total.
func (m MemoryNeed) Device() int64 {
	var t memlimit.Tally
	t.Add(m.Inputs, 1)
	t.Add(m.Params, 1)
	t.Add(m.Temporaries, 1)
	return t.Bytes()
}

// Host is what a run allocates besides the device buffers.
func (m MemoryNeed) Host() int64 {
	var t memlimit.Tally
	t.Add(m.Outputs, 1)
	t.Add(m.LargestParam, 1)
	return t.Bytes()
}

func (m MemoryNeed) String() string {
	return fmt.Sprintf("inputs %s, params %s, temporaries %s, outputs %s", memlimit.Format(m.Inputs),
		memlimit.Format(m.Params), memlimit.Format(m.Temporaries), memlimit.Format(m.Outputs))
}

// Memory computes what the plan allocates, without overflowing.
func (p *Plan) Memory() MemoryNeed {
	sum := func(bs []*Buffer) (total, largest int64) {
		var t memlimit.Tally
		for _, b := range bs {
			var one memlimit.Tally
			one.Add(int64(max(b.Elems, 1)), int64(b.DType.Size()))
			t.Add(one.Bytes(), 1)
			largest = max(largest, one.Bytes())
		}
		return t.Bytes(), largest
	}
	var m MemoryNeed
	m.Inputs, _ = sum(p.Inputs)
	m.Params, m.LargestParam = sum(p.Params)
	var tmp memlimit.Tally
	for _, s := range p.Slots {
		tmp.Add(int64(max(s.Elems, 1)), int64(s.DType.Size()))
	}
	m.Temporaries = tmp.Bytes()
	var out memlimit.Tally
	seen := map[*Buffer]bool{}
	for _, o := range p.Outputs {
		if b := o.View.Buf; !seen[b] {
			seen[b] = true
			out.Add(int64(max(b.Elems, 1)), int64(b.DType.Size()))
		}
	}
	m.Outputs = out.Bytes()
	return m
}
