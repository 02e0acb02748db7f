package cpu

import (
	"context"
	"errors"
	"fmt"
	"github.com/widejit/widejit/internal/half"
	"math"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/widejit/widejit/jit"
	"github.com/widejit/widejit/triton/ir"
)

// Kernel is a program loaded on a CPU device.
type Kernel struct {
	dev  *Device
	prog *program

	// homes[w] is worker w's idle frame; frames holds the rest (more workers than homes,
	// or concurrent launches of the kernel on one worker number).
	homes  []atomic.Pointer[frame]
	mu     sync.Mutex
	frames []*frame
	idle   atomic.Pointer[launch] // the last launch, kept for the next (takeLaunch)

	// programNs is the measured time of one program (ns, a running average; 0: none yet).
	// A launch whose programs add up to less than serialLaunch runs on the caller's
	// goroutine: waking workers costs more than a small launch gains from them.
	programNs atomic.Int64
}

// serialLaunch is the work below which a launch does not use the worker pool. With helpers
// lingering between launches (pool.go), handing a lingering helper work costs a few µs;
// 30 µs when a helper must start, which a run's first launches pay once. Measured on 2 cores
// (AMD Zen 5): at 25 µs the 10-50 µs launches of a small model ran on one core, and the
// LayerNorm-Linear-softmax-LayerNorm block at N = 1 took 75 µs a run (median); at 5 µs, 64.
const serialLaunch = 5 * time.Microsecond

func (k *Kernel) Name() string { return k.prog.fn.Name }

// Func is the IR the kernel was compiled from.
func (k *Kernel) Func() *ir.Func { return k.prog.fn }

// FlushedEpilogueSteps is how many steps of the kernel's epilogue run inside the flush of its
// loop's queued dots (when they are queued: operands read in place), each register block
// through them after its last panel (panels_epilogue.go): a convolution's BatchNorm and
// ReLU; 0 where none is recognised.
func (k *Kernel) FlushedEpilogueSteps() int { return k.prog.flushSteps }

// FusedStores is how many stores of the kernel the flush of its loop's queued dots may run,
// each register block into them after its epilogue (panels_store.go): a convolution's output
// stores; 0 where none is recognised.
func (k *Kernel) FusedStores() int { return k.prog.fusedStores }

// launch is one Launch's state: its bindings (buffers by pointer tag, scalar values), the
// programs handed out, the workers' time, and the error of the lowest failing program. A kernel
// keeps its last launch for the next one, so a launch allocates nothing in the steady state
// (small models made tens of allocations a run, and the garbage collector's work with
// them); concurrent launches of one kernel make their own.
type launch struct {
	k        *Kernel
	bufs     []*Buffer // index = tag - 1 = parameter index; nil for scalars
	names    []string  // parameter names, for messages
	values   []int64   // each parameter's slot value: an encoded pointer, or an int scalar
	floats   []float64 // float scalars
	grid     [3]int64
	total    int64
	shares   []share      // the grid's programs, split among the launch's workers
	busy     atomic.Int64 // the workers' time in programs, summed
	stop     atomic.Bool
	canceled atomic.Bool // the context ended the launch
	errMu    sync.Mutex
	err      error // the error of the lowest-numbered program that failed
	// failedAt is that program's index (math.MaxInt64: none). Programs after it are not
	// started; those before it still run, so a launch in which several programs fail
	// reports the same one however its programs were spread over the workers.
	failedAt atomic.Int64
	// labels, while ProfileLabels is on, is the launch's context with the kernel's name as
	// the pprof label "kernel"; caller is the launching goroutine's own context, which it
	// gets back after the launch.
	labels, caller context.Context
}

// share is one worker's contiguous part of a grid: programs [begin, end), handed out from
// next, first to its worker, then to any worker that has run out of its own. Consecutive
// kernels of a model tile their data alike (program i of a convolution reads the image that
// program i of the padding before it wrote), so a worker that starts on its own part finds
// in its core's cache what it wrote in the launch before; programs taken from one counter in
// any order moved those lines from core to core: on 2 cores the stores and copies of a
// ResBlock at N = 1 took twice their one-core time. Taking what is left of the other parts
// keeps the balance when programs or cores differ.
type share struct {
	next, begin, end int64
	_                [40]byte // a cache line's size each: workers add to their own
}

// split divides total programs into workers shares.
func (l *launch) split(workers int64) {
	if int64(cap(l.shares)) < workers {
		l.shares = make([]share, workers)
	}
	l.shares = l.shares[:workers]
	for w := range workers {
		s := &l.shares[w]
		s.begin, s.end = w*l.total/workers, (w+1)*l.total/workers
		atomic.StoreInt64(&s.next, s.begin)
	}
}

// take hands out the next program of share s, or false once s has none left.
func (s *share) take() (int64, bool) {
	idx := atomic.AddInt64(&s.next, 1) - 1
	return idx, idx < s.end
}

// started counts the programs handed out.
func (l *launch) started() int64 {
	n := int64(0)
	for i := range l.shares {
		s := &l.shares[i]
		n += min(atomic.LoadInt64(&s.next), s.end) - s.begin
	}
	return n
}

// failAt records program idx's error if no lower-numbered program has failed, and skips the
// programs after idx. A program stopped with the launch (errStopped) replaces no other error.
func (l *launch) failAt(idx int64, err error) {
	l.errMu.Lock()
	if idx < l.failedAt.Load() && (l.err == nil || !errors.Is(err, errStopped)) {
		l.err = err
		l.failedAt.Store(idx)
	}
	l.errMu.Unlock()
}

// fail records err if it is the launch's first, and stops the launch.
func (l *launch) fail(err error) {
	l.errMu.Lock()
	if l.err == nil {
		l.err = err
	}
	l.errMu.Unlock()
	l.stop.Store(true)
}

// Pointer encoding: the buffer tag in the high 16 bits, the element offset in the low 48.
const (
	ptrOffsetBits = 48
	ptrOffsetMask = 1<<ptrOffsetBits - 1
)

func makePtr(tag int, off int64) int64 { return int64(tag)<<ptrOffsetBits | off&ptrOffsetMask }
func ptrTag(p int64) int               { return int(uint64(p) >> ptrOffsetBits) }

// ptrOffset sign-extends the 48-bit offset, so an offset that went negative reads negative.
func ptrOffset(p int64) int64 { return p << (64 - ptrOffsetBits) >> (64 - ptrOffsetBits) }

// Wild pointers. An offset that leaves the 48-bit range cannot be encoded; wrapping it would
// alias a valid element (X + offs + 2**48 read X[offs]). Such a pointer keeps its tag with
// the top bit set (tags stay below 2^15), which every later addition carries along and
// resolve reports; masked lanes may hold one harmlessly, as on a GPU.
const (
	ptrWild = -1 << 63
	tagWild = 1 << (63 - ptrOffsetBits)
)

// addOffsets sets z[i] = p[i] advanced by d[i] elements; p or d may have one element, used
// for every lane. A lane whose offset leaves the range becomes wild. The check stays in the
// loop (the call is out of line) so the common case costs a compare per lane.
func (fr *frame) addOffsets(z, p, d []int64) {
	switch {
	case len(p) == 1 && len(z) > 1:
		s := p[0]
		for i, x := range d[:len(z)] {
			r := ptrOffset(s) + x
			if r != ptrOffset(r) { // past ±2^47, or an int64 wrap (|ptrOffset(s)| < 2^47)
				z[i] = fr.wildPtr(s, x)
				continue
			}
			z[i] = s&^ptrOffsetMask | r&ptrOffsetMask
		}
	case len(d) == 1 && len(z) > 1:
		s := d[0]
		for i, x := range p[:len(z)] {
			r := ptrOffset(x) + s
			if r != ptrOffset(r) {
				z[i] = fr.wildPtr(x, s)
				continue
			}
			z[i] = x&^ptrOffsetMask | r&ptrOffsetMask
		}
	default:
		d = d[:len(z)]
		for i, x := range p[:len(z)] {
			r := ptrOffset(x) + d[i]
			if r != ptrOffset(r) {
				z[i] = fr.wildPtr(x, d[i])
				continue
			}
			z[i] = x&^ptrOffsetMask | r&ptrOffsetMask
		}
	}
}

// wildPtr records the offset p + d for the error that dereferencing it raises.
func (fr *frame) wildPtr(p, d int64) int64 {
	o := ptrOffset(p)
	if p < 0 {
		fr.wildOff = "beyond ±2^47" // already wild: the true offset is lost
	} else if s := o + d; (s > o) == (d > 0) {
		fr.wildOff = strconv.FormatInt(s, 10)
	} else {
		fr.wildOff = fmt.Sprintf("%d + %d (beyond int64)", o, d)
	}
	return p | ptrWild
}

// Launch runs the grid's programs, in parallel on the device's workers. An error
// (out-of-bounds access, division by zero, ...) skips the programs after the failing one and
// is returned; when several fail, the lowest-numbered one's, as a serial run would report.
func (k *Kernel) Launch(grid [3]int, args []jit.Arg) error {
	return k.LaunchContext(context.Background(), grid, args)
}

// errStopped ends a program early once its launch has stopped; the launch reports the error
// that stopped it instead.
var errStopped = errors.New("launch stopped")

// LaunchContext is Launch, stopped soon after ctx is done: workers check between programs and
// every iteration of a loop (one atomic load), and the error names the kernel and how many
// programs had run.
func (k *Kernel) LaunchContext(ctx context.Context, grid [3]int, args []jit.Arg) error {
	fn := k.prog.fn
	total, err := jit.GridPrograms(fn.Name, grid, math.MaxInt32)
	if err != nil {
		return err
	}
	if len(args) != len(fn.Params) {
		return fmt.Errorf("kernel %s: %d arguments for %d parameters", fn.Name, len(args), len(fn.Params))
	}
	l := k.takeLaunch()
	reuse := true
	defer func() {
		if reuse {
			k.putLaunch(l)
		}
	}()
	for i, p := range fn.Params {
		v, f, err := bindArg(p, args[i], i)
		if err != nil {
			return fmt.Errorf("kernel %s: argument %d (%s): %w", fn.Name, i, p.Name, err)
		}
		l.values[i], l.floats[i] = v, f
		if p.Type.Ptr {
			l.bufs[i] = args[i].Buf.(*Buffer)
		}
	}
	l.grid, l.total = [3]int64{int64(grid[0]), int64(grid[1]), int64(grid[2])}, total
	// more workers than Go runs at once would only take turns (and helpers spin)
	workers := int64(min(k.dev.threads, runtime.GOMAXPROCS(0)))
	if workers > total {
		workers = total
	}
	if per := k.programNs.Load(); per > 0 && per*total < int64(serialLaunch) {
		workers = 1
	}
	l.split(workers)
	// ctx only raises the stop flag; the error is made once the workers are done.
	if ctx.Done() != nil {
		stop := context.AfterFunc(ctx, func() {
			l.canceled.Store(true)
			l.stop.Store(true)
		})
		// a callback that has started may still write l: then l is not reused
		defer func() { reuse = stop() && reuse }()
	}
	started := time.Now()
	// The callback above runs on a goroutine of its own, maybe only after a short launch has
	// ended: a context already done when the launch starts, or by the time it ends, counts too.
	if ctx.Err() != nil {
		l.canceled.Store(true)
		l.stop.Store(true)
	}
	l.labels, l.caller = nil, nil
	if profileLabels.Load() {
		l.labels, l.caller = pprof.WithLabels(ctx, pprof.Labels("kernel", fn.Name)), ctx
	}
	if workers <= 1 {
		l.run(0)
	} else {
		k.dev.pool.do(int(workers-1), l)
	}
	if ctx.Err() != nil {
		l.canceled.Store(true)
	}
	if total > 0 && !l.stop.Load() && l.err == nil {
		per := l.busy.Load() / total
		if old := k.programNs.Load(); old > 0 {
			per = (3*old + per) / 4
		}
		k.programNs.Store(max(per, 1))
	}
	if l.canceled.Load() && (l.err == nil || errors.Is(l.err, errStopped)) {
		return fmt.Errorf("kernel %s: stopped after %v (%d of %d programs started): %w",
			fn.Name, time.Since(started).Round(time.Millisecond), l.started(), total, context.Cause(ctx))
	}
	return l.err
}

// run is one worker's part of the launch: programs taken one at a time, from its own share
// first, then from the others', until none is left or the launch stops.
func (l *launch) run(worker int) {
	if l.labels != nil {
		pprof.SetGoroutineLabels(l.labels)
		if worker == 0 {
			defer pprof.SetGoroutineLabels(l.caller)
		} else {
			defer pprof.SetGoroutineLabels(context.Background())
		}
	}
	k := l.k
	fr := k.getFrame(worker)
	defer k.putFrame(worker, fr)
	fr.launch = l
	fr.grid = l.grid
	for i, s := range k.prog.params {
		switch k.prog.slotClass[s] {
		case clsInt:
			fr.ints[s][0] = l.values[i]
		case clsF32:
			fr.f32[s][0] = float32(l.floats[i])
		case clsF64:
			fr.f64[s][0] = l.floats[i]
		}
	}
	defer func() {
		if r := recover(); r != nil {
			l.fail(fmt.Errorf("kernel %s: program (%d, %d, %d): internal error in the CPU executor: %v\n%s",
				k.prog.fn.Name, fr.pid[0], fr.pid[1], fr.pid[2], r, debug.Stack()))
		}
	}()
	if !fr.constantsReady {
		if err := runSteps(fr, k.prog.constants); err != nil {
			l.fail(err)
			return
		}
		fr.constantsReady = true
	}
	if err := runSteps(fr, k.prog.prologue); err != nil {
		l.fail(err)
		return
	}
	start := time.Now()
	defer func() { l.busy.Add(time.Since(start).Nanoseconds()) }()
	n := len(l.shares)
	for i := range n {
		s := &l.shares[(worker+i)%n] // a helper's number may exceed this launch's workers
		for !l.stop.Load() {
			idx, ok := s.take()
			if !ok || idx > l.failedAt.Load() {
				break // a share's programs come in order: the rest are after it too
			}
			fr.pid[0] = idx % fr.grid[0]
			fr.pid[1] = idx / fr.grid[0] % fr.grid[1]
			fr.pid[2] = idx / (fr.grid[0] * fr.grid[1])
			if err := runSteps(fr, k.prog.body); err != nil {
				l.failAt(idx, err)
				break
			}
		}
	}
}

// takeLaunch gives the kernel's idle launch, reset, or a new one.
func (k *Kernel) takeLaunch() *launch {
	if l := k.idle.Swap(nil); l != nil {
		return l
	}
	n := len(k.prog.fn.Params)
	l := &launch{k: k, bufs: make([]*Buffer, n), names: make([]string, n), values: make([]int64, n), floats: make([]float64, n)}
	for i, p := range k.prog.fn.Params {
		l.names[i] = p.Name
	}
	l.failedAt.Store(math.MaxInt64)
	return l
}

// putLaunch resets l (it holds no buffer once idle) and keeps it for the next launch.
func (k *Kernel) putLaunch(l *launch) {
	clear(l.bufs)
	l.busy.Store(0)
	l.stop.Store(false)
	l.canceled.Store(false)
	l.err = nil
	l.failedAt.Store(math.MaxInt64)
	k.idle.CompareAndSwap(nil, l)
}

func (k *Kernel) getFrame(worker int) *frame {
	if worker < len(k.homes) {
		if fr := k.homes[worker].Swap(nil); fr != nil {
			return fr
		}
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if n := len(k.frames); n > 0 {
		fr := k.frames[n-1]
		k.frames = k.frames[:n-1]
		return fr
	}
	return newFrame(k.prog)
}

func (k *Kernel) putFrame(worker int, fr *frame) {
	fr.launch = nil
	fr.dropDots()
	fr.unaliasAll()
	if worker < len(k.homes) && k.homes[worker].CompareAndSwap(nil, fr) {
		return
	}
	k.mu.Lock()
	k.frames = append(k.frames, fr)
	k.mu.Unlock()
}

// bindArg checks one argument against its parameter and gives its slot value: an encoded
// pointer, or the scalar as int64 (ints, i1) or float64.
func bindArg(p *ir.Value, a jit.Arg, index int) (int64, float64, error) {
	t := p.Type
	if t.Ptr {
		if a.Buf == nil {
			return 0, 0, fmt.Errorf("pointer parameter %s needs a buffer", t)
		}
		b, ok := a.Buf.(*Buffer)
		if !ok {
			return 0, 0, fmt.Errorf("a %T is not a CPU buffer", a.Buf)
		}
		if b.dt != t.Elem {
			return 0, 0, fmt.Errorf("parameter is %s but the buffer holds %s", t, b.dt)
		}
		if a.Offset < 0 || a.Offset > b.n {
			return 0, 0, fmt.Errorf("offset %d outside the buffer of %d elements", a.Offset, b.n)
		}
		if index+1 >= 1<<(64-ptrOffsetBits-1) {
			return 0, 0, fmt.Errorf("too many pointer parameters")
		}
		return makePtr(index+1, int64(a.Offset)), 0, nil
	}
	if !t.IsScalar() {
		return 0, 0, fmt.Errorf("parameter of type %s is neither a pointer nor a scalar", t)
	}
	if a.Buf != nil {
		return 0, 0, fmt.Errorf("scalar parameter %s given a buffer", t)
	}
	switch v := a.Scalar.(type) {
	case bool:
		if t.Elem != ir.I1 {
			return 0, 0, fmt.Errorf("a bool for a %s parameter", t)
		}
		if v {
			return 1, 0, nil
		}
		return 0, 0, nil
	case int:
		return bindInt(t.Elem, int64(v))
	case int32:
		return bindInt(t.Elem, int64(v))
	case int64:
		return bindInt(t.Elem, v)
	case float32:
		return bindFloat(t.Elem, float64(v))
	case float64:
		return bindFloat(t.Elem, v)
	case nil:
		return 0, 0, fmt.Errorf("no value for the %s parameter", t)
	}
	return 0, 0, fmt.Errorf("a %T for a %s parameter (want int64, float64 or bool)", a.Scalar, t)
}

func bindInt(d ir.DType, v int64) (int64, float64, error) {
	if d.IsFloat() {
		return 0, float64(v), nil
	}
	if d == ir.I1 || !d.IsInt() {
		return 0, 0, fmt.Errorf("an int for a %s parameter", d)
	}
	if d != ir.U64 && normInt(d, v) != v {
		return 0, 0, fmt.Errorf("%d does not fit in %s", v, d)
	}
	if d == ir.U64 && v < 0 {
		return 0, 0, fmt.Errorf("%d does not fit in %s", v, d)
	}
	return v, 0, nil
}

func bindFloat(d ir.DType, v float64) (int64, float64, error) {
	if !d.IsFloat() {
		return 0, 0, fmt.Errorf("a float for a %s parameter", d)
	}
	switch d {
	case ir.F16:
		v = float64(half.F16ToF32(half.F32ToF16(float32(v))))
	case ir.BF16:
		v = float64(half.BF16ToF32(half.F32ToBF16(float32(v))))
	case ir.F32:
		v = float64(float32(v))
	}
	return 0, v, nil
}

// errf makes a run-time error naming the kernel, the source position and the program id.
func (fr *frame) errf(pos ir.Pos, format string, args ...any) error {
	name := "?"
	if fr.launch != nil {
		name = fr.launch.k.prog.fn.Name
	}
	return fmt.Errorf("kernel %s: %s: program (%d, %d, %d): %s", name, pos, fr.pid[0], fr.pid[1], fr.pid[2], fmt.Sprintf(format, args...))
}

// profileLabels is ProfileLabels' switch.
var profileLabels atomic.Bool

// ProfileLabels turns on (or off) the pprof label "kernel" on every worker while it runs a
// launch's programs, so that a CPU profile splits by kernel (go tool pprof -tagfocus
// kernel=NAME, or -tags), and, in the kernels compiled while it is on, the label "line": the
// kernel source line of the instruction running (-tagfocus line=N). Off by default: the
// labelled contexts cost an allocation per launch and a call per instruction.
func ProfileLabels(on bool) { profileLabels.Store(on) }

// lineLabelled wraps an instruction's step: the worker's labels name the kernel and line
// while it runs (and until the next labelled step).
func lineLabelled(kernel string, line int, s step) step {
	ctx := pprof.WithLabels(context.Background(), pprof.Labels("kernel", kernel, "line", strconv.Itoa(line)))
	return func(fr *frame) error {
		pprof.SetGoroutineLabels(ctx)
		return s(fr)
	}
}
