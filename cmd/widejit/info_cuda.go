package main

import (
	"github.com/widejit/widejit/jit"
	"github.com/widejit/widejit/jit/device"
)

// The CUDA backend: `--device cuda` (and "auto", which tries it first) on run and kernel run,
// and the GPU line of `widejit info`.
func init() {
	kernelDevices["cuda"] = func(a *app) (jit.Device, error) { return device.Open("cuda", a.v.GetInt("threads")) }
	cudaStatus = device.CUDAStatus
}
