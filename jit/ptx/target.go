package ptx

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/widejit/widejit/jit"
	"github.com/widejit/widejit/triton/ir"
)

// ISA is the PTX ISA version every kernel is written in (Debian's ptxas 11.8 accepts it),
// but sm_90a's: ISAHopper, the first with wgmma.
const (
	ISA       = "7.8"
	ISAHopper = "8.0"
)

// ISAFor is the PTX ISA version of arch's kernels.
func ISAFor(arch string) string {
	if arch == "sm_90a" {
		return ISAHopper
	}
	return ISA
}

// ArtifactKind is the Kind of PTX artifacts: PTX text, loaded by the driver JIT.
const ArtifactKind = "ptx"

// Archs are the SM architectures the generator targets in ISA 7.8, which Debian's ptxas 11.8
// assembles. Newer GPUs JIT sm_90 PTX.
var Archs = []string{"sm_80", "sm_90"}

// AllArchs are Archs and sm_90a (ISA 8.0, wgmma; CUDA 12's ptxas assembles it).
var AllArchs = append(Archs[:len(Archs):len(Archs)], "sm_90a")

// Target generates PTX for one SM architecture. It needs no GPU.
type Target struct {
	// "sm_80", "sm_90" or "sm_90a" (Hopper only, PTX ISA 8.0: fp16/bf16 K loops on wgmma;
	// CUDA 12's ptxas assembles it)
	Arch string
	// FMADots keeps every tl.dot on fp32 FMAs instead of tensor cores (mma.sync), so fp16,
	// bf16 and TF32 dots compute at full fp32 precision, as the CPU backend does.
	FMADots bool
	// rowMajorStaging leaves the mma.sync staging areas unswizzled (mmaShape.swA), so tests
	// can measure the bank conflicts the swizzle removes.
	rowMajorStaging bool
}

// Key names the ISA and the arch, e.g. "ptx7.8/sm_90" ("ptx7.8/sm_90/fma" with FMADots).
func (t Target) Key() string {
	k := "ptx" + ISAFor(t.Arch) + "/" + t.Arch
	if t.FMADots {
		k += "/fma"
	}
	return k
}

// hopperDefault is the arch a compute capability 9.0 device loads unless told otherwise
// (the cuda backend's option arch=sm_90): sm_90a, whose wgmma kernels bench/gpu/run_all.sh
// has checked on an H100 against PyTorch's outputs and the CPU backend
// (bench/gpu/results/NVIDIA_H100_80GB_HBM3). A driver older than CUDA 12 cannot JIT its PTX
// ISA 8.0: the cuda backend then falls back to sm_90 (FallbackArch).
const hopperDefault = "sm_90a"

// ArchForCapability maps a compute capability ("9.0", "8.6") to the arch whose PTX the
// device should load: hopperDefault for 9.0, sm_90 for newer (sm_90a code runs on 9.0
// only), sm_80 for 8.x.
func ArchForCapability(cc string) (string, error) {
	m, minor, err := parseCapability(cc)
	if err != nil {
		return "", err
	}
	switch {
	case m == 9 && minor == 0:
		return hopperDefault, nil
	case m >= 9:
		return "sm_90", nil
	case m == 8:
		return "sm_80", nil
	}
	return "", fmt.Errorf("ptx: compute capability %s is older than 8.0 (sm_80), which widejit needs", cc)
}

// FallbackArch is the arch a device of compute capability cc loads when its default (arch,
// from ArchForCapability) needs a newer driver than one supporting CUDA cudaVersion: sm_90
// for sm_90a under a CUDA 11 driver; arch itself otherwise.
func FallbackArch(arch, cc string, cudaVersion int) string {
	if arch == "sm_90a" && CheckArch(arch, cc, cudaVersion) != nil {
		return "sm_90"
	}
	return arch
}

func parseCapability(cc string) (major, minor int, err error) {
	a, b, _ := strings.Cut(cc, ".")
	major, err1 := strconv.Atoi(a)
	minor, err2 := strconv.Atoi(b)
	if err1 != nil || err2 != nil {
		return 0, 0, fmt.Errorf("ptx: bad compute capability %q (expected MAJOR.MINOR, e.g. 9.0)", cc)
	}
	return major, minor, nil
}

// CheckArch says why a device of compute capability cc, whose driver supports CUDA
// cudaVersion (12040 for 12.4), cannot load arch's PTX, or returns nil: sm_80 PTX runs from
// cc 8.0 on, sm_90 from 9.0 on, sm_90a (arch-specific features) on cc 9.0 only and needs a
// CUDA 12 driver to JIT PTX ISA 8.0.
func CheckArch(arch, cc string, cudaVersion int) error {
	if !ValidArch(arch) {
		return fmt.Errorf("ptx: unknown arch %q (expected one of %s)", arch, strings.Join(AllArchs, ", "))
	}
	m, minor, err := parseCapability(cc)
	if err != nil {
		return err
	}
	need, _, _ := parseCapability(GenericCapability(arch))
	switch {
	case arch == "sm_90a" && (m != 9 || minor != 0):
		return fmt.Errorf("ptx: arch sm_90a (wgmma, Hopper only) needs a compute capability 9.0 device; this one is %s (use sm_90 or sm_80)", cc)
	case m < need:
		return fmt.Errorf("ptx: arch %s needs compute capability %d.0 or newer; this device is %s", arch, need, cc)
	case ISAFor(arch) == ISAHopper && cudaVersion < 12000:
		return fmt.Errorf("ptx: arch %s is PTX ISA %s, which needs a CUDA 12.0 driver or newer to load; this driver supports CUDA %d.%d", arch, ISAHopper, cudaVersion/1000, cudaVersion%1000/10)
	}
	return nil
}

// GenericCapability is the compute capability arch is for: "9.0" for sm_90 and sm_90a, "8.0"
// for sm_80.
func GenericCapability(arch string) string {
	cc := strings.TrimSuffix(strings.TrimPrefix(arch, "sm_"), "a")
	if len(cc) < 2 {
		return cc
	}
	return cc[:len(cc)-1] + "." + cc[len(cc)-1:]
}

// maxSharedBytes is the dynamic shared memory a CTA may opt into on each arch.
var maxSharedBytes = map[string]int{"sm_80": 163 * 1024, "sm_90": 227 * 1024, "sm_90a": 227 * 1024}

// Codegen writes f as a PTX module with one .entry named f.Name.
//
// Meta keys: "num_warps", "threads", "shared_bytes" (dynamic shared memory the launch must
// pass), "param_types" (the runtime parameter types in order, e.g. "*fp32,i32,fp32", which
// fixes the kernel parameter ABI: pointers .u64; i1..i32 and u8..u32 .u32; i64/u64 .u64;
// fp16/bf16 .b16; fp32 .f32; fp64 .f64), "tile_registers" (the 32-bit registers per
// thread of the largest tile value, a lower bound; ptxas -v, see Assemble, gives the real
// count).
func (t Target) Codegen(f *ir.Func, spec jit.Spec) (*jit.Artifact, error) {
	limit, ok := maxSharedBytes[t.Arch]
	if !ok {
		return nil, fmt.Errorf("ptx: unknown arch %q (expected one of %s)", t.Arch, strings.Join(AllArchs, ", "))
	}
	// The type rules are triton/ir's (rules.go): code generation assumes verified IR and
	// does not check them again.
	if err := ir.Verify(f); err != nil {
		return nil, fmt.Errorf("ptx: kernel %s: %w", f.Name, err)
	}
	warps := spec.NumWarps
	if warps == 0 {
		warps = 4
	}
	if warps < 1 || warps > 32 || warps&(warps-1) != 0 {
		return nil, fmt.Errorf("ptx: num_warps %d: expected a power of 2 from 1 to 32", warps)
	}
	if spec.NumStages < 0 {
		return nil, fmt.Errorf("ptx: num_stages %d: expected 0 (the default) or more", spec.NumStages)
	}
	g := newGen(f, t.Arch, warps*32, spec)
	g.fmaDots, g.rowMajorStaging = t.FMADots, t.rowMajorStaging
	text, err := g.run()
	if err != nil {
		return nil, err
	}
	if g.smemBytes > limit {
		return nil, fmt.Errorf("ptx: kernel %s needs %d bytes of shared memory for its tile conversions, more than %s allows (%d); use smaller blocks", f.Name, g.smemBytes, t.Arch, limit)
	}
	types := make([]string, len(f.Params))
	for i, p := range f.Params {
		types[i] = p.Type.String()
	}
	a := &jit.Artifact{
		Kind:    ArtifactKind,
		Name:    f.Name,
		Target:  t.Key(),
		Payload: []byte(text),
		Meta: map[string]string{
			"num_warps":      strconv.Itoa(warps),
			"threads":        strconv.Itoa(warps * 32),
			"shared_bytes":   strconv.Itoa(g.smemBytes),
			"param_types":    strings.Join(types, ","),
			"tile_registers": strconv.Itoa(g.maxTileRegs),
		},
	}
	if len(g.asserts) > 0 {
		a.Meta[jit.AssertsMeta] = jit.EncodeAsserts(g.asserts)
	}
	return a, nil
}

// ParamTypes parses an artifact's "param_types" meta back into types.
func ParamTypes(a *jit.Artifact) ([]ir.Type, error) {
	s := a.Meta["param_types"]
	if s == "" {
		return nil, nil
	}
	var out []ir.Type
	for _, p := range strings.Split(s, ",") {
		t := ir.Type{}
		if strings.HasPrefix(p, "*") {
			t.Ptr = true
			p = p[1:]
		}
		d, ok := ir.ParseDType(p)
		if !ok {
			return nil, fmt.Errorf("ptx artifact %s: bad parameter type %q in meta", a.Name, p)
		}
		t.Elem = d
		out = append(out, t)
	}
	return out, nil
}

// ValidArch reports whether arch is one the generator targets.
func ValidArch(arch string) bool {
	_, ok := maxSharedBytes[arch]
	return ok
}
