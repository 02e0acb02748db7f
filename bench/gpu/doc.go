// Command gpu benchmarks widejit's PTX kernels on an NVIDIA GPU: memory-bound kernels
// (element-wise, softmax and layer norm rows) against a device-to-device copy of the same
// bytes, as ratios in one run. Build it static where Go is, run it where the GPU is:
//
//	CGO_ENABLED=0 go build -o widejit-gpubench ./bench/gpu
//	./widejit-gpubench [--reps 50] [--json out.json]    # from the repository root
//
// bench/gpu/zoo.py compares the zoo (widejit wide vs sequential vs PyTorch) on the same GPU.
package main
