package jit

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
)

// A GPU kernel cannot return an error, so its device asserts (tl.device_assert) report
// through memory. Artifact.Meta[AssertsMeta] lists them; such a kernel takes one more pointer
// argument after its parameters, AssertFlagBytes of zeroed device memory that the device
// allocates and passes itself. A thread holding a false lane writes the assert's number
// (from 1, in the list's order) to the first 32-bit word, the first to fail winning, and its
// program id to the next three; the device reads the words back once the launches have
// finished and turns them into an *AssertError (FlagError).
const (
	AssertsMeta     = "asserts"
	AssertFlagBytes = 16
)

// AssertReader is a StreamDevice whose kernels' asserts are read back after they have run (a
// GPU). Its Sync reports them; a run over streams that ends with one stream's Sync instead
// calls ReadAsserts first: it queues on s, after the work queued there (which must have
// waited for the other streams' launches), the reads of the flags of the launches since the
// last check, and returns what reports the first failure once s has synchronised.
type AssertReader interface {
	ReadAsserts(s Stream) (check func() error, err error)
}

// DeviceAssert is one assert of a kernel: its source position and message.
type DeviceAssert struct {
	Pos string `json:"pos"`
	Msg string `json:"msg"`
}

// EncodeAsserts is the Meta value listing asserts.
func EncodeAsserts(asserts []DeviceAssert) string {
	b, _ := json.Marshal(asserts) // strings only: cannot fail
	return string(b)
}

// KernelAsserts reads the asserts of artifact a (none: nil).
func KernelAsserts(a *Artifact) ([]DeviceAssert, error) {
	s := a.Meta[AssertsMeta]
	if s == "" {
		return nil, nil
	}
	var out []DeviceAssert
	if err := json.Unmarshal([]byte(s), &out); err != nil {
		return nil, fmt.Errorf("artifact %s: meta %q: %w", a.Name, AssertsMeta, err)
	}
	return out, nil
}

// AssertError is a device assert that failed during a launch.
type AssertError struct {
	Kernel  string
	Pos     string
	Msg     string
	Program [3]int64
	Lane    string // which element failed, where the backend knows it ("element 5 of [16]"), else ""
}

func (e *AssertError) Error() string {
	msg := e.Msg
	if msg == "" {
		msg = "(no message)"
	}
	if e.Lane != "" {
		msg += " (" + e.Lane + ")"
	}
	return fmt.Sprintf("kernel %s: %s: program (%d, %d, %d): device assertion failed: %s", e.Kernel, e.Pos, e.Program[0], e.Program[1], e.Program[2], msg)
}

// FlagError reads a kernel's assert flag words (AssertFlagBytes, little-endian): nil when no
// assert failed, else the failure they record.
func FlagError(kernel string, asserts []DeviceAssert, flag []byte) error {
	id := binary.LittleEndian.Uint32(flag)
	if id == 0 {
		return nil
	}
	e := &AssertError{Kernel: kernel, Pos: "?", Msg: fmt.Sprintf("assert number %d, which the kernel's artifact does not list", id)}
	if int(id) <= len(asserts) {
		e.Pos, e.Msg = asserts[id-1].Pos, asserts[id-1].Msg
	}
	for i := range e.Program {
		e.Program[i] = int64(binary.LittleEndian.Uint32(flag[4*(i+1):]))
	}
	return e
}
