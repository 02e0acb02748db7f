// Package runjob is the work of `widejit run` over the public API (package widejit): the
// graph restricted to a shard, its inputs (read at any batch size, or generated), the model
// loaded in each mode asked for and run with repeats and timings, the trace, the outputs
// written with their metadata and compared with expected ones. The CLI parses the flags
// into a Request and prints the Result.
package runjob
