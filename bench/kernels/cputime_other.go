//go:build !linux

package main

import "math"

// threadCPU is NaN: this OS gives no per-thread CPU time, and the report says so rather than
// print the clock as CPU time.
func threadCPU() float64 { return math.NaN() }
