// Package torch holds widejit's PyTorch exporter, which is Python (export.py: N PyTorch modules
// of one architecture -> graph.json, weights, inputs and reference outputs), and the Go tests
// that check it: the committed examples/ are reproduced bit for bit, the exports are re-executed
// by an independent interpreter (reference.py), and unsupported modules are refused with a
// message naming the node. It also runs the tests of the widejit Python package (python/),
// which calls export.py. See README.md in this folder.
package torch
