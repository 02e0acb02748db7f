package jit

// Capabilities are what lowering, the runner, the autotuner and plugins know about a device:
// they read these, never the backend's name, so a new backend is planned for by what it can
// do. The zero value is a GPU-like device of unknown size whose buffers live in host memory.
type Capabilities struct {
	// HostThreads: each program runs on one host thread, as the CPU executor runs it. Plans
	// are shaped for caches and SIMD lanes instead of warps (weights transposed once, wider
	// row blocks), and num_warps changes nothing, so it is not tuned.
	HostThreads bool `json:"host_threads"`
	// SIMDWidth is the fp32 lanes of the host's vector instructions (8 for AVX2, 16 for
	// AVX-512, 1 without); 0 where programs do not run on host threads.
	SIMDWidth int `json:"simd_width,omitempty"`
	// WarpSize is the threads that run in lockstep (32 on NVIDIA GPUs); 0 on host threads.
	WarpSize int `json:"warp_size,omitempty"`
	// SharedMemoryBytes is the shared memory one program (CTA) may use; 0 when unknown.
	SharedMemoryBytes int `json:"shared_memory_bytes,omitempty"`
	// TensorCores: dots with eligible dtypes and shapes run on matrix units.
	TensorCores bool `json:"tensor_cores,omitempty"`
	// WarpgroupMMA: the kernels are generated for Hopper's warpgroup MMA (sm_90a's wgmma),
	// which pays with larger tiles (128 rows over two warpgroups, K slices of 64).
	WarpgroupMMA bool `json:"warpgroup_mma,omitempty"`
	// DiscreteMemory: the device has memory of its own (Info.MemoryBytes) that buffers live
	// in, reached by copies; false: buffers are host memory and count against the host's.
	DiscreteMemory bool `json:"discrete_memory,omitempty"`
}
