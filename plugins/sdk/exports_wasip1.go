//go:build wasip1

package sdk

import (
	"unsafe"

	"github.com/widejit/widejit/plugins/abi"
)

// pinned keeps the buffers handed to the host alive (Go's collector does not move objects,
// so a live reference is enough) until choose consumes them.
var pinned = map[uint32][]byte{}

// lastResponse keeps the previous response alive until the host has read it; the host reads
// it before its next call.
var lastResponse []byte

//go:wasmexport alloc
func alloc(size uint32) uint32 {
	buf := make([]byte, max(size, 1))
	ptr := uint32(uintptr(unsafe.Pointer(unsafe.SliceData(buf))))
	pinned[ptr] = buf
	return ptr
}

//go:wasmexport widejit_abi
func widejitABI() int32 { return abi.Version }

//go:wasmexport choose
func choose(ptr, size uint32) uint64 {
	request, ok := pinned[ptr]
	if !ok || uint32(len(request)) < size {
		panic("widejit sdk: choose called with a buffer that alloc did not return")
	}
	delete(pinned, ptr)
	lastResponse = respond(request[:size])
	out := uint32(uintptr(unsafe.Pointer(unsafe.SliceData(lastResponse))))
	return uint64(out)<<32 | uint64(len(lastResponse))
}
