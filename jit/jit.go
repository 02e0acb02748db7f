package jit

import (
	"context"
	"fmt"
	"math"
	"math/bits"

	"github.com/widejit/widejit/triton/ir"
)

// Source is one kernel file and the @triton.jit function in it to compile.
type Source struct {
	File string // shown in positions: a template name such as "linear.py", or a real path
	Text string
	Fn   string
}

// Spec is one specialization of a kernel: everything besides the text that changes the code.
type Spec struct {
	// Sig gives each runtime (non-constexpr) parameter its type in Triton's notation:
	// "*fp32", "*i64", "i32", "i64", "fp32", "i1".
	Sig map[string]string
	// Consts gives each constexpr parameter its value: int64, float64, bool, string,
	// ir.DType, nil, or []any for tuples. Parameters with defaults may be omitted.
	Consts map[string]any
	// Align16 lists parameters known to be divisible by 16 (pointers: 16-byte aligned
	// addresses; ints: multiples of 16). A hint the PTX backend may use to vectorize.
	Align16 []string
	// EqualTo1 lists integer parameters equal to 1 on every launch (unit strides): a
	// backend may compile them as the constant 1, as Triton specializes them.
	EqualTo1 []string
	// NumWarps is the launch's warp count on GPUs (0 means 4). The CPU backend ignores it.
	NumWarps int
	// NumStages is the depth of a K loop's software pipeline on GPUs, Triton's launch option
	// num_stages (0: the kernel's num_stages constexpr where it has one, else the backend's
	// default, Triton's 3). The CPU backend ignores it.
	NumStages int
}

// Artifact is the compiled form of one specialized kernel for one target: what the kernel
// cache stores and a device loads.
type Artifact struct {
	Kind    string            // "ir" (CPU), "ptx", "cubin"
	Name    string            // the entry point
	Target  string            // Target.Key()
	Payload []byte            // encoded IR, PTX text, or cubin bytes
	Meta    map[string]string // e.g. "shared_bytes", "registers", "num_warps"
}

// Target generates artifacts. It needs no device: `widejit cache populate` generates PTX on
// machines without a GPU.
type Target interface {
	// Key names the target and everything about it that changes the artifact
	// ("cpu", "ptx7.8/sm_90"); it is part of the kernel cache key.
	Key() string
	Codegen(f *ir.Func, spec Spec) (*Artifact, error)
}

// Buffer is device memory holding Len elements of DType.
type Buffer interface {
	DType() ir.DType
	Len() int
}

// Arg is one launch argument: a buffer for a pointer parameter (Offset elements into it, so
// one buffer can serve N launches of a single-model kernel), or a scalar (int64, float64 or
// bool; converted to the parameter's type, with an error if it does not fit).
type Arg struct {
	Buf    Buffer
	Offset int
	Scalar any
}

// Kernel is a loaded kernel, ready to launch on its device.
type Kernel interface {
	Name() string
	// Launch runs the kernel over grid (each entry >= 1). Args follow the runtime parameters
	// of the specialized function in order.
	Launch(grid [3]int, args []Arg) error
}

// ContextLauncher is a Kernel whose launch can be stopped: LaunchContext returns soon after
// ctx is done (between programs and loop iterations), with an error naming the kernel that
// wraps ctx's error. The CPU backend implements it; runners use it for per-launch time limits.
type ContextLauncher interface {
	LaunchContext(ctx context.Context, grid [3]int, args []Arg) error
}

// GridPrograms is the number of programs of grid, checked: every dimension at least 1 and
// at most maxDim, and the product within int64 (three dimensions of 2^31-1 overflow it).
func GridPrograms(kernel string, grid [3]int, maxDim int) (int64, error) {
	total := uint64(1)
	for i, g := range grid {
		if g < 1 || g > maxDim {
			return 0, fmt.Errorf("kernel %s: grid dimension %d is %d, expected 1..%d", kernel, i, g, maxDim)
		}
		hi, lo := bits.Mul64(total, uint64(g))
		if hi != 0 || lo > math.MaxInt64 {
			return 0, fmt.Errorf("kernel %s: grid %d x %d x %d has more than 2^63-1 programs", kernel, grid[0], grid[1], grid[2])
		}
		total = lo
	}
	return int64(total), nil
}

// DeviceInfo describes a device for lowering, the autotuner, plugins and `widejit info`.
type DeviceInfo struct {
	Kind              string // the backend's registered name ("cpu", "cuda", ...): shown, never tested
	Name              string
	ComputeCapability string // "9.0"; empty on the CPU
	MemoryBytes       int64
	Cores             int // CPU cores or GPU SMs
	DriverVersion     string
	Caps              Capabilities
}

// Device runs kernels and owns their memory.
type Device interface {
	Info() DeviceInfo
	Target() Target
	Load(a *Artifact) (Kernel, error)

	// Alloc returns a buffer of n elements, zeroed: plans rely on it (a zero-padded
	// convolution input has only its interior written).
	Alloc(dt ir.DType, n int) (Buffer, error)
	Free(b Buffer)
	// Upload copies little-endian host bytes into b (len(src) == b.Len()*dtype size).
	Upload(dst Buffer, src []byte) error
	// Download copies b into host bytes.
	Download(src Buffer, dst []byte) error
	// Sync waits for every launch and copy issued so far.
	Sync() error
	Close() error
}

// HostBinder is implemented by devices whose buffers can read host memory in place (the
// CPU): a run then reads its inputs where the caller holds them instead of copying them in.
type HostBinder interface {
	// BindHost makes data b's contents until UnbindHost(b); it reports false, changing
	// nothing, when data does not suit b (size or alignment). Kernels must not write b
	// meanwhile: data is the caller's.
	BindHost(b Buffer, data []byte) bool
	// UnbindHost gives b its own memory back (its contents are then undefined).
	UnbindHost(b Buffer)
}
