//go:build !amd64

package cpu

func fmaLoop(n int) float64 { return 0 }
