// Command gpu benchmarks widejit's PTX kernels on an NVIDIA GPU: the 4096^3 GEMM of a Linear
// (fp16, bf16, fp32 at TF32 and at IEEE precision; TFLOP/s of the kernel alone, CUDA events)
// and memory-bound kernels (element-wise, softmax and layer norm rows) against a
// device-to-device copy of the same bytes, as ratios in one run. --sass writes, without a GPU, what the SASS of the GEMM and of
// those kernels says about them (instruction mix, tensor-core share, barriers, registers).
// Build it static where Go is, run it where the GPU is:
//
//	CGO_ENABLED=0 go build -o widejit-gpubench ./bench/gpu
//	./widejit-gpubench [--reps 50] [--json out.json]    # from the repository root
//	go run ./bench/gpu --sass report.md                  # no GPU: SASS counts per kernel
//
// bench/gpu/zoo.py compares the zoo (widejit wide vs sequential vs PyTorch) on the same GPU.
package main
