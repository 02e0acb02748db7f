// Command kernels benchmarks the CPU executor on two kernels and writes the figures, as ratios
// measured in the same run, to bench/results/kernels.md and kernels.json:
//
//   - matmul: the tutorial `tl.dot` matmul kernel (triton/testdata/kernels/matmul.py), 1024^3 fp32,
//     against numpy's float32 matmul with OpenBLAS on one thread (OPENBLAS_NUM_THREADS=1,
//     OPENBLAS_CORETYPE unset unless OpenBLAS takes the CPU for an older one than its features
//     say, package openblas; /usr/bin/python3);
//   - element-wise: y = x*scale + shift over 64M floats (vector_add.py's scale_shift_kernel)
//     against a plain Go copy of the same bytes.
//
// Run from the repository root: go run ./bench/kernels [-reps 5] [-elems 67108864]
package main
