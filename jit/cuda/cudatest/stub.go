package cudatest

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/rand"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"
	"unsafe"

	"github.com/widejit/widejit/internal/half"
	"github.com/widejit/widejit/jit"
	"github.com/widejit/widejit/jit/cuda"
	"github.com/widejit/widejit/jit/cuda/internal/drv"
	"github.com/widejit/widejit/jit/ptx"
	"github.com/widejit/widejit/triton/ir"
)

// stub.go: a CUDA driver written in Go, for tests on machines without a GPU (and without a C
// compiler): the entry points of jit/cuda/internal/drv as Go functions over host memory. Unlike the fake
// libcuda of jit/cuda/testdata/fakecuda.c, which checks the binding's ABI and runs every call at once,
// the stub queues work per stream and runs it only when the host synchronises (or a
// synchronous call needs it), in an order of its choosing among those the streams and events
// allow; it records every operation, and it fails a call that makes two unordered operations
// touch the same memory. Launches run on a host device (the CPU backend in tests): every
// kernel the stub's Device compiles is also compiled for the host.

// Stub error codes (not CUDA's): an ordering violation, and a kernel the stub cannot run.
const (
	stubErrUnordered = 9001
	stubErrNoKernel  = 9002
	errLaunchFailed  = 719 // CUDA_ERROR_LAUNCH_FAILED
	errNotReady      = 600 // CUDA_ERROR_NOT_READY
	errInvalidValue  = 1   // CUDA_ERROR_INVALID_VALUE
	errInvalidHandle = 400 // CUDA_ERROR_INVALID_HANDLE
	errOutOfMemory   = 2   // CUDA_ERROR_OUT_OF_MEMORY
)

// StubOrder is how the stub picks, among the streams whose next operation may run, which runs.
type StubOrder int

const (
	// RoundRobin runs one operation of each stream in turn: one stream's copies run between
	// another's kernels, as on a GPU with copy engines.
	RoundRobin StubOrder = iota
	// LastStreamFirst runs the most recently created stream as far as it can, then the one
	// before: work that is ordered only by issue order, not by events, shows up wrong.
	LastStreamFirst
	// Random picks a stream at random (StubConfig.Seed).
	Random
)

// StubConfig configures a Stub.
type StubConfig struct {
	// Host runs the launches, over copies of the device memory their pointers point into;
	// nil records launches without running them.
	Host jit.Device
	// Order picks the next stream to run; Seed seeds Random.
	Order StubOrder
	Seed  int64
	// MemoryBytes is the device memory (0: 80 GiB).
	MemoryBytes int64
	// Capability is the device's compute capability (zero: 9.0, an H100's).
	Capability [2]int32
	// Options are what the device is opened with (Arch: the PTX arch).
	Options cuda.Options
	// CUDAVersion is what the driver reports supporting (cuDriverGetVersion; 0: 13000).
	CUDAVersion int32
}

// StubOp is one operation the stub recorded, in issue order.
type StubOp struct {
	Seq  int    // issue order, from 0
	Kind string // "upload", "download", "copy", "memset", "launch", "record", "wait", "sync"
	// Stream numbers the stream: 0 the legacy default stream (synchronous copies), then 1,
	// 2, ... in creation order; -1 for a context synchronisation.
	Stream int
	Sync   string // Kind "sync": what the host waited for: "stream", "event" or "context"
	Kernel string // launches: the entry point
	Grid   [3]int // launches
	Bytes  int    // copies
	Pinned bool   // copies: the host side is the stub's page-locked memory (cuMemHostAlloc)
	Event  int    // records and waits: the event's number, from 1
	// Ran is the order in which the stub ran the operation (-1: not yet); Start and End place
	// it on the stub's device clock: each copy direction and the kernels have one engine
	// each, copies move 16 bytes a nanosecond after 2 µs, a launch takes 5 µs plus 1 ns a
	// program.
	Ran        int
	Start, End time.Duration
}

// Stub is a CUDA driver in Go (see stub.go's header). It is safe for concurrent use.
type Stub struct {
	cfg StubConfig
	rnd *rand.Rand

	mu      sync.Mutex
	mem     []*stubAlloc // device allocations, by address
	next    uint64
	used    int64
	pinned  map[uintptr][]byte
	lanes   []*stubLane // by stream number
	handles map[uintptr]int
	events  []*stubEvent // by number - 1
	kernels map[string]*stubKernel
	funcs   map[uintptr]*stubKernel
	modules map[uintptr]*stubKernel
	ops     []*stubOp
	active  []*stubOp // operations the host does not know to have run
	host    vclock    // what the host knows to have run
	hostAt  time.Duration
	ran     int
	rr      int
	engines map[string]time.Duration
	fails   []string
	cstr    map[result][]byte
}

// NewStub makes a stub driver; Open opens its one device.
func NewStub(cfg StubConfig) *Stub {
	if cfg.MemoryBytes <= 0 {
		cfg.MemoryBytes = 80 << 30
	}
	if cfg.CUDAVersion == 0 {
		cfg.CUDAVersion = 13000
	}
	if cfg.Capability == [2]int32{} {
		cfg.Capability = [2]int32{9, 0}
	}
	s := &Stub{cfg: cfg, rnd: rand.New(rand.NewSource(cfg.Seed)), next: 1 << 36, pinned: map[uintptr][]byte{},
		handles: map[uintptr]int{0: 0}, kernels: map[string]*stubKernel{}, funcs: map[uintptr]*stubKernel{},
		modules: map[uintptr]*stubKernel{}, engines: map[string]time.Duration{}, cstr: map[result][]byte{}}
	s.lanes = []*stubLane{{num: 0, blocking: true}}
	return s
}

// Open opens the stub's device as a *cuda.Device whose kernels are compiled for the device's
// PTX target and for the host's target.
func (s *Stub) Open(ordinal int) (*cuda.Device, error) {
	return cuda.OpenDriver(s.driver(), ordinal, s.cfg.Options, func(t jit.Target) jit.Target { return stubTarget{ptx: t, stub: s} })
}

// result is a CUresult.
type result = drv.Result

// cString copies a NUL-terminated C string.
func cString(p *byte) string {
	var b []byte
	for ptr := unsafe.Pointer(p); *(*byte)(ptr) != 0; ptr = unsafe.Add(ptr, 1) {
		b = append(b, *(*byte)(ptr))
	}
	return string(b)
}

// Ops returns the operations recorded so far, in issue order.
func (s *Stub) Ops() []StubOp {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]StubOp, len(s.ops))
	for i, op := range s.ops {
		out[i] = op.StubOp
	}
	return out
}

// HappensBefore reports whether operation a (a Seq) is ordered before operation b: by a
// stream's issue order, events, synchronous calls or the host's synchronisations.
func (s *Stub) HappensBefore(a, b int) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if a < 0 || b < 0 || a >= len(s.ops) || b >= len(s.ops) || a == b {
		return false
	}
	return s.ops[a].before(s.ops[b])
}

// Failures lists the ordering violations and failed launches so far.
func (s *Stub) Failures() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.fails...)
}

// vclock is a vector clock over the streams: entry i counts the operations of stream i that
// come before.
type vclock []int

func (v vclock) at(i int) int {
	if i >= 0 && i < len(v) {
		return v[i]
	}
	return 0
}

func (v vclock) join(w vclock) vclock {
	out := append(vclock(nil), v...)
	for len(out) < len(w) {
		out = append(out, 0)
	}
	for i, x := range w {
		out[i] = max(out[i], x)
	}
	return out
}

type stubLane struct {
	num      int
	handle   uintptr
	blocking bool // ordered with the legacy default stream (created without CU_STREAM_NON_BLOCKING)
	clock    vclock
	queue    []*stubOp // issued, not yet run
	ran      int       // operations run
	ends     []time.Duration
	at       time.Duration // when its last operation ended
}

type stubEvent struct {
	num     int
	timing  bool
	clock   vclock // of the latest record, when issued
	rec     *stubOp
	removed bool
}

type stubAlloc struct {
	base uint64
	data []byte
}

type stubKernel struct {
	ptx    string
	name   string
	params []ir.Type
	host   *jit.Artifact
	loaded jit.Kernel

	asserts []jit.DeviceAssert // the PTX's, whose flag buffer follows params
}

// touch is memory an operation reads or writes: a byte range of a device allocation or of
// host memory; a launch's pointer is a one-byte range at the address (what a kernel reads
// from there is not known before it runs).
type touch struct {
	alloc  *stubAlloc // nil: host memory (absolute addresses)
	lo, hi uint64
	write  bool
	ptr    bool // a launch's pointer argument
}

type stubOp struct {
	StubOp
	lane    int
	clock   vclock
	wait    vclock // waits: the clock the stream waits for
	touches []touch
	run     func(op *stubOp) error
	dur     time.Duration
	engine  string
	notLo   time.Duration              // not before: what the host had seen run when it issued the op
	event   *stubEvent                 // records
	peers   []*stubOp                  // ops unordered with this one when it was issued (launches)
	wrote   map[*stubAlloc][][2]uint64 // launches that ran: the bytes they changed
}

// before reports whether op is ordered before o.
func (op *stubOp) before(o *stubOp) bool {
	switch {
	case op == o:
		return false
	case op.lane < 0: // the host waited: everything issued later comes after
		return o.Seq > op.Seq
	}
	return op.clock.at(op.lane) <= o.clock.at(op.lane)
}

func (op *stubOp) describe() string {
	what := op.Kind
	if op.Kernel != "" {
		what += " of " + op.Kernel
	}
	if op.Bytes > 0 {
		what += fmt.Sprintf(" (%d bytes)", op.Bytes)
	}
	return fmt.Sprintf("%s (operation %d, stream %d)", what, op.Seq, op.Stream)
}

// fail records a violation and returns its code; cuGetErrorString then returns msg.
func (s *Stub) fail(code result, msg string) result {
	s.fails = append(s.fails, msg)
	s.cstr[-code] = append([]byte(msg), 0)
	return code
}

func (s *Stub) lane(h uintptr) (*stubLane, bool) {
	i, ok := s.handles[h]
	if !ok {
		return nil, false
	}
	return s.lanes[i], true
}

// issue queues op on lane l after checking it against every operation it is not ordered
// with; sync operations (lane 0) run at once.
func (s *Stub) issue(l *stubLane, op *stubOp) result {
	clock := l.clock.join(s.host)
	if l.blocking {
		// the legacy default stream's work is synchronous here: the host has seen it all
		clock = clock.join(s.lanes[0].clock)
	}
	for len(clock) <= l.num {
		clock = append(clock, 0)
	}
	clock[l.num]++
	op.Seq, op.Stream, op.lane, op.clock, op.Ran, op.notLo = len(s.ops), l.num, l.num, clock, -1, s.hostAt
	for _, p := range s.active {
		if p.before(op) {
			continue
		}
		if op.Kind == "launch" {
			op.peers = append(op.peers, p)
		}
		if msg := conflict(p, op); msg != "" {
			return s.fail(stubErrUnordered, msg) // refused: neither queued nor in the log
		}
	}
	l.clock = append(vclock(nil), clock...)
	s.ops = append(s.ops, op)
	s.active = append(s.active, op)
	l.queue = append(l.queue, op)
	return 0
}

// conflict says why two unordered operations may not run in either order, or "".
func conflict(a, b *stubOp) string {
	for _, x := range a.touches {
		for _, y := range b.touches {
			if x.alloc != y.alloc || x.hi <= y.lo || y.hi <= x.lo || (x.ptr && y.ptr) || (!x.write && !y.write && !x.ptr && !y.ptr) {
				continue
			}
			where := "device memory"
			if x.alloc == nil {
				where = "host memory"
			}
			return fmt.Sprintf("stub: %s and %s touch the same %s (bytes %#x..%#x), and no stream order, event or synchronisation orders them",
				a.describe(), b.describe(), where, max(x.lo, y.lo), min(x.hi, y.hi))
		}
	}
	return ""
}

// runUntil runs queued operations, in the configured order, until every operation counted
// by target has run.
func (s *Stub) runUntil(target vclock) result {
	for {
		var ready []*stubLane
		for _, l := range s.lanes {
			if len(l.queue) == 0 || l.ran >= target.at(l.num) {
				continue
			}
			if op := l.queue[0]; op.Kind != "wait" || s.reached(op.wait) {
				ready = append(ready, l)
			}
		}
		if len(ready) == 0 {
			for _, l := range s.lanes {
				if l.ran < target.at(l.num) {
					return s.fail(errInvalidValue, fmt.Sprintf("stub: stream %d cannot go on: %s waits for work that never runs", l.num, l.queue[0].describe()))
				}
			}
			return 0
		}
		if r := s.runOp(s.pick(ready)); r != 0 {
			return r
		}
	}
}

// reached reports whether every operation counted by c has run.
func (s *Stub) reached(c vclock) bool {
	for i, n := range c {
		if s.lanes[i].ran < n {
			return false
		}
	}
	return true
}

func (s *Stub) pick(ready []*stubLane) *stubLane {
	switch s.cfg.Order {
	case LastStreamFirst:
		return ready[len(ready)-1]
	case Random:
		return ready[s.rnd.Intn(len(ready))]
	}
	for _, l := range ready {
		if l.num > s.rr {
			s.rr = l.num
			return l
		}
	}
	s.rr = ready[0].num
	return ready[0]
}

// runOp runs the next operation of l and places it on the device clock.
func (s *Stub) runOp(l *stubLane) result {
	op := l.queue[0]
	l.queue = l.queue[1:]
	start := max(l.at, op.notLo)
	if op.Kind == "wait" {
		for i, n := range op.wait {
			if n > 0 {
				start = max(start, s.lanes[i].ends[n-1])
			}
		}
	}
	if op.engine != "" {
		start = max(start, s.engines[op.engine])
	}
	op.Ran, op.Start, op.End = s.ran, start, start+op.dur
	s.ran++
	if op.engine != "" {
		s.engines[op.engine] = op.End
	}
	l.at = op.End
	l.ran++
	l.ends = append(l.ends, op.End)
	if op.run != nil {
		if err := op.run(op); err != nil {
			code := result(errLaunchFailed)
			if strings.HasPrefix(err.Error(), "stub: ") {
				code = stubErrUnordered
			}
			return s.fail(code, err.Error())
		}
	}
	return 0
}

// synced runs what clock counts and records that the host waited for it (a "sync" operation
// of kind, unless kind is empty): those operations are known to have run, so they order
// before everything issued later and need no more checks.
func (s *Stub) synced(kind string, stream int, clock vclock) result {
	if r := s.runUntil(clock); r != 0 {
		return r
	}
	s.host = s.host.join(clock)
	for i, n := range clock {
		if n > 0 {
			s.hostAt = max(s.hostAt, s.lanes[i].ends[n-1])
		}
	}
	if kind != "" { // a synchronous call is in the log as itself
		op := &stubOp{StubOp: StubOp{Seq: len(s.ops), Kind: "sync", Sync: kind, Stream: stream, Ran: s.ran, Start: s.hostAt, End: s.hostAt}, lane: -1, clock: s.host}
		s.ran++
		s.ops = append(s.ops, op)
	}
	kept := s.active[:0]
	for _, p := range s.active {
		if p.clock.at(p.lane) > s.host.at(p.lane) {
			kept = append(kept, p)
		}
	}
	s.active = kept
	return 0
}

// all is the clock of everything issued so far.
func (s *Stub) all() vclock {
	var c vclock
	for _, l := range s.lanes {
		c = c.join(l.clock)
	}
	return c
}

// blocking is the clock of everything issued on the streams a synchronous call waits for.
func (s *Stub) blocking() vclock {
	var c vclock
	for _, l := range s.lanes {
		if l.blocking {
			c = c.join(l.clock)
		}
	}
	return c
}

// syncCall issues a synchronous call on the legacy default stream: it waits for the blocking
// streams' work, runs, and the host has seen it run.
func (s *Stub) syncCall(op *stubOp) result {
	if r := s.runUntil(s.blocking()); r != 0 {
		return r
	}
	l := s.lanes[0]
	l.clock = l.clock.join(s.blocking())
	if r := s.issue(l, op); r != 0 {
		return r
	}
	if r := s.runUntil(op.clock); r != 0 {
		return r
	}
	return s.synced("", 0, op.clock)
}

// find is the allocation holding device address p (its end included, as for an empty
// buffer's pointer) and the offset into it.
func (s *Stub) find(p uint64) (*stubAlloc, uint64) {
	i := sort.Search(len(s.mem), func(i int) bool { return s.mem[i].base+uint64(len(s.mem[i].data)) >= p })
	if i < len(s.mem) && s.mem[i].base <= p {
		return s.mem[i], p - s.mem[i].base
	}
	return nil, 0
}

// region is n bytes at device address p as a touch, or an error code.
func (s *Stub) region(p uint64, n uint64, write bool) (touch, []byte, bool) {
	a, off := s.find(p)
	if a == nil || off+n > uint64(len(a.data)) {
		return touch{}, nil, false
	}
	return touch{alloc: a, lo: p, hi: p + n, write: write}, a.data[off : off+n], true
}

func hostTouch(p unsafe.Pointer, n uint64, write bool) touch {
	return touch{lo: uint64(uintptr(p)), hi: uint64(uintptr(p)) + n, write: write}
}

func copyCost(n uint64) time.Duration { return 2*time.Microsecond + time.Duration(n/16) }

// copyOp is a copy of n bytes to dst from src (one of them host memory) as an operation.
func (s *Stub) copyOp(kind string, dev uint64, host unsafe.Pointer, n uint64) (*stubOp, result) {
	toDevice := kind == "upload"
	t, mem, ok := s.region(dev, n, toDevice)
	if !ok {
		return nil, s.fail(errInvalidValue, fmt.Sprintf("stub: %s of %d bytes at %#x, outside every device allocation", kind, n, dev))
	}
	hostMem := unsafe.Slice((*byte)(host), n)
	_, pinned := s.pinnedAt(host, n)
	op := &stubOp{StubOp: StubOp{Kind: kind, Bytes: int(n), Pinned: pinned}, dur: copyCost(n),
		touches: []touch{t, hostTouch(host, n, !toDevice)}, engine: "copy " + kind}
	op.run = func(*stubOp) error {
		if toDevice {
			copy(mem, hostMem)
		} else {
			copy(hostMem, mem)
		}
		return nil
	}
	return op, 0
}

// pinnedAt reports whether [p, p+n) lies in one page-locked allocation.
func (s *Stub) pinnedAt(p unsafe.Pointer, n uint64) ([]byte, bool) {
	for base, b := range s.pinned {
		if uintptr(p) >= base && uint64(uintptr(p)-base)+n <= uint64(len(b)) {
			return b, true
		}
	}
	return nil, false
}

// driver is the stub's entry points.
func (s *Stub) driver() *drv.API {
	const ctx = 0xc0
	locked := func(f func() result) result {
		s.mu.Lock()
		defer s.mu.Unlock()
		return f()
	}
	d := &drv.API{
		CuInit:             func(uint32) result { return 0 },
		CuDriverGetVersion: func(v *int32) result { *v = s.cfg.CUDAVersion; return 0 },
		CuGetErrorName: func(r result, p **byte) result {
			return locked(func() result {
				name := map[result]string{stubErrUnordered: "STUB_UNORDERED_ACCESS", stubErrNoKernel: "STUB_NO_HOST_KERNEL", errLaunchFailed: "CUDA_ERROR_LAUNCH_FAILED",
					errNotReady: "CUDA_ERROR_NOT_READY", errInvalidValue: "CUDA_ERROR_INVALID_VALUE", errInvalidHandle: "CUDA_ERROR_INVALID_HANDLE",
					errOutOfMemory: "CUDA_ERROR_OUT_OF_MEMORY", drv.ErrNoDevice: "CUDA_ERROR_NO_DEVICE", 218: "CUDA_ERROR_INVALID_PTX"}[r]
				if name == "" {
					name = "CUDA_ERROR_UNKNOWN"
				}
				b := append([]byte(name), 0)
				s.cstr[r] = b
				*p = &b[0]
				return 0
			})
		},
		CuGetErrorString: func(r result, p **byte) result {
			return locked(func() result {
				b, ok := s.cstr[-r]
				if !ok {
					b = append([]byte("stub driver error"), 0)
				}
				*p = &b[0]
				return 0
			})
		},
		CuDeviceGetCount: func(n *int32) result { *n = 1; return 0 },
		CuDeviceGet: func(d *int32, i int32) result {
			if i != 0 {
				return 101
			}
			*d = 0
			return 0
		},
		CuDeviceGetName: func(name *byte, n int32, _ int32) result {
			copy(unsafe.Slice(name, n), append([]byte("widejit stub GPU"), 0))
			return 0
		},
		CuDeviceGetAttribute: func(v *int32, attr int32, _ int32) result {
			vals := map[int32]int32{drv.AttrComputeCapabilityMajor: s.cfg.Capability[0], drv.AttrComputeCapabilityMinor: s.cfg.Capability[1], drv.AttrMultiprocessorCount: 132,
				drv.AttrMaxSharedPerBlockOptin: 232448, drv.AttrMaxThreadsPerBlock: 1024}
			x, ok := vals[attr]
			if !ok {
				return errInvalidValue
			}
			*v = x
			return 0
		},
		CuDeviceTotalMem:          func(b *uint64, _ int32) result { *b = uint64(s.cfg.MemoryBytes); return 0 },
		CuDevicePrimaryCtxRetain:  func(c *uintptr, _ int32) result { *c = ctx; return 0 },
		CuDevicePrimaryCtxRelease: func(int32) result { return 0 },
		CuCtxSetCurrent: func(c uintptr) result {
			if c != ctx {
				return 201
			}
			return 0
		},
		CuCtxSynchronize: func() result {
			return locked(func() result { return s.synced("context", -1, s.all()) })
		},
		CuModuleLoadDataEx:  s.moduleLoad,
		CuModuleUnload:      func(m uintptr) result { return locked(func() result { delete(s.modules, m); return 0 }) },
		CuModuleGetFunction: s.moduleGetFunction,
		CuFuncSetAttribute:  func(uintptr, int32, int32) result { return 0 },
		CuLaunchKernel:      s.launchKernel,
		CuMemAlloc: func(p *uint64, size uint64) result {
			return locked(func() result {
				if s.used+int64(size) > s.cfg.MemoryBytes {
					return errOutOfMemory
				}
				s.used += int64(size)
				a := &stubAlloc{base: s.next, data: make([]byte, size)}
				s.next += (size+255)/256*256 + 4096 // a gap: a pointer past one allocation is in none
				s.mem = append(s.mem, a)
				*p = a.base
				return 0
			})
		},
		CuMemFree: func(p uint64) result {
			return locked(func() result {
				if r := s.synced("free", -1, s.all()); r != 0 { // cuMemFree waits for the device
					return r
				}
				for i, a := range s.mem {
					if a.base == p {
						s.used -= int64(len(a.data))
						s.mem = append(s.mem[:i], s.mem[i+1:]...)
						return 0
					}
				}
				return errInvalidValue
			})
		},
		CuMemcpyHtoD: func(dst uint64, src unsafe.Pointer, n uint64) result {
			return locked(func() result { return s.syncCopy("upload", dst, src, n) })
		},
		CuMemcpyDtoH: func(dst unsafe.Pointer, src uint64, n uint64) result {
			return locked(func() result { return s.syncCopy("download", src, dst, n) })
		},
		CuMemcpyDtoD: func(dst, src uint64, n uint64) result {
			return locked(func() result {
				dt, dm, ok1 := s.region(dst, n, true)
				st, sm, ok2 := s.region(src, n, false)
				if !ok1 || !ok2 {
					return s.fail(errInvalidValue, "stub: device copy outside the allocations")
				}
				return s.syncCall(&stubOp{StubOp: StubOp{Kind: "copy", Bytes: int(n)}, touches: []touch{dt, st}, dur: copyCost(n),
					run: func(*stubOp) error { copy(dm, sm); return nil }})
			})
		},
		CuMemcpyHtoDAsync: func(dst uint64, src unsafe.Pointer, n uint64, h uintptr) result {
			return locked(func() result { return s.asyncCopy("upload", dst, src, n, h) })
		},
		CuMemcpyDtoHAsync: func(dst unsafe.Pointer, src uint64, n uint64, h uintptr) result {
			return locked(func() result { return s.asyncCopy("download", src, dst, n, h) })
		},
		CuMemsetD8: func(dst uint64, v uint8, n uint64) result {
			return locked(func() result {
				t, mem, ok := s.region(dst, n, true)
				if !ok {
					return s.fail(errInvalidValue, "stub: memset outside the allocations")
				}
				return s.syncCall(&stubOp{StubOp: StubOp{Kind: "memset", Bytes: int(n)}, touches: []touch{t},
					run: func(*stubOp) error {
						for i := range mem {
							mem[i] = v
						}
						return nil
					}})
			})
		},
		CuStreamCreate: func(h *uintptr, flags uint32) result {
			return locked(func() result {
				if flags > drv.StreamNonBlocking {
					return errInvalidValue
				}
				l := &stubLane{num: len(s.lanes), handle: uintptr(0x5000 + len(s.lanes)), blocking: flags == 0}
				s.lanes = append(s.lanes, l)
				s.handles[l.handle] = l.num
				*h = l.handle
				return 0
			})
		},
		CuStreamDestroy: func(h uintptr) result {
			return locked(func() result {
				if _, ok := s.lane(h); !ok || h == 0 {
					return errInvalidHandle
				}
				delete(s.handles, h) // queued work still runs
				return 0
			})
		},
		CuStreamSynchronize: func(h uintptr) result {
			return locked(func() result {
				l, ok := s.lane(h)
				if !ok {
					return errInvalidHandle
				}
				return s.synced("stream", l.num, l.clock)
			})
		},
		CuStreamWaitEvent: func(h uintptr, e uintptr, flags uint32) result {
			return locked(func() result {
				if flags != 0 {
					return errInvalidValue
				}
				l, ev, op, r := s.eventOp("wait", h, e)
				if r == 0 {
					l.clock = l.clock.join(ev.clock) // later work on l comes after the recorded work
					op.clock = l.clock
				}
				return r
			})
		},
		CuEventCreate: func(e *uintptr, flags uint32) result {
			return locked(func() result {
				if flags&^drv.EventDisableTiming != 0 {
					return errInvalidValue
				}
				ev := &stubEvent{num: len(s.events) + 1, timing: flags == 0}
				s.events = append(s.events, ev)
				*e = uintptr(0x9000 + ev.num)
				return 0
			})
		},
		CuEventRecord: func(e uintptr, h uintptr) result {
			return locked(func() result {
				_, ev, op, r := s.eventOp("record", h, e)
				if r == 0 {
					ev.clock, ev.rec = op.clock, op
				}
				return r
			})
		},
		CuEventSynchronize: func(e uintptr) result {
			return locked(func() result {
				ev := s.event(e)
				if ev == nil {
					return errInvalidHandle
				}
				return s.synced("event", -1, ev.clock)
			})
		},
		CuEventElapsedTime: func(ms *float32, a, b uintptr) result {
			return locked(func() result {
				ea, eb := s.event(a), s.event(b)
				switch {
				case ea == nil || eb == nil || !ea.timing || !eb.timing:
					return errInvalidHandle
				case ea.rec == nil || eb.rec == nil || ea.rec.Ran < 0 || eb.rec.Ran < 0:
					return errNotReady
				}
				*ms = float32(float64(eb.rec.End-ea.rec.End) / float64(time.Millisecond))
				return 0
			})
		},
		CuEventDestroy: func(e uintptr) result {
			return locked(func() result {
				ev := s.event(e)
				if ev == nil {
					return errInvalidHandle
				}
				ev.removed = true
				return 0
			})
		},
		CuMemHostAlloc: func(p *unsafe.Pointer, n uint64, flags uint32) result {
			return locked(func() result {
				b := make([]byte, max(n, 1))
				s.pinned[uintptr(unsafe.Pointer(&b[0]))] = b
				*p = unsafe.Pointer(&b[0])
				return 0
			})
		},
		CuMemFreeHost: func(p unsafe.Pointer) result {
			return locked(func() result {
				if _, ok := s.pinned[uintptr(p)]; !ok {
					return errInvalidValue
				}
				if r := s.synced("free", -1, s.all()); r != 0 { // cuMemFreeHost waits for the device
					return r
				}
				delete(s.pinned, uintptr(p))
				return 0
			})
		},
	}
	return d
}

func (s *Stub) event(h uintptr) *stubEvent {
	i := int(h) - 0x9000 - 1
	if i < 0 || i >= len(s.events) || s.events[i].removed {
		return nil
	}
	return s.events[i]
}

// eventOp issues a "record" or a "wait" of event e on stream h.
func (s *Stub) eventOp(kind string, h, e uintptr) (*stubLane, *stubEvent, *stubOp, result) {
	l, ok := s.lane(h)
	ev := s.event(e)
	if !ok || ev == nil {
		return nil, nil, nil, errInvalidHandle
	}
	op := &stubOp{StubOp: StubOp{Kind: kind, Event: ev.num}}
	if kind == "wait" {
		op.wait = ev.clock
	}
	return l, ev, op, s.issue(l, op)
}

func (s *Stub) syncCopy(kind string, dev uint64, host unsafe.Pointer, n uint64) result {
	op, r := s.copyOp(kind, dev, host, n)
	if r != 0 {
		return r
	}
	return s.syncCall(op)
}

func (s *Stub) asyncCopy(kind string, dev uint64, host unsafe.Pointer, n uint64, h uintptr) result {
	l, ok := s.lane(h)
	if !ok {
		return errInvalidHandle
	}
	op, r := s.copyOp(kind, dev, host, n)
	if r != 0 {
		return r
	}
	return s.issue(l, op)
}

// stubTarget is the device's PTX target that also compiles every kernel for the stub's host,
// so that the stub can run the PTX it is given.
type stubTarget struct {
	ptx  jit.Target
	stub *Stub
}

// Key differs from the PTX target's: a kernel cache shared with real runs never serves the
// stub PTX it did not see compiled.
func (t stubTarget) Key() string { return t.ptx.Key() + "+stub" }

func (t stubTarget) Codegen(f *ir.Func, spec jit.Spec) (*jit.Artifact, error) {
	var host *jit.Artifact
	if h := t.stub.cfg.Host; h != nil {
		var err error
		// before the PTX generator, which may rewrite f
		if host, err = h.Target().Codegen(f, spec); err != nil {
			return nil, fmt.Errorf("stub: compiling for the host: %w", err)
		}
	}
	a, err := t.ptx.Codegen(f, spec)
	if err != nil {
		return nil, err
	}
	params, err := ptx.ParamTypes(a)
	if err != nil {
		return nil, err
	}
	asserts, err := jit.KernelAsserts(a)
	if err != nil {
		return nil, err
	}
	t.stub.mu.Lock()
	t.stub.kernels[string(a.Payload)] = &stubKernel{ptx: string(a.Payload), name: a.Name, params: params, host: host, asserts: asserts}
	t.stub.mu.Unlock()
	return a, nil
}

func (s *Stub) moduleLoad(m *uintptr, image unsafe.Pointer, _ uint32, _ *int32, _ *uintptr) result {
	text := cString((*byte)(image))
	s.mu.Lock()
	defer s.mu.Unlock()
	k, ok := s.kernels[text]
	if !ok {
		// the message reaches the error through cuGetErrorString, not the JIT log
		return s.fail(stubErrNoKernel, "stub: this PTX was not compiled through the stub device's target (from a kernel cache?); the stub runs only kernels it saw compiled")
	}
	if k.loaded == nil && k.host != nil {
		hk, err := s.cfg.Host.Load(k.host)
		if err != nil {
			return s.fail(stubErrNoKernel, fmt.Sprintf("stub: loading %s on the host: %v", k.name, err))
		}
		k.loaded = hk
	}
	h := uintptr(0x7000 + len(s.modules) + len(s.funcs))
	s.modules[h] = k
	*m = h
	return 0
}

func (s *Stub) moduleGetFunction(f *uintptr, m uintptr, name *byte) result {
	s.mu.Lock()
	defer s.mu.Unlock()
	k, ok := s.modules[m]
	if !ok {
		return errInvalidHandle
	}
	if cString(name) != k.name {
		return 500 // CUDA_ERROR_NOT_FOUND
	}
	h := uintptr(0xf000 + len(s.funcs))
	s.funcs[h] = k
	*f = h
	return 0
}

func (s *Stub) launchKernel(f uintptr, gx, gy, gz, bx, by, bz, smem uint32, h uintptr, params *unsafe.Pointer, extra *unsafe.Pointer) result {
	s.mu.Lock()
	defer s.mu.Unlock()
	k, ok := s.funcs[f]
	l, ok2 := s.lane(h)
	if !ok || !ok2 || gx == 0 || gy == 0 || gz == 0 || bx == 0 || by != 1 || bz != 1 {
		return errInvalidValue
	}
	var cells []uint64
	nparams := len(k.params)
	if k.asserts != nil {
		nparams++ // the assert flag buffer
	}
	if nparams > 0 {
		for _, p := range unsafe.Slice(params, nparams) {
			cells = append(cells, *(*uint64)(p))
		}
	}
	grid := [3]int{int(gx), int(gy), int(gz)}
	op := &stubOp{StubOp: StubOp{Kind: "launch", Kernel: k.name, Grid: grid}, engine: "compute",
		dur: 5*time.Microsecond + time.Duration(int64(gx)*int64(gy)*int64(gz))}
	for i, t := range k.params {
		if !t.Ptr {
			continue
		}
		a, _ := s.find(cells[i])
		if a == nil {
			return s.fail(errInvalidValue, fmt.Sprintf("stub: launch of %s: parameter %d points at %#x, in no device allocation", k.name, i, cells[i]))
		}
		op.touches = append(op.touches, touch{alloc: a, lo: cells[i], hi: cells[i] + 1, ptr: true})
	}
	if k.asserts != nil {
		p := cells[len(k.params)]
		a, off := s.find(p)
		if a == nil || off+jit.AssertFlagBytes > uint64(len(a.data)) {
			return s.fail(errInvalidValue, fmt.Sprintf("stub: launch of %s: the assert flag %#x is not %d bytes of a device allocation", k.name, p, jit.AssertFlagBytes))
		}
		op.touches = append(op.touches, touch{alloc: a, lo: p, hi: p + 1, ptr: true})
	}
	if k.loaded != nil {
		op.run = func(op *stubOp) error { return s.runOnHost(op, k, grid, cells) }
	}
	return s.issue(l, op)
}

// runOnHost runs a launch on the host device over copies of the allocations its pointers
// point into, writes back what changed, and checks what it wrote against the operations
// it is not ordered with.
func (s *Stub) runOnHost(op *stubOp, k *stubKernel, grid [3]int, cells []uint64) error {
	host := s.cfg.Host
	type copied struct {
		buf jit.Buffer
		dt  ir.DType
	}
	bufs := map[*stubAlloc]*copied{}
	var order []*stubAlloc
	defer func() {
		for _, c := range bufs {
			host.Free(c.buf)
		}
	}()
	args := make([]jit.Arg, len(k.params))
	for i, t := range k.params {
		if !t.Ptr {
			args[i] = jit.Arg{Scalar: scalarArg(t.Elem, cells[i])}
			continue
		}
		a, off := s.find(cells[i])
		size := uint64(t.Elem.Size())
		c := bufs[a]
		if c == nil {
			buf, err := host.Alloc(t.Elem, len(a.data)/int(size))
			if err != nil {
				return err
			}
			c = &copied{buf, t.Elem}
			bufs[a] = c
			order = append(order, a)
			if err := host.Upload(buf, a.data[:buf.Len()*int(size)]); err != nil {
				return err
			}
		}
		if c.dt != t.Elem || off%size != 0 {
			return fmt.Errorf("stub cannot run %s: parameter %d reads an allocation as %s at byte %d, which the launch also reads as %s", k.name, i, t.Elem, off, c.dt)
		}
		args[i] = jit.Arg{Buf: c.buf, Offset: int(off / size)}
	}
	if err := k.loaded.Launch(grid, args); err != nil {
		var ae *jit.AssertError
		if k.asserts == nil || !errors.As(err, &ae) {
			return fmt.Errorf("launch of %s on the stub's host: %w", k.name, err)
		}
		// An assert failed on the host: write the flag words as the PTX does.
		if err := s.raiseFlag(k, cells[len(k.params)], ae); err != nil {
			return err
		}
	}
	written := map[*stubAlloc][][2]uint64{}
	for _, a := range order {
		c := bufs[a]
		after := make([]byte, c.buf.Len()*c.dt.Size())
		if err := host.Download(c.buf, after); err != nil {
			return err
		}
		// whole elements: a float's low bytes are often unchanged
		size := c.dt.Size()
		changed := func(i int) bool { return string(after[i:i+size]) != string(a.data[i:i+size]) }
		for lo := 0; lo < len(after); lo += size {
			if !changed(lo) {
				continue
			}
			hi := lo + size
			for hi < len(after) && changed(hi) {
				hi += size
			}
			written[a] = append(written[a], [2]uint64{a.base + uint64(lo), a.base + uint64(hi)})
			lo = hi
		}
		copy(a.data, after)
	}
	return s.checkWrites(op, written)
}

// raiseFlag writes the failure of assert ae, which the host reported, to the flag buffer at
// p (jit.AssertsMeta) unless an earlier failure holds it, as the PTX's atomic CAS does.
func (s *Stub) raiseFlag(k *stubKernel, p uint64, ae *jit.AssertError) error {
	id := slices.Index(k.asserts, jit.DeviceAssert{Pos: ae.Pos, Msg: ae.Msg}) + 1
	if id == 0 {
		return fmt.Errorf("stub: %s failed an assert its PTX does not list: %w", k.name, ae)
	}
	a, off := s.find(p)
	flag := a.data[off : off+jit.AssertFlagBytes]
	if binary.LittleEndian.Uint32(flag) != 0 {
		return nil
	}
	binary.LittleEndian.PutUint32(flag, uint32(id))
	for i, v := range ae.Program {
		binary.LittleEndian.PutUint32(flag[4*(i+1):], uint32(v))
	}
	// Not recorded as a write: launches on unordered streams race for the flag by design
	// (an atomic CAS decides), which is no ordering error.
	return nil
}

// checkWrites checks what launch op wrote (sorted byte ranges per allocation) against the
// operations not ordered with it: those issued before it that it was not ordered after, and
// those issued since that are not ordered after it. Such an operation may not touch those
// bytes: a copy's range, another launch's pointer, or what another launch that ran wrote.
func (s *Stub) checkWrites(op *stubOp, written map[*stubAlloc][][2]uint64) error {
	op.wrote = written
	if len(written) == 0 {
		return nil
	}
	others := append([]*stubOp(nil), op.peers...)
	for _, q := range s.ops[op.Seq+1:] {
		if q.lane >= 0 && !op.before(q) {
			others = append(others, q)
		}
	}
	for _, q := range others {
		theirs := q.touches
		for a, ranges := range q.wrote {
			for _, r := range ranges {
				theirs = append(theirs, touch{alloc: a, lo: r[0], hi: r[1], write: true})
			}
		}
		for _, t := range theirs {
			ranges := written[t.alloc]
			i := sort.Search(len(ranges), func(i int) bool { return ranges[i][1] > t.lo })
			if t.alloc == nil || i == len(ranges) || ranges[i][0] >= t.hi {
				continue
			}
			mine := &stubOp{StubOp: op.StubOp, touches: []touch{{alloc: t.alloc, lo: ranges[i][0], hi: ranges[i][1], write: true}}}
			return fmt.Errorf("%s", conflict(mine, &stubOp{StubOp: q.StubOp, touches: []touch{t}}))
		}
	}
	return nil
}

// scalarArg decodes a scalar parameter's 8-byte cell as jit.Arg wants it.
func scalarArg(d ir.DType, v uint64) any {
	switch d {
	case ir.I1:
		return v&1 != 0
	case ir.F32:
		return float64(math.Float32frombits(uint32(v)))
	case ir.F64:
		return math.Float64frombits(v)
	case ir.F16:
		return float64(half.F16ToF32(uint16(v)))
	case ir.BF16:
		return float64(half.BF16ToF32(uint16(v)))
	case ir.I8:
		return int64(int8(v))
	case ir.I16:
		return int64(int16(v))
	case ir.I32:
		return int64(int32(v))
	case ir.U8:
		return int64(uint8(v))
	case ir.U16:
		return int64(uint16(v))
	case ir.U32:
		return int64(uint32(v))
	}
	return int64(v)
}
