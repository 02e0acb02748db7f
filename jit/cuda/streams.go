package cuda

import (
	"fmt"
	"time"
	"unsafe"

	"github.com/widejit/widejit/jit"
)

// streams.go: Device as a jit.StreamDevice: more streams than the device's own, events
// between them, and page-locked host memory for asynchronous copies.

var _ jit.StreamDevice = (*Device)(nil)

// call runs one driver call with the device's context current, as the error of name.
func (d *Device) call(name string, f func() result) error {
	done, err := d.bind()
	if err != nil {
		return err
	}
	defer done()
	return d.drv.check(name, f())
}

// release destroys the object of handle *h once (a second Close does nothing).
func (d *Device) release(h *uintptr, name string, destroy func(uintptr) result) error {
	if *h == 0 {
		return nil
	}
	x := *h
	*h = 0
	return d.call(name, func() result { return destroy(x) })
}

// Stream is a CUDA stream of a Device, created non-blocking: it is not ordered with the
// legacy default stream (synchronous copies), only by its own order and by events.
type Stream struct {
	dev *Device
	h   uintptr
}

// NewStream creates a stream on the device's context.
func (d *Device) NewStream() (jit.Stream, error) {
	s := &Stream{dev: d}
	if err := d.call("cuStreamCreate", func() result { return d.drv.CuStreamCreate(&s.h, streamNonBlocking) }); err != nil {
		return nil, err
	}
	return s, nil
}

// span is the device address of n bytes at element offset of b, checked against its size.
func span(b *Buffer, offset, n int, what string) (uint64, error) {
	size := b.dt.Size()
	if offset < 0 || n%size != 0 || offset > b.n || n/size > b.n-offset {
		return 0, fmt.Errorf("cuda: %s %d bytes at element %d of a buffer of %d x %s", what, n, offset, b.n, b.dt)
	}
	return b.ptr + uint64(offset*size), nil
}

// Upload queues a copy of src into dst from element offset on.
// Handle is the driver's CUstream, for interop and tracing.
func (s *Stream) Handle() uintptr { return s.h }

func (s *Stream) Upload(dst jit.Buffer, offset int, src []byte) error {
	return s.copyAsync(dst, offset, src, true)
}

// Download queues a copy of len(dst) bytes of src, from element offset on, into dst.
func (s *Stream) Download(src jit.Buffer, offset int, dst []byte) error {
	return s.copyAsync(src, offset, dst, false)
}

// copyAsync queues a copy between host and the len(host) bytes of jb at element offset, to
// the device when up.
func (s *Stream) copyAsync(jb jit.Buffer, offset int, host []byte, up bool) error {
	what, dir, call := "download from", "download of", "cuMemcpyDtoHAsync_v2"
	if up {
		what, dir, call = "upload to", "upload of", "cuMemcpyHtoDAsync_v2"
	}
	b, err := s.dev.buffer(jb, what)
	if err != nil {
		return err
	}
	at, err := span(b, offset, len(host), "async "+dir)
	if err != nil || len(host) == 0 {
		return err
	}
	p, n := unsafe.Pointer(&host[0]), uint64(len(host))
	return s.dev.call(call, func() result {
		if up {
			return s.dev.drv.CuMemcpyHtoDAsync(at, p, n, s.h)
		}
		return s.dev.drv.CuMemcpyDtoHAsync(p, at, n, s.h)
	})
}

// Launch queues k, a kernel loaded on the same device, on the stream.
func (s *Stream) Launch(k jit.Kernel, grid [3]int, args []jit.Arg) error {
	ck, ok := k.(*Kernel)
	if !ok || ck.dev != s.dev {
		return fmt.Errorf("cuda: kernel %s was not loaded on the stream's device", k.Name())
	}
	return ck.launchOn(s.h, grid, args)
}

// event is e as this device's event.
func (s *Stream) event(e jit.Event) (*Event, error) {
	ev, ok := e.(*Event)
	if !ok || ev.dev != s.dev {
		return nil, fmt.Errorf("cuda: a %T is not an event of the stream's device", e)
	}
	return ev, nil
}

// Record captures the stream's work so far in e.
func (s *Stream) Record(e jit.Event) error {
	ev, err := s.event(e)
	if err != nil {
		return err
	}
	return s.dev.call("cuEventRecord", func() result { return s.dev.drv.CuEventRecord(ev.h, s.h) })
}

// Wait makes the stream's later work wait for e's latest Record, on the device.
func (s *Stream) Wait(e jit.Event) error {
	ev, err := s.event(e)
	if err != nil {
		return err
	}
	return s.dev.call("cuStreamWaitEvent", func() result { return s.dev.drv.CuStreamWaitEvent(s.h, ev.h, 0) })
}

// Sync blocks until the stream's work has run.
func (s *Stream) Sync() error {
	return s.dev.call("cuStreamSynchronize", func() result { return s.dev.drv.CuStreamSynchronize(s.h) })
}

// Close destroys the stream (its queued work still runs).
func (s *Stream) Close() error {
	return s.dev.release(&s.h, "cuStreamDestroy_v2", s.dev.drv.CuStreamDestroy)
}

// Event is a CUDA event of a Device.
type Event struct {
	dev    *Device
	h      uintptr
	timing bool
}

// NewEvent creates an event; without timing it only orders work (CU_EVENT_DISABLE_TIMING).
func (d *Device) NewEvent(timing bool) (jit.Event, error) {
	e := &Event{dev: d, timing: timing}
	flags := uint32(eventDisableTiming)
	if timing {
		flags = 0
	}
	if err := d.call("cuEventCreate", func() result { return d.drv.CuEventCreate(&e.h, flags) }); err != nil {
		return nil, err
	}
	return e, nil
}

// Sync blocks until the work before the event's latest Record has run.
func (e *Event) Sync() error {
	return e.dev.call("cuEventSynchronize", func() result { return e.dev.drv.CuEventSynchronize(e.h) })
}

// Since is the device time between start's latest Record and e's.
func (e *Event) Since(start jit.Event) (time.Duration, error) {
	s, ok := start.(*Event)
	if !ok || s.dev != e.dev {
		return 0, fmt.Errorf("cuda: a %T is not an event of the same device", start)
	}
	if !e.timing || !s.timing {
		return 0, fmt.Errorf("cuda: event times need two timing events")
	}
	var ms float32
	if err := e.dev.call("cuEventElapsedTime", func() result { return e.dev.drv.CuEventElapsedTime(&ms, s.h, e.h) }); err != nil {
		return 0, err
	}
	return time.Duration(float64(ms) * float64(time.Millisecond)), nil
}

// Close destroys the event.
func (e *Event) Close() error {
	return e.dev.release(&e.h, "cuEventDestroy_v2", e.dev.drv.CuEventDestroy)
}

// Pinned is page-locked host memory (cuMemHostAlloc): the device copies it by DMA, so
// asynchronous copies from and to it return at once and overlap kernels.
type Pinned struct {
	dev *Device
	p   unsafe.Pointer
	n   int
}

// AllocPinned allocates n bytes of page-locked host memory.
func (d *Device) AllocPinned(n int) (jit.Pinned, error) {
	if n < 0 {
		return nil, fmt.Errorf("cuda: cannot allocate %d bytes of pinned memory", n)
	}
	m := &Pinned{dev: d, n: n}
	if err := d.call("cuMemHostAlloc", func() result { return d.drv.CuMemHostAlloc(&m.p, uint64(max(n, 1)), 0) }); err != nil {
		return nil, fmt.Errorf("%w (allocating %d bytes of pinned host memory)", err, n)
	}
	return m, nil
}

// Bytes is the memory; it is invalid after Free.
func (m *Pinned) Bytes() []byte {
	if m.p == nil {
		return nil
	}
	return unsafe.Slice((*byte)(m.p), m.n)
}

// Free releases the memory.
func (m *Pinned) Free() error {
	if m.p == nil {
		return nil
	}
	p := m.p
	m.p = nil
	return m.dev.call("cuMemFreeHost", func() result { return m.dev.drv.CuMemFreeHost(p) })
}

// ReadAsserts is jit.AssertReader's: each kernel with asserts launched since the last check
// has its flag copied to pinned memory on js; check reads the copies once js has synchronised.
func (d *Device) ReadAsserts(js jit.Stream) (check func() error, err error) {
	s, ok := js.(*Stream)
	if !ok || s.dev != d {
		return nil, fmt.Errorf("cuda: reading asserts on a %T that is not a stream of the device", js)
	}
	d.mu.Lock()
	pending := d.pending
	d.pending = nil
	d.mu.Unlock()
	var queued []*Kernel
	for k := range pending {
		if k.flagHost == nil {
			if k.flagHost, err = d.AllocPinned(jit.AssertFlagBytes); err != nil {
				return nil, err
			}
			d.mu.Lock()
			d.pinned = append(d.pinned, k.flagHost)
			d.mu.Unlock()
		}
		if err := s.Download(k.flag, 0, k.flagHost.Bytes()); err != nil {
			return nil, err
		}
		queued = append(queued, k)
	}
	return func() error {
		if len(queued) == 0 {
			return nil
		}
		done, err := d.bind()
		if err != nil {
			return err
		}
		defer done()
		var first error
		for _, k := range queued {
			if err := d.flagError(k, k.flagHost.Bytes()); err != nil && first == nil {
				first = err
			}
		}
		return first
	}, nil
}
