package jit

import "time"

// StreamDevice is a Device that runs work on several queues at once (CUDA streams): copies
// between page-locked host memory and the device run on a stream asynchronously, so one
// stream's copies overlap another stream's kernels. Events order streams against each other
// without blocking the host. The CPU backend does not implement it: its launches run on the
// calling goroutine, one after another.
type StreamDevice interface {
	Device
	// NewStream creates a queue whose work runs in issue order, concurrently with other
	// streams' and unordered with the device's own (Upload, Launch, Sync) unless an event
	// orders them.
	NewStream() (Stream, error)
	// NewEvent creates an event; timing events can be measured with Event.Since, the others
	// only order work (cheaper).
	NewEvent(timing bool) (Event, error)
	// AllocPinned returns n bytes of page-locked host memory: the staging that asynchronous
	// copies read and write while the host goes on.
	AllocPinned(n int) (Pinned, error)
}

// Stream is a queue of device work. Its calls return once the work is queued, before it has
// run: host memory given to Upload and Download must stay unchanged (Upload) or unread
// (Download) until a synchronisation shows the copy has run.
type Stream interface {
	// Upload copies src into dst from element offset on (len(src) a whole number of
	// elements, within the buffer).
	Upload(dst Buffer, offset int, src []byte) error
	// Download copies len(dst) bytes of src, from element offset on, into dst.
	Download(src Buffer, offset int, dst []byte) error
	// Launch queues k over grid, as Kernel.Launch does on the device's own queue.
	Launch(k Kernel, grid [3]int, args []Arg) error
	// Record marks the point the stream has reached in e; Wait makes the stream's later
	// work wait for the work before the latest Record of e (no effect if e was never
	// recorded). Neither blocks the host.
	Record(e Event) error
	Wait(e Event) error
	// Sync blocks the host until everything queued so far has run.
	Sync() error
	Close() error
}

// Event marks a point in a stream's work.
type Event interface {
	// Sync blocks the host until the work before the latest Record has run.
	Sync() error
	// Since is the device time from start's latest Record to this event's; both must have
	// run, and both must be timing events.
	Since(start Event) (time.Duration, error)
	Close() error
}

// Pinned is page-locked host memory from StreamDevice.AllocPinned.
type Pinned interface {
	Bytes() []byte
	Free() error
}
