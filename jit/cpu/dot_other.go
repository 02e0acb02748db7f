//go:build !amd64

package cpu

func selectMicroKernel(bool) {}
