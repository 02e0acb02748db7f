//go:build cgo

package main

/*
#include <stdint.h>
#include <stdlib.h>
*/
import "C"

import (
	"bytes"
	"unsafe"

	"github.com/widejit/widejit"
	"github.com/widejit/widejit/internal/errkind"
)

// cabi.go: the C functions (declared in libwidejit.h by `go build -buildmode=c-shared`).
// Each converts its arguments, runs the work under guard, and reports the error through
// *err.

func main() {} // a c-shared library's main is never called

// call runs f under guard and returns its exit code, storing the message in *err (malloc'ed,
// for widejit_free) when it is not 0.
func call(err **C.char, f func() error) C.int {
	code, msg := guard(f)
	if code != 0 && err != nil {
		*err = C.CString(msg)
	}
	return C.int(code)
}

// widejit_load loads the graph at path (graph.json, or a directory holding one) with the
// options (a JSON object; NULL or "" for none) and stores its handle in *handle.
//
//export widejit_load
func widejit_load(path, options *C.char, handle *C.int64_t, err **C.char) C.int {
	return call(err, func() error {
		h, e := load(C.GoString(path), C.GoString(options))
		*handle = C.int64_t(h)
		return e
	})
}

// widejit_load_memory is widejit_load for a graph held in memory: graphLen bytes of graph.json
// at graphJSON and weightsLen bytes of the weights file it names at weights (both copied; a
// NULL weights reads that file from disk). name names the graph in messages.
//
//export widejit_load_memory
func widejit_load_memory(name, graphJSON *C.char, graphLen C.int64_t, weights unsafe.Pointer, weightsLen C.int64_t,
	options *C.char, handle *C.int64_t, err **C.char) C.int {
	return call(err, func() error {
		if graphLen < 0 || weightsLen < 0 || graphJSON == nil && graphLen > 0 || weights == nil && weightsLen > 0 {
			return errkind.Usagef("a graph of %d bytes at %p, weights of %d bytes at %p", graphLen, graphJSON, weightsLen, weights)
		}
		var w []byte
		if weights != nil {
			w = bytes.Clone(bytesAt(weights, int(weightsLen)))
		}
		h, e := loadMemory(C.GoString(name), bytes.Clone(bytesAt(unsafe.Pointer(graphJSON), int(graphLen))), w, C.GoString(options))
		*handle = C.int64_t(h)
		return e
	})
}

// widejit_info stores a JSON description of the model in *out: n, models [lo, hi, total],
// device, batch, batch_fixed (why the batch size is fixed, "" when not), inputs and outputs
// (name, dtype, shape, shared) at the exported batch size.
//
//export widejit_info
func widejit_info(h C.int64_t, out, err **C.char) C.int {
	return call(err, func() error {
		return with(int64(h), func(m *widejit.Model) error {
			*out = C.CString(info(m))
			return nil
		})
	})
}

// widejit_outputs stores in *out the JSON list of the outputs (name, dtype, shape) that a run
// on inputs of these names, dtypes and shapes returns; shapes holds every input's ranks[i]
// dims, one input after the other.
//
//export widejit_outputs
func widejit_outputs(h C.int64_t, n C.int, names, dtypes **C.char, ranks *C.int, shapes *C.int64_t, out, err **C.char) C.int {
	return call(err, func() error {
		inputs, e := tensors("input", int(n), names, dtypes, ranks, shapes, nil)
		if e != nil {
			return e
		}
		return with(int64(h), func(m *widejit.Model) error {
			outs, e := m.OutputsFor(inputs)
			if e != nil {
				return e
			}
			*out = C.CString(jsonText(specs(outs)))
			return nil
		})
	})
}

// widejit_run runs the model on nIn inputs (as widejit_outputs takes them, with their data
// at data[i]) and writes the nOut outputs, described the same way (widejit_outputs says
// their dtypes and shapes), into outData[i].
//
//export widejit_run
func widejit_run(h C.int64_t, nIn C.int, names, dtypes **C.char, ranks *C.int, shapes *C.int64_t, data *unsafe.Pointer,
	nOut C.int, outNames, outDTypes **C.char, outRanks *C.int, outShapes *C.int64_t, outData *unsafe.Pointer, err **C.char) C.int {
	return call(err, func() error {
		inputs, e := tensors("input", int(nIn), names, dtypes, ranks, shapes, data)
		if e != nil {
			return e
		}
		out, e := tensors("output", int(nOut), outNames, outDTypes, outRanks, outShapes, outData)
		if e != nil {
			return e
		}
		return with(int64(h), func(m *widejit.Model) error { return run(m, inputs, out) })
	})
}

// widejit_explain stores the plan of the latest run (Model.Explain) in *out.
//
//export widejit_explain
func widejit_explain(h C.int64_t, out, err **C.char) C.int {
	return call(err, func() error {
		return with(int64(h), func(m *widejit.Model) error {
			*out = C.CString(m.Explain())
			return nil
		})
	})
}

// widejit_profile stores in *out the JSON of the kernel times per run (loaded with the
// profile option), the launches, compile time, strategies, cache report and batch sizes.
//
//export widejit_profile
func widejit_profile(h C.int64_t, out, err **C.char) C.int {
	return call(err, func() error {
		return with(int64(h), func(m *widejit.Model) error {
			*out = C.CString(profile(m))
			return nil
		})
	})
}

// widejit_close closes the model once its run in flight has finished; the handle is then
// invalid.
//
//export widejit_close
func widejit_close(h C.int64_t, err **C.char) C.int {
	return call(err, func() error { return closeModel(int64(h)) })
}

// widejit_free frees a string the library returned.
//
//export widejit_free
func widejit_free(s *C.char) { C.free(unsafe.Pointer(s)) }

// cArray views n C values at p as a Go slice (nil for n = 0).
func cArray[T any](p *T, n int) []T {
	if n <= 0 || p == nil {
		return nil
	}
	return unsafe.Slice(p, n)
}

// tensors reads n tensor descriptions (and their data when data is not nil) from C arrays;
// what names them in errors ("input", "output").
func tensors(what string, n int, names, dtypes **C.char, ranks *C.int, shapes *C.int64_t, data *unsafe.Pointer) (map[string]*widejit.Tensor, error) {
	if n < 0 {
		return nil, errkind.Usagef("%d %ss", n, what)
	}
	ns, ds, rs, ps := cArray(names, n), cArray(dtypes, n), cArray(ranks, n), cArray(data, n)
	total := 0
	for _, r := range rs {
		if r < 0 {
			return nil, errkind.Usagef("an %s of rank %d", what, r)
		}
		total += int(r)
	}
	dims := cArray(shapes, total)
	out := make(map[string]*widejit.Tensor, n)
	for i := range n {
		shape := make([]int, rs[i])
		for j := range shape {
			shape[j] = int(dims[j])
		}
		dims = dims[rs[i]:]
		var p unsafe.Pointer
		if ps != nil {
			p = ps[i]
		}
		t, err := tensorAt(what, C.GoString(ns[i]), C.GoString(ds[i]), shape, p, ps != nil)
		if err != nil {
			return nil, err
		}
		out[t.Name] = t
	}
	return out, nil
}
