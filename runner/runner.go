package runner

import (
	"context"
	"errors"
	"fmt"
	"math"
	"runtime"
	"slices"
	"sync"
	"time"
	"unsafe"

	"github.com/widejit/widejit/graph"
	"github.com/widejit/widejit/graph/safetensors"
	"github.com/widejit/widejit/internal/memlimit"
	"github.com/widejit/widejit/jit"
	"github.com/widejit/widejit/lowering"
)

// ParamSource provides parameter data stacked [N, ...]; *graph.Graph implements it.
type ParamSource interface {
	ParamTensor(name string) (*safetensors.Tensor, error)
}

// Runner executes a plan on a device: New compiles every kernel, uploads the weights and
// runs the prepare launches (lowering.Launch.Prepare) once; Run feeds inputs, launches the plan and returns the outputs, as often as needed.
type Runner struct {
	plan    *lowering.Plan
	dev     jit.Device
	kernels []jit.Kernel // per launch
	bufs    map[*lowering.Buffer]jit.Buffer
	slots   []jit.Buffer
	// CompileTime is the time New spent compiling and loading kernels.
	CompileTime time.Duration
	// UploadTime is the time New spent allocating buffers, uploading weights and running
	// the prepare launches.
	UploadTime time.Duration
	// kernelTimes, when profiling (Profile), is the time each launch took, summed over runs.
	kernelTimes []time.Duration
	opts        Options
	// broken is set when a launch was abandoned past its time limit on a device that cannot
	// stop it: the device may still be running it, so the Runner refuses further runs.
	broken error
	// trace, when tracing (Trace), records every launch and copy.
	trace *runTrace
	// streams, when the runs are split over several streams (streams.go).
	streams *streamRun
	// args[i*(N+1)+m+1] are launch i's arguments for model m, or over all models at m = -1,
	// built at their first use (the buffers never change, and building them every run cost
	// a small model a tenth of its time).
	args [][]jit.Arg
	// outputShares counts the plan's outputs per buffer.
	outputShares map[*lowering.Buffer]int
	host         hostBindings
	// ctx is the context of the run in progress (RunContext): checked before every launch,
	// and it stops a launch that can be stopped.
	ctx context.Context
}

// Options bound what a Runner may do. The zero value is right for most runs.
type Options struct {
	// LaunchTimeout stops a run whose launch (one kernel over its grid) takes longer, with an
	// error naming the kernel; 0 means no limit. The CPU backend stops the launch itself
	// (between programs and loop iterations). Other devices are synchronised after every
	// launch while a limit is set, and a launch past it is abandoned: the Runner then
	// refuses further runs.
	LaunchTimeout time.Duration
	// MemoryLimit bounds the bytes the plan allocates (its buffers, plus the host copies of
	// outputs and of the largest parameter; on a GPU, device buffers count against the
	// device's memory instead): 0 means 80% of physical memory, negative no limit.
	MemoryLimit int64
	// Streams splits each run's models over this many streams of a device that has them
	// (a jit.StreamDevice: CUDA), so that one stream's copies overlap another's kernels
	// (streams.go); 0 and 1 keep the device's own stream (the default: see wantStreams). Other devices
	// run on the calling goroutine and ignore it.
	Streams int
}

// checkMemory refuses a plan that does not fit the limit (and, on a device with its own
// memory, the device), before anything is allocated.
func checkMemory(plan *lowering.Plan, dev jit.Device, limit int64) error {
	m := plan.Memory()
	info := dev.Info()
	if !info.Caps.DiscreteMemory {
		var t memlimit.Tally
		t.Add(m.Device(), 1)
		t.Add(m.Host(), 1)
		return memlimit.Check("the plan ("+m.String()+")", t.Bytes(), limit)
	}
	if info.MemoryBytes > 0 && m.Device() > info.MemoryBytes {
		return fmt.Errorf("the plan needs %s of %s memory (%s), more than its %s",
			memlimit.Format(m.Device()), info.Name, m, memlimit.Format(info.MemoryBytes))
	}
	return memlimit.Check("the plan's host copies (outputs and the largest param)", m.Host(), limit)
}

// checkGrids refuses launches whose grids are empty or whose program counts overflow.
func checkGrids(plan *lowering.Plan) error {
	for i, l := range plan.Launches {
		if _, err := jit.GridPrograms(l.Kernel.Source.Fn, l.Grid, math.MaxInt32); err != nil {
			return fmt.Errorf("launch %d (nodes %v): %w", i, l.Nodes, err)
		}
	}
	return nil
}

// Profile turns per-launch timing on or off (off by default): each launch is then followed by
// a device synchronisation, so the times are the kernels' own and sum to about a run's (on
// several streams, events around each launch time it instead; streams.go).
func (r *Runner) Profile(on bool) {
	r.kernelTimes = nil
	if on {
		r.kernelTimes = make([]time.Duration, len(r.plan.Launches))
	}
}

// KernelTimes is the time each launch of the plan took, summed over the runs since Profile
// was turned on (nil when it is off).
func (r *Runner) KernelTimes() []time.Duration { return r.kernelTimes }

// New compiles the plan's kernels through comp for dev (in parallel), allocates its
// buffers, uploads the parameters from params and runs the prepare launches.
func New(plan *lowering.Plan, dev jit.Device, comp *jit.Compiler, params ParamSource) (*Runner, error) {
	return NewWithOptions(plan, dev, comp, params, Options{})
}

// NewWithOptions is New within the bounds of opts: a plan that needs more memory
// than the limit, or whose grids overflow, is refused before anything is compiled or
// allocated.
func NewWithOptions(plan *lowering.Plan, dev jit.Device, comp *jit.Compiler, params ParamSource, opts Options) (*Runner, error) {
	if err := checkGrids(plan); err != nil {
		return nil, err
	}
	if err := checkMemory(plan, dev, opts.MemoryLimit); err != nil {
		return nil, err
	}
	r := &Runner{plan: plan, dev: dev, kernels: make([]jit.Kernel, len(plan.Launches)), bufs: map[*lowering.Buffer]jit.Buffer{}, opts: opts}
	start := time.Now()
	errs := make([]error, len(plan.Launches))
	var wg sync.WaitGroup
	sem := make(chan struct{}, runtime.GOMAXPROCS(0))
	for i, l := range plan.Launches {
		wg.Add(1)
		go func(i int, l *lowering.Launch) {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			k, err := comp.Load(dev, l.Kernel.Source, l.Spec())
			if err != nil {
				errs[i] = fmt.Errorf("launch %d (%s, nodes %v): %w", i, l.Kernel.Source.Fn, l.Nodes, err)
				return
			}
			r.kernels[i] = k
		}(i, l)
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	r.CompileTime = time.Since(start)
	start = time.Now()
	alloc := func(d graph.DType, n int) (jit.Buffer, error) {
		t, err := lowering.DeviceDType(d)
		if err != nil {
			return nil, err
		}
		if n < 1 {
			n = 1
		}
		return dev.Alloc(t, n)
	}
	for _, b := range plan.Inputs {
		jb, err := alloc(b.DType, b.Elems)
		if err != nil {
			return nil, err
		}
		r.bufs[b] = jb
	}
	for _, b := range plan.Params {
		jb, err := alloc(b.DType, b.Elems)
		if err != nil {
			return nil, err
		}
		t, err := params.ParamTensor(b.Name)
		if err != nil {
			return nil, err
		}
		if len(t.Data) != b.Elems*b.DType.Size() {
			return nil, fmt.Errorf("param %s: %d bytes, want %d", b.Name, len(t.Data), b.Elems*b.DType.Size())
		}
		if err := dev.Upload(jb, t.Data); err != nil {
			return nil, fmt.Errorf("param %s: %w", b.Name, err)
		}
		r.bufs[b] = jb
	}
	for _, s := range plan.Slots {
		jb, err := alloc(s.DType, s.Elems)
		if err != nil {
			return nil, err
		}
		r.slots = append(r.slots, jb)
	}
	for _, b := range plan.Buffers {
		if b.Kind == lowering.TempBuffer && b.Slot >= 0 {
			r.bufs[b] = r.slots[b.Slot]
		}
	}
	r.args = make([][]jit.Arg, len(plan.Launches)*(plan.N+1))
	r.outputShares = map[*lowering.Buffer]int{}
	for _, o := range plan.Outputs {
		r.outputShares[o.View.Buf]++
	}
	if err := r.runLaunches(true); err != nil {
		r.Close()
		return nil, err
	}
	if err := dev.Sync(); err != nil {
		r.Close()
		return nil, err
	}
	if err := r.startStreams(); err != nil {
		r.Close()
		return nil, err
	}
	r.UploadTime = time.Since(start)
	return r, nil
}

// runLaunches runs the plan's prepare launches (prepare true) or all the others, in order.
func (r *Runner) runLaunches(prepare bool) error {
	p := r.plan
	if p.ModelMajor {
		for m := 0; m < p.N; m++ {
			for i, l := range p.Launches {
				if l.Prepare != prepare {
					continue
				}
				if err := r.canceled(); err != nil {
					return err
				}
				start := time.Now()
				if err := r.profiled(i, start, r.launchModel(i, l, m)); err != nil {
					return err
				}
			}
		}
		return nil
	}
	for i, l := range p.Launches {
		if l.Prepare != prepare {
			continue
		}
		if err := r.canceled(); err != nil {
			return err
		}
		start := time.Now()
		var err error
		if l.Strategy == lowering.Sequential {
			for m := 0; m < p.N && err == nil; m++ {
				if err = r.canceled(); err == nil {
					err = r.launchModel(i, l, m)
				}
			}
		} else {
			err = r.launch(i, l, l.Grid, -1)
		}
		if err := r.profiled(i, start, err); err != nil {
			return err
		}
	}
	return nil
}

// canceled is the error of the run's context once it is done, else nil.
func (r *Runner) canceled() error {
	if r.ctx == nil {
		return nil
	}
	return r.ctx.Err()
}

// profiled adds the time of launch i since start to the profile, once the device is done,
// when profiling is on (Profile) and the launch went well; it returns the launch's error.
func (r *Runner) profiled(i int, start time.Time, err error) error {
	if err == nil && r.kernelTimes != nil {
		err = r.dev.Sync()
		r.kernelTimes[i] += time.Since(start)
	}
	return err
}

// Close frees the device buffers.
func (r *Runner) Close() {
	r.stopStreams()
	seen := map[jit.Buffer]bool{}
	for _, b := range r.bufs {
		if !seen[b] {
			seen[b] = true
			r.dev.Free(b)
		}
	}
}

// Run uploads inputs (each [N, ...], or the bare shape when shared), executes the plan and
// returns every output stacked [N, ...].
func (r *Runner) Run(inputs map[string]*safetensors.Tensor) (map[string]*safetensors.Tensor, error) {
	return r.RunInto(inputs, nil)
}

// RunInto is Run writing each output that a buffer holds whole into the tensor of the same
// name in reuse, when that tensor has the output's dtype and size (the previous run's
// outputs, say), instead of into new memory: repeated runs then allocate nothing per output,
// as a framework's caching allocator would. The returned map holds those tensors (it is
// reuse itself when reuse holds exactly the outputs, each written where it lies).
func (r *Runner) RunInto(inputs, reuse map[string]*safetensors.Tensor) (map[string]*safetensors.Tensor, error) {
	return r.RunContext(context.Background(), inputs, reuse)
}

// RunContext is RunInto stopped soon after ctx is done: it checks ctx before every launch,
// and a launch the device can stop (jit.ContextLauncher: the CPU) stops within it; the
// error then wraps ctx's. A kernel already queued on a GPU runs to its end.
func (r *Runner) RunContext(ctx context.Context, inputs, reuse map[string]*safetensors.Tensor) (map[string]*safetensors.Tensor, error) {
	if r.broken != nil {
		return nil, r.broken
	}
	r.ctx = ctx
	defer func() { r.ctx = nil }()
	if r.streams.on() {
		return r.runStreams(inputs, reuse)
	}
	p := r.plan
	binder, _ := r.dev.(jit.HostBinder)
	h := &r.host
	h.bound, h.bufs = h.bound[:0], h.bufs[:0] // caller memory the device reads in place, and its buffers
	defer h.unbind(binder)
	for _, b := range p.Inputs {
		t, err := inputFor(b, inputs)
		if err != nil {
			return nil, err
		}
		// Kernels write only temp buffers (lowering.Buffer), so on a device that can read the
		// caller's memory in place an input needs no copy.
		if binder != nil && binder.BindHost(r.bufs[b], t.Data) {
			h.bufs = append(h.bufs, r.bufs[b])
			h.bound = append(h.bound, t.Data)
			continue
		}
		start := time.Now()
		if err := r.dev.Upload(r.bufs[b], t.Data); err != nil {
			return nil, fmt.Errorf("input %q: %w", b.Name, err)
		}
		r.traceCopy("upload", b.Name, start, len(t.Data), "host to device")
	}
	for _, c := range p.IndexChecks {
		if err := checkIndices(inputs[c.Input], c); err != nil {
			return nil, err
		}
	}
	direct := r.bindOutputs(binder, reuse)
	if err := r.runLaunches(false); err != nil {
		return nil, err
	}
	if err := r.dev.Sync(); err != nil {
		return nil, r.syncErr(err)
	}
	if r.writtenInPlace(reuse, direct) {
		return reuse, nil
	}
	outs := make(map[string]*safetensors.Tensor, len(p.Outputs))
	var cache map[*lowering.Buffer][]byte // buffers several outputs read, downloaded once
	shared := r.outputShares              // a buffer read by one output whole is not copied again
	for i, o := range p.Outputs {
		v := o.View
		data, ok := cache[v.Buf]
		if direct != nil && direct[i] != nil {
			data, ok = direct[i], true // written in place by the kernels
		}
		if !ok {
			jb := r.bufs[v.Buf]
			n := jb.Len() * v.DType.Size()
			if t := reuse[o.Name]; t != nil && shared[v.Buf] == 1 && len(t.Data) == n && t.DType == v.DType.Safetensors() {
				data = t.Data
			} else {
				data = make([]byte, n)
			}
			start := time.Now()
			if err := r.dev.Download(jb, data); err != nil {
				return nil, fmt.Errorf("output %q: %w", o.Name, err)
			}
			r.traceCopy("download", o.Name, start, len(data), "device to host")
			if shared[v.Buf] > 1 {
				if cache == nil {
					cache = map[*lowering.Buffer][]byte{}
				}
				cache[v.Buf] = data
			}
		}
		size := v.DType.Size()
		lo := v.Offset * size
		hi := lo + p.N*v.Numel()*size
		out := data[lo:hi:hi]
		if shared[v.Buf] > 1 || hi-lo != len(data) {
			out = append([]byte(nil), out...)
		}
		outs[o.Name] = &safetensors.Tensor{Name: o.Name, DType: v.DType.Safetensors(),
			Shape: append([]int{p.N}, o.Shape...), Data: out}
	}
	return outs, nil
}

// hostBindings is a run's caller memory bound to device buffers (HostBinder), kept by the
// Runner so that a run allocates nothing for it.
type hostBindings struct {
	bound  [][]byte     // the memory, inputs first
	bufs   []jit.Buffer // the buffers bound to it
	direct [][]byte     // per plan output: the memory its kernels write, or nil
}

// unbind gives every bound buffer its own memory back.
func (h *hostBindings) unbind(binder jit.HostBinder) {
	for _, b := range h.bufs {
		binder.UnbindHost(b)
	}
	clear(h.bound)
	clear(h.bufs)
	clear(h.direct)
}

// writtenInPlace reports whether reuse holds exactly the plan's outputs, each the tensor
// its kernels wrote in place (direct), so that it is the run's result as it is.
func (r *Runner) writtenInPlace(reuse map[string]*safetensors.Tensor, direct [][]byte) bool {
	if len(reuse) != len(r.plan.Outputs) || direct == nil {
		return false
	}
	for i, o := range r.plan.Outputs {
		t, d := reuse[o.Name], direct[i]
		if t == nil || d == nil || t.Name != o.Name || len(t.Data) != len(d) || &t.Data[0] != &d[0] ||
			len(t.Shape) != len(o.Shape)+1 || t.Shape[0] != r.plan.N {
			return false
		}
		for j, n := range o.Shape {
			if t.Shape[j+1] != n {
				return false
			}
		}
	}
	return true
}

// bindOutputs points the buffers of the outputs that one buffer holds whole at host memory
// (the tensor of the same name in reuse when it fits, else new memory), so that the kernels
// write the outputs where the caller gets them and nothing is downloaded; it returns that
// memory per output (nil: downloaded). An output is left to the download (after every
// kernel) when its buffer is sparse (kernels rely on its zeros) or when the caller's tensor
// overlaps an input read in place (kernels would overwrite what later ones read) or another
// output's.
func (r *Runner) bindOutputs(binder jit.HostBinder, reuse map[string]*safetensors.Tensor) [][]byte {
	if binder == nil {
		return nil
	}
	h := &r.host
	h.direct = slices.Grow(h.direct[:0], len(r.plan.Outputs))[:len(r.plan.Outputs)]
	for i, o := range r.plan.Outputs {
		v := o.View
		jb := r.bufs[v.Buf]
		n := jb.Len() * v.DType.Size()
		if r.outputShares[v.Buf] != 1 || v.Buf.Kind != lowering.TempBuffer || v.Buf.Sparse ||
			v.Offset != 0 || r.plan.N*v.Numel()*v.DType.Size() != n {
			continue
		}
		var data []byte
		if t := reuse[o.Name]; t != nil && len(t.Data) == n && t.DType == v.DType.Safetensors() {
			if overlapsAny(t.Data, h.bound) {
				continue // downloaded into t once every kernel has run
			}
			data = t.Data
		} else {
			data = make([]byte, n)
		}
		if binder.BindHost(jb, data) {
			h.direct[i] = data
			h.bufs = append(h.bufs, jb)
			h.bound = append(h.bound, data) // two outputs given one tensor: the second is downloaded
		}
	}
	return h.direct
}

// overlapsAny reports whether b shares a byte with any of bs.
func overlapsAny(b []byte, bs [][]byte) bool {
	if len(b) == 0 {
		return false
	}
	lo := uintptr(unsafe.Pointer(&b[0]))
	hi := lo + uintptr(len(b))
	for _, x := range bs {
		if len(x) == 0 {
			continue
		}
		xlo := uintptr(unsafe.Pointer(&x[0]))
		if xlo < hi && lo < xlo+uintptr(len(x)) {
			return true
		}
	}
	return false
}

// inputFor is the tensor of inputs that feeds input buffer b, checked.
func inputFor(b *lowering.Buffer, inputs map[string]*safetensors.Tensor) (*safetensors.Tensor, error) {
	t := inputs[b.Name]
	if t == nil {
		return nil, fmt.Errorf("input %q is missing", b.Name)
	}
	if want := b.Elems * b.DType.Size(); len(t.Data) != want || t.DType != b.DType.Safetensors() {
		return nil, fmt.Errorf("input %q is %s%v (%d bytes), want %s with %d elements", b.Name, t.DType, t.Shape, len(t.Data), b.DType, b.Elems)
	}
	return t, nil
}

func (r *Runner) launchModel(i int, l *lowering.Launch, m int) error {
	grid := l.Grid
	grid[l.ModelAxis] = 1
	return r.launch(i, l, grid, m)
}

// launch runs launch i over grid; model >= 0 selects one model's slices (sequential).
func (r *Runner) launch(i int, l *lowering.Launch, grid [3]int, model int) error {
	args := r.launchArgs(i, l, model)
	start := time.Now()
	err := r.launchKernel(r.kernels[i], grid, args)
	if err == nil && r.trace != nil {
		err = r.traceLaunch(i, l, grid, model, start)
	}
	if err != nil {
		who := "all models"
		if model >= 0 {
			who = fmt.Sprintf("model %d", model)
		}
		return fmt.Errorf("launch %d (%s, nodes %v, %s): %w", i, l.Kernel.Source.Fn, l.Nodes, who, err)
	}
	return nil
}

// syncErr names the launch behind a device assert reported when the device synchronises (a
// GPU reports its kernels' asserts only then), as the error of a launch that fails does.
func (r *Runner) syncErr(err error) error {
	var ae *jit.AssertError
	if !errors.As(err, &ae) {
		return err
	}
	for i, l := range r.plan.Launches {
		if l.Kernel.Source.Fn == ae.Kernel {
			return fmt.Errorf("launch %d (%s, nodes %v): %w", i, l.Kernel.Source.Fn, l.Nodes, err)
		}
	}
	return err
}

// launchArgs are launch i's arguments for model (all models: -1), built at their first use.
func (r *Runner) launchArgs(i int, l *lowering.Launch, model int) []jit.Arg {
	k := i*(r.plan.N+1) + model + 1
	if r.args[k] == nil {
		r.args[k] = launchArgs(l, r.bufs, model)
	}
	return r.args[k]
}

// launchArgs are l's arguments over bufs; model > 0 moves every pointer to that model's
// slice and passes it as the model base (the first model of a launch over several).
func launchArgs(l *lowering.Launch, bufs map[*lowering.Buffer]jit.Buffer, model int) []jit.Arg {
	args := make([]jit.Arg, len(l.Args))
	for j, a := range l.Args {
		switch a.Kind {
		case lowering.PtrArg:
			off := a.Offset
			if model > 0 {
				off += model * a.ModelStride
			}
			args[j] = jit.Arg{Buf: bufs[a.Buf], Offset: off}
		case lowering.FloatArg:
			args[j] = jit.Arg{Scalar: a.Float}
		default:
			v := a.Int
			if a.ModelBase && model > 0 {
				v = int64(model)
			}
			args[j] = jit.Arg{Scalar: v}
		}
	}
	return args
}

// checkIndices reports the first index of t outside [0, c.Limit).
func checkIndices(t *safetensors.Tensor, c lowering.IndexCheck) error {
	vals, err := t.Int64s()
	if err != nil {
		return fmt.Errorf("input %q: %w", c.Input, err)
	}
	for i, v := range vals {
		if v < 0 || v >= int64(c.Limit) {
			return fmt.Errorf("input %q: index %d at %v is out of range for %s (%d rows)", c.Input, v, unravel(i, t.Shape), c.Node, c.Limit)
		}
	}
	return nil
}

func unravel(i int, shape []int) []int {
	pos := make([]int, len(shape))
	for d := len(shape) - 1; d >= 0; d-- {
		if shape[d] > 0 {
			pos[d] = i % shape[d]
			i /= shape[d]
		}
	}
	return pos
}

// launchKernel launches k within Options.LaunchTimeout, if set, and within the run's
// context; a launch abandoned past the limit leaves the Runner refusing further runs.
func (r *Runner) launchKernel(k jit.Kernel, grid [3]int, args []jit.Arg) error {
	ctx := r.ctx
	if ctx == nil {
		ctx = context.Background()
	}
	abandoned, err := Launch(ctx, r.dev, k, grid, args, r.opts.LaunchTimeout)
	if abandoned {
		r.broken = fmt.Errorf("an earlier run was stopped by the launch time limit: %w", err)
	}
	return err
}

// Launch launches k on dev over grid within limit (0: no limit): a kernel the device can
// stop (jit.ContextLauncher: the CPU) stops soon after ctx is done or the limit has passed,
// with a *LaunchTimeoutError as the cause. A kernel that cannot be stopped is launched
// alone and waited for (dev synchronised) when there is a limit, and abandoned past it:
// abandoned is then true, and the device may still be running it.
func Launch(ctx context.Context, dev jit.Device, k jit.Kernel, grid [3]int, args []jit.Arg, limit time.Duration) (abandoned bool, err error) {
	cl, stoppable := k.(jit.ContextLauncher)
	if limit <= 0 {
		if stoppable && ctx.Done() != nil {
			return false, cl.LaunchContext(ctx, grid, args)
		}
		return false, k.Launch(grid, args)
	}
	if stoppable {
		ctx, cancel := context.WithTimeoutCause(ctx, limit, &LaunchTimeoutError{Kernel: k.Name(), Limit: limit})
		defer cancel()
		return false, cl.LaunchContext(ctx, grid, args)
	}
	done := make(chan error, 1)
	go func() {
		err := k.Launch(grid, args)
		if err == nil {
			err = dev.Sync()
		}
		done <- err
	}()
	timer := time.NewTimer(limit)
	defer timer.Stop()
	select {
	case err := <-done:
		return false, err
	case <-timer.C:
		return true, fmt.Errorf("kernel %s: %w (abandoned; the device may still be running it)", k.Name(), &LaunchTimeoutError{Kernel: k.Name(), Limit: limit})
	}
}

// LaunchTimeoutError is the cause of a launch stopped by Options.LaunchTimeout.
type LaunchTimeoutError struct {
	Kernel string
	Limit  time.Duration
}

func (e *LaunchTimeoutError) Error() string {
	return fmt.Sprintf("the launch exceeded its time limit of %v", e.Limit)
}
