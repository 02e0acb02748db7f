// Package treefit fits a small decision tree that predicts the fastest strategy of a kernel
// group from features of its plugin request, and writes the tree as Go source. It backs the
// learned example plugin (plugins/examples/tree) and `go run ./autotune/cmd/fittree`.
//
// It imports only the standard library and plugins/abi, so a plugin can import Features
// without pulling anything large into its WebAssembly module.
package treefit
