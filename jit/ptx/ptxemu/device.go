package ptxemu

import (
	"fmt"
	"math"
	"strconv"
	"sync"

	"github.com/widejit/widejit/jit"
	"github.com/widejit/widejit/triton/ir"
)

// Device runs PTX artifacts on the emulator as a jit.Device, so whole plans can run through
// the PTX backend without a GPU: a GPU's capabilities, its kernels compiled for target and
// their parameters typed by paramTypes (ptx.Target and ptx.ParamTypes: this package does not
// import ptx, whose own tests use it).
type Device struct {
	target     jit.Target
	paramTypes func(*jit.Artifact) ([]ir.Type, error)

	mu  sync.Mutex
	mem Memory
}

// NewDevice is an emulated GPU for target.
func NewDevice(target jit.Target, paramTypes func(*jit.Artifact) ([]ir.Type, error)) *Device {
	return &Device{target: target, paramTypes: paramTypes}
}

type emuBuffer struct {
	dt   ir.DType
	n    int
	buf  []byte
	addr uint64
}

func (b *emuBuffer) DType() ir.DType { return b.dt }
func (b *emuBuffer) Len() int        { return b.n }

type emuKernel struct {
	dev    *Device
	prog   *Program
	params []ir.Type
	smem   int

	asserts []jit.DeviceAssert // with the flag buffer at flag (jit.AssertsMeta), if any
	flag    uint64
	flagBuf []byte
}

func (d *Device) Info() jit.DeviceInfo {
	return jit.DeviceInfo{Kind: "cuda", Name: "PTX emulator", Caps: jit.Capabilities{WarpSize: 32, TensorCores: true, DiscreteMemory: true}}
}
func (d *Device) Target() jit.Target { return d.target }
func (d *Device) Load(a *jit.Artifact) (jit.Kernel, error) {
	prog, err := Parse(string(a.Payload))
	if err != nil {
		return nil, err
	}
	params, err := d.paramTypes(a)
	if err != nil {
		return nil, err
	}
	smem, _ := strconv.Atoi(a.Meta["shared_bytes"])
	k := &emuKernel{dev: d, prog: prog, params: params, smem: smem}
	if k.asserts, err = jit.KernelAsserts(a); err != nil {
		return nil, err
	}
	if len(k.asserts) > 0 {
		d.mu.Lock()
		k.flag, k.flagBuf = d.mem.Alloc(jit.AssertFlagBytes)
		d.mu.Unlock()
	}
	return k, nil
}
func (d *Device) Alloc(dt ir.DType, n int) (jit.Buffer, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	addr, buf := d.mem.Alloc(max(n*dt.Size(), 1))
	return &emuBuffer{dt: dt, n: n, buf: buf, addr: addr}, nil
}
func (d *Device) Free(jit.Buffer) {}
func (d *Device) Upload(dst jit.Buffer, src []byte) error {
	copy(dst.(*emuBuffer).buf, src)
	return nil
}
func (d *Device) Download(src jit.Buffer, dst []byte) error {
	copy(dst, src.(*emuBuffer).buf)
	return nil
}
func (d *Device) Sync() error  { return nil }
func (d *Device) Close() error { return nil }

func (k *emuKernel) Name() string { return k.prog.name }
func (k *emuKernel) Launch(grid [3]int, args []jit.Arg) error {
	params := make([]uint64, len(args))
	for i, t := range k.params {
		a := args[i]
		switch {
		case t.Ptr:
			b := a.Buf.(*emuBuffer)
			params[i] = b.addr + uint64(a.Offset*b.dt.Size())
		case t.Elem == ir.F32:
			switch v := a.Scalar.(type) {
			case float64:
				params[i] = uint64(math.Float32bits(float32(v)))
			case int64:
				params[i] = uint64(math.Float32bits(float32(v)))
			default:
				return fmt.Errorf("scalar %T for fp32", a.Scalar)
			}
		default:
			switch v := a.Scalar.(type) {
			case int64:
				params[i] = uint64(v)
			case int:
				params[i] = uint64(v)
			case bool:
				params[i] = b2u(v)
			default:
				return fmt.Errorf("scalar %T for %s", a.Scalar, t)
			}
		}
	}
	if k.asserts != nil {
		params = append(params, k.flag)
	}
	k.dev.mu.Lock()
	defer k.dev.mu.Unlock()
	if err := Run(k.prog, &k.dev.mem, grid, params, k.smem); err != nil {
		return err
	}
	if k.asserts == nil {
		return nil
	}
	// The emulator runs a launch to its end, so the flag is read at once, as a GPU device
	// reads it when it synchronizes; then cleared for the next launch.
	err := jit.FlagError(k.prog.name, k.asserts, k.flagBuf)
	clear(k.flagBuf)
	return err
}
