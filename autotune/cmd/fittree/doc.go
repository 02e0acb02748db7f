// Command fittree fits a decision tree on timings recorded by the autotuner and writes it as
// the Go source of the learned example plugin:
//
//	go run ./autotune/cmd/fittree -in plugins/examples/tree/timings.json -out plugins/examples/tree/tree_gen.go
//
// The input is a timings file (autotune.WriteTimings; `widejit tune` exports one). Each
// record is a training sample: the features of its problem (treefit.Features) labelled with
// the strategy of its measured winner.
package main
